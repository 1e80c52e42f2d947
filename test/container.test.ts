import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerModule } from 'inversify';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createRuleJudge, type RuleJudge } from '../src/adapters/rule-judge/index';
import {
  closeSearcherContainer,
  createSearcherContainer,
  resolvePorts,
  resolveSearcher,
  TOKENS,
} from '../src/container';
import { parseRunConfig } from '../src/run/config';
import { ConfigValidationError, type Judge, type PolicyBackend, type Searcher } from '../src/index';

const config = {
  rl: { nAgent: 2 },
  adapters: {
    searchEngine: {
      type: 'mock' as const,
      pages: [{ basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5 billion dollars' }],
    },
    policy: {
      type: 'scripted' as const,
      script: ['<search>acme revenue</search>', '<search_complete>true</search_complete>'],
    },
    generator: { type: 'mock' as const, facts: { 'acme_2.png': '4.5 billion dollars' } },
  },
};
const prompt = {
  uid: 'acme',
  question: 'Acme revenue 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};

describe('the composition root', () => {
  it('wires the Searcher from configuration alone', async () => {
    const container = createSearcherContainer(config);
    const searcher = container.get<Searcher>(TOKENS.Searcher);
    const batch = await searcher.collect([prompt]);
    expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([1, 1]);
    expect(container.get<RuleJudge>(TOKENS.Judge).calls).toHaveLength(2);
  });

  it('swaps a judge in one line with rebind', async () => {
    const container = createSearcherContainer(config);
    const strict: Judge = {
      specificationVersion: 'v1',
      provider: 'strict',
      doScore: async () => ({ score: 0 }),
    };
    container.rebind<Judge>(TOKENS.Judge).toConstantValue(strict);
    const batch = await container.get<Searcher>(TOKENS.Searcher).collect([prompt]);
    expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([0.2, 0.2]);
  });

  it('accepts modules that rebind adapters', async () => {
    const judge = createRuleJudge();
    const override = new ContainerModule(({ rebind }) => {
      rebind<Judge>(TOKENS.Judge).toConstantValue(judge);
    });
    const container = createSearcherContainer(config, { modules: [override] });
    await container.get<Searcher>(TOKENS.Searcher).collect([prompt]);
    expect(judge.calls).toHaveLength(2);
  });

  it('rejects an invalid configuration before building anything, naming the field', () => {
    expect(() => createSearcherContainer({ episode: { maxTurns: -1 } })).toThrowError(ConfigValidationError);
    const container = createSearcherContainer({});
    expect(() => container.get(TOKENS.PolicyBackend)).toThrow(/adapters\.policy/);
  });

  it('takes port objects in place of configured adapters (the caller keeps them)', async () => {
    const judge = createRuleJudge();
    const container = createSearcherContainer(config, { ports: { judge } });
    await (await resolveSearcher(container)).collect([prompt]);
    expect(judge.calls).toHaveLength(2);
    // Another configuration over the same ports: here the reward of phase 1 (0.1 + 0.9 NDCG).
    const phase1 = await resolveSearcher(container, { rl: { nAgent: 2 }, reward: { weights: 'phase1' } });
    const batch = await phase1.collect([prompt]);
    expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([1, 1]);
    expect(judge.calls).toHaveLength(2);
  });

  it('builds real adapters from configuration, loading their SDK on first use', async () => {
    const container = createSearcherContainer({
      ...config,
      adapters: {
        ...config.adapters,
        judge: { type: 'openai', model: 'gpt-5-mini', apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1' },
        generator: { type: 'gemini', model: 'gemini-3-flash-preview', apiKey: 'g-test' },
      },
    });
    expect(() => container.get(TOKENS.Judge)).toThrow();
    const ports = await resolvePorts(container);
    expect(ports.judge.provider).toBe('openai:gpt-5-mini');
    expect(ports.generator.provider).toBe('gemini:gemini-3-flash-preview');
  });

  it('indexes a page folder into SQLite FTS5, crops with sharp, and closes the index with the container', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-container-'));
    try {
      await writeFile(
        join(dir, 'deck_1.png'),
        await sharp({ create: { width: 40, height: 30, channels: 3, background: '#fff' } })
          .png()
          .toBuffer(),
      );
      await writeFile(join(dir, 'deck_1.txt'), 'Acme revenue 2019 was 4.5 billion dollars');
      const container = createSearcherContainer({
        ...config,
        adapters: {
          ...config.adapters,
          searchEngine: { type: 'sqlite-fts', dbPath: join(dir, 'pages.sqlite'), pagesDir: dir },
          imageOps: { type: 'sharp' },
        },
      });
      const ports = await resolvePorts(container);
      const [hit] = await ports.searchEngine.doSearch('acme revenue', { topK: 1 });
      expect(hit).toMatchObject({
        basename: 'deck_1.png',
        image: { mimeType: 'image/png', width: 40, height: 30 },
      });
      const crop = await ports.imageOps.doCrop(hit!.image!, [0, 0, 20, 15], { minOutputSide: 60 });
      expect([crop.width, crop.height]).toEqual([60, 45]);
      await closeSearcherContainer(container);
      await expect(ports.searchEngine.doSearch('acme', { topK: 1 })).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("builds an ONNX policy (kind 'onnx') from a model folder, collects with it, and refuses to train it", async () => {
    const modelDir = join(import.meta.dirname, '..', 'src', 'adapters', 'onnx', '__fixtures__', 'tiny-gpt');
    // The fixture model (a GPT-2 exported by Optimum) was trained on questions like this one
    // (scripts/make-onnx-fixture.py).
    const pages = [{ basename: 'apple_1.png', text: 'the apple size is 7' }];
    const onnxConfig = {
      episode: { instructions: '', maxTurns: 2, maxTurnTokens: 32, temperature: 0 },
      adapters: {
        searchEngine: { type: 'mock' as const, pages },
        generator: { type: 'mock' as const, facts: { 'apple_1.png': '7' } },
        policy: { type: 'onnx' as const, modelDir, intraOpThreads: 1 },
      },
    };
    const apple = {
      uid: 'apple',
      question: 'what is the size of the apple?',
      reference: '7',
      goldenBasenames: ['apple_1.png'],
    };
    const container = createSearcherContainer(onnxConfig);
    try {
      const policy = await container.getAsync<PolicyBackend>(TOKENS.PolicyBackend);
      expect([policy.provider, policy.trainable, policy.contextLength]).toEqual(['onnx', false, 256]);
      const batch = await container.get<Searcher>(TOKENS.Searcher).collect([apple], { nAgent: 1 });
      expect(batch.episodes).toHaveLength(1);
      const trajectory = batch.episodes[0]!.trajectory;
      expect(trajectory.turns[0]!.text).toBe(
        '<think>find the size of the apple</think>\n<search>apple size</search>',
      );
      expect(trajectory.retrievedBasenames).toEqual(['apple_1.png']);
    } finally {
      await closeSearcherContainer(container);
    }
    const dataRun = {
      dataset: { path: 'questions.jsonl' },
      searcher: { adapters: { policy: { type: 'onnx', modelDir } } },
    };
    expect(() => parseRunConfig(dataRun)).toThrow(
      /searcher\.adapters\.policy\.type.*'onnx' policy runs rollouts only and cannot be trained; set the steps of phases 'phase1', 'phase2' to 0/,
    );
    expect(
      parseRunConfig({ ...dataRun, phases: [{ name: 'eval', steps: 0, weights: 'default' }] }).searcher
        .adapters.policy?.type,
    ).toBe('onnx');
    expect(() => parseRunConfig({ searcher: { adapters: { policy: { type: 'onnx', modelDir } } } })).toThrow(
      /'onnx' policy runs rollouts only/,
    );
    expect(() =>
      createSearcherContainer({
        adapters: { policy: { type: 'onnx', modelDir, executionProvider: 'tpu' as never } },
      }),
    ).toThrow(/adapters\.policy\.executionProvider/);
  });
});
