import { answerGamingCap, answerGamingClasses, normaliseAnswer } from '../../core/reward/answer-gaming';
import { sequenceMatcherRatio } from '../../core/reward/sequence-matcher';
import type { CallOptions } from '../../ports/common';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import { DEFAULT_PARTIAL_THRESHOLD } from './settings';

export { normaliseAnswer };

/** Settings of `createRuleJudge`. */
export interface RuleJudgeSettings {
  /** Below this similarity the answer scores 0 (the Search-R1 spec's threshold: docs/method.md#search-r1-reward). */
  partialThreshold?: number;
}

export interface RuleJudge extends Judge {
  readonly calls: Array<{ question: string; answer: string; reference: string; score: number }>;
}

/** The numbers of a normalised text, as values (`4.50` and `4.5` are one number). */
function numbersOf(normalised: string): string[] {
  return [...new Set((normalised.match(/\d+(?:\.\d+)?/g) ?? []).map((n) => String(Number(n))))];
}

/**
 * A deterministic judge (docs/method.md#rule-judge). The answer's numbers are checked first: 0 when
 * a number of the reference is missing from it, or when it has a number that neither the
 * reference nor the question has (a list, a range or alternatives around the right value is not
 * an answer). Then 1.0 when the normalised answer equals the reference or contains it as whole
 * words, unless it restates a number of the question besides the reference's (a near miss, never
 * a match); otherwise the difflib similarity of the two, rounded to 0.1 and capped at 0.9, if it
 * reaches `partialThreshold`; else 0. Last, an answer that games the match (`answerGamingClasses`:
 * a negation of the reference, alternatives, a list of candidates, a hedge, a restated question)
 * is capped below full credit (`ANSWER_GAMING_CAPS`). Useful offline and as a baseline for LLM judges.
 */
export function createRuleJudge(settings: RuleJudgeSettings = {}): RuleJudge {
  const threshold = settings.partialThreshold ?? DEFAULT_PARTIAL_THRESHOLD;
  const calls: RuleJudge['calls'] = [];
  return {
    specificationVersion: 'v1',
    provider: 'rule',
    calls,
    async doScore(
      question: string,
      answer: string,
      reference: string,
      options?: CallOptions,
    ): Promise<JudgeVerdict> {
      options?.signal?.throwIfAborted();
      const a = normaliseAnswer(answer);
      const r = normaliseAnswer(reference);
      const answerNumbers = numbersOf(a);
      const referenceNumbers = numbersOf(r);
      const extra = answerNumbers.filter((n) => !referenceNumbers.includes(n));
      const questionNumbers = numbersOf(normaliseAnswer(question));
      let score: number;
      let rationale: string;
      if (r.length === 0 || a.length === 0) {
        score = 0;
        rationale = 'empty answer or reference';
      } else if (!referenceNumbers.every((n) => answerNumbers.includes(n))) {
        // "7 billion dollars" is close to "4.5 billion dollars" as text and wrong as an answer.
        score = 0;
        rationale = `the reference's numbers (${referenceNumbers.join(', ')}) are not all in the answer`;
      } else if (extra.some((n) => !questionNumbers.includes(n))) {
        // "1960, 1961, ..., 2019" contains "1989" and is not an answer: the numbers must be the reference's.
        score = 0;
        rationale = `the answer has numbers the reference does not (${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ', ...' : ''})`;
      } else if (extra.length === 0 && (a === r || ` ${a} `.includes(` ${r} `))) {
        score = 1;
        rationale = 'the answer states the reference';
      } else {
        // Here every extra number restates the question ("in 2019, 4.5 billion dollars"): partial credit at most.
        const ratio = sequenceMatcherRatio(a, r);
        score = ratio >= threshold ? Math.min(0.9, Math.round(ratio * 10) / 10) : 0;
        rationale = `similarity ${ratio.toFixed(3)}${extra.length > 0 ? ` (restates the question's ${extra.join(', ')})` : ''}`;
      }
      const gaming = score > 0 ? answerGamingClasses(answer, reference, question) : [];
      const cap = answerGamingCap(gaming);
      if (score > cap) {
        score = cap;
        rationale = `${rationale}; capped at ${cap}: ${gaming.join(', ')}`;
      }
      calls.push({ question, answer, reference, score });
      return { score, rationale };
    },
  };
}
