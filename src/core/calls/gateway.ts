import { InvalidArgumentError, type PortName } from '../errors';
import type { Embedder, EmbeddingInput } from '../../ports/embedder';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import type {
  AppendOptions,
  GenerateTurnOptions,
  PolicyBackend,
  RolloutSession,
} from '../../ports/policy-backend';
import type { SearchEngine } from '../../ports/search-engine';
import type { Store, StoreRecord } from '../../ports/store';
import type { BoundingBox, Evidence, PageImage, SearchHit } from '../../ports/types';
import { SINGLE_ATTEMPT_CALL_POLICY, type CallPolicies, type CallPolicy } from './call-policy';
import { checkSession, checkTurnOutputs, type TurnResult } from './outputs';
import { checkPortVersion } from './port-version';
import { createReliableCaller, type ReliabilityDeps } from './reliable-call';
import { withReliability } from './with-reliability';

/** The ports one gateway serves; a call to a port that is absent says which one is missing. */
export interface GatewayPorts {
  searchEngine?: SearchEngine;
  generator?: Generator;
  judge?: Judge;
  imageOps?: ImageOps;
  embedder?: Embedder;
  policy?: PolicyBackend;
  store?: Store;
}

/**
 * The core's one way to call a port: a typed function per operation, each doing abort, timeout
 * and retries, rate limits, output validation and failure typing (docs/method.md#provider-calls).
 * A port's calls share one caller, so its concurrency cap and rate limits hold across them.
 */
export interface PortGateway {
  readonly ports: Readonly<GatewayPorts>;
  /** Hits for `query`, best first, each with a non-empty basename. */
  search(query: string, topK: number, signal?: AbortSignal): Promise<SearchHit[]>;
  /** The region (source pixels, already validated) cut out and enlarged to `minOutputSide`. */
  crop(
    image: PageImage,
    region: BoundingBox,
    options?: { minOutputSide?: number; signal?: AbortSignal },
  ): Promise<PageImage>;
  /** The frozen Generator's answer from the evidence. */
  answer(question: string, evidence: readonly Evidence[], signal?: AbortSignal): Promise<GeneratorAnswer>;
  /** The judge's verdict; a score outside [0, 1] is a failed call. */
  score(question: string, answer: string, reference: string, signal?: AbortSignal): Promise<JudgeVerdict>;
  /** One vector of the embedder's dimensions per item. */
  embed(items: readonly EmbeddingInput[], signal?: AbortSignal): Promise<number[][]>;
  /** Appends records to the store through the store's reliability lane. */
  appendRecords(records: readonly StoreRecord[], signal?: AbortSignal): Promise<void>;
  /** A rollout session of `promptTokenIds.length` rollouts (ended again if the policy answers with another size). */
  beginSession(promptTokenIds: readonly (readonly number[])[], signal?: AbortSignal): Promise<RolloutSession>;
  /** The next turn of each listed rollout: its output, or why that rollout's output is unusable. */
  generateTurn(
    session: RolloutSession,
    rolloutIds: readonly number[],
    options: GenerateTurnOptions,
  ): Promise<TurnResult[]>;
  /**
   * Appends observation tokens to one rollout of a session through the policy's reliability lane.
   */
  appendObservation(
    session: RolloutSession,
    rolloutId: number,
    tokenIds: readonly number[],
    options?: AppendOptions,
  ): Promise<void>;
}

const NEEDS: Record<PortName, string> = {
  searchEngine: 'a SearchEngine',
  generator: 'a Generator',
  judge: 'a Judge',
  imageOps: 'an ImageOps',
  embedder: 'an Embedder',
  icdScorer: 'an IcdScorer',
  policy: 'a PolicyBackend',
  store: 'a Store',
  tracker: 'a Tracker',
};

/**
 * Builds the gateway over the given ports, each with its call policy (`policies[port]` over the
 * port's defaults, DEFAULT_CALL_POLICIES). Pass `single attempt` policies to call ports plainly.
 */
export function createPortGateway(
  ports: GatewayPorts,
  policies: CallPolicies = {},
  deps: ReliabilityDeps = {},
): PortGateway {
  const missing = (name: PortName) =>
    new InvalidArgumentError({
      argument: `ports.${name}`,
      message: `this call needs ${NEEDS[name]}, and none was given`,
    });
  // Each port is wrapped once, up front (a bad call policy or an unsupported specification version
  // fails here), so that its concurrency cap and rate limits hold across every call made through the gateway.
  const searchEngine =
    ports.searchEngine && withReliability(ports.searchEngine, 'searchEngine', policies.searchEngine, deps);
  const generator =
    ports.generator && withReliability(ports.generator, 'generator', policies.generator, deps);
  const judge = ports.judge && withReliability(ports.judge, 'judge', policies.judge, deps);
  const imageOps = ports.imageOps && withReliability(ports.imageOps, 'imageOps', policies.imageOps, deps);
  const embedder = ports.embedder && withReliability(ports.embedder, 'embedder', policies.embedder, deps);
  const store = ports.store && withReliability(ports.store, 'store', policies.store, deps);
  const policy = ports.policy;
  if (policy) checkPortVersion('policy', policy);
  const policyCaller = policy && createReliableCaller('policy', policy.provider, policies.policy, deps);
  const policyLane = () => {
    if (!policy || !policyCaller) throw missing('policy');
    return { policy, caller: policyCaller };
  };

  return {
    ports,
    async search(query, topK, signal) {
      if (!searchEngine) throw missing('searchEngine');
      return searchEngine.doSearch(query, { topK, ...(signal && { signal }) });
    },
    async crop(image, region, options = {}) {
      if (!imageOps) throw missing('imageOps');
      return imageOps.doCrop(image, region, options);
    },
    async answer(question, evidence, signal) {
      if (!generator) throw missing('generator');
      return generator.doAnswer(question, evidence, signal && { signal });
    },
    async score(question, answer, reference, signal) {
      if (!judge) throw missing('judge');
      return judge.doScore(question, answer, reference, signal && { signal });
    },
    async embed(items, signal) {
      if (!embedder) throw missing('embedder');
      return embedder.doEmbed(items, signal && { signal });
    },
    async appendRecords(records, signal) {
      if (!store) throw missing('store');
      await store.doAppend(records, signal && { signal });
    },
    async beginSession(promptTokenIds, signal) {
      const { policy: backend, caller } = policyLane();
      const session = await caller.call('begin', (s) => backend.begin(promptTokenIds, { signal: s }), {
        args: [promptTokenIds],
        signal,
      });
      try {
        return checkSession(session, promptTokenIds.length, backend.provider);
      } catch (error) {
        await (session as Partial<RolloutSession> | undefined)?.end?.();
        throw error;
      }
    },
    async generateTurn(session, rolloutIds, options) {
      const { policy: backend, caller } = policyLane();
      const outputs = await caller.call(
        'generateTurn',
        (s) => session.generateTurn(rolloutIds, { ...options, signal: s }),
        { args: [options.maxTokens], signal: options.signal },
      );
      return checkTurnOutputs(outputs, rolloutIds, backend.provider);
    },
    async appendObservation(session, rolloutId, tokenIds, options = {}) {
      const { caller } = policyLane();
      const { signal, ...rest } = options;
      await caller.call('append', (s) => session.append(rolloutId, tokenIds, { ...rest, signal: s }), {
        args: [tokenIds],
        signal,
      });
    },
  };
}

/** Every port called once per call, no timeout, no retry: what a plain call of the port would do, typed and validated. */
export function singleAttemptPolicies(): CallPolicies {
  const once: Partial<CallPolicy> = { ...SINGLE_ATTEMPT_CALL_POLICY };
  return {
    searchEngine: once,
    generator: once,
    judge: once,
    imageOps: once,
    embedder: once,
    icdScorer: once,
    policy: once,
    store: once,
  };
}
