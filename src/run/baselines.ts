import { createScriptedPolicy } from '../adapters/scripted-policy/index';
import type { Trajectory } from '../core/trajectory/trajectory';
import { resolvePorts } from '../container';
import { createSearcher } from '../searcher';
import type { BaselinePolicy } from './baseline-scripts';
import { pct, summarise, type EvalSummary } from './evaluate';
import { progressOf, type RunOptions } from './progress';
import type { RunSession } from './session';

export { type BaselinePolicy, genericBaselines, naiveRagScript } from './baseline-scripts';

/** A baseline's evaluation on the run's evaluation split. */
export interface BaselineFigure {
  name: string;
  description: string;
  reference: boolean;
  summary: EvalSummary;
}

/**
 * Each baseline on the run's evaluation split (greedy, one episode a question, the evaluation's
 * reward weights), through the run's own ports.
 */
export async function measureBaselines(
  session: RunSession,
  baselines: readonly BaselinePolicy[],
  options: RunOptions,
): Promise<BaselineFigure[]> {
  const { config } = session;
  const { label, prompts } = session.env.evaluation(config.evaluation.split);
  const questions = config.evaluation.limit === null ? prompts : prompts.slice(0, config.evaluation.limit);
  const ports = await resolvePorts(session.container);
  const { adapters: _adapters, ...sections } = config.searcher;
  const figures: BaselineFigure[] = [];
  for (const baseline of baselines) {
    const searcher = createSearcher(
      {
        ...ports,
        policy: createScriptedPolicy({ tokenizer: session.policy.tokenizer, script: baseline.script }),
      },
      {
        ...sections,
        episode: { ...sections.episode, temperature: config.evaluation.temperature },
        rl: { ...sections.rl, nAgent: 1 },
        reward: { ...sections.reward, weights: 'default' },
      },
    );
    const progress = progressOf(options, `baseline (${baseline.name})`, questions.length);
    const trajectories: Trajectory[] = [];
    for (let start = 0; start < questions.length; start += 64) {
      const batch = await searcher.collect(questions.slice(start, start + 64), {
        nAgent: 1,
        ...(options.signal && { signal: options.signal }),
      });
      trajectories.push(...batch.episodes.map((e) => e.trajectory));
      progress.update(Math.min(questions.length, start + 64));
    }
    const summary = summarise(label, questions, trajectories, config.searcher.reward.scheme);
    progress.done(`success ${pct(summary.judgeSuccess)}`);
    figures.push({
      name: baseline.name,
      description: baseline.description,
      reference: baseline.reference ?? false,
      summary,
    });
  }
  return figures;
}

/** The strongest baseline that is not a reference line, by success. */
export function strongestBaseline(
  figures: readonly { name: string; reference: boolean; success: number }[],
): { name: string; success: number } | null {
  let best: { name: string; success: number } | null = null;
  for (const f of figures) if (!f.reference && (best === null || f.success > best.success)) best = f;
  return best;
}

/** The learning figure stated over the strongest baseline. */
export function describeGain(after: EvalSummary, strongest: { name: string; success: number }): string {
  const points = (after.judgeSuccess - strongest.success) * 100;
  return `${pct(after.judgeSuccess)} after RL, ${points >= 0 ? '+' : ''}${points.toFixed(1)} points over the strongest baseline (${strongest.name}, ${pct(strongest.success)})`;
}
