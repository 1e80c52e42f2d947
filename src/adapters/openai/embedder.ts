import type { z } from 'zod';
import { l2Normalise } from '../../core/icd/embeddings';
import { InvalidArgumentError, PortOutputError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { Embedder, EmbeddingInput } from '../../ports/embedder';
import { loadApiKey, parseSettings } from '../../provider-utils/index';
import { createOpenAIClient } from './client';
import { openaiEmbedderSettingsSchema } from './settings';

/**
 * Settings of `createOpenAIEmbedder`: the model, its dimensions, the endpoint, the key and the
 * response cap.
 */
export type OpenAIEmbedderSettings = z.input<typeof openaiEmbedderSettingsSchema>;

/**
 * The Embedder port on an OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, a proxy), one
 * attempt per call (retries and timeouts are the core's). Texts only; vectors come back in input
 * order and L2-normalised (docs/method.md#candidate-pools).
 */
export function createOpenAIEmbedder(settings: OpenAIEmbedderSettings): Embedder {
  const resolved = parseSettings('createOpenAIEmbedder', openaiEmbedderSettingsSchema, settings);
  const provider = `openai:${resolved.model}`;
  const client = createOpenAIClient({
    caller: { port: 'embedder', provider },
    resolveKey: () =>
      loadApiKey({
        apiKey: resolved.apiKey,
        environmentVariableNames: ['OPENAI_API_KEY'],
        vendor: 'OpenAI',
        factory: 'createOpenAIEmbedder',
      }),
    baseURL: resolved.baseURL,
    organization: resolved.organization,
    maxResponseBytes: resolved.maxResponseBytes,
  });
  return {
    specificationVersion: 'v1',
    provider,
    dimensions: resolved.dimensions,
    async doEmbed(items: readonly EmbeddingInput[], options?: CallOptions): Promise<number[][]> {
      const input = items.map((item, i) => {
        if (item.kind !== 'text')
          throw new InvalidArgumentError({
            argument: `items[${i}]`,
            message: 'the OpenAI embeddings endpoint embeds text only',
          });
        return item.text;
      });
      if (input.length === 0) return [];
      const response = await client.call(
        (openai, signal) =>
          openai.embeddings.create(
            {
              model: resolved.model,
              input,
              encoding_format: 'float',
              ...(resolved.sendDimensions && { dimensions: resolved.dimensions }),
            },
            { signal },
          ),
        options,
      );
      const data = Array.isArray(response?.data) ? response.data : null;
      if (!data || data.length !== input.length)
        throw new PortOutputError({
          port: 'embedder',
          provider,
          field: 'data',
          message: `expected ${input.length} embeddings, got ${data ? data.length : 'none'}`,
        });
      const vectors: number[][] = new Array(input.length);
      for (const row of data) {
        if (
          !Number.isInteger(row.index) ||
          row.index < 0 ||
          row.index >= input.length ||
          !Array.isArray(row.embedding)
        ) {
          throw new PortOutputError({
            port: 'embedder',
            provider,
            field: 'data.index',
            message: 'an embedding without a valid index or vector',
          });
        }
        vectors[row.index] = Array.from(l2Normalise(row.embedding));
      }
      return vectors;
    },
  };
}
