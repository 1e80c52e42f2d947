import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigValidationError } from '../core/errors';
import { createProgress } from '../cli/progress';
import { loadRunConfig, parseRunConfig, runPolicySettings } from './config';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('run configuration', () => {
  it('reads YAML and JSON with every seed-000 hyperparameter in its place', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-config-'));
    dirs.push(dir);
    const yaml = `
seed: 7
trainer: { batchSize: 32, saveFreq: 5, resumeMode: disable }
phases:
  - { name: round1, steps: 100, weights: focused, learningRate: 1.0e-6 }
searcher:
  episode: { maxTurns: 7 }
  rl:
    nAgent: 16
    ppoEpochs: 2
    miniBatchSize: 64
    entropyCoef: 0
    loss: { kind: gspo, clipLow: 3.0e-4, clipHigh: 4.0e-4, klCoef: 0.001, klEstimator: k3 }
`;
    await writeFile(join(dir, 'run.yaml'), yaml);
    const config = await loadRunConfig(join(dir, 'run.yaml'));
    expect(config.trainer).toEqual({
      batchSize: 32,
      saveFreq: 5,
      resumeMode: 'disable',
      keepLast: 2,
      keepBestBy: 'rewardMean',
    });
    expect(config.phases).toEqual([
      { name: 'round1', steps: 100, weights: 'focused', learningRate: 1e-6, warmupSteps: 5 },
    ]);
    expect(config.searcher.rl).toMatchObject({
      nAgent: 16,
      ppoEpochs: 2,
      miniBatchSize: 64,
      loss: { clipLow: 3e-4, clipHigh: 4e-4, klCoef: 0.001 },
    });
    expect(config.searcher.episode.maxTurns).toBe(7);
    await writeFile(join(dir, 'run.json'), JSON.stringify({ seed: 3 }));
    expect((await loadRunConfig(join(dir, 'run.json'))).seed).toBe(3);
    // Defaults: the demo's small episode settings.
    expect(parseRunConfig({}).searcher.episode).toMatchObject({
      instructions: '',
      maxTurns: 5,
      maxContextTokens: 256,
    });
  });

  it('parses the example configuration', async () => {
    const config = await loadRunConfig(join(__dirname, '..', '..', 'examples', 'train-slides.yaml'));
    expect(config.phases.map((p) => p.weights)).toEqual(['phase1', 'default']);
    expect(config.searcher.rl.loss.kind).toBe('gspo');
  });

  it('names the field of a bad value, and the file of bad syntax', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-config-'));
    dirs.push(dir);
    await writeFile(join(dir, 'bad.yaml'), 'searcher:\n  rl:\n    nAgent: 0\n');
    const error = await loadRunConfig(join(dir, 'bad.yaml')).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/bad.yaml: searcher.rl.nAgent/);
    await writeFile(join(dir, 'broken.yaml'), 'a: [1, 2\n');
    await expect(loadRunConfig(join(dir, 'broken.yaml'))).rejects.toThrow(/not valid YAML/);
    expect(() => parseRunConfig({ trainer: { batchSize: 2, extra: 1 } })).toThrow(/trainer/);
  });
});

describe('run configuration: input that must be refused', () => {
  it('refuses a file that is not UTF-8, an over-long runId, and takes policy.coalesceSessions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-config-'));
    try {
      await writeFile(
        join(dir, 'latin1.yaml'),
        new Uint8Array([0x73, 0x65, 0x65, 0x64, 0x3a, 0x20, 0xe9, 0x0a]),
      );
      await expect(loadRunConfig(join(dir, 'latin1.yaml'))).rejects.toThrow(/latin1\.yaml.*not UTF-8/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(() => parseRunConfig({ runId: 'x'.repeat(129) })).toThrow(/runId/);
    expect(parseRunConfig({}).policy?.coalesceSessions).toBe(true);
    expect(parseRunConfig({ policy: { coalesceSessions: false } }).policy?.coalesceSessions).toBe(false);
  });

  it('takes sft.freshNames (null by default: on with the vocabulary tokenizer) and refuses true with bytes, by name', () => {
    expect(parseRunConfig({}).sft?.freshNames).toBeNull();
    expect(parseRunConfig({ policy: { tokenizer: 'bytes' } }).sft?.freshNames).toBeNull();
    expect(parseRunConfig({ sft: { freshNames: true } }).sft?.freshNames).toBe(true);
    expect(() => parseRunConfig({ sft: { freshNames: true }, policy: { tokenizer: 'bytes' } })).toThrow(
      /sft\.freshNames.*policy\.tokenizer: bytes/,
    );
    expect(() =>
      parseRunConfig({
        sft: { freshNames: true },
        searcher: { adapters: { policy: { type: 'llama', model: 'm.gguf' } } },
      }),
    ).toThrow(/sft\.freshNames.*searcher\.adapters has its own tokenizer/);
  });
});

describe('progress', () => {
  it('draws a bar with ETA on a terminal and plain lines elsewhere', () => {
    let t = 0;
    const tty: string[] = [];
    const bar = createProgress(
      'phase1',
      4,
      { isTTY: true, columns: 100, write: (s) => tty.push(s) },
      { now: () => t },
    );
    t = 1000;
    bar.update(1, 'reward 0.100');
    expect(tty[0]).toMatch(/^\rphase1 \[######\.+\] 1\/4 reward 0\.100 ETA 3s/);
    bar.done();
    expect(tty.at(-1)).toMatch(/phase1 done in 1s reward 0\.100\n$/);
    const plain: string[] = [];
    const lines = createProgress(
      'eval',
      10,
      { isTTY: false, write: (s) => plain.push(s) },
      { every: 5, now: () => 0 },
    );
    for (let i = 1; i <= 10; i++) lines.update(i);
    expect(plain).toEqual(['eval 5/10 ETA 0s\n', 'eval 10/10 ETA 0s\n']);
  });

  it("keeps a slide run's configured ports over the environment's, and refuses settings the run would ignore, by name", async () => {
    const { runAdapters } = await import('./session');
    const environment = {
      searchEngine: { type: 'sqlite-fts' as const, dbPath: 'slides.sqlite' },
      imageOps: { type: 'sharp' as const },
      generator: { type: 'slide-reader' as const, corpusPath: 'c.json' },
      judge: { type: 'rule' as const },
    };
    const config = parseRunConfig({
      searcher: { adapters: { judge: { type: 'openai', model: 'gpt-5-mini-2025-08-07' } } },
    });
    const adapters = runAdapters(config, environment, { type: 'scripted', script: [] });
    expect(adapters.judge).toMatchObject({ type: 'openai', model: 'gpt-5-mini-2025-08-07' });
    expect(adapters.searchEngine).toEqual(environment.searchEngine);
    expect(adapters.generator).toEqual(environment.generator);
    expect(adapters.policy).toEqual({ type: 'scripted', script: [] });
    const dataset = { dataset: { path: 'q.jsonl' } };
    expect(() => parseRunConfig({ ...dataset, corpus: { decks: 3 } })).toThrow(
      /config: corpus.*offline slide environment/,
    );
    // Issue 25: a run on your own data has a warm start (sft) and splits; the slide oracle's own settings it would ignore.
    expect(parseRunConfig({ ...dataset, sft: { epochs: 1 } }).sft).toMatchObject({
      epochs: 1,
      keepPerQuestion: 1,
    });
    expect(parseRunConfig({ ...dataset, evaluation: { split: 'test' } }).evaluation.split).toBe('test');
    expect(() => parseRunConfig({ ...dataset, sft: { vagueRate: 0.5 } })).toThrow(
      /config: sft\.vagueRate.*slide oracle/,
    );
    expect(() => parseRunConfig({ searcher: { adapters: { store: { type: 'memory' } } } })).toThrow(
      /config: searcher\.adapters\.store.*run folder/,
    );
    expect(() => parseRunConfig({ searcher: { adapters: { policy: { type: 'tfjs' } } } })).toThrow(
      /searcher\.adapters\.policy\.type.*configured in `policy`/,
    );
    expect(() => parseRunConfig({ policy: { initFrom: 'runs/x/sft' }, sft: { epochs: 2 } })).toThrow(
      /config: sft.*initFrom/,
    );
    // A run folder's config.json parses again to the same run (the defaults of each kind are filled in, not refused).
    for (const input of [{}, dataset, { policy: { initFrom: 'runs/x/sft' } }]) {
      const parsed = parseRunConfig(input);
      expect(parseRunConfig(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
    }
    expect(parseRunConfig(dataset).searcher.episode.observationMaxChars).toBe(60);
    // A partial searcher block merges with the kind's defaults (the ones train --help lists), section by section.
    const partial = parseRunConfig({ searcher: { rl: { nAgent: 4 } } });
    expect([
      partial.searcher.episode.maxTurns,
      partial.searcher.episode.maxTurnTokens,
      partial.searcher.episode.temperature,
      partial.searcher.rl.nAgent,
    ]).toEqual([5, 48, 0.7, 4]);
    expect(
      parseRunConfig({ ...dataset, searcher: { episode: { maxTurns: 3 } } }).searcher.episode,
    ).toMatchObject({ maxTurns: 3, observationMaxChars: 60, temperature: 0.5 });
    expect(parseRunConfig({}).searcher.episode.observationMaxChars).toBe(300);
    // Which part of a long page is shown: the start by default, the search's lines when asked; nothing else.
    expect(parseRunConfig(dataset).searcher.episode.observationExcerpt).toBe('start');
    expect(
      parseRunConfig({ ...dataset, searcher: { episode: { observationExcerpt: 'query' } } }).searcher.episode
        .observationExcerpt,
    ).toBe('query');
    expect(() =>
      parseRunConfig({ ...dataset, searcher: { episode: { observationExcerpt: 'middle' } } }),
    ).toThrow(/searcher\.episode\.observationExcerpt/);
    // ONNX Runtime's training threads and lanes reach the policy apart from its rollouts' one thread.
    expect(
      (
        await runPolicySettings(
          parseRunConfig({ policy: { trainingThreads: 2, trainingLanes: 3 } }).policy!,
          1,
        )
      ).onnx,
    ).toEqual({
      intraOpThreads: 1,
      trainingThreads: 2,
      trainingLanes: 3,
    });
    expect((await runPolicySettings(parseRunConfig({}).policy!, 1)).onnx).toEqual({
      intraOpThreads: 1,
      trainingThreads: 1,
      trainingLanes: 2,
    });
  });
});

describe('run configuration: a partial searcher block (issue 24, item 18)', () => {
  it("gives a named policy's episodes its own context (null), the run's own small policy 256 tokens", () => {
    const dataset = { dataset: { path: 'q.jsonl' } };
    const named = { searcher: { adapters: { policy: { type: 'llama', model: 'm.gguf' } } } };
    expect(parseRunConfig(dataset).searcher.episode.maxContextTokens).toBe(256);
    expect(parseRunConfig({ ...dataset, ...named }).searcher.episode.maxContextTokens).toBeNull();
    expect(parseRunConfig(named).searcher.episode.maxContextTokens).toBeNull();
    const given = { searcher: { ...named.searcher, episode: { maxContextTokens: 1024 } } };
    expect(parseRunConfig({ ...dataset, ...given }).searcher.episode.maxContextTokens).toBe(1024);
  });

  it("merges with the kind's defaults that train --help lists, at every depth, for both kinds of run", () => {
    const slide = parseRunConfig({}).searcher;
    const dataset = { dataset: { path: 'q.jsonl' } };
    const ownData = parseRunConfig(dataset).searcher;
    // The example, then a partial block at each depth of each section.
    const cases: Array<[unknown, (s: typeof slide) => void]> = [
      [{ searcher: { rl: { nAgent: 4 } } }, (s) => expect(s.rl.nAgent).toBe(4)],
      [{ searcher: {} }, () => undefined],
      [{ searcher: { episode: {} } }, () => undefined],
      [{ searcher: { episode: { maxTurns: 3 } } }, (s) => expect(s.episode.maxTurns).toBe(3)],
      [{ searcher: { rl: { loss: { clipLow: 0.1 } } } }, (s) => expect(s.rl.loss.clipLow).toBe(0.1)],
      [{ searcher: { reward: { weights: 'focused' } } }, (s) => expect(s.reward.weights).toBe('focused')],
      [
        { searcher: { adapters: { judge: { type: 'rule' } } } },
        (s) => expect(s.adapters.judge?.type).toBe('rule'),
      ],
    ];
    for (const [input, changed] of cases) {
      for (const [kind, base, extra] of [
        ['slides', slide, {}],
        ['dataset', ownData, dataset],
      ] as const) {
        const parsed = parseRunConfig({ ...extra, ...(input as object) }).searcher;
        changed(parsed);
        const label = `${kind} ${JSON.stringify(input)}`;
        // Every default the block does not set is the kind's own, not the core's (maxTurns 7, maxTurnTokens 256, ...).
        const { maxTurns, ...episode } = base.episode;
        expect(parsed.episode, label).toMatchObject(
          (input as { searcher: { episode?: { maxTurns?: number } } }).searcher.episode?.maxTurns
            ? episode
            : base.episode,
        );
        if ((input as { searcher: { rl?: { nAgent?: number } } }).searcher.rl?.nAgent === undefined)
          expect(parsed.rl.nAgent, label).toBe(base.rl.nAgent);
        expect(parsed.episode.maxTurnTokens, label).toBe(48);
        expect(maxTurns).toBe(kind === 'slides' ? 5 : 4);
      }
    }
  });
});
