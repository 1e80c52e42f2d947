import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { GenerateTurnOptions } from '../../src/ports/policy-backend';

/** SmolLM2-135M-Instruct's GGUF, which the tests on the real model read (scripts/fetch-models.sh), or SEARCHER_RL_SMOLLM2_GGUF. */
export const SMOLLM2_GGUF =
  process.env.SEARCHER_RL_SMOLLM2_GGUF ??
  join(import.meta.dirname, '../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');

/**
 * Why the llama.cpp tests on SmolLM2 cannot run here ('' when they can): node-llama-cpp is an
 * optional peer dependency, and the model is fetched apart.
 */
export function llamaCppSkipReason(): string {
  try {
    createRequire(import.meta.url).resolve('node-llama-cpp');
  } catch {
    return '(node-llama-cpp is not installed: npm install node-llama-cpp@3.21.1)';
  }
  return existsSync(SMOLLM2_GGUF) ? '' : `(no model at ${SMOLLM2_GGUF}: scripts/fetch-models.sh)`;
}

/** A greedy turn of at most `maxTokens`, with no stop string. */
export const greedyTurn = (maxTokens: number): GenerateTurnOptions => ({
  stopAfter: [],
  maxTokens,
  temperature: 0,
  topP: 1,
});
