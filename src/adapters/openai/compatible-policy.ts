import type OpenAI from 'openai';
import { z } from 'zod';
import { AbortedError, InvalidArgumentError, PortOutputError } from '../../core/errors';
import { maxTokensAt } from '../../core/episode/token-budget';
import { DEFAULT_CALL_POLICY, type CallPolicy } from '../../core/calls/call-policy';
import { createReliableCaller, type ReliabilityDeps } from '../../core/calls/reliable-call';
import { parseSettings, registerSecret } from '../../provider-utils/index';
import { positiveInt } from '../../provider-utils/settings';
import type { CallOptions } from '../../ports/common';
import type {
  AppendOptions,
  GenerateTurnOptions,
  LogProbBatch,
  PolicyBackend,
  PolicyCheckpoint,
  RolloutSession,
  TurnOutput,
  UpdateResult,
} from '../../ports/policy-backend';
import type { TokenStep, Tokenizer } from '../../ports/types';
import { createOpenAIClient } from './client';
import { checkCheckpointFormat } from '../../provider-utils/checkpoint-format';
import { sessionRowLookup } from '../../rollout-engine/batch-checks';

/**
 * The OpenAI-compatible policy's settings as a zod schema: the server, the model, the key and extra
 * request fields.
 */
const settingsSchema = z
  .object({
    /** The server's OpenAI-compatible root, e.g. http://127.0.0.1:8000/v1 (vLLM). */
    baseURL: z.string().url(),
    model: z.string().min(1),
    /**
     * Default: OPENAI_COMPATIBLE_API_KEY, else "EMPTY" (vLLM without --api-key accepts any).
     * Never OPENAI_API_KEY: that key is OpenAI's, not this server's.
     */
    apiKey: z.string().min(1).optional(),
    /** Extra request fields for the server (sampling extensions, priorities). */
    extraBody: z.record(z.string(), z.unknown()).optional(),
    /**
     * The largest response body read, in bytes; a larger one is a ProviderCallError (not retried).
     * A turn's answer is kilobytes; prompt_logprobs of a 32k-token sequence are a few megabytes.
     */
    maxResponseBytes: positiveInt().default(32 * 2 ** 20),
  })
  .strict();

/** Settings of `createOpenAICompatiblePolicy`. */
export interface OpenAICompatibleSettings extends z.input<typeof settingsSchema> {
  /** The served model's tokenizer, locally (token ids in trajectories are the server's). */
  tokenizer: Tokenizer;
  /** The served model's context length (vLLM's max_model_len): an episode's context follows it. */
  contextLength?: number;
  /** Retries, timeouts and limits for the HTTP calls (the core's reliability rule). */
  reliability?: Partial<CallPolicy>;
  /** Clock, jitter and retry hooks of the reliability rule (for tests). */
  reliabilityDeps?: ReliabilityDeps;
}

/** A `/v1/completions` request on token ids, and the fields this adapter reads back. */
export interface CompletionRequest {
  prompt: number[];
  max_tokens: number;
  temperature?: number;
  top_p?: number;
  logprobs?: number;
  stop?: string[];
  prompt_logprobs?: number;
  [extension: string]: unknown;
}

/** The choice of a `/v1/completions` reply: its text, why it stopped, and the log-probs. */
export interface CompletionChoice {
  text: string;
  finish_reason: string | null;
  logprobs?: { tokens?: string[]; token_logprobs?: Array<number | null> } | null;
  prompt_logprobs?: Array<Record<string, { logprob: number }> | null> | null;
}

/** The raw HTTP client: one attempt per call (the policy calls it through a reliable caller). */
export interface CompletionsClient {
  readonly provider: string;
  /** Sends one completion request and returns its first choice. */
  doComplete(request: CompletionRequest, options?: CallOptions): Promise<CompletionChoice>;
}

export function createOpenAICompatibleCompletions(
  settings: z.input<typeof settingsSchema>,
): CompletionsClient {
  const config = parseSettings('createOpenAICompatiblePolicy', settingsSchema, settings);
  const provider = `openai-compatible:${config.model}`;
  const client = createOpenAIClient({
    caller: { port: 'policy', provider },
    // This server's key, never OPENAI_API_KEY (OpenAI's); vLLM without --api-key accepts any.
    resolveKey: () => {
      const key = config.apiKey ?? (process.env.OPENAI_COMPATIBLE_API_KEY || undefined) ?? 'EMPTY';
      // Redacted from every error, log and record from now on ('EMPTY' is too short to register).
      registerSecret(key);
      return key;
    },
    baseURL: config.baseURL,
    maxResponseBytes: config.maxResponseBytes,
  });
  return {
    provider,
    async doComplete(request, options) {
      // The prompt is token ids (token-in/token-out); the extension fields are vLLM's.
      const response = await client.call(
        (openai, signal) =>
          openai.completions.create(
            {
              model: config.model,
              ...config.extraBody,
              ...request,
            } as unknown as OpenAI.CompletionCreateParamsNonStreaming,
            { signal },
          ),
        options,
      );
      const choice = response?.choices?.[0] as CompletionChoice | undefined;
      if (!choice || typeof choice.text !== 'string')
        throw new PortOutputError({
          port: 'policy',
          provider,
          field: 'choices[0].text',
          message: 'the response has no choices[0].text',
        });
      return choice;
    },
  };
}

/** `token_id:123` (vLLM's return_tokens_as_token_ids) -> 123. */
function tokenIdOf(token: string, provider: string, field: string): number {
  const match = /^token_id:(\d+)$/.exec(token);
  if (!match) {
    throw new PortOutputError({
      port: 'policy',
      provider,
      field,
      message: `expected "token_id:<id>" (serve with vLLM and send return_tokens_as_token_ids), got ${JSON.stringify(token)}`,
    });
  }
  return Number(match[1]);
}

/**
 * A Searcher policy served by an OpenAI-compatible server (vLLM): rollouts of a large model run
 * from TypeScript, and their trajectories carry the token ids the server sampled with their
 * log-probs, like the in-process policy's. Each turn sends the rollout's whole token sequence
 * (the server's prefix cache keeps it cheap). Training is not done through this adapter.
 *
 * Log-probs are "under the sampling policy" only if the server reports them after temperature
 * and top-p: start vLLM with `--logprobs-mode processed_logprobs` (its default reports raw ones).
 */
export function createOpenAICompatiblePolicy(settings: OpenAICompatibleSettings): PolicyBackend {
  const { tokenizer, reliability, reliabilityDeps, contextLength: _contextLength, ...rest } = settings;
  if (!tokenizer || typeof tokenizer.encode !== 'function')
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      message: "the served model's tokenizer is required (token ids must match the server's)",
    });
  const client = createOpenAICompatibleCompletions(rest);
  const provider = client.provider;
  // Each HTTP call starts from the rollout's whole sequence, so it can be repeated: the remote-call defaults apply.
  const caller = createReliableCaller(
    'policy',
    provider,
    { ...DEFAULT_CALL_POLICY, ...reliability },
    reliabilityDeps,
  );
  const completions = {
    doComplete: (request: CompletionRequest, options: CallOptions = {}) =>
      caller.call('complete', (signal) => client.doComplete(request, { signal }), {
        args: [request],
        ...(options.signal && { signal: options.signal }),
      }),
  };

  const turnFor = async (
    sequence: number[],
    maxTokens: number,
    options: GenerateTurnOptions,
  ): Promise<{ steps: TokenStep[]; finishReason: TurnOutput['finishReason'] }> => {
    if (maxTokens <= 0) return { steps: [], finishReason: 'length' };
    const choice = await completions.doComplete(
      {
        prompt: sequence,
        max_tokens: maxTokens,
        temperature: options.temperature,
        top_p: options.topP,
        logprobs: 1,
        stop: [...options.stopAfter],
        include_stop_str_in_output: true,
        return_tokens_as_token_ids: true,
        skip_special_tokens: false,
      },
      { ...(options.signal && { signal: options.signal }) },
    );
    const tokens = choice.logprobs?.tokens;
    const logProbs = choice.logprobs?.token_logprobs;
    if (!Array.isArray(tokens) || !Array.isArray(logProbs) || tokens.length !== logProbs.length) {
      throw new PortOutputError({
        port: 'policy',
        provider,
        field: 'choices[0].logprobs',
        message: 'expected tokens and token_logprobs of equal length (send logprobs: 1)',
      });
    }
    const start = sequence.length;
    const steps = tokens.map((token, k) => {
      const tokenId = tokenIdOf(token, provider, `choices[0].logprobs.tokens[${k}]`);
      const logProb = logProbs[k];
      if (typeof logProb !== 'number')
        throw new PortOutputError({
          port: 'policy',
          provider,
          field: `choices[0].logprobs.token_logprobs[${k}]`,
          message: 'expected a number',
        });
      return { tokenId, tokenText: tokenizer.tokenText(tokenId), logProb, position: start + k };
    });
    const text = choice.text;
    const finishReason: TurnOutput['finishReason'] = options.stopAfter.some((stop) => text.endsWith(stop))
      ? 'stop'
      : choice.finish_reason === 'length'
        ? 'length'
        : 'eos';
    return { steps, finishReason };
  };

  return {
    specificationVersion: 'v1',
    provider,
    modalities: 'text',
    tokenizer,
    trainable: false,
    ...(settings.contextLength !== undefined && { contextLength: settings.contextLength }),
    async begin(promptTokenIds, options?: CallOptions): Promise<RolloutSession> {
      if (options?.signal?.aborted) throw new AbortedError({ what: 'begin', cause: options.signal.reason });
      const sequences = promptTokenIds.map((ids) => [...ids]);
      let ended = false;
      const rowOf = sessionRowLookup(sequences, () => ended);
      const sequenceOf = (id: number) => rowOf(id, 'rolloutId');
      return {
        size: sequences.length,
        async generateTurn(rolloutIds, options) {
          return Promise.all(
            rolloutIds.map(async (rolloutId, k) => {
              const sequence = sequenceOf(rolloutId);
              const { steps, finishReason } = await turnFor(sequence, maxTokensAt(options, k), options);
              for (const step of steps) sequence.push(step.tokenId);
              return { rolloutId, steps, finishReason };
            }),
          );
        },
        async append(rolloutId, tokenIds, _options?: AppendOptions) {
          sequenceOf(rolloutId).push(...tokenIds);
        },
        async end() {
          ended = true;
        },
      };
    },
    async logProbs(batch: LogProbBatch, options?: CallOptions): Promise<number[][]> {
      // vLLM's prompt_logprobs are taken at temperature 1, whatever the request's temperature.
      if (batch.temperature !== undefined && batch.temperature !== 1 && batch.temperature !== 0) {
        throw new InvalidArgumentError({
          argument: 'batch.temperature',
          message: `vLLM's prompt_logprobs are at temperature 1; got ${batch.temperature}`,
        });
      }
      return Promise.all(
        batch.inputIds.map(async (ids, i) => {
          const positions = batch.positions[i] ?? [];
          const last = Math.max(0, ...positions);
          const prompt = ids.slice(0, last + 1);
          // vLLM's prompt_logprobs gives, for every prompt position, the log-prob of the token there.
          const choice = await completions.doComplete(
            { prompt, max_tokens: 1, temperature: 0, prompt_logprobs: 0 },
            { ...(options?.signal && { signal: options.signal }) },
          );
          const table = choice.prompt_logprobs;
          if (!Array.isArray(table))
            throw new PortOutputError({
              port: 'policy',
              provider,
              field: 'choices[0].prompt_logprobs',
              message: 'expected per-position log-probs (vLLM prompt_logprobs)',
            });
          return positions.map((position) => {
            if (position <= 0)
              throw new InvalidArgumentError({
                argument: `batch.positions[${i}]`,
                message: 'position 0 has no log-prob (nothing precedes it)',
              });
            const entry = table[position]?.[String(prompt[position])];
            if (typeof entry?.logprob !== 'number')
              throw new PortOutputError({
                port: 'policy',
                provider,
                field: `choices[0].prompt_logprobs[${position}]`,
                message: `no log-prob for token ${prompt[position]}`,
              });
            return entry.logprob;
          });
        }),
      );
    },
    async update(): Promise<UpdateResult> {
      throw new InvalidArgumentError({
        argument: 'policy',
        message: `'${provider}' runs rollouts only; train with an in-process policy backend (trainable: false)`,
      });
    },
    async save(): Promise<PolicyCheckpoint> {
      return {
        format: 'openai-compatible-v1',
        metadata: { baseURL: rest.baseURL, model: rest.model },
        blobs: {},
      };
    },
    async load(checkpoint: PolicyCheckpoint): Promise<void> {
      checkCheckpointFormat(checkpoint, 'openai-compatible-v1');
    },
  };
}
