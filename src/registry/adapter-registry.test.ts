import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { parseSearcherConfig } from '../config';
import { closeSearcherContainer, createSearcherContainer, TOKENS } from '../container';
import { ConfigValidationError } from '../core/errors';
import type { Judge } from '../ports/judge';
import type { Searcher } from '../searcher';
import { ADAPTER_PORT_NAMES, defineAdapter } from '../provider-utils/adapter-definition';
import { OPTIONAL_PACKAGE_VERSIONS } from '../provider-utils/optional-package';
import { createAdapterRegistry } from './adapter-registry';
import { ADAPTER_REGISTRY, BUILT_IN_ADAPTERS } from './adapters';

// Every vendor SDK a definition's `create` may load: none is imported by naming the definitions.
const loaded = vi.hoisted(() => new Set<string>());
vi.mock('openai', () => (loaded.add('openai'), {}));
vi.mock('@google/genai', () => (loaded.add('@google/genai'), {}));
vi.mock('undici', () => (loaded.add('undici'), {}));
vi.mock('libsql', () => (loaded.add('libsql'), {}));
vi.mock('sharp', () => (loaded.add('sharp'), {}));
vi.mock('onnxruntime-node', () => (loaded.add('onnxruntime-node'), {}));
vi.mock('@tensorflow/tfjs', () => (loaded.add('@tensorflow/tfjs'), {}));

/** The adapter of the docs' worked example (docs/providers.md#add-an-adapter): a judge that gives every answer one score. */
const constantJudgeAdapter = defineAdapter({
  port: 'judge',
  type: 'constant',
  settings: z.object({ score: z.number().min(0).max(1) }).strict(),
  packages: [],
  create: ({ score }): Judge => ({
    specificationVersion: 'v1',
    provider: `constant:${score}`,
    doScore: async () => ({ score }),
  }),
});

const config = {
  rl: { nAgent: 2 },
  adapters: {
    searchEngine: {
      type: 'mock' as const,
      pages: [{ basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5' }],
    },
    policy: {
      type: 'scripted' as const,
      script: ['<search>acme revenue</search>', '<search_complete>true</search_complete>'],
    },
    generator: { type: 'mock' as const, facts: { 'acme_2.png': '4.5' } },
  },
};
const prompt = {
  uid: 'acme',
  question: 'Acme revenue 2019?',
  reference: '4.5',
  goldenBasenames: ['acme_2.png'],
};

describe('the adapter registry', () => {
  it('builds an adapter registered with one line through the container, from a configuration', async () => {
    const registry = ADAPTER_REGISTRY.with(constantJudgeAdapter);
    const container = createSearcherContainer(
      { ...config, adapters: { ...config.adapters, judge: { type: 'constant', score: 0 } } },
      { registry },
    );
    try {
      expect(container.get<Judge>(TOKENS.Judge).provider).toBe('constant:0');
      const batch = await container.get<Searcher>(TOKENS.Searcher).collect([prompt]);
      // The default weights with a judge of 0: NDCG 1 (0.1) and format (0.1) only, as a judge that rejects.
      expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([0.2, 0.2]);
    } finally {
      await closeSearcherContainer(container);
    }
  });

  it('validates the settings of a registered adapter with its own schema, naming the field', () => {
    const registry = ADAPTER_REGISTRY.with(constantJudgeAdapter);
    const parse = (judge: unknown) => () => parseSearcherConfig({ adapters: { judge } }, registry);
    expect(parse({ type: 'constant', score: 0.5 })()).toMatchObject({
      adapters: { judge: { type: 'constant', score: 0.5 } },
    });
    for (const [judge, field] of [
      [{ type: 'constant', score: 2 }, 'adapters.judge.score'],
      [{ type: 'constant', score: 1, scor: 1 }, 'adapters.judge.scor'],
    ] as const) {
      const error = (() => {
        try {
          parse(judge)();
        } catch (e) {
          return e;
        }
      })();
      expect(ConfigValidationError.isInstance(error), JSON.stringify(judge)).toBe(true);
      expect((error as ConfigValidationError).field).toBe(field);
    }
    // Without the registry that knows it, the type is refused at `adapters.judge.type`.
    expect(() => parseSearcherConfig({ adapters: { judge: { type: 'constant', score: 1 } } })).toThrow(
      /adapters\.judge\.type/,
    );
  });

  it('derives the config unions and the packages from the one list', () => {
    for (const port of ADAPTER_PORT_NAMES) {
      const types = BUILT_IN_ADAPTERS.filter((d) => d.port === port).map((d) => d.type);
      const schema = ADAPTER_REGISTRY.configSchema.shape[port];
      for (const type of types) {
        const definition = ADAPTER_REGISTRY.definition(port, type)!;
        // Every built-in type parses with its settings' defaults, except those with required settings.
        const parsed = schema.safeParse({ type });
        const required = !definition.settings.safeParse({}).success;
        expect(parsed.success, `${port} ${type}`).toBe(!required);
      }
      expect(schema.safeParse({ type: 'no-such-adapter' }).success).toBe(false);
    }
    expect(
      ADAPTER_REGISTRY.packages({
        searchEngine: { type: 'sqlite-fts' },
        generator: { type: 'openai' },
        judge: { type: 'openai' },
        policy: { type: 'llama' },
      }),
    ).toEqual([
      'libsql',
      'sharp',
      'onnxruntime-node',
      '@huggingface/tokenizers',
      '@huggingface/jinja',
      'openai',
    ]);
    expect(ADAPTER_REGISTRY.packages({ judge: { type: 'rule' }, store: { type: 'memory' } })).toEqual([]);
    // Every package a definition names is an optional peer dependency (what requireOptionalPackages installs).
    for (const definition of BUILT_IN_ADAPTERS)
      for (const name of definition.packages)
        expect(
          OPTIONAL_PACKAGE_VERSIONS[name],
          `${definition.port} ${definition.type}: ${name}`,
        ).toBeDefined();
  });

  it('refuses two definitions of one port and type, and a default with no definition', () => {
    const defaults = {
      searchEngine: 'mock',
      generator: 'mock',
      judge: 'rule',
      imageOps: 'raw-rgba',
      store: 'memory',
    };
    expect(() => createAdapterRegistry([...BUILT_IN_ADAPTERS, BUILT_IN_ADAPTERS[0]], defaults)).toThrow(
      /two adapter definitions of searchEngine are named 'mock'/,
    );
    expect(() => createAdapterRegistry(BUILT_IN_ADAPTERS, { ...defaults, judge: 'constant' })).toThrow(
      /the default judge 'constant' has no definition/,
    );
    // `with` replaces a definition of the same port and type.
    const replaced = ADAPTER_REGISTRY.with({ ...constantJudgeAdapter, type: 'rule' });
    expect(replaced.definitions.filter((d) => d.port === 'judge' && d.type === 'rule')).toHaveLength(1);
  });

  it('loads no vendor SDK by naming the definitions: each loads its own in create', () => {
    expect(BUILT_IN_ADAPTERS.length).toBeGreaterThan(20);
    expect([...loaded]).toEqual([]);
  });
});
