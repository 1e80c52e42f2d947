import OpenAI from 'openai';
import type { z } from 'zod';
import { PortOutputError, type PortName } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import {
  evidenceParts,
  guardedFetch,
  loadApiKey,
  parseSettings,
  toProviderError,
} from '../../provider-utils/index';
import {
  GENERATOR_INSTRUCTIONS,
  JUDGE_INSTRUCTIONS,
  judgePrompt,
  parseJudgeScore,
} from '../../core/reward/judge-prompt';
import type { Evidence } from '../../ports/types';
import { openaiSettingsSchema } from './settings';

/**
 * Settings of the OpenAI generator and judge: the model, the key, reasoning effort, the output
 * budget, instructions and the response cap.
 */
export type OpenAISettings = z.input<typeof openaiSettingsSchema>;

/** One client per adapter, made at the first call so that a missing key fails then, saying how to fix it. */
function lazyClient(
  factory: string,
  settings: z.output<typeof openaiSettingsSchema>,
  caller: { port: PortName; provider: string },
) {
  let client: OpenAI | null = null;
  let key: string | undefined;
  return {
    get(): OpenAI {
      if (client) return client;
      key = loadApiKey({
        apiKey: settings.apiKey,
        environmentVariableNames: ['OPENAI_API_KEY'],
        vendor: 'OpenAI',
        factory,
      });
      // Retries and timeouts are the core's (withReliability): the SDK makes one attempt.
      client = new OpenAI({
        apiKey: key,
        baseURL: settings.baseURL,
        organization: settings.organization,
        maxRetries: 0,
        timeout: 10 * 60_000,
        // Redirects stay within the configured origin, answers within maxResponseBytes.
        fetch: guardedFetch(caller, { maxResponseBytes: settings.maxResponseBytes }),
      });
      return client;
    },
    /** One Responses API call, its failures typed for the reliability layer. */
    async create(
      port: PortName,
      provider: string,
      body: OpenAI.Responses.ResponseCreateParamsNonStreaming,
      options?: CallOptions,
    ): Promise<OpenAI.Responses.Response> {
      const openai = this.get();
      try {
        return await openai.responses.create(body, { signal: options?.signal });
      } catch (error) {
        throw toProviderError({
          port,
          provider,
          error,
          signal: options?.signal,
          secrets: [key],
          aborted: error instanceof OpenAI.APIUserAbortError,
          connectionFailure: error instanceof OpenAI.APIConnectionError,
        });
      }
    },
  };
}

type InputContent =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail: 'auto' };

const SENDABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

/** The question, then each evidence item: its image (base64) where the API can read it, else its text. */
function evidenceContent(question: string, evidence: readonly Evidence[]): InputContent[] {
  return evidenceParts(question, evidence, SENDABLE_IMAGES).map((part) =>
    part.type === 'text'
      ? { type: 'input_text', text: part.text }
      : { type: 'input_image', image_url: `data:${part.mimeType};base64,${part.base64}`, detail: 'auto' },
  );
}

/** The frozen Generator on the OpenAI Responses API: answers from the evidence images. */
export function createOpenAIGenerator(settings: OpenAISettings): Generator {
  const resolved = parseSettings('createOpenAIGenerator', openaiSettingsSchema, settings);
  const provider = `openai:${resolved.model}`;
  const client = lazyClient('createOpenAIGenerator', resolved, { port: 'generator', provider });
  return {
    specificationVersion: 'v1',
    provider,
    // The API key is resolved up front (a Searcher checks before its first step).
    async doCheck() {
      client.get();
    },
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      options?: CallOptions,
    ): Promise<GeneratorAnswer> {
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
      if (answer === undefined)
        throw new PortOutputError({
          port: 'generator',
          provider,
          field: 'output_text',
          message: 'the response has no output text',
        });
      // A cut-off answer ("The revenue was 4.") must not be graded as if it were the answer.
      if (response.status === 'incomplete') {
        throw new PortOutputError({
          port: 'generator',
          provider,
          field: 'output_text',
          message: `incomplete response (${response.incomplete_details?.reason ?? 'unknown reason'}); raise maxOutputTokens`,
        });
      }
      return {
        answer,
        ...(response.usage && {
          usage: { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens },
        }),
      };
    },
  };
}

/** The LLM judge on the OpenAI Responses API, with structured output `{score}` (docs/method.md#judge). */
export function createOpenAIJudge(settings: OpenAISettings): Judge {
  const resolved = parseSettings('createOpenAIJudge', openaiSettingsSchema, settings);
  const provider = `openai:${resolved.model}`;
  const client = lazyClient('createOpenAIJudge', resolved, { port: 'judge', provider });
  return {
    specificationVersion: 'v1',
    provider,
    // The API key is resolved up front (a Searcher checks before its first step).
    async doCheck() {
      client.get();
    },
    async doScore(
      question: string,
      answer: string,
      reference: string,
      options?: CallOptions,
    ): Promise<JudgeVerdict> {
      const response = await client.create(
        'judge',
        provider,
        {
          model: resolved.model,
          instructions: resolved.instructions ?? JUDGE_INSTRUCTIONS,
          input: [
            {
              role: 'user',
              content: [{ type: 'input_text', text: judgePrompt(question, answer, reference) }],
            },
          ],
          text: {
            format: {
              type: 'json_schema',
              name: 'judge_score',
              strict: true,
              schema: {
                type: 'object',
                properties: { score: { type: 'number', minimum: 0, maximum: 1 } },
                required: ['score'],
                additionalProperties: false,
              },
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
