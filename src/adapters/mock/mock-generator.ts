import type { CallOptions } from '../../ports/common';
import { MOCK_FALLBACK_ANSWER } from './settings';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Evidence } from '../../ports/types';

/** Settings of `createMockGenerator`. */
export interface MockGeneratorSettings {
  /**
   * How to answer: a fixed string, a function of the question and evidence, or (default) the
   * answer stored for the first evidence page found in `facts`.
   */
  answer?: string | ((question: string, evidence: readonly Evidence[]) => string);
  /** Page basename -> the answer that page supports. */
  facts?: Record<string, string>;
  /** Answer when no evidence supports one (default: "unknown"). */
  fallback?: string;
  /** An error to throw for a question (to test failures); `undefined` answers it. */
  failWith?: (question: string) => Error | undefined;
}

export interface MockGenerator extends Generator {
  readonly calls: Array<{ question: string; evidence: string[] }>;
}

/** A frozen Generator for tests: answers from a table of page facts, or as told. */
export function createMockGenerator(settings: MockGeneratorSettings = {}): MockGenerator {
  const calls: MockGenerator['calls'] = [];
  return {
    specificationVersion: 'v1',
    provider: 'mock',
    calls,
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      options?: CallOptions,
    ): Promise<GeneratorAnswer> {
      calls.push({
        question,
        evidence: evidence.map((e) => (e.kind === 'crop' ? `crop:${e.basename}` : e.basename)),
      });
      options?.signal?.throwIfAborted();
      const failure = settings.failWith?.(question);
      if (failure) throw failure;
      let answer: string;
      if (typeof settings.answer === 'string') answer = settings.answer;
      else if (typeof settings.answer === 'function') answer = settings.answer(question, evidence);
      else
        answer =
          evidence.map((e) => settings.facts?.[e.basename]).find((a) => a !== undefined) ??
          settings.fallback ??
          MOCK_FALLBACK_ANSWER;
      const inputTokens = Math.ceil(
        (question.length + evidence.reduce((n, e) => n + (e.text?.length ?? 0), 0)) / 4,
      );
      return { answer, usage: { inputTokens, outputTokens: Math.ceil(answer.length / 4) } };
    },
  };
}
