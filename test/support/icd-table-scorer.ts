import type { IcdScorer } from '../../src/ports/icd-scorer';

/** A demonstration of the ICD tests' pools: global index `index`, its question and answer named after it. */
export const demonstration = (index: number) => ({ index, question: `q${index}`, answer: `a${index}` });

/**
 * A frozen model whose accuracy is any function of the ordered global indices it is shown (joined
 * with ','); it counts its calls.
 */
export function tableScorer(accuracy: (key: string) => number): IcdScorer & { calls: number } {
  const scorer: IcdScorer & { calls: number } = {
    specificationVersion: 'v1',
    provider: 'table',
    calls: 0,
    async doScore(_q, demos) {
      scorer.calls++;
      return { answer: '', accuracy: accuracy(demos.map((d) => d.index).join(',')) };
    },
  };
  return scorer;
}
