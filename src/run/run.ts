import { join } from 'node:path';
import { withEnvironmentAdapters, type AdaptersConfigInput, type SearcherConfigInput } from '../config';
import {
  closeSearcherContainer,
  createSearcherContainer,
  resolvePorts,
  resolveSearcher,
  TOKENS,
  type SearcherContainer,
} from '../container';
import { InvalidArgumentError } from '../core/errors';
import { episodeContextTokens } from '../core/episode/config';
import { eventRecord } from '../core/events';
import { createRandom, RANDOM_STREAMS } from '../core/random';
import { runSft, sftExamples } from '../core/rl/policy-update';
import type { PolicyBackend, PolicyCheckpoint } from '../ports/policy-backend';
import type { Store } from '../ports/store';
import type { Searcher } from '../searcher';
import {
  checkpointVocabulary,
  readFirstCheckpoint,
  readLatestCheckpoint,
  SFT_RUN,
  writePolicyCheckpoint,
} from './checkpoints';
import { resolveRollouts, runPolicySettings, type RunConfig } from './config';
import { prepareEnvironment, type RunEnvironment } from './environment';
import { checkPromptsFit } from './fit';
import { checkRunIndex } from './index-checks';
import {
  commitRunFolder,
  existingRunFolder,
  EVAL_AFTER,
  EVAL_BEFORE,
  planRunFolder,
  type PlannedRunFolder,
  readJsonFile,
  readRunFolderConfig,
  RUN_FILES,
  runStore,
  writeJsonAtomic,
} from './folder';
import { describeEval, evaluate, pct, type EvalSummary } from './evaluate';
import { progressOf, redactedRunOptions, type RunOptions } from './progress';

import type { StepMetrics } from './step-metrics';
import { createTrainer } from './trainer';
import { createPhaseWatch } from './phase-watch';

export interface TrainRunResult {
  runId: string;
  runDir: string;
  before: EvalSummary;
  after: EvalSummary;
  steps: Array<StepMetrics & { phase: string }>;
  /** What the run warned about (a warm start without demonstrations, a phase that could not learn), also in summary.json. */
  warnings: string[];
}

/**
 * An open run: its folder, environment, composition root (every port, the policy included) and
 * store. `trainRun` and `evalRun` are built on it; so are curation's closed loop and the benches.
 */
export interface RunSession {
  config: RunConfig;
  runId: string;
  runDir: string;
  env: RunEnvironment;
  container: SearcherContainer;
  store: Store;
  policy: PolicyBackend;
  /** Where the policy's weights came from: `fresh`, a store run's checkpoint, or the named adapter. */
  policyFrom: string;
  /** A Searcher over the run's ports with these overrides of the run's `searcher` sections. */
  searcher(overrides?: Omit<SearcherConfigInput, 'adapters'>): Promise<Searcher>;
  /** One rollout per question at the evaluation temperature, recorded as store run `storeRun`. */
  evaluate(
    storeRun: string,
    split?: RunConfig['evaluation']['split'],
    options?: RunOptions,
  ): Promise<EvalSummary>;
  close(): Promise<void>;
}

/** What `openRun` loads into the run's own policy: nothing (fresh weights), or the latest checkpoint among store runs. */
export type RunPolicyStart = { kind: 'fresh' } | { kind: 'latest'; storeRuns: readonly string[] };

/**
 * Starts a new optimizer with these settings where the policy has one (the tfjs policy's
 * `resetOptimizer`; not a port method: a scripted or ONNX policy has no optimizer).
 */
export function resetPolicyOptimizer(
  policy: PolicyBackend,
  settings: { learningRate: number; warmupSteps: number },
): void {
  (policy as { resetOptimizer?: (s: typeof settings) => void }).resetOptimizer?.(settings);
}

/** A store run named `RUN_DIR/STORE_RUN` (`policy.initFrom`): its latest checkpoint. */
async function readNamedCheckpoint(
  reference: string,
): Promise<{ key: string; checkpoint: PolicyCheckpoint }> {
  const at = reference.lastIndexOf('/');
  if (at <= 0)
    throw new InvalidArgumentError({
      argument: 'policy.initFrom',
      message: `expected RUN_DIR/STORE_RUN, got '${reference}'`,
    });
  const runId = reference.slice(at + 1);
  const found = await readLatestCheckpoint(runStore(reference.slice(0, at)), runId);
  if (!found)
    throw new InvalidArgumentError({
      argument: 'policy.initFrom',
      message: `'${reference}' has no checkpoint`,
    });
  return { key: `${runId}/${found.key}`, checkpoint: found.checkpoint };
}

/** The run's own policy as the composition root's `adapters.policy`: the tfjs transformer of `config.policy`, with the tokenizer of its checkpoint or of the environment's words. */
async function runPolicyAdapter(
  config: RunConfig,
  env: RunEnvironment,
  checkpoint: PolicyCheckpoint | null,
): Promise<NonNullable<AdaptersConfigInput['policy']>> {
  const policy = config.policy!;
  const words = checkpoint
    ? checkpointVocabulary(checkpoint)
    : policy.tokenizer === 'vocabulary'
      ? env.vocabulary()
      : null;
  return {
    type: 'tfjs',
    ...(await runPolicySettings(policy, config.seed)),
    optimizer: { learningRate: config.sft?.learningRate ?? 1e-3, weightDecay: 0 },
    tokenizer: words ? { kind: 'vocabulary', words } : { kind: 'protocol' },
  };
}

/**
 * The run's ports as the composition root's `adapters`: those `searcher.adapters` sets (a judge, a
 * generator, a search engine of your own), the environment's for the rest, and the run's own
 * policy unless `searcher.adapters.policy` names one.
 */
export function runAdapters(
  config: RunConfig,
  environment: AdaptersConfigInput,
  ownPolicy: AdaptersConfigInput['policy'] | null,
): AdaptersConfigInput {
  return {
    ...withEnvironmentAdapters(environment, config.searcher.adapters),
    ...(ownPolicy && { policy: ownPolicy }),
  };
}

/**
 * Opens a run folder with its environment and ports: the environment's adapters for the ports
 * `searcher.adapters` leaves unset, the run's own tfjs policy (or the one `searcher.adapters.policy`
 * names), the run folder as the store; all built by the composition root. Everything is checked
 * before the folder is written (a new or planned folder gets its `config.json` last): the data,
 * the checkpoint to start from, and that the prompts fit the policy's context (checkPromptsFit).
 */
export async function openRun(
  config: RunConfig,
  start: RunPolicyStart,
  options: RunOptions = {},
  folder?: { runId: string; runDir: string } | PlannedRunFolder,
): Promise<RunSession> {
  options = redactedRunOptions(options);
  const planned = folder === undefined ? await planRunFolder(config) : 'exists' in folder ? folder : null;
  const { runId, runDir } = planned ?? folder!;
  const env = await prepareEnvironment(config, options);
  // The split evaluated must exist (a run on your own data has the ones its split column or evalPath gives).
  env.evaluation(config.evaluation.split);
  const store = runStore(runDir);
  let checkpoint: { from: string; checkpoint: PolicyCheckpoint } | null = null;
  if (!config.searcher.adapters.policy && start.kind === 'latest') {
    const found = await readFirstCheckpoint(store, start.storeRuns);
    if (found) checkpoint = { from: `${found.runId}/${found.key}`, checkpoint: found.checkpoint };
    else if (config.policy?.initFrom) {
      const named = await readNamedCheckpoint(config.policy.initFrom);
      checkpoint = { from: named.key, checkpoint: named.checkpoint };
    } else
      throw new InvalidArgumentError({
        argument: 'run',
        message: `'${runDir}' has no checkpoint (train it first)`,
      });
  }
  const adapters = runAdapters(
    config,
    env.adapters,
    config.searcher.adapters.policy
      ? null
      : await runPolicyAdapter(config, env, checkpoint?.checkpoint ?? null),
  );
  const searcherConfig: SearcherConfigInput = { ...config.searcher, adapters };
  const container = createSearcherContainer(searcherConfig, { ports: { store } });
  try {
    // The policy first: the prompts' fit is checked before the other ports are built (a page index written).
    checkPromptsFit(config, env.all, await container.getAsync<PolicyBackend>(TOKENS.PolicyBackend));
    const { policy } = await resolvePorts(container);
    // What the index holds (pages, the golden ones): before the folder is written.
    await checkRunIndex(config, env, options);
    if (checkpoint) await policy.load(checkpoint.checkpoint);
    if (planned) await commitRunFolder(config, planned);
    const policyFrom = config.searcher.adapters.policy
      ? `searcher.adapters.policy (${config.searcher.adapters.policy.type})`
      : (checkpoint?.from ?? 'fresh');
    const session: RunSession = {
      config,
      runId,
      runDir,
      env,
      container,
      store,
      policy,
      policyFrom,
      searcher: (overrides = {}) =>
        resolveSearcher(container, { ...config.searcher, ...overrides, adapters }),
      evaluate: (storeRun, split, evalOptions = options) => evaluate(session, storeRun, split, evalOptions),
      close: () => closeSearcherContainer(container),
    };
    return session;
  } catch (error) {
    await closeSearcherContainer(container);
    throw error;
  }
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
  if (!sft || sft.demonstrations === 0 || !env.demonstrations || config.searcher.adapters.policy)
    return { trained: false, warning: null };
  const collectStarted = performance.now();
  const ports = await resolvePorts(session.container);
  // The oracle reports no context length: its episodes get the run policy's window, so that every
  // demonstration fits the model it trains (a null maxContextTokens would give them 8192).
  const trajectories = await env.demonstrations(
    sft.demonstrations,
    policy.tokenizer,
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
    },
  );
  progress.done(`${examples.length} demonstrations`);
  // Where the warm start's time goes (docs/method.md#slide-environment): collecting the oracle's episodes, then training.
  const tokens = examples.reduce((n, e) => n + e.inputIds.length, 0);
  const scored = examples.reduce((n, e) => n + e.positions.length, 0);
  const trainSeconds = (performance.now() - sftStarted) / 1000;
  options.onLog?.(
    `SFT: demonstrations collected in ${collectSeconds.toFixed(1)} s; ${sft.epochs} epochs x ${tokens} tokens (${scored} trained) in ${trainSeconds.toFixed(1)} s, ${((tokens * sft.epochs) / trainSeconds).toFixed(0)} tokens/s, ${result.updates} optimizer steps`,
  );
  await store.doAppend(
    result.epochLoss.map((loss, epoch) => eventRecord(SFT_RUN, epoch + 1, { type: 'sft-epoch', loss })),
  );
  await writePolicyCheckpoint(store, SFT_RUN, 0, await policy.save());
  return { trained: true, warning: null };
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
  try {
    const own = config.searcher.adapters.policy === undefined;
    const described = policy as PolicyBackend & { parameterCount?: number; backend?: { name: string } };
    if (own)
      options.onLog?.(
        `policy: ${described.parameterCount} parameters on ${described.backend?.name} (rollouts: ${await resolveRollouts(config.policy!.rollouts)}, training: ${config.policy!.training}), vocabulary ${policy.tokenizer.vocabSize} tokens${config.policy!.initFrom ? ` (from ${config.policy!.initFrom})` : ''}`,
      );
    else options.onLog?.(`policy: ${policy.provider} (searcher.adapters.policy)`);
    const warnings: string[] = [];
    const warn = (line: string) => {
      warnings.push(line);
      options.onLog?.(`warning: ${line}`);
    };
    let warmStarted = warm !== null;
    if (warm) options.onLog?.(`SFT warm start: loaded ${SFT_RUN}/${warm.key}`);
    else if (config.policy?.initFrom) options.onLog?.(`warm start: ${session.policyFrom}`);
    else {
      const started = await warmStart(session, options);
      warmStarted = started.trained;
      if (started.warning) warn(started.warning);
    }
    const beforePath = join(runDir, `${EVAL_BEFORE}.json`);
    let before = await readJsonFile<EvalSummary>(beforePath);
    if (!before) {
      before = await session.evaluate(EVAL_BEFORE, undefined, options);
      await writeJsonAtomic(beforePath, before);
    }
    options.onLog?.(
      `before RL${warmStarted ? ' (after SFT)' : ''} on ${before.split}: ${describeEval(before)}`,
    );
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
    }
    const after = await session.evaluate(EVAL_AFTER, undefined, options);
    await writeJsonAtomic(join(runDir, `${EVAL_AFTER}.json`), after);
    options.onLog?.(`after RL on ${after.split}: ${describeEval(after)}`);
    await writeJsonAtomic(join(runDir, RUN_FILES.summary), {
      runId,
      before,
      after,
      corpus: session.env.corpus,
      ...(warnings.length > 0 && { warnings }),
    });
    for (const line of warnings) options.onLog?.(`warning (also in ${RUN_FILES.summary}): ${line}`);
    return { runId, runDir, before, after, steps, warnings };
  } finally {
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
