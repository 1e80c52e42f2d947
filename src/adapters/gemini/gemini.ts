import {
  ApiError,
  GoogleGenAI,
  type GenerateContentConfig,
  type GenerateContentResponse,
  type Part,
} from '@google/genai';
import type { z } from 'zod';
import { PortOutputError, type PortName } from '../../core/errors';
import {
  evidenceParts as neutralEvidenceParts,
  guardedFetch,
  retryDelayFromBody,
  toProviderError,
} from '../../provider-utils/index';
import { JUDGE_SCORE_JSON_SCHEMA } from '../../core/reward/judge-prompt';
import type { CallOptions } from '../../ports/common';
import type { Generator } from '../../ports/generator';
import type { Judge } from '../../ports/judge';
import type { Evidence } from '../../ports/types';
import { modelAdapterFamily } from '../../provider-utils/model-adapter';
import { lazyClient } from '../../provider-utils/lazy-client';
import { geminiSettingsSchema } from './settings';

/**
 * Settings of the Gemini generator and judge: the model, the key, the output and thinking budgets,
 * instructions and the response cap.
 */
export type GeminiSettings = z.input<typeof geminiSettingsSchema>;

/** The client of a Gemini generator or judge: the key from the settings, GEMINI_API_KEY or GOOGLE_API_KEY, at the first call. */
function geminiClient(
  settings: z.output<typeof geminiSettingsSchema>,
  caller: { port: PortName; provider: string },
  resolveKey: () => string,
) {
  // Redirects stay within the configured origin (fetch would follow one elsewhere with
  // x-goog-api-key, which it does not know to be a credential), answers within maxResponseBytes.
  const safeFetch = guardedFetch(caller, { maxResponseBytes: settings.maxResponseBytes });
  const client = lazyClient(
    resolveKey,
    // One attempt per call: retries and timeouts are the core's (withReliability).
    (apiKey) =>
      new GoogleGenAI({
        apiKey,
        httpOptions: {
          ...(settings.baseUrl && { baseUrl: settings.baseUrl }),
          retryOptions: { attempts: 1 },
          fetch: safeFetch,
        },
      }),
  );
  return {
    get: () => client.get(),
    /** One generateContent call, its failures typed for the reliability layer (Retry-After included). */
    async generate(
      parts: Part[],
      config: GenerateContentConfig,
      options?: CallOptions,
    ): Promise<GenerateContentResponse> {
      const ai = client.get();
      const { port, provider } = caller;
      const capture = headerCapturingFetch(safeFetch);
      try {
        return await ai.models.generateContent({
          model: settings.model,
          contents: [{ role: 'user', parts }],
          config: {
            ...config,
            ...(settings.maxOutputTokens && { maxOutputTokens: settings.maxOutputTokens }),
            ...(settings.thinkingBudget !== undefined && {
              thinkingConfig: { thinkingBudget: settings.thinkingBudget },
            }),
            ...(options?.signal && { abortSignal: options.signal }),
            httpOptions: { fetch: capture.fetch },
          },
        });
      } catch (error) {
        const seen = capture.seen;
        // The SDK fails to parse a cut-off error body before it builds an ApiError: keep the status seen on the wire.
        const status =
          error instanceof ApiError
            ? error.status
            : seen.status !== undefined && seen.status >= 400
              ? seen.status
              : undefined;
        throw toProviderError({
          port,
          provider,
          error,
          signal: options?.signal,
          secrets: [client.key],
          status,
          headers: seen.headers,
          ...(error instanceof ApiError && { retryAfterMs: retryDelayFromBody(error.message) }),
        });
      }
    },
  };
}

/** A fetch that remembers the last response's headers: the SDK's ApiError drops them, and with them Retry-After. */
function headerCapturingFetch(base: typeof fetch) {
  const seen: { headers?: Headers; status?: number } = {};
  const fetchWithHeaders: typeof fetch = async (input, init) => {
    const response = await base(input, init);
    seen.headers = response.headers;
    seen.status = response.status;
    return response;
  };
  return { fetch: fetchWithHeaders, seen };
}

const SENDABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);

/** The question, then each evidence item: its image inline where Gemini can read it, else its text. */
function vendorEvidenceParts(question: string, evidence: readonly Evidence[]): Part[] {
  return neutralEvidenceParts(question, evidence, SENDABLE_IMAGES).map((part) =>
    part.type === 'text'
      ? { text: part.text }
      : { inlineData: { mimeType: part.mimeType, data: part.base64 } },
  );
}

/** The Gemini generator's and judge's settings, provider, client and common fields. */
const gemini = modelAdapterFamily({
  vendor: 'gemini',
  apiKey: { vendorName: 'Gemini', environmentVariableNames: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'] },
  schema: geminiSettingsSchema,
  client: geminiClient,
});

/** The frozen Generator on Gemini: answers from the evidence images. */
export function createGeminiGenerator(settings: GeminiSettings): Generator {
  return gemini.generator('createGeminiGenerator', settings, async (call, options) => {
    const response = await call.client.generate(
      vendorEvidenceParts(call.question, call.evidence),
      { systemInstruction: call.instructions },
      options,
    );
    const unusable = (message: string) =>
      new PortOutputError({ port: 'generator', provider: call.provider, field: 'text', message });
    const answer = response.text;
    const finish = response.candidates?.[0]?.finishReason;
    if (typeof answer !== 'string') {
      const reason = finish ?? response.promptFeedback?.blockReason ?? 'no candidate';
      throw unusable(`no answer in the response (${reason})`);
    }
    // A cut-off answer must not be graded as if it were the answer.
    if (finish === 'MAX_TOKENS') throw unusable('the answer was cut at maxOutputTokens; raise it');
    const usage = response.usageMetadata;
    return {
      answer: answer.trim(),
      ...(usage && {
        usage: { inputTokens: usage.promptTokenCount ?? 0, outputTokens: usage.candidatesTokenCount ?? 0 },
      }),
    };
  });
}

/** The LLM judge on Gemini, with structured output `{score}` (docs/method.md#judge). */
export function createGeminiJudge(settings: GeminiSettings): Judge {
  return gemini.judge('createGeminiJudge', settings, async ({ client, instructions, prompt }, options) => {
    const response = await client.generate(
      [{ text: prompt }],
      {
        systemInstruction: instructions,
        responseMimeType: 'application/json',
        responseJsonSchema: JUDGE_SCORE_JSON_SCHEMA,
      },
      options,
    );
    return response.text ?? '';
  });
}
