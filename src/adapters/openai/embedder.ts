import OpenAI from 'openai';
import type { z } from 'zod';
import { l2Normalise } from '../../core/icd/embeddings';
import { InvalidArgumentError, PortOutputError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { Embedder, EmbeddingInput } from '../../ports/embedder';
import { guardedFetch, loadApiKey, parseSettings, toProviderError } from '../../provider-utils/index';
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
  let client: OpenAI | null = null;
  let key: string | undefined;
  const get = () => {
    if (client) return client;
    key = loadApiKey({
      apiKey: resolved.apiKey,
      environmentVariableNames: ['OPENAI_API_KEY'],
      vendor: 'OpenAI',
      factory: 'createOpenAIEmbedder',
    });
    client = new OpenAI({
      apiKey: key,
      baseURL: resolved.baseURL,
      organization: resolved.organization,
      maxRetries: 0,
      timeout: 10 * 60_000,
      // Redirects stay within the configured origin, answers within maxResponseBytes.
      fetch: guardedFetch({ port: 'embedder', provider }, { maxResponseBytes: resolved.maxResponseBytes }),
    });
    return client;
  };
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
      const openai = get();
      let response: OpenAI.Embeddings.CreateEmbeddingResponse;
      try {
        response = await openai.embeddings.create(
          {
            model: resolved.model,
            input,
            encoding_format: 'float',
            ...(resolved.sendDimensions && { dimensions: resolved.dimensions }),
          },
          { signal: options?.signal },
        );
      } catch (error) {
        throw toProviderError({
          port: 'embedder',
          provider,
          error,
          signal: options?.signal,
          secrets: [key],
          aborted: error instanceof OpenAI.APIUserAbortError,
          connectionFailure: error instanceof OpenAI.APIConnectionError,
        });
      }
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
