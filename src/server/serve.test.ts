import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServedEnvironment } from './served-environment';
import { serveEnv } from './serve';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const options = {
  split: 'train' as const,
  host: '127.0.0.1',
  port: 0,
  workers: 1,
  maxSessions: 1,
  idleTimeoutMs: null,
  token: null,
  drainMs: 0,
  version: 'test',
};

describe('serve-env configuration', () => {
  it("refuses the sections a server would ignore (a training run's phases, a policy), by name, before it listens", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-env-'));
    dirs.push(dir);
    const path = join(dir, 'config.yaml');
    await writeFile(
      path,
      'phases: [{ name: p, steps: 1, weights: default }]\nsearcher: { adapters: { policy: { type: scripted, script: [] } } }\n',
    );
    const error = (await serveEnv({ ...options, config: path }, () => undefined).catch(
      (e: unknown) => e,
    )) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/config\.yaml: phases.*serve-env uses only corpus and searcher/s);
    expect(error.message).toMatch(/config\.yaml: searcher\.adapters\.policy/);
  });

  it("serves the slide environment with a configured port kept over the environment's", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-env-'));
    dirs.push(dir);
    // A mock generator that always answers 'forty-two': the slide reader would read the slide instead.
    const { served, close } = await buildServedEnvironment({
      searcher: { adapters: { generator: { type: 'mock', facts: { 'x.png': 'forty-two' } } } },
      slides: { cacheDir: join(dir, 'corpus'), decks: 2, minSlides: 5, maxSlides: 5 },
    });
    try {
      const answer = await served.gateway.answer(served.tasks[0]!.question, [
        { kind: 'page', basename: 'x.png', text: 'x' },
      ]);
      expect(answer.answer).toBe('forty-two');
    } finally {
      await close();
    }
  }, 60_000);

  it("serves the configured Search-R1 reward (format and answer, or the exact match) as the trainer's reward", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-env-'));
    dirs.push(dir);
    for (const searchR1Reward of ['format-answer', 'exact-match'] as const) {
      const { served, close } = await buildServedEnvironment({
        searcher: { episode: { mode: 'answer' }, reward: { scheme: 'search-r1', searchR1Reward } },
        slides: { cacheDir: join(dir, 'corpus'), decks: 2, minSlides: 5, maxSlides: 5 },
      });
      try {
        expect(served.reward).toMatchObject({ scheme: 'search-r1', searchR1Reward });
      } finally {
        await close();
      }
    }
  }, 60_000);
});
