import OpenAI from 'openai';
import { z } from 'zod';
import { AbortedError, PortOutputError, ProviderCallError, resolveApiKey, settingsError, type PortName } from '../../core/errors';
import { isConnectionError, parseRetryAfter, redactSecrets } from '../../core/reliability/reliable-port';
import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import { GENERATOR_INSTRUCTIONS, JUDGE_INSTRUCTIONS, judgePrompt, parseJudgeScore } from '../../core/providers/prompts';
import type { Evidence } from '../../ports/types';

const settingsSchema = z
  .object({
    model: z.string().min(1),
    /** Default: the OPENAI_API_KEY environment variable, read at the first call. */
    apiKey: z.string().min(1).optional(),
    /** An OpenAI-compatible endpoint (Azure, a proxy, a local server). */
    baseURL: z.string().url().optional(),
    organization: z.string().optional(),
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    instructions: z.string().optional(),
  })
  .strict();

export type OpenAISettings = z.input<typeof settingsSchema>;

function parseSettings(factory: string, settings: unknown): z.output<typeof settingsSchema> {
  const result = settingsSchema.safeParse(settings);
  if (result.success) return result.data;
  throw settingsError(factory, result.error.issues);
}

/** One client per adapter, made at the first call so that a missing key fails then, saying how to fix it. */
function lazyClient(factory: string, settings: z.output<typeof settingsSchema>) {
  let client: OpenAI | null = null;
  let key: string | undefined;
  return {
    get(): OpenAI {
      if (client) return client;
      key = resolveApiKey(settings.apiKey, process.env, ['OPENAI_API_KEY'], { vendor: 'OpenAI', factory });
      // Retries and timeouts are the core's (withReliability): the SDK makes one attempt.
      client = new OpenAI({ apiKey: key, baseURL: settings.baseURL, organization: settings.organization, maxRetries: 0, timeout: 10 * 60_000 });
      return client;
    },
    /** One Responses API call, its failures typed for the reliability layer. */
    async create(port: PortName, provider: string, body: OpenAI.Responses.ResponseCreateParamsNonStreaming, options?: CallOptions): Promise<OpenAI.Responses.Response> {
      const openai = this.get();
      try {
        return await openai.responses.create(body, { signal: options?.signal });
      } catch (error) {
        throw toProviderError(error, port, provider, key, options?.signal);
      }
    },
  };
}

/** Maps the SDK's errors to typed ones, with the status and Retry-After, and no secret in the message. */
function toProviderError(error: unknown, port: PortName, provider: string, secret: string | undefined, signal?: AbortSignal): Error {
  if (signal?.aborted || error instanceof OpenAI.APIUserAbortError) return new AbortedError(`${port} '${provider}' call`, { cause: signal?.reason });
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    return new ProviderCallError({ port, provider, status: error.status, retryAfterMs: parseRetryAfter(error.headers as Headers | undefined), message: redactSecrets(error.message, [secret]) });
  }
  const message = redactSecrets(error instanceof Error ? error.message : String(error), [secret]);
  // A body that does not parse is not retried: the call may have been done (and billed) already.
  if (error instanceof SyntaxError) return new ProviderCallError({ port, provider, message: `malformed response body: ${message}`, isRetryable: false });
  return new ProviderCallError({ port, provider, message, isRetryable: error instanceof OpenAI.APIConnectionError || isConnectionError(error) });
}

type InputContent = { type: 'input_text'; text: string } | { type: 'input_image'; image_url: string; detail: 'auto' };

const SENDABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

/** The question, then each evidence item: its image (base64) where the API can read it, else its text. */
export function evidenceContent(question: string, evidence: readonly Evidence[]): InputContent[] {
  const content: InputContent[] = [{ type: 'input_text', text: `Question: ${question}` }];
  evidence.forEach((item, i) => {
    const label = item.kind === 'crop' ? `Evidence ${i + 1}: enlarged crop of ${item.basename}` : `Evidence ${i + 1}: page ${item.basename}`;
    if (item.image && SENDABLE_IMAGES.has(item.image.mimeType)) {
      content.push({ type: 'input_text', text: label });
      content.push({ type: 'input_image', image_url: `data:${item.image.mimeType};base64,${Buffer.from(item.image.bytes).toString('base64')}`, detail: 'auto' });
    } else {
      content.push({ type: 'input_text', text: `${label}${item.text ? `\n${item.text}` : ' (no readable content)'}` });
    }
  });
  return content;
}

/** The frozen Generator on the OpenAI Responses API: answers from the evidence images. */
export function createOpenAIGenerator(settings: OpenAISettings): Generator {
  const resolved = parseSettings('createOpenAIGenerator', settings);
  const client = lazyClient('createOpenAIGenerator', resolved);
  const provider = `openai:${resolved.model}`;
  return {
    specificationVersion: 'v1',
    provider,
    async doAnswer(question: string, evidence: readonly Evidence[], options?: CallOptions): Promise<GeneratorAnswer> {
      const response = await client.create(
        'generator',
        provider,
        {
          model: resolved.model,
          instructions: resolved.instructions ?? GENERATOR_INSTRUCTIONS,
          input: [{ role: 'user', content: evidenceContent(question, evidence) }],
          ...(resolved.reasoningEffort && { reasoning: { effort: resolved.reasoningEffort } }),
          ...(resolved.maxOutputTokens && { max_output_tokens: resolved.maxOutputTokens }),
        },
        options,
      );
      const answer = typeof response?.output_text === 'string' ? response.output_text.trim() : undefined;
      if (answer === undefined) throw new PortOutputError({ port: 'generator', provider, field: 'output_text', message: 'the response has no output text' });
      // A cut-off answer ("The revenue was 4.") must not be graded as if it were the answer.
      if (response.status === 'incomplete') {
        throw new PortOutputError({ port: 'generator', provider, field: 'output_text', message: `incomplete response (${response.incomplete_details?.reason ?? 'unknown reason'}); raise maxOutputTokens` });
      }
      return { answer, ...(response.usage && { usage: { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens } }) };
    },
  };
}

/** The LLM judge on the OpenAI Responses API, with structured output `{score}` (seed 000 section 9.4.3). */
export function createOpenAIJudge(settings: OpenAISettings): Judge {
  const resolved = parseSettings('createOpenAIJudge', settings);
  const client = lazyClient('createOpenAIJudge', resolved);
  const provider = `openai:${resolved.model}`;
  return {
    specificationVersion: 'v1',
    provider,
    async doScore(question: string, answer: string, reference: string, options?: CallOptions): Promise<JudgeVerdict> {
      const response = await client.create(
        'judge',
        provider,
        {
          model: resolved.model,
          instructions: resolved.instructions ?? JUDGE_INSTRUCTIONS,
          input: [{ role: 'user', content: [{ type: 'input_text', text: judgePrompt(question, answer, reference) }] }],
          text: {
            format: {
              type: 'json_schema',
              name: 'judge_score',
              strict: true,
              schema: { type: 'object', properties: { score: { type: 'number', minimum: 0, maximum: 1 } }, required: ['score'], additionalProperties: false },
            },
          },
          ...(resolved.reasoningEffort && { reasoning: { effort: resolved.reasoningEffort } }),
          ...(resolved.maxOutputTokens && { max_output_tokens: resolved.maxOutputTokens }),
        },
        options,
      );
      const raw = typeof response?.output_text === 'string' ? response.output_text : '';
      return { score: parseJudgeScore(raw, 'judge', provider), raw };
    },
  };
}
