import {
  parseSearcherConfig,
  rewardSettingsOf,
  type SearcherConfig,
  type SearcherConfigInput,
} from './config';
import { createPortGateway } from './core/calls/gateway';
import { checkPortVersion } from './core/calls/port-version';
import { AbortedError, InvalidArgumentError, ProviderCallError } from './core/errors';
import { episodeContextTokens } from './core/episode/config';
import { checkPromptRecords } from './core/prompt-records';
import type { Episode } from './core/episode/run-episodes';
import { sampleIdOf } from './core/episode/instances';
import { createEpisodeStages, type EpisodeGroup, type EpisodeSample } from './core/pipeline/episode-stages';
import { runStepPipeline } from './core/pipeline/step-pipeline';
import type { GroupResult, PipelineMetrics, PipelineMode } from './core/pipeline/types';
import type { RewardFailure, RewardOutcome } from './core/reward/combine';
import { expandGroups } from './core/rl/groups';
import { updatePolicy, type PolicyUpdateSummary } from './core/rl/policy-update';
import { createRandom, RANDOM_STREAMS, type Random } from './core/random';
import type { PromptRecord } from './core/types';
import type { Clock } from './ports/clock';
import type { Generator } from './ports/generator';
import type { ImageOps } from './ports/image-ops';
import type { Judge } from './ports/judge';
import type { PolicyBackend } from './ports/policy-backend';
import type { SearchEngine } from './ports/search-engine';
import type { Store, StoreRecord } from './ports/store';
import { episodeEvents } from './core/events';

/**
 * The ports a Searcher calls: the policy, the search engine, and as the configuration needs them
 * the generator, judge, image ops, store and clock.
 */
export interface SearcherPorts {
  policy: PolicyBackend;
  searchEngine: SearchEngine;
  /** The frozen Generator (needed in `searcher` mode). */
  generator?: Generator;
  /** Needed when the judge weight is non-zero. */
  judge?: Judge;
  /** Needed for `<bbox>` crops. */
  imageOps?: ImageOps;
  /** Where trajectories and rewards are recorded when a `runId` is given. */
  store?: Store;
  /** Time for the pipeline's deadlines and the calls' timeouts (default: the system clock). */
  clock?: Clock;
  /** A frozen copy of the initial policy, the KL's reference when `rl.loss.klReference` is 'initial' (only its log-probs are used). */
  referencePolicy?: Pick<PolicyBackend, 'logProbs'>;
}

/** Options of `Searcher.collect`. */
export interface CollectOptions {
  /** Rollouts per prompt (default: config `rl.nAgent`). */
  nAgent?: number;
  step?: number;
  /** Record trajectories and rewards in the store under this run, group by group as they finish. */
  runId?: string;
  /** Override `pipeline.mode` for this call. */
  mode?: PipelineMode;
  signal?: AbortSignal;
}

/** A sample whose rollout never finished (deadline or failure): no trajectory, a missing reward. */
export interface LostSample {
  sampleId: string;
  groupId: string;
  promptUid: string;
  rolloutIndex: number;
  cause: RewardFailure;
}

/** One step's scored episodes, with their advantages, what failed and the pipeline's figures. */
export interface ScoredBatch {
  /**
   * Every finished episode, in group order then rollout order. Each trajectory is complete: the
   * Generator's answer, `reward` (`null` when missing), `rewardDetail` (its components or cause)
   * and `advantage` (`null` when the sample takes no part in the update).
   */
  episodes: Episode[];
  /** Samples that have no episode at all. */
  lostSamples: LostSample[];
  /** Groups by the group rule: usable, underfilled (fewer than two valid rewards), zero-variance (dropped). */
  groups: { count: number; usable: number; underfilled: number; zeroVarianceDropped: number };
  /** Samples (lost ones included) whose reward could not be computed. */
  missingRewards: number;
  /** The pipeline's coverage, failures by cause, peaks and step time. */
  pipeline: PipelineMetrics;
}

/**
 * The facade over the ports: `collect` runs a step of episodes and rewards, `update` trains the
 * policy on them. Made by `createSearcher` or the container.
 */
export interface Searcher {
  readonly config: SearcherConfig;
  readonly ports: Readonly<SearcherPorts>;
  /**
   * One step's rollouts and rewards through the pipeline: streaming (a group's rewards start as
   * soon as its rollouts end), synchronous or staged; caps and deadlines from `config.pipeline`,
   * each port called under `config.calls`. With a `runId`, each group is stored as soon as it is
   * assembled; a store write that fails is retried once after the step, and if it fails again
   * the call rejects with a ProviderCallError (port `store`) that carries the whole batch as `error.batch`.
   */
  collect(prompts: readonly PromptRecord[], options?: CollectOptions): Promise<ScoredBatch>;
  /**
   * The policy update on scored episodes: `rl.ppoEpochs` passes, minibatches of `rl.miniBatchSize`
   * sequences (shuffled with `random`, default one seeded stream per searcher), the configured loss (GSPO or
   * PPO-clip, KL) over policy tokens only.
   */
  update(
    batch: ScoredBatch,
    options?: { signal?: AbortSignal; random?: Random },
  ): Promise<PolicyUpdateSummary>;
  /**
   * Checks each port's setup that can be checked without a billed call (API keys, files), once;
   * `collect` does it before its first step, so a missing key fails there, not as missing rewards.
   */
  prepare(options?: { signal?: AbortSignal }): Promise<void>;
}

const REQUIRED_METHODS = {
  policy: ['begin', 'logProbs', 'update', 'save', 'load'],
  searchEngine: ['doSearch'],
  generator: ['doAnswer'],
  judge: ['doScore'],
  imageOps: ['doCrop'],
  store: ['doAppend', 'doQuery', 'doPutBlob', 'doGetBlob'],
} as const;

/** Each given port has the methods of its interface (a plain object missing one fails here, not at run time). */
function checkPorts(ports: SearcherPorts): void {
  for (const [name, methods] of Object.entries(REQUIRED_METHODS) as Array<
    [keyof typeof REQUIRED_METHODS, readonly string[]]
  >) {
    const port = ports[name] as unknown as Record<string, unknown> | undefined;
    if (port === undefined) continue;
    if (typeof port !== 'object' || port === null)
      throw new InvalidArgumentError({
        argument: `ports.${name}`,
        message: `must be an adapter object, got ${port === null ? 'null' : typeof port}`,
      });
    // The version first: an adapter of another version has other methods, and is refused as such.
    checkPortVersion(name, port);
    for (const method of methods) {
      if (typeof port[method] !== 'function')
        throw new InvalidArgumentError({
          argument: `ports.${name}.${method}`,
          message: `must be a function (is the object a ${name} adapter?)`,
        });
    }
    if (typeof port.provider !== 'string' || port.provider.length === 0)
      throw new InvalidArgumentError({
        argument: `ports.${name}.provider`,
        message: 'must be a non-empty string naming the adapter',
      });
  }
  const tokenizer = ports.policy.tokenizer as unknown as Record<string, unknown> | undefined;
  if (typeof tokenizer?.encode !== 'function' || typeof tokenizer.decode !== 'function')
    throw new InvalidArgumentError({
      argument: 'ports.policy.tokenizer',
      message: 'must be a Tokenizer with encode and decode',
    });
}

/**
 * The container-free way to wire a Searcher: pass the ports, get the episode, reward and update
 * loop. Configuration is validated (an invalid field throws ConfigValidationError naming it).
 */
export function createSearcher(
  ports: SearcherPorts,
  config: SearcherConfigInput | SearcherConfig = {},
): Searcher {
  if (!ports?.policy)
    throw new InvalidArgumentError({ argument: 'ports.policy', message: 'a PolicyBackend is required' });
  if (!ports.searchEngine)
    throw new InvalidArgumentError({ argument: 'ports.searchEngine', message: 'a SearchEngine is required' });
  checkPorts(ports);
  const resolved = parseSearcherConfig(config);
  const reward = rewardSettingsOf(resolved.reward);
  const { weights } = reward;
  // The episode's context follows the policy's; a larger one is refused now, not at every turn.
  episodeContextTokens(resolved.episode, ports.policy);
  const needsReference = resolved.reward.scheme === 'search-r1' || weights.judge !== 0;
  if (resolved.episode.mode === 'searcher' && !ports.generator) {
    throw new InvalidArgumentError({
      argument: 'ports.generator',
      message:
        "searcher mode needs a frozen Generator to answer from the evidence (or set episode.mode to 'answer')",
    });
  }
  if (resolved.reward.scheme === 'searcher' && weights.judge !== 0 && !ports.judge) {
    throw new InvalidArgumentError({
      argument: 'ports.judge',
      message: `the judge weight is ${weights.judge}; give a Judge or set reward.weights.judge to 0`,
    });
  }
  if (resolved.rl.loss.klReference === 'initial' && !ports.referencePolicy) {
    throw new InvalidArgumentError({
      argument: 'ports.referencePolicy',
      message:
        "rl.loss.klReference 'initial' needs a frozen copy of the initial policy (or set it to 'rollout')",
    });
  }
  const { clock, referencePolicy, ...portObjects } = ports;
  // Every port is called through one gateway: timeouts, retries, caps and rate limits per `config.calls`.
  const gateway = createPortGateway(portObjects, resolved.calls, clock ? { clock } : {});
  const stages = createEpisodeStages(
    gateway,
    {
      episode: resolved.episode,
      maxEvidence: resolved.episode.maxEvidence,
      reward,
    },
    ...(clock ? [clock] : []),
  );
  const advantageOptions = {
    std: resolved.rl.advantage.std,
    normalize: resolved.rl.advantage.normalize,
    dropZeroVarianceGroups: resolved.rl.advantage.dropZeroVarianceGroups,
    ...(resolved.rl.advantage.eps !== undefined && { eps: resolved.rl.advantage.eps }),
  };
  // Minibatch order when the caller gives no generator: one stream for the searcher's life, so
  // successive updates do not repeat the same order.
  const updateRandom = createRandom(0, RANDOM_STREAMS.searcherUpdates);

  const groupRecords = (
    group: EpisodeGroup,
    result: GroupResult<EpisodeSample>,
    runId: string,
    step: number,
  ): StoreRecord[] => {
    const time = Date.now();
    return result.samples.flatMap(({ index, sample, reward }) => {
      const instance = group.instances[index]!;
      const ids = {
        runId,
        step,
        promptUid: instance.prompt.uid,
        sampleId: sampleIdOf(group.groupId, index),
        rolloutIndex: index,
        time,
      };
      const rewardRecord: StoreRecord = {
        kind: 'reward',
        ...ids,
        data: {
          reward: result.rewards[index] ?? null,
          advantage: result.advantages[index] ?? null,
          detail: reward,
        },
      };
      if (!sample) return [rewardRecord];
      // The unified log (docs/method.md#unified-log): each turn's plan, search and bbox, the generator's answer and the reward detail.
      const events = episodeEvents(
        sample.episode.trajectory,
        runId,
        step,
        Object.keys(sample.latency).length > 0 ? sample.latency : undefined,
      ).map((event): StoreRecord => ({ kind: 'event', ...ids, data: event }));
      return [
        { kind: 'trajectory', ...ids, data: sample.episode.trajectory } satisfies StoreRecord,
        rewardRecord,
        ...events,
      ];
    });
  };

  let prepared: Promise<void> | null = null;
  const prepare = (signal?: AbortSignal) => {
    prepared ??= (async () => {
      for (const port of [
        ports.policy,
        ports.searchEngine,
        ports.generator,
        ports.judge,
        ports.imageOps,
        ports.store,
      ]) {
        if (signal?.aborted) throw new AbortedError({ what: 'prepare', cause: signal.reason });
        await port?.doCheck?.(signal ? { signal } : {});
      }
    })();
    // A failed check is not remembered: the next call checks again (the user may have set the key).
    prepared.catch(() => {
      prepared = null;
    });
    return prepared;
  };

  return {
    config: resolved,
    ports,
    prepare: (options = {}) => prepare(options.signal),
    async collect(prompts, options = {}) {
      checkPromptRecords(prompts, { needsReference });
      await prepare(options.signal);
      const instances = expandGroups(prompts, options.nAgent ?? resolved.rl.nAgent, {
        step: options.step ?? 0,
      });
      const groups: EpisodeGroup[] = [];
      for (const instance of instances) {
        const last = groups[groups.length - 1];
        if (last && last.groupId === instance.groupId) last.instances.push(instance);
        else groups.push({ groupId: instance.groupId, instances: [instance] });
      }
      const runId = options.runId;
      const step = options.step ?? 0;
      const signal = options.signal;
      const record =
        ports.store && runId !== undefined
          ? (group: GroupResult<EpisodeSample>) =>
              gateway.appendRecords(groupRecords(groups[group.groupIndex]!, group, runId, step), signal)
          : undefined;
      const result = await runStepPipeline({
        groups,
        stages,
        mode: options.mode ?? resolved.pipeline.mode,
        limits: resolved.pipeline.limits,
        deadlines: resolved.pipeline.deadlines,
        advantage: advantageOptions,
        ...(clock && { clock }),
        ...(signal && { signal }),
        // Trajectories are complete (answer, reward, advantage) when a group is assembled; it is stored at once.
        ...(record && { onGroup: record }),
      });
      let storeFailure: unknown = null;
      let unrecorded = 0;
      for (const { groupIndex } of result.callbackErrors) {
        try {
          await record!(result.groups[groupIndex]!);
        } catch (error) {
          storeFailure ??= error;
          unrecorded++;
        }
      }

      const batch: ScoredBatch = {
        episodes: [],
        lostSamples: [],
        groups: { count: groups.length, usable: 0, underfilled: 0, zeroVarianceDropped: 0 },
        missingRewards: 0,
        pipeline: result.metrics,
      };
      for (const group of result.groups) {
        if (group.status === 'usable') batch.groups.usable++;
        else if (group.status === 'underfilled') batch.groups.underfilled++;
        else batch.groups.zeroVarianceDropped++;
        for (const { index, sample, reward } of group.samples) {
          if (reward.status === 'missing') batch.missingRewards++;
          if (sample) {
            batch.episodes.push(sample.episode);
            continue;
          }
          const instance = groups[group.groupIndex]!.instances[index]!;
          batch.lostSamples.push({
            sampleId: sampleIdOf(instance.groupId, index),
            groupId: instance.groupId,
            promptUid: instance.prompt.uid,
            rolloutIndex: index,
            cause: (reward as Extract<RewardOutcome, { status: 'missing' }>).cause,
          });
        }
      }
      if (storeFailure !== null) {
        const error = new ProviderCallError({
          port: 'store',
          provider: ports.store!.provider,
          isRetryable: true,
          message: `could not record ${unrecorded} group(s) of step ${step}: ${storeFailure instanceof Error ? storeFailure.message : String(storeFailure)}; the batch is in error.batch`,
          cause: storeFailure,
        });
        throw Object.assign(error, { batch });
      }
      return batch;
    },
    async update(batch, options = {}) {
      return updatePolicy(
        ports.policy,
        batch.episodes.map((e) => e.trajectory),
        {
          loss: resolved.rl.loss,
          ppoEpochs: resolved.rl.ppoEpochs,
          miniBatchSize: resolved.rl.miniBatchSize,
          entropyCoef: resolved.rl.entropyCoef,
          temperature: resolved.episode.temperature,
          stateMasking: resolved.rl.stateMasking,
        },
        {
          random: options.random ?? updateRandom,
          ...(options.signal && { signal: options.signal }),
          ...(referencePolicy && { reference: referencePolicy }),
        },
      );
    },
  };
}
