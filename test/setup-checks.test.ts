import { describe, expect, it } from 'vitest';
import { createMemoryStore, createMockGenerator, createMockSearchEngine } from '../src/adapters/mock/index';
import { createRuleJudge } from '../src/adapters/rule-judge/index';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import {
  AdapterError,
  ConfigValidationError,
  createSearcher,
  createTrainer,
  DatasetValidationError,
  InvalidArgumentError,
  RewardsMissingError,
  UnsupportedPortVersionError,
  type Judge,
  type PromptRecord,
} from '../src/index';

const pages = [{ basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5 billion dollars' }];
const prompt: PromptRecord = {
  uid: 'acme',
  question: 'Acme revenue 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};
const script = ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'];
const ports = (extra: Record<string, unknown> = {}) => ({
  policy: createScriptedPolicy({ script }),
  searchEngine: createMockSearchEngine({ pages }),
  generator: createMockGenerator({ facts: { 'acme_2.png': '4.5 billion dollars' } }),
  judge: createRuleJudge(),
  ...extra,
});

describe('the episode context follows the policy', () => {
  it("uses the policy's context length, and refuses a larger one up front", () => {
    const policy = createScriptedPolicy({ script, contextLength: 64 });
    expect(() => createSearcher(ports({ policy }), { episode: { maxContextTokens: 65 } })).toThrowError(
      InvalidArgumentError,
    );
    expect(() => createSearcher(ports({ policy }), { episode: { maxContextTokens: 65 } })).toThrow(
      /episode\.maxContextTokens.*at most 64/,
    );
    expect(() => createSearcher(ports({ policy }), { episode: { maxContextTokens: 64 } })).not.toThrow();
  });

  it('ends an episode whose prompt does not fit with `context`: format gate failed, reward 0, not missing', async () => {
    const policy = createScriptedPolicy({ script, contextLength: 40 });
    const searcher = createSearcher(ports({ policy }), { rl: { nAgent: 2 } });
    const batch = await searcher.collect([prompt]);
    expect(batch.episodes.map((e) => e.trajectory.terminated)).toEqual(['context', 'context']);
    expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([0, 0]);
    expect(batch.missingRewards).toBe(0);
    expect(policy.calls.begin).toHaveLength(0);
  });

  it('ends an episode with `context` when the next observation would overflow the policy, the others go on', async () => {
    const short = { ...prompt, uid: 'short', question: 'Acme?' };
    const policy = createScriptedPolicy({ script, contextLength: 180 });
    const searcher = createSearcher(ports({ policy }), { rl: { nAgent: 1 }, episode: { instructions: '' } });
    // About 20 prompt tokens, a 20-token search turn and an 80-token observation fit in 180; 160 prompt tokens leave no room for the observation.
    const long = { ...prompt, uid: 'long', question: `Acme revenue 2019? ${'please '.repeat(20)}` };
    const batch = await searcher.collect([short, long]);
    const ended = Object.fromEntries(batch.episodes.map((e) => [e.trajectory.promptUid, e.trajectory]));
    expect(ended.short!.terminated).toBe('complete');
    expect(ended.long!.terminated).toBe('context');
    expect(ended.long!.reward).toBe(0);
    // What the policy saw never passed its context (the generator's answer, mask 0, may follow).
    for (const t of batch.episodes.map((e) => e.trajectory))
      expect(t.tokenSteps.every((s) => s.position < 180)).toBe(true);
  });
});

describe('setup mistakes fail up front', () => {
  it('refuses a judge (or any port) written for a specification version the core does not support', () => {
    const judge = { ...createRuleJudge(), specificationVersion: 'v2' } as unknown as Judge;
    const error = (() => {
      try {
        createSearcher(ports({ judge }));
      } catch (e) {
        return e;
      }
    })();
    expect(UnsupportedPortVersionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ port: 'judge', provider: 'rule', version: 'v2', supported: ['v1'] });
    // Refused as another version even when its methods are another version's too.
    const v2 = { specificationVersion: 'v2', provider: 'next', doGrade: async () => ({ score: 1 }) };
    expect(() => createSearcher(ports({ judge: v2 }))).toThrow(
      /judge 'next' implements specification version 'v2'/,
    );
    const store = { ...createMemoryStore(), specificationVersion: 'v3' } as unknown as Parameters<
      typeof createTrainer
    >[0]['store'];
    expect(() =>
      createTrainer({
        searcher: createSearcher(ports()),
        store,
        prompts: [prompt],
        settings: { runId: 'r', steps: 1, batchSize: 1 },
      }),
    ).toThrow(/store 'memory'.*'v3'/);
  });

  it('names a port object that lacks a method', () => {
    const judge = {
      specificationVersion: 'v1',
      provider: 'mine',
      score: async () => ({ score: 1 }),
    } as unknown as Judge;
    expect(() => createSearcher(ports({ judge }))).toThrow(/Invalid argument 'ports\.judge\.doScore'/);
  });

  it('names the batch row and field of a bad prompt, and a missing reference when the judge needs one', async () => {
    const searcher = createSearcher(ports(), { rl: { nAgent: 2 } });
    const error = await searcher
      .collect([prompt, { ...prompt, uid: 'b', reference: undefined }, prompt])
      .catch((e: unknown) => e);
    expect(DatasetValidationError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ row: 1, field: 'reference' });
    await expect(searcher.collect([prompt, { ...prompt, uid: '' }])).rejects.toMatchObject({
      row: 1,
      field: 'uid',
    });
    // Phase 1 (NDCG only) needs no reference.
    const ndcgOnly = createSearcher(ports(), { rl: { nAgent: 2 }, reward: { weights: 'phase1' } });
    await expect(ndcgOnly.collect([{ ...prompt, reference: undefined }])).resolves.toMatchObject({
      missingRewards: 0,
    });
  });

  it("checks each port's setup (an API key) before the first rollout", async () => {
    const policy = createScriptedPolicy({ script });
    let key: string | undefined;
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'keyed',
      async doCheck() {
        if (!key)
          throw new InvalidArgumentError({
            argument: 'apiKey',
            message: 'no key: pass { apiKey } or set KEYED_API_KEY',
          });
      },
      doScore: async () => ({ score: 1 }),
    };
    const searcher = createSearcher(ports({ policy, judge }), { rl: { nAgent: 2 } });
    await expect(searcher.collect([prompt])).rejects.toThrow(/KEYED_API_KEY/);
    expect(policy.calls.begin).toHaveLength(0);
    key = 'set';
    await expect(searcher.collect([prompt])).resolves.toMatchObject({ missingRewards: 0 });
  });

  it("reports an exception of the user's own judge as an adapter error, not a provider error", async () => {
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'buggy',
      doScore: async (_q, answer) => ({
        score: (answer as unknown as { length: number } & { nope: { x: number } }).nope.x,
      }),
    };
    const batch = await createSearcher(ports({ judge }), { rl: { nAgent: 2 } }).collect([prompt]);
    expect(batch.episodes.map((e) => e.trajectory.rewardDetail)).toEqual([
      expect.objectContaining({
        status: 'missing',
        cause: expect.objectContaining({
          stage: 'judge',
          kind: 'adapter_error',
          message: expect.stringMatching(/judge 'buggy' threw TypeError/),
        }),
      }),
      expect.objectContaining({
        status: 'missing',
        cause: expect.objectContaining({ kind: 'adapter_error' }),
      }),
    ]);
    expect(
      AdapterError.isInstance(new AdapterError({ port: 'judge', provider: 'x', error: new TypeError('t') })),
    ).toBe(true);
  });
});

describe('the trainer with missing rewards', () => {
  const failing: Judge = {
    specificationVersion: 'v1',
    provider: 'down',
    doScore: async () => Promise.reject(new TypeError('fetch failed')),
  };

  it('stops with an error naming the causes when every reward of a step is missing, after storing the step', async () => {
    const store = createMemoryStore();
    const searcher = createSearcher(ports({ judge: failing, store }), {
      rl: { nAgent: 2 },
      calls: { judge: { maxRetries: 0 } },
    });
    const trainer = createTrainer({
      searcher,
      store,
      prompts: [prompt],
      settings: { runId: 'r', steps: 3, batchSize: 1 },
    });
    const error = await trainer.run().catch((e: unknown) => e);
    expect(RewardsMissingError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ step: 1, missing: 2, total: 2, causes: { 'judge:provider_error': 2 } });
    expect((error as Error).message).toMatch(/fetch failed/);
    expect(store.records.filter((r) => r.kind === 'trajectory')).toHaveLength(2);
    expect(store.records.filter((r) => r.kind === 'metric')).toHaveLength(0);
    expect(
      store.records.find((r) => r.kind === 'event' && (r.data as { type?: string }).type === 'halt')?.data,
    ).toMatchObject({ type: 'halt' });
  });

  it('reports a step with some rewards missing without counting them as 0, and halts at a configured share', async () => {
    let calls = 0;
    const flaky: Judge = {
      specificationVersion: 'v1',
      provider: 'flaky',
      doScore: async () => (++calls % 2 === 0 ? Promise.reject(new TypeError('fetch failed')) : { score: 1 }),
    };
    const searcher = createSearcher(ports({ judge: flaky }), {
      rl: { nAgent: 2 },
      calls: { judge: { maxRetries: 0 } },
      pipeline: { limits: { score: 1 } },
    });
    const result = await createTrainer({
      searcher,
      store: createMemoryStore(),
      prompts: [prompt],
      settings: { runId: 'r', steps: 1, batchSize: 1 },
    }).run();
    expect(result.steps[0]).toMatchObject({ rewardMean: 1, missingRewards: 1 });
    const strict = createSearcher(ports({ judge: flaky }), {
      rl: { nAgent: 2 },
      calls: { judge: { maxRetries: 0 } },
      pipeline: { limits: { score: 1 } },
    });
    await expect(
      createTrainer({
        searcher: strict,
        store: createMemoryStore(),
        prompts: [prompt],
        settings: { runId: 'r', steps: 1, batchSize: 1, haltAtMissingShare: 0.5 },
      }).run(),
    ).rejects.toThrowError(RewardsMissingError);
  });

  it('refuses a dataset row without the reference its reward needs, naming the row', () => {
    const searcher = createSearcher(ports(), { rl: { nAgent: 2 } });
    expect(() =>
      createTrainer({
        searcher,
        store: createMemoryStore(),
        prompts: [prompt, { uid: 'x', question: 'q?' }],
        settings: { runId: 'r', steps: 1, batchSize: 1 },
      }),
    ).toThrow(/row 1, field 'reference'/);
  });

  it('rejects a bad halting share naming the field', () => {
    const searcher = createSearcher(ports(), { rl: { nAgent: 2 } });
    expect(() =>
      createTrainer({
        searcher,
        store: createMemoryStore(),
        prompts: [prompt],
        settings: { runId: 'r', steps: 1, batchSize: 1, haltAtMissingShare: 0 },
      }),
    ).toThrowError(ConfigValidationError);
  });
});
