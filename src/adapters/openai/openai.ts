import type OpenAI from 'openai';
import type { z } from 'zod';
import { PortOutputError, type PortName } from '../../core/errors';
import { JUDGE_SCORE_JSON_SCHEMA } from '../../core/reward/judge-prompt';
import type { CallOptions } from '../../ports/common';
import type { Generator } from '../../ports/generator';
import type { Judge } from '../../ports/judge';
import type { Evidence } from '../../ports/types';
import { evidenceParts } from '../../provider-utils/index';
import { modelAdapterFamily } from '../../provider-utils/model-adapter';
import { createOpenAIClient } from './client';
import { openaiSettingsSchema } from './settings';

/**
 * Settings of the OpenAI generator and judge: the model, the key, reasoning effort, the output
 * budget, instructions and the response cap.
 */
export type OpenAISettings = z.input<typeof openaiSettingsSchema>;

/**
 * The client of an OpenAI generator or judge (the key from the settings or OPENAI_API_KEY, at the
 * first call); each Responses API call takes the model, reasoning effort and output budget from
 * the settings.
 */
function responsesClient(
  settings: z.output<typeof openaiSettingsSchema>,
  caller: { port: PortName; provider: string },
  resolveKey: () => string,
) {
  const client = createOpenAIClient({
    caller,
    resolveKey,
    baseURL: settings.baseURL,
    organization: settings.organization,
    maxResponseBytes: settings.maxResponseBytes,
  });
  return {
    get: client.get,
    /** One Responses API call. */
    create: (body: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'model'>, options?: CallOptions) =>
      client.call(
        (sdk, signal) =>
          sdk.responses.create(
            {
              model: settings.model,
              ...body,
              ...(settings.reasoningEffort && { reasoning: { effort: settings.reasoningEffort } }),
              ...(settings.maxOutputTokens && { max_output_tokens: settings.maxOutputTokens }),
            },
            { signal },
          ),
        options,
      ),
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

/** The OpenAI generator's and judge's settings, provider, client and common fields. */
const openai = modelAdapterFamily({
  vendor: 'openai',
  apiKey: { vendorName: 'OpenAI', environmentVariableNames: ['OPENAI_API_KEY'] },
  schema: openaiSettingsSchema,
  client: responsesClient,
});

/** The frozen Generator on the OpenAI Responses API: answers from the evidence images. */
export function createOpenAIGenerator(settings: OpenAISettings): Generator {
  return openai.generator('createOpenAIGenerator', settings, async (call, options) => {
    const response = await call.client.create(
      {
        instructions: call.instructions,
        input: [{ role: 'user', content: evidenceContent(call.question, call.evidence) }],
      },
      options,
    );
    const unusable = (message: string) =>
      new PortOutputError({ port: 'generator', provider: call.provider, field: 'output_text', message });
    const answer = typeof response?.output_text === 'string' ? response.output_text.trim() : undefined;
    if (answer === undefined) throw unusable('the response has no output text');
    // A cut-off answer ("The revenue was 4.") must not be graded as if it were the answer.
    if (response.status === 'incomplete') {
      const reason = response.incomplete_details?.reason ?? 'unknown reason';
      throw unusable(`incomplete response (${reason}); raise maxOutputTokens`);
    }
    return {
      answer,
      ...(response.usage && {
        usage: { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens },
      }),
    };
  });
}

/** The LLM judge on the OpenAI Responses API, with structured output `{score}` (docs/method.md#judge). */
export function createOpenAIJudge(settings: OpenAISettings): Judge {
  return openai.judge('createOpenAIJudge', settings, async ({ client, instructions, prompt }, options) => {
    const response = await client.create(
      {
        instructions,
        input: [{ role: 'user', content: [{ type: 'input_text', text: prompt }] }],
        text: {
          format: {
            type: 'json_schema',
            name: 'judge_score',
            strict: true,
            schema: { ...JUDGE_SCORE_JSON_SCHEMA },
          },
        },
      },
      options,
    );
    return typeof response?.output_text === 'string' ? response.output_text : '';
  });
}
