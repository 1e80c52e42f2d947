import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedPolicy } from '../../adapters/mock/scripted-policy';
import { createSearcher } from '../../searcher';
import { buildSlideEnvironment, type SlideEnvironment } from './build';
import { createOracleScript } from './oracle';
import { SLIDE_INSTRUCTIONS, slideEnvironmentPorts } from './ports';

let dir = '';
let env: SlideEnvironment;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-env-'));
  env = await buildSlideEnvironment(dir, { seed: 9, decks: 12, smallPrintRate: 0.5 });
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const episode = { instructions: SLIDE_INSTRUCTIONS, maxTurns: 4, maxTurnTokens: 64, maxContextTokens: 1024, observationMaxChars: 200 };

describe('the offline slide environment', () => {
  it('rewards the oracle: precise search, crop of small print, the reader answers, the judge agrees', async () => {
    const ports = slideEnvironmentPorts(env);
    const policy = createScriptedPolicy({ script: createOracleScript(env.corpus) });
    const searcher = createSearcher({ policy, ...ports }, { episode, rl: { nAgent: 1 }, reward: { weights: 'default' } });
    const questions = [...env.corpus.questions.train.filter((q) => q.metadata.small).slice(0, 6), ...env.corpus.questions.train.filter((q) => !q.metadata.small).slice(0, 6)];
    const batch = await searcher.collect(questions);
    const judged = batch.episodes.map((e) => e.trajectory.rewardDetail?.components.judgeScore);
    expect(judged.filter((s) => s === 1).length).toBeGreaterThanOrEqual(11);
    const crops = batch.episodes.filter((e) => e.trajectory.turns.some((t) => t.crop));
    expect(crops.length).toBe(6);
    expect(batch.episodes.every((e) => e.trajectory.terminated === 'complete')).toBe(true);
    ports.searchEngine.close();
  }, 60_000);

  it('fails small-print questions without the crop and vague searches mostly miss', async () => {
    const ports = slideEnvironmentPorts(env);
    const small = env.corpus.questions.train.filter((q) => q.metadata.small).slice(0, 6);
    const noCrop = createSearcher({ policy: createScriptedPolicy({ script: createOracleScript(env.corpus, { skipCropRate: 1 }) }), ...ports }, { episode, rl: { nAgent: 1 } });
    const batch = await noCrop.collect(small);
    expect(batch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length).toBeLessThanOrEqual(1);
    const vague = createSearcher({ policy: createScriptedPolicy({ script: createOracleScript(env.corpus, { vagueRate: 1 }) }), ...ports }, { episode, rl: { nAgent: 1 } });
    const large = env.corpus.questions.train.filter((q) => !q.metadata.small).slice(0, 12);
    const vagueBatch = await vague.collect(large);
    expect(vagueBatch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length).toBeLessThan(6);
    ports.searchEngine.close();
  }, 60_000);
});
