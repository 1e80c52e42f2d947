import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DatasetValidationError } from '../errors';
import { trajectoryFromJSON, trajectoryToJSON } from './serialize';
import type { Trajectory } from './trajectory';

/** Trajectories whose token accounting is consistent, with awkward numbers in the numeric fields. */
const trajectoryArbitrary: fc.Arbitrary<Trajectory> = fc
  .record({
    prompt: fc.array(fc.nat(300), { minLength: 1, maxLength: 10 }),
    segments: fc.array(
      fc.record({ policy: fc.boolean(), ids: fc.array(fc.nat(300), { minLength: 1, maxLength: 6 }) }),
      { maxLength: 8 },
    ),
    logProbs: fc.array(
      fc.oneof(fc.double({ max: 0, noNaN: true }), fc.constant(Number.NEGATIVE_INFINITY), fc.constant(-0)),
      { minLength: 60, maxLength: 60 },
    ),
    reward: fc.oneof(fc.constant(null), fc.double(), fc.constant(-0)),
    nested: fc.oneof(
      fc.double(),
      fc.constant(-0),
      fc.constant(Number.NaN),
      fc.constant(Number.POSITIVE_INFINITY),
    ),
    advantage: fc.oneof(fc.constant(null), fc.double({ noNaN: true })),
    text: fc.string({ unit: 'grapheme', maxLength: 40 }),
    terminated: fc.constantFrom(
      'complete' as const,
      'answer' as const,
      'budget' as const,
      'context' as const,
      'error' as const,
    ),
  })
  .map(({ prompt, segments, logProbs, reward, advantage, text, terminated, nested }) => {
    const fullInputIds = [...prompt];
    const lossMask = prompt.map(() => 0);
    const tokenSteps: Trajectory['tokenSteps'] = [];
    for (const segment of segments) {
      for (const id of segment.ids) {
        if (segment.policy)
          tokenSteps.push({
            tokenId: id,
            tokenText: `t${id}`,
            logProb: logProbs[tokenSteps.length % logProbs.length]!,
            position: fullInputIds.length,
          });
        fullInputIds.push(id);
        lossMask.push(segment.policy ? 1 : 0);
      }
    }
    return {
      formatVersion: 1,
      sampleId: 's0-b0-q#1',
      groupId: 's0-b0-q',
      promptUid: 'q',
      rolloutIndex: 1,
      query: text,
      reference: text.length % 2 ? null : 'NaN',
      ...(text.length % 3 === 0 && { answers: ['NaN', `${text}!`] }),
      goldenBasenames: ['a.png'],
      promptLength: prompt.length,
      tokenSteps,
      generatedText: text,
      finalAnswer: 'Infinity',
      fullInputIds,
      generatedPositions: tokenSteps.map((s) => s.position),
      lossMask,
      turns: [
        {
          index: 0,
          text,
          forced: false,
          think: null,
          action: { type: 'search', query: '-0' },
          invalid: null,
          ignoredActions: [],
          observation: '',
        },
      ],
      retrievedBasenames: ['a.png'],
      evidence: [{ kind: 'crop', basename: 'a.png', sourceRegion: [nested, 0.5, 10, 20] }],
      terminated,
      error: terminated === 'error' ? { stage: 'search', message: 'x' } : null,
      invalidActions: 0,
      generatorUsage: { inputTokens: nested, outputTokens: 3 },
      reward,
      rewardDetail: {
        status: 'ok',
        value: nested,
        components: { formatPassed: true, judgeScore: null, ndcg: 0 },
        weights: { judge: 0, ndcg: 1, format: 0 },
      },
      advantage,
    } satisfies Trajectory;
  });

describe('trajectory JSON', () => {
  it('property: round-trips losslessly, NaN, ±Infinity and -0 included, nested records too', () => {
    fc.assert(
      fc.property(trajectoryArbitrary, (t) => {
        const back = trajectoryFromJSON(trajectoryToJSON(t));
        expect(back).toEqual(t);
        back.tokenSteps.forEach((s, i) => expect(Object.is(s.logProb, t.tokenSteps[i]!.logProb)).toBe(true));
        expect(Object.is(back.reward, t.reward)).toBe(true);
        expect(Object.is(back.evidence[0]!.sourceRegion![0], t.evidence[0]!.sourceRegion![0])).toBe(true);
        expect(
          Object.is(
            (back.rewardDetail as { value: number }).value,
            (t.rewardDetail as { value: number }).value,
          ),
        ).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps strings that look like special numbers as strings, and tagged objects unambiguous', () => {
    const [t] = fc.sample(trajectoryArbitrary, { numRuns: 1, seed: 7 });
    const back = trajectoryFromJSON(trajectoryToJSON(t!));
    expect(back.finalAnswer).toBe('Infinity');
    expect(back.turns[0]!.action).toEqual({ type: 'search', query: '-0' });
    expect(trajectoryToJSON({ ...t!, reward: Number.NaN })).toContain('"reward":{"$number":"NaN"}');
  });

  it.each([
    ['bad JSON', '{', '(json)'],
    ['a wrong version', { formatVersion: 2 }, 'formatVersion'],
    ['a string token id', 'tokenId', 'tokenSteps.0.tokenId'],
    ['a mask that disagrees with the steps', 'mask', 'tokenSteps.0.position'],
  ])('names the field of %s', (_name, mutation, field) => {
    const [t] = fc.sample(
      trajectoryArbitrary.filter((x) => x.tokenSteps.length > 0),
      { numRuns: 1, seed: 3 },
    );
    let input: unknown = mutation;
    if (mutation === 'tokenId')
      input = {
        ...JSON.parse(trajectoryToJSON(t!)),
        tokenSteps: [{ ...t!.tokenSteps[0], tokenId: 'x' }, ...t!.tokenSteps.slice(1)],
      };
    if (mutation === 'mask')
      input = { ...JSON.parse(trajectoryToJSON(t!)), lossMask: t!.lossMask.map(() => 0) };
    try {
      trajectoryFromJSON(input, 12);
      expect.unreachable();
    } catch (error) {
      expect(DatasetValidationError.isInstance(error)).toBe(true);
      expect((error as DatasetValidationError).field).toBe(field);
      expect((error as DatasetValidationError).row).toBe(12);
    }
  });
});
