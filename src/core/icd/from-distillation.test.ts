import { describe, expect, it } from 'vitest';
import { createHashedEmbedder } from '../../adapters/icd/hashed-embedder';
import { promptStats, type EpisodeSummary } from '../curation/episodes';
import { selectRareSuccesses } from '../curation/distill';
import { demonstrationsFromDistilled } from './from-distillation';

const episode = (promptUid: string, rollout: number, judgeScore: number, answer: string): EpisodeSummary => ({
  runId: 'phase2',
  step: 3,
  promptUid,
  sampleId: `s3-b0-${promptUid}#${rollout}`,
  rolloutIndex: rollout,
  query: `${promptUid} revenue?`,
  reference: answer,
  goldenBasenames: [`${promptUid}.png`],
  retrievedBasenames: [`${promptUid}.png`],
  judgeScore,
  ndcg: judgeScore,
  reward: judgeScore,
  formatPassed: true,
  searches: 1,
  crops: 0,
  textLength: 40,
  answer,
  terminated: 'complete',
  errorStage: null,
});

describe('demonstrationsFromDistilled', () => {
  it("turns a run's rare successes into ICD demonstrations that keep their run and sample", async () => {
    // acme: 1 success in 4 (rare), globex: 4 in 4 (not rare).
    const episodes = [
      episode('acme', 0, 1, '4.5 billion dollars'),
      episode('acme', 1, 0, 'x'),
      episode('acme', 2, 0, 'x'),
      episode('acme', 3, 0, 'x'),
      ...[0, 1, 2, 3].map((r) => episode('globex', r, 1, '7 billion')),
    ];
    const selection = selectRareSuccesses(episodes, promptStats(episodes));
    const demonstrations = demonstrationsFromDistilled(selection.selected, { firstIndex: 64 });
    expect(demonstrations).toEqual([
      {
        index: 64,
        question: 'acme revenue?',
        answer: '4.5 billion dollars',
        context: 'pages: acme.png',
        source: { kind: 'searcher-trajectory', runId: 'phase2', sampleId: 's3-b0-acme#0' },
      },
    ]);
    // They embed like any demonstration, so they can join a candidate pool.
    const [vector] = await createHashedEmbedder({ dimensions: 32 }).doEmbed([
      { kind: 'text', text: `${demonstrations[0]!.question} ${demonstrations[0]!.answer}` },
    ]);
    expect(vector).toHaveLength(32);
    expect(() => demonstrationsFromDistilled([episode('a', 0, 1, ' ')])).toThrow(/has no answer/);
  });
});
