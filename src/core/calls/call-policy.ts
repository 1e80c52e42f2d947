import { InvalidArgumentError, type PortName } from '../errors';

/** How the gateway calls one port: docs/method.md#provider-calls. */
export interface CallPolicy {
  /** Per attempt; `null`: none. */
  timeoutMs: number | null;
  /** Retries after the first attempt, for retryable failures only. */
  maxRetries: number;
  /** Backoff: min(initial * 2^n, max), times a jitter in [0.75, 1] (openai-node's rule). */
  initialRetryDelayMs: number;
  maxRetryDelayMs: number;
  /** A server's Retry-After / retry-after-ms is honoured when in (0, this]. */
  maxRetryAfterMs: number;
  /** Calls in flight at once (`null`: no cap). */
  maxConcurrent: number | null;
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

/** Remote and local lookups (search, crops, answers, scores, embeddings): 60 s per attempt, two retries. */
export const DEFAULT_CALL_POLICY: Readonly<CallPolicy> = Object.freeze({
  timeoutMs: 60_000,
  maxRetries: 2,
  initialRetryDelayMs: 500,
  maxRetryDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
  maxConcurrent: null,
  requestsPerMinute: null,
  tokensPerMinute: null,
});

/**
 * Calls that change state cannot be repeated safely: a policy turn advances its rollout session,
 * a store append may have landed before it failed. One attempt, no timeout, unless configured.
 */
export const SINGLE_ATTEMPT_CALL_POLICY: Readonly<CallPolicy> = Object.freeze({
  ...DEFAULT_CALL_POLICY,
  timeoutMs: null,
  maxRetries: 0,
});

/** The ports a Searcher calls (the configuration's `calls` section); a run's trackers take their policy from their own settings. */
export type SearcherPortName = Exclude<PortName, 'tracker'>;

/**
 * A run's trackers (TensorBoard files, an MLflow server): 15 s per attempt, two retries. Their calls
 * run beside the training, which never waits on them; a tracker's log call repeated after a lost
 * answer changes nothing (MLflow keeps one metric per key, step, time and value).
 */
export const TRACKER_CALL_POLICY: Readonly<CallPolicy> = Object.freeze({
  ...DEFAULT_CALL_POLICY,
  timeoutMs: 15_000,
});

export const PORT_NAMES: readonly SearcherPortName[] = [
  'searchEngine',
  'generator',
  'judge',
  'imageOps',
  'embedder',
  'icdScorer',
  'policy',
  'store',
];

/** Each port's defaults (the configuration's `calls` section is built from these). */
export const DEFAULT_CALL_POLICIES: Readonly<Record<PortName, Readonly<CallPolicy>>> = Object.freeze({
  searchEngine: DEFAULT_CALL_POLICY,
  generator: DEFAULT_CALL_POLICY,
  judge: DEFAULT_CALL_POLICY,
  imageOps: DEFAULT_CALL_POLICY,
  embedder: DEFAULT_CALL_POLICY,
  icdScorer: DEFAULT_CALL_POLICY,
  policy: SINGLE_ATTEMPT_CALL_POLICY,
  store: SINGLE_ATTEMPT_CALL_POLICY,
  tracker: TRACKER_CALL_POLICY,
});

export type CallPolicies = Partial<Record<PortName, Partial<CallPolicy>>>;

/** A port's policy: its defaults with `overrides` on top, checked field by field. */
export function resolveCallPolicy(
  port: PortName,
  overrides: Partial<CallPolicy> = {},
  base: Readonly<CallPolicy> = DEFAULT_CALL_POLICIES[port],
): CallPolicy {
  const policy: CallPolicy = { ...base, ...overrides };
  const field = (name: keyof CallPolicy) => `calls.${port}.${name}`;
  const nullablePositive = (name: 'timeoutMs' | 'tokensPerMinute') => {
    const v = policy[name];
    if (v !== null && !(typeof v === 'number' && v > 0))
      throw new InvalidArgumentError({
        argument: field(name),
        message: `must be a number > 0 or null, got ${String(v)}`,
      });
  };
  nullablePositive('timeoutMs');
  nullablePositive('tokensPerMinute');
  if (!(Number.isInteger(policy.maxRetries) && policy.maxRetries >= 0))
    throw new InvalidArgumentError({
      argument: field('maxRetries'),
      message: `must be an integer >= 0, got ${String(policy.maxRetries)}`,
    });
  for (const name of ['initialRetryDelayMs', 'maxRetryDelayMs', 'maxRetryAfterMs'] as const) {
    if (!(typeof policy[name] === 'number' && policy[name] >= 0))
      throw new InvalidArgumentError({
        argument: field(name),
        message: `must be a number of milliseconds >= 0, got ${String(policy[name])}`,
      });
  }
  if (
    policy.maxConcurrent !== null &&
    !(Number.isInteger(policy.maxConcurrent) && policy.maxConcurrent >= 1)
  ) {
    throw new InvalidArgumentError({
      argument: field('maxConcurrent'),
      message: `must be an integer >= 1 or null, got ${String(policy.maxConcurrent)}`,
    });
  }
  if (
    policy.requestsPerMinute !== null &&
    !(Number.isFinite(policy.requestsPerMinute) && policy.requestsPerMinute >= 1)
  ) {
    throw new InvalidArgumentError({
      argument: field('requestsPerMinute'),
      message: `must be a number >= 1 or null, got ${String(policy.requestsPerMinute)}`,
    });
  }
  return policy;
}
