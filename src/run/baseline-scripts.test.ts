import { describe, expect, it } from 'vitest';
import { datasetBaselines } from './baseline-scripts';

const prompt = 'Search: <search>query</search>\nQuestion: What does Qualor export?\n';
const observation = '<information>[qualor_export.txt] Qualor exports timber to its neighbours.</information>';
const turn = (script: (c: never) => string, n: number, context: string) =>
  script({ rolloutId: 0, turn: n, context, lastObservation: '' } as never);

describe('dataset baselines', () => {
  it("searcher mode: naive RAG searches with the question's words once and completes; the direct answer never searches", () => {
    const [rag, direct] = datasetBaselines('searcher');
    expect(rag!.name).toBe('naive RAG');
    expect(turn(rag!.script, 0, prompt)).toMatch(/^<search>.*Qualor.*export.*<\/search>$/);
    expect(turn(rag!.script, 1, `${prompt}<search>Qualor export</search>${observation}`)).toBe(
      '<search_complete>true</search_complete>',
    );
    expect(direct!.name).toBe('direct answer');
    expect(turn(direct!.script, 0, prompt)).toBe('<search_complete>true</search_complete>');
  });

  it('answer mode: naive RAG answers from what its one search read, with the extractive reader', () => {
    const baselines = datasetBaselines('answer');
    expect(baselines.map((b) => b.name)).toEqual(['naive RAG']);
    const script = baselines[0]!.script;
    expect(turn(script, 0, prompt)).toMatch(/^<search>/);
    const answer = turn(script, 1, `${prompt}<search>Qualor export</search>${observation}`);
    expect(answer).toMatch(/^<answer>.*timber.*<\/answer>$/);
    expect(turn(script, 1, `${prompt}<search>Qualor export</search><information></information>`)).toBe(
      '<answer>unknown</answer>',
    );
  });
});
