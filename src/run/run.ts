import { join } from 'node:path';
import { resolvePorts } from '../container';
import { AbortedError, InvalidArgumentError } from '../core/errors';
import { episodeContextTokens } from '../core/episode/config';
import { eventRecord } from '../core/events';
import { createRandom, RANDOM_STREAMS } from '../core/random';
import { type FreshNames, freshNames, type SftExample } from '../core/rl/fresh-names';
import { runSft, sftExamples } from '../core/rl/policy-update';
import type { Tokenizer } from '../ports/types';
import { readLatestCheckpoint, SFT_RUN, writePolicyCheckpoint } from './checkpoints';
import { resolveRollouts, type RunConfig } from './config';
import {
  existingRunFolder,
  EVAL_AFTER,
  EVAL_BEFORE,
  planRunFolder,
  readRunFolderConfig,
  RUN_FILES,
  runStore,
  writeJsonAtomic,
} from './folder';
import { describeEval, pct, type EvalSummary } from './evaluate';
import { type BaselineFigure, describeGain, measureBaselines, strongestBaseline } from './baselines';
import { progressOf, redactedRunOptions, type RunOptions } from './progress';
import type { StepMetrics } from './step-metrics';
import { describeRetention } from './retention';
import { createTrainer } from './trainer';
import { describeTrackers, openRunTrackers, phaseOffsets } from './trackers';
import { createPhaseWatch } from './phase-watch';
import {
  describeReaderCeiling,
  LOW_READER_CEILING,
  measureReaderCeiling,
  type ReaderCeiling,
} from './reader-ceiling';
import {
  BASELINES_FILE,
  describeRemeasured,
  READER_CEILING_FILE,
  readRecorded,
  recordedBasis,
  writeRecorded,
} from './recorded';
import { openRun, resetPolicyOptimizer, type RunSession } from './session';

/**
 * What `trainRun` returns: the run's id and folder, the evaluations before and after RL, every
 * step's metrics, the warnings and the seconds per stage.
 */
export interface TrainRunResult {
  runId: string;
  runDir: string;
  before: EvalSummary;
  after: EvalSummary;
  /** The scripted baselines on the same split (the reference line included), and the strongest of the warm start and the baselines. */
  baselines: BaselineFigure[];
  strongest: { name: string; success: number } | null;
  /** How often the Generator answers right from the golden pages alone (null without a page index). */
  readerCeiling: ReaderCeiling | null;
  steps: Array<StepMetrics & { phase: string }>;
  /** What the run warned about (a warm start without demonstrations, a phase that could not learn), also in summary.json. */
  warnings: string[];
  /** Seconds per stage of this invocation, in order: setup (corpus, index, policy), the warm start, each evaluation and phase. */
  stageSeconds: Record<string, number>;
}

/**
 * The SFT warm start: the environment's demonstrations, SFT, a checkpoint in store run `sft`. Once
 * per run folder. Returns whether the policy was trained, or the warning saying why not.
 */
async function warmStart(
  session: RunSession,
  options: RunOptions,
): Promise<{ trained: boolean; warning: string | null }> {
  const { config, policy, store, env } = session;
  const sft = config.sft;
  // A policy of searcher.adapters warm-starts too when it trains (the Llama engine): its chat
  // format wraps the demonstrations as it wraps its own episodes.
  if (!sft || sft.demonstrations === 0 || !env.demonstrations || !policy.trainable)
    return { trained: false, warning: null };
  const collectStarted = performance.now();
  const ports = await resolvePorts(session.container);
  // The oracle reports no context length: its episodes get the run policy's window, so that every
  // demonstration fits the model it trains (a null maxContextTokens would give them 8192).
  const trajectories = await env.demonstrations(
    sft.demonstrations,
    policy,
    ports,
    {
      ...config.searcher.episode,
      maxContextTokens: episodeContextTokens(config.searcher.episode, policy),
    },
    options,
  );
  if (trajectories.length === 0)
    return {
      trained: false,
      warning:
        "warm start: no demonstration succeeded, so the policy starts RL from fresh weights and will rarely write a valid action. Likely cause (the demonstrations line says what counted as a success): the golden pages are not the index's page names, the pages do not hold the answers (a corpus that does not cover the questions), or the answers read from them were never judged right (the generator, the references); or start from a checkpoint (policy.initFrom)",
    };
  const examples = sftExamples(trajectories);
  const collectSeconds = (performance.now() - collectStarted) / 1000;
  const rename = freshNamesFor(sft, policy.tokenizer, examples);
  const sftStarted = performance.now();
  const progress = progressOf(options, 'SFT warm start', sft.epochs);
  const result = await runSft(
    policy,
    examples,
    { epochs: sft.epochs, batchSize: sft.batchSize },
    {
      random: createRandom(config.seed, RANDOM_STREAMS.sftOrder),
      ...(options.signal && { signal: options.signal }),
      onEpoch: (epoch, loss) => progress.update(epoch + 1, `loss ${loss.toFixed(3)}`),
      ...(rename && { rename }),
    },
  );
  progress.done(`${examples.length} demonstrations`);
  // Where the warm start's time goes (docs/method.md#slide-environment): collecting the oracle's episodes, then training.
  const tokens = examples.reduce((n, e) => n + e.inputIds.length, 0);
  const scored = examples.reduce((n, e) => n + e.positions.length, 0);
  const trainSeconds = (performance.now() - sftStarted) / 1000;
  options.onLog?.(
    `SFT: demonstrations collected in ${collectSeconds.toFixed(1)} s; ${sft.epochs} epochs x ${tokens} tokens (${scored} trained) in ${trainSeconds.toFixed(1)} s, ${((tokens * sft.epochs) / trainSeconds).toFixed(0)} tokens/s, ${result.updates} optimizer steps${rename ? ', fresh names' : ''}`,
  );
  await store.doAppend(
    result.epochLoss.map((loss, epoch) => eventRecord(SFT_RUN, epoch + 1, { type: 'sft-epoch', loss })),
  );
  await writePolicyCheckpoint(store, SFT_RUN, 0, await policy.save());
  return { trained: true, warning: null };
}

/**
 * The fewest SFT optimizer steps for which `sft.freshNames: null` renames: copying was learnt
 * after some thousands (1,800 on the slides, 6,000 on the countries corpus); after a few hundred
 * renaming scored below memorising (460 steps: 3.3% against 10.0% on held-out countries).
 */
const FRESH_NAMES_MIN_STEPS = 1000;

/**
 * The warm start's renamer (`sft.freshNames`), or null. null in the config: on where the policy's
 * tokenizer has whole-word tokens (each word of a vocabulary tokenizer's vocabulary one token) and
 * the SFT makes at least `FRESH_NAMES_MIN_STEPS` optimizer steps; true is refused for a tokenizer
 * without whole-word tokens (bytes or BPE pieces are not names).
 */
function freshNamesFor(
  sft: { freshNames: boolean | null; epochs: number; batchSize: number },
  tokenizer: Tokenizer,
  examples: readonly SftExample[],
): FreshNames | null {
  if (sft.freshNames === false) return null;
  const ids = new Set<number>();
  for (const w of tokenizer.vocabulary ?? []) {
    const encoded = /^[\p{L}\p{N}]+$/u.test(w) ? tokenizer.encode(w) : [];
    if (encoded.length === 1) ids.add(encoded[0]!);
  }
  if (sft.freshNames === null) {
    const steps = sft.epochs * Math.ceil(examples.length / sft.batchSize);
    return ids.size > 0 && steps >= FRESH_NAMES_MIN_STEPS ? freshNames(examples, ids) : null;
  }
  if (ids.size === 0)
    throw new InvalidArgumentError({
      argument: 'sft.freshNames',
      message:
        'renames whole-word tokens, and this policy has none: use it with policy.tokenizer: vocabulary (a checkpoint or initFrom keeps the tokenizer it has)',
    });
  return freshNames(examples, ids);
}

/**
 * The main job, for both kinds of run (the offline slide environment, your own data): the run
 * folder, the environment, the policy and every port through the composition root, the warm start
 * (SFT on the slide oracle's demonstrations, or `policy.initFrom`; kept as a checkpoint so that a
 * continued run starts from the same weights), evaluation before RL, the RL phases (each its own
 * trainer run with checkpoints, resumed where it stopped), evaluation after RL and the summary,
 * all in `runsDir/runId/`. Follow it with `options.onLog`/`onProgress`; stop it with `options.signal`
 * (running it again on the same runId continues it).
 */
export async function trainRun(config: RunConfig, given: RunOptions = {}): Promise<TrainRunResult> {
  const options = redactedRunOptions(given);
  const stageSeconds: Record<string, number> = {};
  let stageStart = performance.now();
  const stage = (name: string) => {
    const now = performance.now();
    stageSeconds[name] = Number(((now - stageStart) / 1000).toFixed(1));
    stageStart = now;
  };
  // Nothing is written until the config, the data and the prompts' fit are checked (openRun commits the folder).
  const folder = await planRunFolder(config);
  const store = runStore(folder.runDir);
  // A continued run starts from its warm start (the policy then trains phase by phase from there; each phase resumes from its own checkpoints).
  const warm = await readLatestCheckpoint(store, SFT_RUN);
  const session = await openRun(
    config,
    warm
      ? { kind: 'latest', storeRuns: [SFT_RUN] }
      : config.policy?.initFrom
        ? { kind: 'latest', storeRuns: [] }
        : { kind: 'fresh' },
    options,
    folder,
  );
  const { runId, runDir, policy } = session;
  // The trackers besides the run folder's records (TensorBoard, MLflow): they never stop the run.
  const trackers = await openRunTrackers({ config, runId, runDir, store, onLog: options.onLog });
  trackers.logConfig(config);
  const offsets = phaseOffsets(config);
  let status: 'finished' | 'failed' | 'killed' = 'failed';
  try {
    const own = config.searcher.adapters.policy === undefined;
    const described = policy.describe?.();
    if (own)
      options.onLog?.(
        `policy: ${described?.parameterCount} parameters on ${described?.backend} (rollouts: ${await resolveRollouts(config.policy!.rollouts)}, training: ${config.policy!.training}), vocabulary ${policy.tokenizer.vocabSize} tokens${config.policy!.initFrom ? ` (from ${config.policy!.initFrom})` : ''}`,
      );
    else options.onLog?.(`policy: ${policy.provider} (searcher.adapters.policy)`);
    const warnings: string[] = [];
    const warn = (line: string) => {
      warnings.push(line);
      options.onLog?.(`warning: ${line}`);
    };
    stage('setup');
    // The reader's ceiling, before any training (the warm start's included): a low one is said
    // now, not found after minutes of SFT and RL.
    const basis = recordedBasis(config);
    /** The figure `file` as recorded under this run's settings, else measured now and recorded. */
    const recordedOrMeasured = async <T>(file: string, what: string, measure: () => Promise<T | null>) => {
      const found = await readRecorded<T>(runDir, file, basis);
      if (found.changed.length > 0) options.onLog?.(describeRemeasured(what, found.changed));
      if (found.value !== null) return { value: found.value, measured: false };
      const value = await measure();
      if (value !== null) await writeRecorded(runDir, file, value, basis);
      return { value, measured: true };
    };
    const readerCeiling = (
      await recordedOrMeasured<ReaderCeiling>(READER_CEILING_FILE, 'reader ceiling', () =>
        measureReaderCeiling(session, options),
      )
    ).value;
    if (readerCeiling) {
      const line = describeReaderCeiling(readerCeiling);
      options.onLog?.(line);
      if (readerCeiling.ceiling !== null && readerCeiling.ceiling < LOW_READER_CEILING) warnings.push(line);
      stage('reader ceiling');
    }
    let warmStarted = warm !== null;
    if (warm) options.onLog?.(`SFT warm start: loaded ${SFT_RUN}/${warm.key}`);
    else if (config.policy?.initFrom) {
      options.onLog?.(`warm start: ${session.policyFrom}`);
      const added = described?.addedTags ?? [];
      if (added.length > 0)
        options.onLog?.(
          `the protocol tags are new tokens of its tokenizer (${added.length}, ids from ${policy.tokenizer.specialTokenId(added[0]!)}; embedding rows: the mean of their pieces')`,
        );
    } else {
      const started = await warmStart(session, options);
      warmStarted = started.trained;
      if (started.warning) warn(started.warning);
    }
    stage('warm start');
    const evaluated = await recordedOrMeasured<EvalSummary>(`${EVAL_BEFORE}.json`, EVAL_BEFORE, () =>
      session.evaluate(EVAL_BEFORE, undefined, options),
    );
    const before = evaluated.value!;
    // An earlier attempt logged the one it read (a tracker new to the folder gets it with the recorded steps).
    if (evaluated.measured) trackers.logEvaluation(EVAL_BEFORE, 0, before);
    options.onLog?.(
      `before RL${warmStarted ? ' (after SFT)' : ''} on ${before.split}: ${describeEval(before)}`,
    );
    stage(EVAL_BEFORE);
    // The baselines on the same questions, reader and judge (kept for a continued run).
    const baselines = (
      await recordedOrMeasured<BaselineFigure[]>(BASELINES_FILE, 'baselines', () =>
        measureBaselines(session, session.env.baselines, options),
      )
    ).value!;
    for (const b of baselines)
      options.onLog?.(
        `${b.reference ? 'reference' : 'baseline'} ${b.name} on ${b.summary.split}: ${describeEval(b.summary)}`,
      );
    if (baselines.length > 0) stage('baselines');
    const strongest = strongestBaseline([
      ...(warmStarted ? [{ name: 'warm start (SFT)', reference: false, success: before.judgeSuccess }] : []),
      ...baselines.map((b) => ({ name: b.name, reference: b.reference, success: b.summary.judgeSuccess })),
    ]);
    const steps: TrainRunResult['steps'] = [];
    for (const phase of config.phases) {
      if (phase.steps === 0) continue;
      resetPolicyOptimizer(policy, { learningRate: phase.learningRate, warmupSteps: phase.warmupSteps });
      const searcher = await session.searcher({
        reward: { ...config.searcher.reward, weights: phase.weights },
      });
      const trainer = createTrainer({
        searcher,
        store: session.store,
        prompts: session.env.train,
        settings: {
          runId: phase.name,
          steps: phase.steps,
          batchSize: Math.min(config.trainer.batchSize, session.env.train.length),
          saveFreq: config.trainer.saveFreq,
          resumeMode: config.trainer.resumeMode,
          keepLast: config.trainer.keepLast,
          keepBestBy: config.trainer.keepBestBy,
          seed: config.seed,
        },
      });
      const progress = progressOf(options, phase.name, phase.steps);
      const watch = createPhaseWatch(
        { phase: phase.name, policyFrom: session.policyFrom, warmStarted },
        phase.steps,
      );
      let dead = '';
      const result = await trainer.run({
        ...(options.signal && { signal: options.signal }),
        onStep: (m, batch) => {
          steps.push({ ...m, phase: phase.name });
          trackers.logStep(phase.name, offsets.get(phase.name)! + m.step, m);
          const warning = watch.observe(m.step, batch);
          if (warning) {
            warn(warning);
            dead = warning.includes('no episode made a valid action')
              ? ' (no valid action!)'
              : ' (all rewards 0!)';
          }
          progress.update(
            m.step,
            `reward ${m.rewardMean?.toFixed(3) ?? 'missing'} success ${pct(m.successRate)} NDCG ${m.ndcgMean.toFixed(2)}${dead}`,
          );
        },
      });
      progress.done(result.resumedFrom ? `(resumed from ${result.resumedFrom.key})` : undefined);
      if (result.retention)
        options.onLog?.(describeRetention(phase.name, result.retention, config.trainer.keepBestBy));
      stage(phase.name);
    }
    const after = await session.evaluate(EVAL_AFTER, undefined, options);
    await writeJsonAtomic(join(runDir, `${EVAL_AFTER}.json`), after);
    stage(EVAL_AFTER);
    options.onLog?.(`after RL on ${after.split}: ${describeEval(after)}`);
    if (strongest) options.onLog?.(`RL: ${describeGain(after, strongest)}`);
    const total = Object.values(stageSeconds).reduce((a, b) => a + b, 0);
    options.onLog?.(
      `time: ${Object.entries(stageSeconds)
        .map(([name, seconds]) => `${name} ${seconds.toFixed(1)} s`)
        .join(', ')}; ${total.toFixed(1)} s in all`,
    );
    trackers.logEvaluation(
      EVAL_AFTER,
      config.phases.reduce((n, p) => n + p.steps, 0),
      after,
    );
    await writeJsonAtomic(join(runDir, RUN_FILES.summary), {
      runId,
      before,
      after,
      ...(baselines.length > 0 && { baselines, strongest }),
      ...(readerCeiling && { readerCeiling }),
      corpus: session.env.corpus,
      ...(warnings.length > 0 && { warnings }),
    });
    for (const line of warnings) options.onLog?.(`warning (also in ${RUN_FILES.summary}): ${line}`);
    status = 'finished';
    return {
      runId,
      runDir,
      before,
      after,
      baselines,
      strongest,
      readerCeiling,
      steps,
      warnings,
      stageSeconds,
    };
  } catch (error) {
    if (options.signal?.aborted || AbortedError.isInstance(error)) status = 'killed';
    throw error;
  } finally {
    const states = await trackers.finish(status);
    const line = describeTrackers(states);
    if (line) options.onLog?.(line);
    await session.close();
  }
}

/**
 * Evaluates a run folder's latest checkpoint (its last phase that saved one, else its warm start)
 * or the policy its `searcher.adapters.policy` names, on a split (slide runs; on your own data the
 * rows of that split, validation from `dataset.evalPath` where set) or its evaluation questions;
 * the summary is written to `<storeRun>.json` (`eval-<split>.json`, `eval-dataset.json`).
 */
export async function evalRun(
  runDir: string,
  overrides: { split?: 'train' | 'validation' | 'test'; limit?: number | null } = {},
  given: RunOptions = {},
): Promise<EvalSummary & { checkpoint: string }> {
  const options = redactedRunOptions(given);
  const base = await readRunFolderConfig(runDir);
  const config: RunConfig = {
    ...base,
    evaluation: {
      ...base.evaluation,
      ...(overrides.split && { split: overrides.split }),
      ...(overrides.limit !== undefined && { limit: overrides.limit }),
    },
  };
  const storeRuns = [...config.phases.map((p) => p.name)].reverse().concat(SFT_RUN);
  const session = await openRun(config, { kind: 'latest', storeRuns }, options, existingRunFolder(runDir));
  try {
    const { storeRun } = session.env.evaluation(config.evaluation.split);
    options.onLog?.(
      `evaluating ${session.policyFrom} on ${session.env.evaluation(config.evaluation.split).label}`,
    );
    const summary = await session.evaluate(storeRun, config.evaluation.split, options);
    await writeJsonAtomic(join(runDir, `${storeRun}.json`), { checkpoint: session.policyFrom, ...summary });
    options.onLog?.(describeEval(summary));
    return { checkpoint: session.policyFrom, ...summary };
  } finally {
    await session.close();
  }
}
