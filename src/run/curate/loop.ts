import { join } from 'node:path';
import { assignBuckets } from '../../core/curation/buckets';
import { promptStats } from '../../core/curation/episodes';
import { buildRound1, buildRound2, buildRound3, type FocusedRound } from '../../core/curation/rounds';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import { InvalidArgumentError } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import { mean } from '../../core/stats';
import { runSft, sftExamples } from '../../core/rl/policy-update';
import { SFT_RUN, writePolicyCheckpoint } from '../checkpoints';
import { clearStoreRun, existingRunFolder, readRunFolderConfig } from '../folder';
import { progressOf, redactedRunOptions, type RunOptions } from '../progress';
import { openRun, resetPolicyOptimizer, type RunSession } from '../session';
import { createTrainer } from '../trainer';
import { loadEpisodes, runSetting, type RunSetting } from './data';
import { distillRun, type CurationValues } from './distill';
import { jsonFile, writeCurationFiles } from './files';
import { numberOf } from './options';
import { describeRound, roundStoreRun, writeRoundFiles, type RoundStart } from './round-files';
import { describeVerdicts, summariseVerdicts, verifyRun } from './verify';

const D = DEFAULT_CURATION_SETTINGS;
const DISTILLED = 'sft-distilled';
const LOOP_ROUNDS = ['focused-round1', 'focused-round2', 'focused-round3'];

/**
 * The data-centric loop in full, on any run folder (a slide run or one on your own data;
 * docs/method.md#focused-rounds): verification of phase 2's candidates and of every bucket-0
 * prompt with its golden page; focused round 1 (hard A + bucket 0, GT errors and uncertain items
 * out) trained from the run's latest checkpoint; round 2 from round 1's own results, trained on
 * from there; rare successes of both rounds distilled (rows with an action tag in a think dropped)
 * and the policy SFT'd on them (`sft-distilled`); round 3 (round 2's data) trained from that
 * checkpoint. Each round is a store run (`focused-round1`, ...) with its budget (B, n_agent,
 * max_turns of the settings table) and is written as a ready config (`focused_roundN.config.yaml`)
 * for a separate `train --config` run. `--steps` is each round's steps (default: one epoch over
 * its prompts); `--steps 0` builds round 1's files only.
 */
export async function closedLoop(
  runDir: string,
  phase: string,
  values: CurationValues,
  given: RunOptions = {},
): Promise<void> {
  const options = redactedRunOptions(given);
  const log = (line: string) => options.onLog?.(line);
  const config = await readRunFolderConfig(runDir);
  if (config.searcher.adapters.policy)
    throw new InvalidArgumentError({
      argument: 'searcher.adapters.policy',
      message: `the closed loop trains the run's own tfjs policy; '${runDir}' runs a named one (${config.searcher.adapters.policy.type})`,
    });
  const phase1 = (values.phase1 as string | undefined) ?? 'phase1';
  const epochs = numberOf(values, 'epochs', 4);
  const steps = values.steps === undefined ? null : numberOf(values, 'steps', 0);
  const setting = await runSetting(runDir, options);

  // 1. Verification: phase 2's candidates and bucket 0's review, replacing earlier verdicts.
  const verdicts = await verifyRun(runDir, phase, values, options, phase1);
  const summary = summariseVerdicts(verdicts);
  await writeCurationFiles(join(runDir, 'curation'), [jsonFile('verdicts.json', summary)]);
  log(describeVerdicts(summary));

  // 2. Round 1 from the buckets (phase 1) and the final scores (phase 2).
  const buckets = assignBuckets(promptStats((await loadEpisodes(runDir, phase1)).episodes), {
    bucketLow: numberOf(values, 'low', D.bucketLow),
    bucketHigh: numberOf(values, 'high', D.bucketHigh),
  });
  const round1 = buildRound1(buckets, promptStats((await loadEpisodes(runDir, phase)).episodes), verdicts);
  const latest = config.phases.filter((p) => p.steps > 0).at(-1)?.name ?? phase;
  const record: Record<string, unknown> = { verification: { ...summary, verdicts: undefined } };
  const session = await openRun(
    config,
    { kind: 'latest', storeRuns: [...config.phases.map((p) => p.name)].reverse().concat(SFT_RUN) },
    options,
    existingRunFolder(runDir),
  );
  try {
    // A loop run again replaces every store run the loop makes, so none is left from an earlier loop.
    for (const storeRun of [...LOOP_ROUNDS, DISTILLED]) await clearStoreRun(runDir, storeRun);
    const ctx: LoopContext = { runDir, setting, session, options, steps };
    const first = await focusedRound(ctx, round1, { runDir, storeRun: latest }, phase);
    record.round1 = first;
    if (steps === 0 || first.trained === 0) {
      log(
        steps === 0
          ? 'loop --steps 0: round 1 built, nothing trained'
          : 'round 1 has no prompts: nothing to train',
      );
      return;
    }

    // 3. Round 2 from round 1's own results, trained on from round 1's policy.
    const results1 = roundStoreRun(round1);
    const round2 = buildRound2(
      round1.promptUids,
      promptStats((await loadEpisodes(runDir, results1)).episodes),
      verdicts,
    );
    const second = await focusedRound(ctx, round2, { runDir, storeRun: results1 }, results1);
    record.round2 = second;

    // 4. Rare successes of the focused rounds, distilled; SFT from round 2's policy.
    const harvested = [results1, ...(second.trained > 0 ? [roundStoreRun(round2)] : [])];
    const distilled = await distillRun(runDir, harvested, values, options);
    log(
      `distilled ${distilled.rows.length} rollouts from ${harvested.join(' + ')} (${JSON.stringify(distilled.counts)})`,
    );
    let start: RoundStart;
    if (distilled.rows.length === 0) {
      start = { runDir, storeRun: harvested.at(-1)! };
      log(
        `no rare successes to distill in ${harvested.join(' + ')}: round 3 starts from ${start.storeRun}, not from an SFT checkpoint (lower --max-success-rate, or more --steps)`,
      );
      record.sft = null;
    } else {
      record.sft = await distilledSft(ctx, distilled.trajectories, epochs);
      start = { runDir, storeRun: DISTILLED };
    }
    record.distilled = distilled.counts;

    // 5. Round 3: round 2's data from the SFT checkpoint, the largest budget.
    record.round3 = await focusedRound(
      ctx,
      buildRound3(round2.promptUids, verdicts),
      start,
      'focused_round2',
    );
  } finally {
    await writeCurationFiles(join(runDir, 'curation'), [jsonFile('loop.json', record)]);
    await session.close();
  }
}

interface LoopContext {
  runDir: string;
  setting: RunSetting;
  session: RunSession;
  options: RunOptions;
  steps: number | null;
}

/** Writes a round's files and ready config, then trains it as its store run from the session's policy (already at `start`). */
async function focusedRound(
  ctx: LoopContext,
  round: FocusedRound,
  start: RoundStart,
  from: string,
): Promise<{
  prompts: number;
  trained: number;
  steps: number;
  config: string | null;
  budget: FocusedRound['budget'];
  successRate: number | null;
}> {
  const { runDir, setting, session, options } = ctx;
  const written = await writeRoundFiles({ setting, runDir, round, start, steps: ctx.steps });
  options.onLog?.(describeRound(round, written.prompts.length, from));
  const storeRun = roundStoreRun(round);
  // The loop run again replaces its store runs (the store is append-only): one round, one set of records.
  await clearStoreRun(runDir, storeRun);
  const out = {
    prompts: written.prompts.length,
    trained: 0,
    steps: written.steps,
    config: written.configPath,
    budget: round.budget,
    successRate: null as number | null,
  };
  if (ctx.steps === 0 || written.prompts.length === 0) return out;
  const { config } = setting;
  resetPolicyOptimizer(session.policy, {
    learningRate: config.phases.at(-1)?.learningRate ?? 1e-3,
    warmupSteps: 0,
  });
  const searcher = await session.searcher({
    episode: {
      ...config.searcher.episode,
      maxTurns: round.budget.maxTurns,
      temperature: round.budget.temperature,
    },
    rl: { ...config.searcher.rl, nAgent: round.budget.nAgent },
    reward: { ...config.searcher.reward, weights: 'focused' },
  });
  const trainer = createTrainer({
    searcher,
    store: session.store,
    prompts: written.prompts,
    settings: {
      runId: storeRun,
      steps: written.steps,
      batchSize: Math.min(round.budget.batchSize, written.prompts.length),
      saveFreq: written.steps,
      resumeMode: 'disable',
      seed: config.seed,
    },
  });
  const progress = progressOf(options, storeRun, written.steps);
  const result = await trainer.run({
    ...(options.signal && { signal: options.signal }),
    onStep: (m) => {
      const line = `reward ${m.rewardMean?.toFixed(3) ?? 'missing'}, success ${m.successRate === null ? '-' : `${(m.successRate * 100).toFixed(1)}%`}`;
      progress.update(m.step, line);
      options.onLog?.(`${storeRun} step ${m.step}: ${line}`);
    },
  });
  progress.done();
  const rates = result.steps.flatMap((s) => (s.successRate === null ? [] : [s.successRate]));
  out.trained = written.prompts.length;
  out.successRate = rates.length ? mean(rates) : null;
  return out;
}

/** SFT of the session's policy on the distilled rollouts: the checkpoint `sft-distilled`, where round 3 starts. */
async function distilledSft(
  ctx: LoopContext,
  trajectories: Parameters<typeof sftExamples>[0],
  epochs: number,
): Promise<{ examples: number; epochLoss: number[]; from: string }> {
  const { runDir, setting, session, options } = ctx;
  const examples = sftExamples(trajectories);
  const sftSettings = {
    learningRate: setting.config.sft?.learningRate ?? 3e-3,
    batchSize: setting.config.sft?.batchSize ?? 8,
  };
  resetPolicyOptimizer(session.policy, { learningRate: sftSettings.learningRate, warmupSteps: 0 });
  const progress = progressOf(options, 'SFT on distilled rollouts', epochs);
  const sft = await runSft(
    session.policy,
    examples,
    { epochs, batchSize: Math.min(sftSettings.batchSize, examples.length) },
    {
      random: createRandom(setting.config.seed, RANDOM_STREAMS.sftOrder),
      ...(options.signal && { signal: options.signal }),
      onEpoch: (epoch, loss) => progress.update(epoch + 1, `loss ${loss.toFixed(3)}`),
    },
  );
  progress.done(`${examples.length} rollouts`);
  await clearStoreRun(runDir, DISTILLED);
  const from = 'focused rounds';
  await writePolicyCheckpoint(session.store, DISTILLED, 0, await session.policy.save(), {
    from,
    examples: examples.length,
  });
  options.onLog?.(
    `SFT on ${examples.length} distilled rollouts: loss ${sft.epochLoss.map((l) => l.toFixed(3)).join(' -> ')}; checkpoint ${DISTILLED}`,
  );
  return { examples: examples.length, epochLoss: sft.epochLoss, from };
}
