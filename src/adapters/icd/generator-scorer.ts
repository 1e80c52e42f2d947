import { vqaSoftAccuracy } from '../../core/icd/vqa-accuracy';
import type { CallOptions } from '../../ports/common';
import type { Generator } from '../../ports/generator';
import type { IcdDemonstration, IcdQuery, IcdScore, IcdScorer } from '../../ports/icd-scorer';

/** Instructions for a Generator used as the frozen ICD model (pass them as its `instructions` setting). */
export const ICD_GENERATOR_INSTRUCTIONS =
  'You answer a question in the same way as the solved examples before it: same kind of answer, same format. Reply with the answer only, a word or a short phrase, without explanation.';

/** The prompt: each demonstration as a solved example, in order, then the query. */
export function icdPrompt(query: IcdQuery, demonstrations: readonly IcdDemonstration[]): string {
  const shots = demonstrations.map(
    (d, i) =>
      `Example ${i + 1}:\n${d.context ? `Context: ${d.context}\n` : ''}Question: ${d.question}\nAnswer: ${d.answer}`,
  );
  return [
    ...shots,
    `Now answer:\n${query.context ? `Context: ${query.context}\n` : ''}Question: ${query.question}\nAnswer:`,
  ].join('\n\n');
}

/**
 * An IcdScorer over any frozen Generator (OpenAI, Gemini, a local model): the demonstrations and
 * the query go in the prompt, the Generator's answer is graded with the VQAv2 soft accuracy
 * against the query's human answers (docs/method.md#candidate-pools). The Generator should be
 * made with `ICD_GENERATOR_INSTRUCTIONS` (or its own) as instructions.
 */
export function createGeneratorIcdScorer(generator: Generator): IcdScorer {
  return {
    specificationVersion: 'v1',
    provider: `generator:${generator.provider}`,
    async doScore(
      query: IcdQuery,
      demonstrations: readonly IcdDemonstration[],
      options?: CallOptions,
    ): Promise<IcdScore> {
      const { answer } = await generator.doAnswer(icdPrompt(query, demonstrations), [], options);
      const cleaned = answer
        .trim()
        .replace(/^answer:\s*/i, '')
        .split('\n')[0]!
        .trim();
      return { answer: cleaned, accuracy: vqaSoftAccuracy(cleaned, query.answers) };
    },
  };
}
