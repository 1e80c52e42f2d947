import { createScriptedPolicy, type ScriptContext } from '../adapters/scripted-policy/index';
import { parseRegionMarks } from '../core/protocol/location';
import { lineAfter, tagSpans } from '../core/protocol/tag-spans';
import { hashString } from '../core/random';
import type { Trajectory } from '../core/trajectory/trajectory';
import { resolvePorts } from '../container';
import { createSearcher } from '../searcher';
import { demonstrationQueries } from './demonstrator';
import { pct, summarise, type EvalSummary } from './evaluate';
import { progressOf, type RunOptions } from './progress';
import type { RunSession } from './session';

/**
 * A scripted Searcher measured beside the trained one on the same questions, reader and judge
 * (issue 39: every learning figure is stated beside its strongest baseline). A `reference` line
 * (the slide oracle, which knows where each fact was drawn) is shown, not measured against.
 */
export interface BaselinePolicy {
  name: string;
  description: string;
  reference?: boolean;
  script: (context: ScriptContext) => string;
}

/** A baseline's evaluation on the run's evaluation split. */
export interface BaselineFigure {
  name: string;
  description: string;
  reference: boolean;
  summary: EvalSummary;
}

const COMPLETE = '<search_complete>true</search_complete>';

/** The question of the episode, as the policy is shown it. */
const askedQuestion = (context: string) => lineAfter(context, 'Question: ')?.trim() ?? '';
const lastObservation = (context: string) =>
  tagSpans(context, '<information>', '</information>')
    .map((s) => s.body)
    .at(-1) ?? '';

/**
 * Naive RAG: one search with the question's content words (the demonstrator's first query), the
 * top hit read by the run's reader, no crop. With `crop`, the region it crops where the page marks
 * some (a name it marks, or null for none).
 */
export function naiveRagScript(
  crop: ((question: string, marks: readonly string[]) => string | null) | null = null,
): (context: ScriptContext) => string {
  return ({ turn, context }) => {
    const question = askedQuestion(context);
    if (turn === 0) return `<search>${demonstrationQueries(question)[0] ?? question}</search>`;
    if (crop === null || context.includes('<bbox>')) return COMPLETE;
    const region = crop(
      question,
      parseRegionMarks(lastObservation(context)).map((m) => m.label),
    );
    return region === null ? COMPLETE : `<bbox>${region}</bbox>`;
  };
}

/** The generic baselines: naive RAG, and naive RAG cropping a random one of the regions the page marks. */
export function genericBaselines(): BaselinePolicy[] {
  return [
    {
      name: 'naive RAG',
      description: "one search with the question's words, the top hit read, no crop",
      script: naiveRagScript(),
    },
    {
      name: 'RAG + random region',
      description: 'naive RAG, then a crop of a random one of the regions the page marks',
      script: naiveRagScript((question, marks) =>
        marks.length === 0 ? null : marks[hashString(question) % marks.length]!,
      ),
    },
  ];
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
