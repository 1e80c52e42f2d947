import type OpenAI from 'openai';
import type { z } from 'zod';
import { PortOutputError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import { evidenceParts, loadApiKey } from '../../provider-utils/index';
import {
  GENERATOR_INSTRUCTIONS,
  JUDGE_INSTRUCTIONS,
  JUDGE_SCORE_JSON_SCHEMA,
  judgePrompt,
  parseJudgeScore,
} from '../../core/reward/judge-prompt';
import type { Evidence } from '../../ports/types';
import { modelAdapterParts } from '../../provider-utils/model-adapter';
import { createOpenAIClient } from './client';
import { openaiSettingsSchema } from './settings';

/**
 * Settings of the OpenAI generator and judge: the model, the key, reasoning effort, the output
 * budget, instructions and the response cap.
 */
export type OpenAISettings = z.input<typeof openaiSettingsSchema>;

/** The client of an OpenAI generator or judge: the key from the settings or OPENAI_API_KEY, at the first call. */
function responsesClient(
  factory: string,
  settings: z.output<typeof openaiSettingsSchema>,
  caller: { port: 'generator' | 'judge'; provider: string },
) {
  const client = createOpenAIClient({
    caller,
    resolveKey: () =>
      loadApiKey({
        apiKey: settings.apiKey,
        environmentVariableNames: ['OPENAI_API_KEY'],
        vendor: 'OpenAI',
        factory,
      }),
    baseURL: settings.baseURL,
    organization: settings.organization,
    maxResponseBytes: settings.maxResponseBytes,
  });
  return {
    get: client.get,
    /** One Responses API call. */
    create: (body: OpenAI.Responses.ResponseCreateParamsNonStreaming, options?: CallOptions) =>
      client.call((openai, signal) => openai.responses.create(body, { signal }), options),
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

/** The settings, provider, client and common fields of a OpenAI generator or judge. */
const openaiParts = (factory: string, port: 'generator' | 'judge', settings: OpenAISettings) =>
  modelAdapterParts({
    factory,
    port,
    vendor: 'openai',
    schema: openaiSettingsSchema,
    settings,
    client: responsesClient,
  });

/** The frozen Generator on the OpenAI Responses API: answers from the evidence images. */
export function createOpenAIGenerator(settings: OpenAISettings): Generator {
  const { resolved, provider, client, checked } = openaiParts('createOpenAIGenerator', 'generator', settings);
  return {
    ...checked,
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      options?: CallOptions,
    ): Promise<GeneratorAnswer> {
      const response = await client.create(
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
  const { resolved, provider, client, checked } = openaiParts('createOpenAIJudge', 'judge', settings);
  return {
    ...checked,
    async doScore(
      question: string,
      answer: string,
      reference: string,
      options?: CallOptions,
    ): Promise<JudgeVerdict> {
      const response = await client.create(
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
              schema: { ...JUDGE_SCORE_JSON_SCHEMA },
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
