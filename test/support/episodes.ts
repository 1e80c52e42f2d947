import { expect } from 'vitest';
import { createRawImage } from '../../src/adapters/mock/index';
import type { Trajectory } from '../../src/core/trajectory/trajectory';
import type { PromptRecord } from '../../src/core/types';
import type { EpisodeInstance } from '../../src/core/episode/instances';

// Pages, a question and checks shared by the episode tests.

export const pages = [
  { basename: 'acme_1.png', text: 'Acme annual report 2019 overview', image: createRawImage(200, 100) },
  {
    basename: 'acme_2.png',
    text: 'Acme revenue 2019 was 4.5 billion dollars',
    image: createRawImage(200, 100),
  },
  { basename: 'acme_3.png', text: 'Acme revenue 2020 forecast' },
];
export const prompt: PromptRecord = {
  uid: 'q1',
  question: 'What was Acme revenue in 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};
export const one = (p: PromptRecord = prompt): EpisodeInstance[] => [
  { prompt: p, groupId: 'g', rolloutIndex: 0 },
];

export function checkTokenAccounting(t: Trajectory) {
  expect(t.lossMask).toHaveLength(t.fullInputIds.length);
  expect(t.lossMask.slice(0, t.promptLength).every((m) => m === 0)).toBe(true);
  expect(t.lossMask.reduce((s, m) => s + m, 0)).toBe(t.tokenSteps.length);
  t.tokenSteps.forEach((step) => {
    expect(t.fullInputIds[step.position]).toBe(step.tokenId);
    expect(t.lossMask[step.position]).toBe(1);
  });
  expect(t.generatedPositions).toEqual(t.tokenSteps.map((s) => s.position));
}
