// An open run (openRun): its folder, environment, ports, policy and store, and the policy's start.
import { stat } from 'node:fs/promises';
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
import type { OptimizerResetSettings, PolicyBackend, PolicyCheckpoint } from '../ports/policy-backend';
import type { Store } from '../ports/store';
import type { Searcher } from '../searcher';
import { checkpointVocabulary, readFirstCheckpoint, readLatestCheckpoint } from './checkpoints';
import { runPolicySettings, type RunConfig } from './config';
import { prepareEnvironment, type RunEnvironment } from './environment';
import { checkPromptsFit } from './fit';
import { checkRunIndex } from './index-checks';
import { commitRunFolder, planRunFolder, type PlannedRunFolder, runStore } from './folder';
import { evaluate, type EvalSummary } from './evaluate';
import { redactedRunOptions, type RunOptions } from './progress';

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
  /** Closes what the run opened (the composition root and its ports). */
  close(): Promise<void>;
}

/** What `openRun` loads into the run's own policy: nothing (fresh weights), or the latest checkpoint among store runs. */
export type RunPolicyStart = { kind: 'fresh' } | { kind: 'latest'; storeRuns: readonly string[] };

/**
 * Starts a new optimizer with these settings where the policy has one (the port's optional
 * `resetOptimizer`: a scripted or ONNX policy has no optimizer, and nothing happens).
 */
export function resetPolicyOptimizer(policy: PolicyBackend, settings: OptimizerResetSettings): void {
  policy.resetOptimizer?.(settings);
}

/**
 * Whether `policy.initFrom` names a Hugging Face model folder (a `config.json` in it: GPT-2,
 * DistilGPT-2, a checkpoint's `policy/` folder) rather than `RUN_DIR/STORE_RUN`.
 */
export async function isModelFolder(path: string): Promise<boolean> {
  return stat(join(path, 'config.json')).then(
    (s) => s.isFile(),
    () => false,
  );
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

/**
 * The run's own policy as the composition root's `adapters.policy`: the tfjs transformer of
 * `config.policy`, with the tokenizer of its checkpoint or of the environment's words; or, started
 * from a Hugging Face folder, the folder's model and tokenizer (its checkpoints then load into that).
 */
async function runPolicyAdapter(
  config: RunConfig,
  env: RunEnvironment,
  checkpoint: PolicyCheckpoint | null,
): Promise<NonNullable<AdaptersConfigInput['policy']>> {
  const policy = config.policy!;
  if (policy.initFrom && (await isModelFolder(policy.initFrom))) {
    const { model: _model, ...settings } = await runPolicySettings(policy, config.seed);
    return {
      type: 'tfjs',
      ...settings,
      initFrom: policy.initFrom,
      optimizer: { learningRate: config.sft?.learningRate ?? 1e-3, weightDecay: 0 },
    };
  }
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
  const named = config.searcher.adapters.policy;
  if (start.kind === 'latest') {
    const found = await readFirstCheckpoint(store, start.storeRuns);
    // A named policy that trains (the Llama engine) loads its checkpoints as the run's own does;
    // without one it starts from its own weights (the model it names).
    if (found) checkpoint = { from: `${found.runId}/${found.key}`, checkpoint: found.checkpoint };
    else if (named) {
      // Its own weights: nothing to load.
    } else if (config.policy?.initFrom && (await isModelFolder(config.policy.initFrom))) {
      // The policy is made from the folder (runPolicyAdapter): nothing to load into it.
    } else if (config.policy?.initFrom) {
      const read = await readNamedCheckpoint(config.policy.initFrom);
      checkpoint = { from: read.key, checkpoint: read.checkpoint };
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
    const policyFrom = named
      ? `searcher.adapters.policy (${named.type})${checkpoint ? ` from ${checkpoint.from}` : ''}`
      : (checkpoint?.from ??
        (config.policy?.initFrom && start.kind === 'latest'
          ? `${config.policy.initFrom} (model folder)`
          : 'fresh'));
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
