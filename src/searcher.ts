import { parseSearcherConfig, type SearcherConfig, type SearcherConfigInput } from './config';
import { InvalidArgumentError, ProviderCallError } from './core/errors';
import { sampleIdOf, type Episode } from './core/episode/run-episodes';
import { createEpisodeStages, type EpisodeGroup } from './core/pipeline/episode-stages';
import { withReliability } from './core/reliability/reliable-port';
import { runStepPipeline, type GroupResult, type PipelineMetrics, type PipelineMode } from './core/pipeline/step-pipeline';
import { REWARD_PRESETS, rewardValue, type RewardFailure, type RewardOutcome, type RewardWeights } from './core/reward/combine';
import type { BatchAdvantages } from './core/rl/advantages';
import { expandGroups } from './core/rl/groups';
import { updatePolicy, type PolicyUpdateSummary } from './core/rl/policy-update';
import { createRandom, type Random } from './core/random';
import type { PromptRecord } from './core/types';
import type { Clock } from './ports/clock';
import type { Generator } from './ports/generator';
import type { ImageOps } from './ports/image-ops';
import type { Judge } from './ports/judge';
import type { PolicyBackend } from './ports/policy-backend';
import type { SearchEngine } from './ports/search-engine';
import type { Store, StoreRecord } from './ports/store';

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
  /** Time for the pipeline's deadlines (default: the system clock). */
  clock?: Clock;
}

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

export interface ScoredBatch {
  /** Every finished episode, in group order then rollout order. */
  episodes: Episode[];
  /** One per episode: `null` when missing. */
  rewards: Array<number | null>;
  rewardDetails: RewardOutcome[];
  advantages: BatchAdvantages;
  /** Samples that have no episode at all. */
  lostSamples: LostSample[];
  /** The pipeline's coverage, failures by cause, peaks and step time. */
  pipeline: PipelineMetrics;
}

export interface Searcher {
  readonly config: SearcherConfig;
  readonly ports: Readonly<SearcherPorts>;
  /**
   * One step's rollouts and rewards through the pipeline: streaming (a group's rewards start as
   * soon as its rollouts end), synchronous or staged; caps and deadlines from `config.pipeline`.
   * With a `runId`, each group is stored as soon as it is assembled; a store write that fails is
   * retried once after the step, and if it fails again the call rejects with a ProviderCallError
   * (port `store`) that carries the whole batch as `error.batch`.
   */
  collect(prompts: readonly PromptRecord[], options?: CollectOptions): Promise<ScoredBatch>;
  /**
   * The policy update on scored episodes: `rl.ppoEpochs` passes, minibatches of `rl.miniBatchSize`
   * sequences (shuffled with `random`, default one seeded stream per searcher), the configured loss (GSPO or
   * PPO-clip, KL) over policy tokens only.
   */
  update(batch: ScoredBatch, options?: { signal?: AbortSignal; random?: Random }): Promise<PolicyUpdateSummary>;
}

function resolveWeights(config: SearcherConfig): RewardWeights {
  const w = config.reward.weights;
  return typeof w === 'string' ? { ...REWARD_PRESETS[w] } : w;
}

type PortPolicy = SearcherConfig['ports']['judge'];

/**
 * The container-free way to wire a Searcher: pass the ports, get the episode, reward and update
 * loop. Configuration is validated (an invalid field throws ConfigValidationError naming it).
 */
export function createSearcher(ports: SearcherPorts, config: SearcherConfigInput | SearcherConfig = {}): Searcher {
  if (!ports?.policy) throw new InvalidArgumentError('ports.policy', 'a PolicyBackend is required');
  if (!ports.searchEngine) throw new InvalidArgumentError('ports.searchEngine', 'a SearchEngine is required');
  const resolved = parseSearcherConfig(config);
  const weights = resolveWeights(resolved);
  if (resolved.episode.mode === 'searcher' && !ports.generator) {
    throw new InvalidArgumentError('ports.generator', "searcher mode needs a frozen Generator to answer from the evidence (or set episode.mode to 'answer')");
  }
  if (resolved.reward.scheme === 'searcher' && weights.judge !== 0 && !ports.judge) {
    throw new InvalidArgumentError('ports.judge', `the judge weight is ${weights.judge}; give a Judge or set reward.weights.judge to 0`);
  }
  // Every adapter gets the same timeouts, retries, caps and rate limits (the reliability layer).
  const reliable = <T extends { provider: string }>(port: T | undefined, name: 'searchEngine' | 'generator' | 'judge' | 'imageOps', policy: PortPolicy): T | undefined =>
    port && withReliability(port, name, policy, ports.clock ? { clock: ports.clock } : {});
  const searchEngine = reliable(ports.searchEngine, 'searchEngine', resolved.ports.searchEngine)!;
  const generator = reliable(ports.generator, 'generator', resolved.ports.generator);
  const judge = reliable(ports.judge, 'judge', resolved.ports.judge);
  const imageOps = reliable(ports.imageOps, 'imageOps', resolved.ports.imageOps);
  const episodePorts = { policy: ports.policy, searchEngine, ...(imageOps && { imageOps }) };
  const scoreSettings = { scheme: resolved.reward.scheme, weights, ndcgK: resolved.reward.ndcgK, ndcgIdeal: resolved.reward.ndcgIdeal };
  const advantageOptions = {
    std: resolved.rl.advantage.std,
    normalize: resolved.rl.advantage.normalize,
    dropZeroVarianceGroups: resolved.rl.advantage.dropZeroVarianceGroups,
    ...(resolved.rl.advantage.eps !== undefined && { eps: resolved.rl.advantage.eps }),
  };
  const signalOption = (signal?: AbortSignal) => (signal ? { signal } : {});
  // Minibatch order when the caller gives no generator: one stream for the searcher's life, so
  // successive updates do not repeat the same order.
  const updateRandom = createRandom(0, 5);

  const groupRecords = (group: EpisodeGroup, result: GroupResult<Episode>, runId: string, step: number): StoreRecord[] => {
    const time = Date.now();
    return result.samples.flatMap(({ index, sample, reward }) => {
      const instance = group.instances[index]!;
      const ids = { runId, step, promptUid: instance.prompt.uid, sampleId: sampleIdOf(group.groupId, index), rolloutIndex: index, time };
      const rewardRecord: StoreRecord = { kind: 'reward', ...ids, data: { reward: rewardValue(reward), advantage: sample?.trajectory.advantage ?? null, detail: reward } };
      return sample ? [{ kind: 'trajectory', ...ids, data: sample.trajectory } satisfies StoreRecord, rewardRecord] : [rewardRecord];
    });
  };

  return {
    config: resolved,
    ports,
    async collect(prompts, options = {}) {
      const instances = expandGroups(prompts, options.nAgent ?? resolved.rl.nAgent, { step: options.step ?? 0 });
      const groups: EpisodeGroup[] = [];
      for (const instance of instances) {
        const last = groups[groups.length - 1];
        if (last && last.groupId === instance.groupId) last.instances.push(instance);
        else groups.push({ groupId: instance.groupId, instances: [instance] });
      }
      const store = ports.store;
      const runId = options.runId;
      const step = options.step ?? 0;
      const result = await runStepPipeline({
        groups,
        stages: createEpisodeStages({ ...episodePorts, ...(generator && { generator }), ...(judge && { judge }) }, { episode: resolved.episode, maxEvidence: resolved.episode.maxEvidence, score: scoreSettings }),
        mode: options.mode ?? resolved.pipeline.mode,
        limits: resolved.pipeline.limits,
        deadlines: resolved.pipeline.deadlines,
        advantage: advantageOptions,
        ...(ports.clock && { clock: ports.clock }),
        ...signalOption(options.signal),
        onGroup: async (group) => {
          // Rewards land on the trajectories before they are stored, group by group.
          group.samples.forEach(({ sample, reward }, k) => {
            if (!sample) return;
            sample.trajectory.reward = rewardValue(reward);
            sample.trajectory.rewardDetail = reward;
            sample.trajectory.advantage = group.included[k] ? group.advantages[k]! : null;
          });
          if (store && runId !== undefined) await store.doAppend(groupRecords(groups[group.groupIndex]!, group, runId, step), signalOption(options.signal));
        },
      });
      let storeFailure: unknown = null;
      let unrecorded = 0;
      for (const { groupIndex } of result.callbackErrors) {
        try {
          await store!.doAppend(groupRecords(groups[groupIndex]!, result.groups[groupIndex]!, runId!, step), signalOption(options.signal));
        } catch (error) {
          storeFailure ??= error;
          unrecorded++;
        }
      }

      const batch: ScoredBatch = {
        episodes: [],
        rewards: [],
        rewardDetails: [],
        advantages: { advantages: [], included: [], groupCount: groups.length, droppedZeroVarianceGroups: 0, underfilledGroups: 0, missingRewards: 0 },
        lostSamples: [],
        pipeline: result.metrics,
      };
      for (const group of result.groups) {
        const valid = group.rewards.filter((r) => r !== null);
        if (valid.length < 2) batch.advantages.underfilledGroups++;
        else if (!group.included.some(Boolean)) batch.advantages.droppedZeroVarianceGroups++;
        group.samples.forEach(({ index, sample, reward }, k) => {
          if (reward.status === 'missing') batch.advantages.missingRewards++;
          if (!sample) {
            const instance = groups[group.groupIndex]!.instances[index]!;
            batch.lostSamples.push({ sampleId: sampleIdOf(instance.groupId, index), groupId: instance.groupId, promptUid: instance.prompt.uid, rolloutIndex: index, cause: (reward as Extract<RewardOutcome, { status: 'missing' }>).cause });
            return;
          }
          batch.episodes.push(sample);
          batch.rewards.push(group.rewards[k]!);
          batch.rewardDetails.push(reward);
          batch.advantages.advantages.push(group.advantages[k]!);
          batch.advantages.included.push(group.included[k]!);
        });
      }
      if (storeFailure !== null) {
        const error = new ProviderCallError({
          port: 'store',
          provider: store!.provider,
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
        { loss: resolved.rl.loss, ppoEpochs: resolved.rl.ppoEpochs, miniBatchSize: resolved.rl.miniBatchSize, entropyCoef: resolved.rl.entropyCoef, temperature: resolved.episode.temperature },
        { random: options.random ?? updateRandom, ...signalOption(options.signal) },
      );
    },
  };
}
