import { ApiError, GoogleGenAI, type GenerateContentConfig, type GenerateContentResponse, type Part } from '@google/genai';
import { z } from 'zod';
import { AbortedError, PortOutputError, ProviderCallError, resolveApiKey, settingsError, type PortName } from '../../core/errors';
import { GENERATOR_INSTRUCTIONS, JUDGE_INSTRUCTIONS, judgePrompt, parseJudgeScore } from '../../core/providers/prompts';
import { isConnectionError, parseRetryAfter, redactSecrets } from '../../core/reliability/reliable-port';
import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import type { Evidence } from '../../ports/types';

const settingsSchema = z
  .object({
    model: z.string().min(1),
    /** Default: GEMINI_API_KEY, then GOOGLE_API_KEY, read at the first call. */
    apiKey: z.string().min(1).optional(),
    /** Another endpoint (a proxy, a local server). */
    baseUrl: z.string().url().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    /** Thinking budget in tokens (0 turns thinking off where the model allows). */
    thinkingBudget: z.number().int().min(0).optional(),
    instructions: z.string().optional(),
  })
  .strict();

export type GeminiSettings = z.input<typeof settingsSchema>;

function parseSettings(factory: string, settings: unknown): z.output<typeof settingsSchema> {
  const result = settingsSchema.safeParse(settings);
  if (result.success) return result.data;
  throw settingsError(factory, result.error.issues);
}

function lazyClient(factory: string, settings: z.output<typeof settingsSchema>) {
  let client: GoogleGenAI | null = null;
  let key: string | undefined;
  return {
    get(): GoogleGenAI {
      if (client) return client;
      key = resolveApiKey(settings.apiKey, process.env, ['GEMINI_API_KEY', 'GOOGLE_API_KEY'], { vendor: 'Gemini', factory });
      // One attempt per call: retries and timeouts are the core's (withReliability).
      client = new GoogleGenAI({ apiKey: key, httpOptions: { ...(settings.baseUrl && { baseUrl: settings.baseUrl }), retryOptions: { attempts: 1 } } });
      return client;
    },
    /** One generateContent call, its failures typed for the reliability layer (Retry-After included). */
    async generate(port: PortName, provider: string, parts: Part[], config: GenerateContentConfig, options?: CallOptions): Promise<GenerateContentResponse> {
      const ai = this.get();
      const capture = headerCapturingFetch();
      try {
        return await ai.models.generateContent({
          model: settings.model,
          contents: [{ role: 'user', parts }],
          config: {
            ...config,
            ...(settings.maxOutputTokens && { maxOutputTokens: settings.maxOutputTokens }),
            ...(settings.thinkingBudget !== undefined && { thinkingConfig: { thinkingBudget: settings.thinkingBudget } }),
            ...(options?.signal && { abortSignal: options.signal }),
            httpOptions: { fetch: capture.fetch },
          },
        });
      } catch (error) {
        throw toProviderError(error, port, provider, key, capture.seen, options?.signal);
      }
    },
  };
}

/** A fetch that remembers the last response's headers: the SDK's ApiError drops them, and with them Retry-After. */
function headerCapturingFetch() {
  const seen: { headers?: Headers; status?: number } = {};
  const fetchWithHeaders: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    seen.headers = response.headers;
    seen.status = response.status;
    return response;
  };
  return { fetch: fetchWithHeaders, seen };
}

/** Google's quota errors say when to come back in the body: `RetryInfo.retryDelay` ("37s"). */
export function retryDelayFromBody(message: string): number | undefined {
  const match = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(message);
  return match ? Number(match[1]) * 1000 : undefined;
}

function toProviderError(error: unknown, port: PortName, provider: string, secret: string | undefined, seen: { headers?: Headers; status?: number }, signal?: AbortSignal): Error {
  if (signal?.aborted) return new AbortedError(`${port} '${provider}' call`, { cause: signal.reason });
  const message = redactSecrets(error instanceof Error ? error.message : String(error), [secret]);
  if (error instanceof ApiError) {
    return new ProviderCallError({ port, provider, status: error.status, retryAfterMs: parseRetryAfter(seen.headers) ?? retryDelayFromBody(error.message), message });
  }
  // The SDK fails to parse a cut-off error body before it builds an ApiError: keep the status we saw.
  if (seen.status !== undefined && seen.status >= 400) return new ProviderCallError({ port, provider, status: seen.status, retryAfterMs: parseRetryAfter(seen.headers), message });
  if (error instanceof SyntaxError) return new ProviderCallError({ port, provider, message: `malformed response body: ${message}`, isRetryable: false });
  return new ProviderCallError({ port, provider, message, isRetryable: isConnectionError(error) });
}

const SENDABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);

/** The question, then each evidence item: its image inline where Gemini can read it, else its text. */
export function evidenceParts(question: string, evidence: readonly Evidence[]): Part[] {
  const parts: Part[] = [{ text: `Question: ${question}` }];
  evidence.forEach((item, i) => {
    const label = item.kind === 'crop' ? `Evidence ${i + 1}: enlarged crop of ${item.basename}` : `Evidence ${i + 1}: page ${item.basename}`;
    if (item.image && SENDABLE_IMAGES.has(item.image.mimeType)) {
      parts.push({ text: label });
      parts.push({ inlineData: { mimeType: item.image.mimeType, data: Buffer.from(item.image.bytes).toString('base64') } });
    } else parts.push({ text: `${label}${item.text ? `\n${item.text}` : ' (no readable content)'}` });
  });
  return parts;
}

/** The frozen Generator on Gemini: answers from the evidence images. */
export function createGeminiGenerator(settings: GeminiSettings): Generator {
  const resolved = parseSettings('createGeminiGenerator', settings);
  const client = lazyClient('createGeminiGenerator', resolved);
  const provider = `gemini:${resolved.model}`;
  return {
    specificationVersion: 'v1',
    provider,
    async doAnswer(question: string, evidence: readonly Evidence[], options?: CallOptions): Promise<GeneratorAnswer> {
      const response = await client.generate('generator', provider, evidenceParts(question, evidence), { systemInstruction: resolved.instructions ?? GENERATOR_INSTRUCTIONS }, options);
      const answer = response.text;
      const finish = response.candidates?.[0]?.finishReason;
      if (typeof answer !== 'string') {
        const reason = finish ?? response.promptFeedback?.blockReason ?? 'no candidate';
        throw new PortOutputError({ port: 'generator', provider, field: 'text', message: `no answer in the response (${reason})` });
      }
      // A cut-off answer must not be graded as if it were the answer.
      if (finish === 'MAX_TOKENS') throw new PortOutputError({ port: 'generator', provider, field: 'text', message: 'the answer was cut at maxOutputTokens; raise it' });
      const usage = response.usageMetadata;
      return { answer: answer.trim(), ...(usage && { usage: { inputTokens: usage.promptTokenCount ?? 0, outputTokens: usage.candidatesTokenCount ?? 0 } }) };
    },
  };
}

/** The LLM judge on Gemini, with structured output `{score}` (seed 000 section 9.4.3). */
export function createGeminiJudge(settings: GeminiSettings): Judge {
  const resolved = parseSettings('createGeminiJudge', settings);
  const client = lazyClient('createGeminiJudge', resolved);
  const provider = `gemini:${resolved.model}`;
  return {
    specificationVersion: 'v1',
    provider,
    async doScore(question: string, answer: string, reference: string, options?: CallOptions): Promise<JudgeVerdict> {
      const response = await client.generate(
        'judge',
        provider,
        [{ text: judgePrompt(question, answer, reference) }],
        {
          systemInstruction: resolved.instructions ?? JUDGE_INSTRUCTIONS,
          responseMimeType: 'application/json',
          responseJsonSchema: { type: 'object', properties: { score: { type: 'number', minimum: 0, maximum: 1 } }, required: ['score'], additionalProperties: false },
        },
        options,
      );
      const raw = response.text ?? '';
      return { score: parseJudgeScore(raw, 'judge', provider), raw };
    },
  };
}
