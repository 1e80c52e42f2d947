import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assignBuckets } from '../../core/curation/buckets';
import { promptStats } from '../../core/curation/episodes';
import { buildRound1 } from '../../core/curation/rounds';
import type { Verdict } from '../../core/curation/verification';
import { InvalidArgumentError } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import { runSft, sftExamples } from '../../core/rl/policy-update';
import { SFT_RUN, writePolicyCheckpoint } from '../checkpoints';
import { clearStoreRun, existingRunFolder, readRunFolderConfig } from '../folder';
import type { RunOptions } from '../progress';
import { openRun, resetPolicyOptimizer } from '../run';
import { createTrainer } from '../trainer';
import { distillRun, type CurationValues } from './distill';
import { loadEpisodes, trajectoryOf } from './data';
import { jsonFile, writeCurationFiles } from './files';

/**
 * The closed loop on the offline environment (docs/method.md#rare-success-distillation): distill
 * rare successes from a run's phase, SFT the run's latest policy on them (store run
 * `sft-distilled`), and start focused round 1 from that checkpoint (store run `focused-round1`)
 * with the round's n_agent and max_turns.
 */
export async function closedLoop(
  runDir: string,
  phase: string,
  values: CurationValues,
  options: RunOptions = {},
): Promise<void> {
  const config = await readRunFolderConfig(runDir);
  if (config.searcher.adapters.policy)
    throw new InvalidArgumentError({
      argument: 'searcher.adapters.policy',
      message: `the closed loop trains the run's own tfjs policy; '${runDir}' runs a named one`,
    });
  const epochs = Number(values.epochs ?? 4);
  const steps = Number(values.steps ?? 5);
  if (!(Number.isInteger(epochs) && epochs > 0) || !(Number.isInteger(steps) && steps >= 0))
    throw new InvalidArgumentError({ argument: '--epochs/--steps', message: 'must be positive integers' });
  const distilled = await distillRun(runDir, phase, values, options);
  options.onLog?.(`distilled ${distilled.rows.length} rollouts (${JSON.stringify(distilled.counts)})`);
  if (distilled.selected.length === 0)
    throw new InvalidArgumentError({
      argument: '--phase',
      message: `'${phase}' has no rare successes to distill; lower the bar (--max-success-rate) or run longer`,
    });
  const session = await openRun(
    config,
    { kind: 'latest', storeRuns: [...config.phases.map((p) => p.name)].reverse().concat(SFT_RUN) },
    options,
    existingRunFolder(runDir),
  );
  const { policy, store, policyFrom: from } = session;
  const sftSettings = {
    learningRate: config.sft?.learningRate ?? 3e-3,
    batchSize: config.sft?.batchSize ?? 8,
  };
  try {
    const examples = sftExamples(distilled.selected.map((e) => trajectoryOf(distilled.run, e)));
    resetPolicyOptimizer(policy, { learningRate: sftSettings.learningRate, warmupSteps: 0 });
    const sft = await runSft(
      policy,
      examples,
      { epochs, batchSize: Math.min(sftSettings.batchSize, examples.length) },
      { random: createRandom(config.seed, RANDOM_STREAMS.sftOrder) },
    );
    // The loop run again replaces its store runs (the store is append-only): one checkpoint, one round.
    await clearStoreRun(runDir, 'sft-distilled');
    await writePolicyCheckpoint(store, 'sft-distilled', 0, await policy.save(), {
      from,
      examples: examples.length,
    });
    options.onLog?.(
      `SFT on ${examples.length} distilled rollouts from ${from}: loss ${sft.epochLoss.map((l) => l.toFixed(3)).join(' -> ')}; checkpoint sft-distilled`,
    );
    const verdicts = JSON.parse(
      await readFile(join(runDir, 'curation', 'verdicts.json'), 'utf8').catch(() => '{"verdicts":[]}'),
    ).verdicts as Verdict[];
    const round = buildRound1(
      assignBuckets(promptStats((await loadEpisodes(runDir, 'phase1')).episodes)),
      promptStats(distilled.run.episodes),
      verdicts,
    );
    const byUid = new Map(session.env.train.map((q) => [q.uid, q]));
    const prompts = round.promptUids.flatMap((uid) => (byUid.has(uid) ? [byUid.get(uid)!] : []));
    options.onLog?.(
      `focused round 1: ${prompts.length} prompts, n_agent ${round.budget.nAgent}, max_turns ${round.budget.maxTurns}`,
    );
    if (steps === 0 || prompts.length === 0) return;
    await clearStoreRun(runDir, 'focused-round1');
    const phaseConfig = config.phases.at(-1)!;
    resetPolicyOptimizer(policy, { learningRate: phaseConfig.learningRate, warmupSteps: 0 });
    const searcher = await session.searcher({
      episode: { ...config.searcher.episode, maxTurns: round.budget.maxTurns },
      rl: { ...config.searcher.rl, nAgent: round.budget.nAgent },
      reward: { ...config.searcher.reward, weights: 'focused' },
    });
    const trainer = createTrainer({
      searcher,
      store,
      prompts,
      settings: {
        runId: 'focused-round1',
        steps,
        batchSize: Math.min(round.budget.batchSize, prompts.length),
        saveFreq: steps,
        resumeMode: 'disable',
        seed: config.seed,
      },
    });
    const result = await trainer.run({
      ...(options.signal && { signal: options.signal }),
      onStep: (m) =>
        options.onLog?.(
          `focused-round1 step ${m.step}: reward ${m.rewardMean?.toFixed(3) ?? 'missing'}, success ${m.successRate === null ? '-' : (m.successRate * 100).toFixed(1)}%`,
        ),
    });
    await writeCurationFiles(join(runDir, 'curation'), [
      jsonFile('loop.json', {
        distilled: distilled.counts,
        sft: { examples: examples.length, epochLoss: sft.epochLoss, from },
        round1: { prompts: prompts.length, budget: round.budget },
        steps: result.steps,
      }),
    ]);
  } finally {
    await session.close();
  }
}
