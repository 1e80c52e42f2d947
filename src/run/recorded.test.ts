import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from './config';
import { describeRemeasured, RECORDED_UNDER, readRecorded, recordedBasis, writeRecorded } from './recorded';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'recorded-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const base = {
  evaluation: { limit: 30 },
  searcher: { adapters: { judge: { type: 'openai', model: 'gpt-x', apiKey: 'sk-secret-recorded-0001' } } },
};

describe('figures recorded before training', () => {
  it('are reused under the same settings, and measured again under others, naming what changed', async () => {
    const runDir = await mkdtemp(join(dir, 'run-'));
    const basis = recordedBasis(parseRunConfig(base));
    await writeRecorded(runDir, 'eval-before-rl.json', { judgeSuccess: 0.5 }, basis);
    await writeRecorded(runDir, 'baselines.json', [{ name: 'naive RAG' }], basis);

    expect(await readRecorded(runDir, 'eval-before-rl.json', basis)).toEqual({
      value: { judgeSuccess: 0.5 },
      changed: [],
    });
    // Parsed again (a continued run): the same settings.
    expect((await readRecorded(runDir, 'baselines.json', recordedBasis(parseRunConfig(base)))).value).toEqual(
      [{ name: 'naive RAG' }],
    );

    const other = recordedBasis(
      parseRunConfig({
        ...base,
        evaluation: { limit: 1 },
        searcher: { ...base.searcher, episode: { maxTurns: 2 } },
      }),
    );
    const stale = await readRecorded(runDir, 'eval-before-rl.json', other);
    expect(stale).toEqual({ value: null, changed: ['evaluation', 'searcher.episode'] });
    expect(describeRemeasured('eval-before-rl', stale.changed)).toBe(
      "eval-before-rl: recorded under other evaluation, searcher.episode settings than this run's; measured again",
    );
    // What the RL phases weigh is not what an evaluation measures: another reward preset keeps them.
    const weights = recordedBasis(
      parseRunConfig({ ...base, searcher: { ...base.searcher, reward: { weights: 'phase1' } } }),
    );
    expect((await readRecorded(runDir, 'eval-before-rl.json', weights)).value).not.toBeNull();
    // Another judge is another figure.
    const judge = recordedBasis(
      parseRunConfig({ ...base, searcher: { adapters: { judge: { type: 'rule' } } } }),
    );
    expect((await readRecorded(runDir, 'baselines.json', judge)).changed).toEqual(['searcher.adapters']);
  });

  it("are reused whatever the search engine keeps in memory (its answers are the index's either way), not under another index", async () => {
    const runDir = await mkdtemp(join(dir, 'run-'));
    const engine = (settings: Record<string, unknown>) =>
      recordedBasis(
        parseRunConfig({
          ...base,
          searcher: { adapters: { searchEngine: { type: 'sqlite-fts', dbPath: 'a.sqlite', ...settings } } },
        }),
      );
    await writeRecorded(runDir, 'eval-before-rl.json', { judgeSuccess: 0.5 }, engine({}));
    for (const settings of [
      { queryCache: 0 },
      { imageCacheBytes: 1024 },
      { queryCache: 16, imageCacheBytes: 0 },
    ])
      expect((await readRecorded(runDir, 'eval-before-rl.json', engine(settings))).changed).toEqual([]);
    expect(
      (await readRecorded(runDir, 'eval-before-rl.json', engine({ dbPath: 'b.sqlite' }))).changed,
    ).toEqual(['searcher.adapters']);
  });

  it('keeps no secret of the settings', async () => {
    const runDir = await mkdtemp(join(dir, 'run-'));
    await writeRecorded(runDir, 'baselines.json', [], recordedBasis(parseRunConfig(base)));
    const written = await readFile(join(runDir, RECORDED_UNDER), 'utf8');
    expect(written).toContain('gpt-x');
    expect(written).not.toContain('sk-secret-recorded-0001');
  });

  it('measures again a figure of a folder that does not say its settings, and reads nothing absent', async () => {
    const runDir = await mkdtemp(join(dir, 'run-'));
    const basis = recordedBasis(parseRunConfig(base));
    expect(await readRecorded(runDir, 'eval-before-rl.json', basis)).toEqual({ value: null, changed: [] });
    await writeFile(join(runDir, 'eval-before-rl.json'), '{"judgeSuccess":0.5}\n');
    const older = await readRecorded(runDir, 'eval-before-rl.json', basis);
    expect(older).toEqual({ value: null, changed: [RECORDED_UNDER] });
    expect(describeRemeasured('eval-before-rl', older.changed)).toMatch(/does not say which settings/);
  });
});
