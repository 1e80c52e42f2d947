import { Container, ContainerModule } from 'inversify';
import {
  createMemoryStore,
  createMockGenerator,
  createMockSearchEngine,
  createRawImageOps,
} from './adapters/mock/index';
import { createRuleJudge } from './adapters/rule-judge/index';
import { createScriptedPolicy } from './adapters/scripted-policy/index';
import {
  parseSearcherConfig,
  type AdaptersConfig,
  type SearcherConfig,
  type SearcherConfigInput,
} from './config';
import { ConfigValidationError } from './core/errors';
import type { Generator } from './ports/generator';
import type { ImageOps } from './ports/image-ops';
import type { Judge } from './ports/judge';
import type { PolicyBackend } from './ports/policy-backend';
import type { SearchEngine } from './ports/search-engine';
import type { Store } from './ports/store';
import type { Tracker } from './ports/tracker';
import type { TrackerConfig } from './tracker-config';
import { createSearcher, type Searcher, type SearcherPorts } from './searcher';

/** The container type, for code that holds one without depending on inversify itself. */
export type SearcherContainer = Container;

/** Injection tokens, one per port. `rebind(TOKENS.Judge)` swaps a judge. */
export const TOKENS = Object.freeze({
  Config: Symbol.for('searcher-rl.Config') as symbol & { __type?: SearcherConfig },
  SearchEngine: Symbol.for('searcher-rl.SearchEngine'),
  Generator: Symbol.for('searcher-rl.Generator'),
  Judge: Symbol.for('searcher-rl.Judge'),
  PolicyBackend: Symbol.for('searcher-rl.PolicyBackend'),
  ImageOps: Symbol.for('searcher-rl.ImageOps'),
  Store: Symbol.for('searcher-rl.Store'),
  Searcher: Symbol.for('searcher-rl.Searcher'),
});

// Each builder returns the mock and offline adapters at once and loads any other family (and its
// vendor SDK) only when the configuration names it, so optional SDKs stay optional.

function buildSearchEngine(config: AdaptersConfig['searchEngine']): SearchEngine | Promise<SearchEngine> {
  switch (config.type) {
    case 'mock': {
      const { type: _type, ...settings } = config;
      return createMockSearchEngine(settings);
    }
    case 'sqlite-fts':
      return import('./adapters/sqlite-fts/index').then(
        async ({ createSqliteSearchEngine, indexCorpusFile, indexPageFolder }) => {
          const { type: _type, pagesDir, corpusPath, ...settings } = config;
          if (pagesDir !== undefined && corpusPath !== undefined)
            throw new ConfigValidationError({
              issues: [
                {
                  field: 'adapters.searchEngine.corpusPath',
                  message: 'give pagesDir or corpusPath, not both (one index holds one corpus)',
                },
              ],
            });
          if (pagesDir !== undefined) await indexPageFolder(settings.dbPath, pagesDir);
          if (corpusPath !== undefined) await indexCorpusFile(settings.dbPath, corpusPath);
          return createSqliteSearchEngine(settings);
        },
      );
    case 'search-r1': {
      const { type: _type, ...settings } = config;
      return import('./adapters/search-http/index').then((m) => m.createSearchR1Retriever(settings));
    }
    case 'vrag': {
      const { type: _type, ...settings } = config;
      return import('./adapters/search-http/index').then((m) => m.createVragImageSearch(settings));
    }
    case 'brave': {
      const { type: _type, ...settings } = config;
      return import('./adapters/search-http/index').then((m) => m.createBraveWebSearch(settings));
    }
  }
}

function buildGenerator(config: AdaptersConfig['generator']): Generator | Promise<Generator> {
  switch (config.type) {
    case 'mock': {
      const { type: _type, ...settings } = config;
      return createMockGenerator(settings);
    }
    case 'extractive': {
      const { type: _type, ...settings } = config;
      return import('./adapters/extractive/index').then((m) => m.createExtractiveGenerator(settings));
    }
    case 'openai': {
      const { type: _type, ...settings } = config;
      return import('./adapters/openai/index').then((m) => m.createOpenAIGenerator(settings));
    }
    case 'gemini': {
      const { type: _type, ...settings } = config;
      return import('./adapters/gemini/index').then((m) => m.createGeminiGenerator(settings));
    }
    case 'llama': {
      const { type: _type, ...settings } = config;
      return import('./adapters/llama/index').then((m) => m.createLlamaGenerator(settings));
    }
    case 'slide-reader':
      return Promise.all([import('node:fs/promises'), import('./env/slides/reader')]).then(
        async ([fs, reader]) => {
          let corpus: unknown;
          try {
            corpus = JSON.parse(await fs.readFile(config.corpusPath, 'utf8'));
          } catch (error) {
            throw new ConfigValidationError({
              issues: [
                {
                  field: 'adapters.generator.corpusPath',
                  message: `cannot read the slide corpus at '${config.corpusPath}': ${error instanceof Error ? error.message : String(error)}`,
                },
              ],
            });
          }
          return reader.createSlideReader(corpus as Parameters<typeof reader.createSlideReader>[0]);
        },
      );
  }
}

function buildJudge(config: AdaptersConfig['judge']): Judge | Promise<Judge> {
  switch (config.type) {
    case 'rule': {
      const { type: _type, ...settings } = config;
      return createRuleJudge(settings);
    }
    case 'openai': {
      const { type: _type, ...settings } = config;
      return import('./adapters/openai/index').then((m) => m.createOpenAIJudge(settings));
    }
    case 'gemini': {
      const { type: _type, ...settings } = config;
      return import('./adapters/gemini/index').then((m) => m.createGeminiJudge(settings));
    }
  }
}

function buildImageOps(config: AdaptersConfig['imageOps']): ImageOps | Promise<ImageOps> {
  if (config.type === 'raw-rgba') return createRawImageOps();
  const { type: _type, ...settings } = config;
  return import('./adapters/image/index').then((m) => m.createSharpImageOps(settings));
}

function buildStore(config: AdaptersConfig['store']): Store | Promise<Store> {
  if (config.type === 'memory') return createMemoryStore();
  if (config.type === 'sqlite')
    return import('./adapters/store/sqlite/index').then((m) => m.createSqliteStore({ path: config.path }));
  return import('./adapters/store/jsonl/index').then((m) => m.createJsonlStore({ dir: config.dir }));
}

function buildPolicy(config: AdaptersConfig['policy']): PolicyBackend | Promise<PolicyBackend> {
  if (!config)
    throw new ConfigValidationError({
      issues: [
        {
          field: 'adapters.policy',
          message:
            'no policy configured: set adapters.policy, give ports.policy, or rebind TOKENS.PolicyBackend',
        },
      ],
    });
  if (config.type === 'scripted')
    return createScriptedPolicy({ script: config.script, logProb: config.logProb });
  if (config.type === 'onnx') {
    const { type: _type, ...settings } = config;
    return import('./adapters/onnx/index').then((m) => m.createOnnxPolicy(settings));
  }
  if (config.type === 'llama') {
    const { type: _type, ...settings } = config;
    return import('./adapters/llama/index').then((m) => m.createLlamaPolicy(settings));
  }
  const { type: _type, tokenizer, ...settings } = config;
  if (settings.initFrom && tokenizer.kind === 'vocabulary')
    throw new ConfigValidationError({
      issues: [
        {
          field: 'adapters.policy.tokenizer',
          message: `initFrom '${settings.initFrom}' brings its own tokenizer (tokenizer.json): leave tokenizer out`,
        },
      ],
    });
  return Promise.all([import('./adapters/tfjs/index'), import('./core/protocol/tokenizer')]).then(
    ([tfjs, tokenizers]) =>
      // A model folder (initFrom) brings its own model and tokenizer (the schema's model defaults are not the user's).
      tfjs.createTfjsPolicy(
        settings.initFrom ? { ...settings, model: undefined } : settings,
        settings.initFrom
          ? {}
          : {
              tokenizer:
                tokenizer.kind === 'vocabulary'
                  ? tokenizers.createVocabularyTokenizer(tokenizer.words)
                  : tokenizers.createProtocolTokenizer(),
            },
      ),
  );
}

/**
 * A run's tracker from its configuration (`trackers` of a run config), its adapter loaded on
 * demand; `logDir` of TensorBoard must be set (a run defaults it to its folder's `tensorboard/`).
 * `jsonl` is the run folder's own records, which every run writes: it has no adapter to build.
 */
export async function createTracker(
  config: Exclude<TrackerConfig, { type: 'jsonl' }>,
  deps: { env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<Tracker> {
  if (config.type === 'tensorboard') {
    const { logDir } = config;
    if (logDir === undefined)
      throw new ConfigValidationError({
        issues: [{ field: 'trackers.logDir', message: 'the TensorBoard tracker needs a logDir' }],
      });
    return (await import('./adapters/tensorboard/index')).createTensorBoardTracker({ logDir });
  }
  const { type: _type, timeoutMs: _timeoutMs, maxRetries: _maxRetries, ...settings } = config;
  return (await import('./adapters/mlflow/index')).createMlflowTracker(settings, deps);
}

/** Releases what an adapter holds (an SQLite index, a store's files, a model's weights) when the container is closed. */
const closeAdapter = async (port: unknown) => {
  const held = port as { close?: () => unknown; dispose?: () => unknown } | null;
  if (typeof held?.close === 'function') await held.close();
  else if (typeof held?.dispose === 'function') await held.dispose();
};

/** One module per port: each binds the adapter `config.adapters` names, built at first use. */
export const searchEngineModule = new ContainerModule(({ bind }) => {
  bind<SearchEngine>(TOKENS.SearchEngine)
    .toResolvedValue(
      (config: SearcherConfig) => buildSearchEngine(config.adapters.searchEngine),
      [TOKENS.Config],
    )
    .inSingletonScope()
    .onDeactivation(closeAdapter);
});
/** Binds the Generator that `config.adapters.generator` names. */
export const generatorModule = new ContainerModule(({ bind }) => {
  bind<Generator>(TOKENS.Generator)
    .toResolvedValue((config: SearcherConfig) => buildGenerator(config.adapters.generator), [TOKENS.Config])
    .inSingletonScope();
});
/** Binds the Judge that `config.adapters.judge` names. */
export const judgeModule = new ContainerModule(({ bind }) => {
  bind<Judge>(TOKENS.Judge)
    .toResolvedValue((config: SearcherConfig) => buildJudge(config.adapters.judge), [TOKENS.Config])
    .inSingletonScope();
});
/** Binds the ImageOps that `config.adapters.imageOps` names. */
export const imageOpsModule = new ContainerModule(({ bind }) => {
  bind<ImageOps>(TOKENS.ImageOps)
    .toResolvedValue((config: SearcherConfig) => buildImageOps(config.adapters.imageOps), [TOKENS.Config])
    .inSingletonScope();
});
/** Binds the Store that `config.adapters.store` names; closed with the container. */
export const storeModule = new ContainerModule(({ bind }) => {
  bind<Store>(TOKENS.Store)
    .toResolvedValue((config: SearcherConfig) => buildStore(config.adapters.store), [TOKENS.Config])
    .inSingletonScope()
    .onDeactivation(closeAdapter);
});
/**
 * Binds the policy that `config.adapters.policy` names; closed (or disposed) with the container.
 */
export const policyModule = new ContainerModule(({ bind }) => {
  bind<PolicyBackend>(TOKENS.PolicyBackend)
    .toResolvedValue((config: SearcherConfig) => buildPolicy(config.adapters.policy), [TOKENS.Config])
    .inSingletonScope()
    .onDeactivation(closeAdapter);
});

/** The Searcher, assembled from whatever adapters are bound. */
export const searcherModule = new ContainerModule(({ bind }) => {
  bind<Searcher>(TOKENS.Searcher)
    .toResolvedValue(
      (
        config: SearcherConfig,
        policy: PolicyBackend,
        searchEngine: SearchEngine,
        generator: Generator,
        judge: Judge,
        imageOps: ImageOps,
        store: Store,
      ) => createSearcher({ policy, searchEngine, generator, judge, imageOps, store }, config),
      [
        TOKENS.Config,
        TOKENS.PolicyBackend,
        TOKENS.SearchEngine,
        TOKENS.Generator,
        TOKENS.Judge,
        TOKENS.ImageOps,
        TOKENS.Store,
      ],
    )
    .inSingletonScope();
});

const PORT_TOKENS = {
  policy: TOKENS.PolicyBackend,
  searchEngine: TOKENS.SearchEngine,
  generator: TOKENS.Generator,
  judge: TOKENS.Judge,
  imageOps: TOKENS.ImageOps,
  store: TOKENS.Store,
} as const;

/** Options of `createSearcherContainer`: port objects you already have, and extra modules. */
export interface CreateContainerOptions {
  /** Port objects to use instead of building them from `config.adapters` (e.g. a policy you created); the caller keeps them open. */
  ports?: Partial<Omit<SearcherPorts, 'clock'>>;
  /** Modules loaded after the defaults; use `rebind` inside them to replace an adapter. */
  modules?: ContainerModule[];
}

/**
 * The composition root (the one place adapters are wired): validates the configuration, binds
 * every port to the adapter `config.adapters` names (or to the object given in `options.ports`),
 * and the Searcher on top. Resolve with `container.getAsync(TOKENS.Searcher)` (adapters other
 * than the mocks load their SDK on first use), or `resolveSearcher(container)`. Swap an adapter
 * with `container.rebind(TOKENS.Judge).toConstantValue(myJudge)` before resolving.
 */
export function createSearcherContainer(
  config: SearcherConfigInput = {},
  options: CreateContainerOptions = {},
): Container {
  const resolved = parseSearcherConfig(config);
  const container = new Container();
  container.bind<SearcherConfig>(TOKENS.Config).toConstantValue(resolved);
  container.load(
    searchEngineModule,
    generatorModule,
    judgeModule,
    imageOpsModule,
    storeModule,
    policyModule,
    searcherModule,
  );
  for (const [name, token] of Object.entries(PORT_TOKENS) as Array<[keyof typeof PORT_TOKENS, symbol]>) {
    const given = options.ports?.[name];
    if (given) container.rebind(token).toConstantValue(given);
  }
  if (options.modules?.length) container.load(...options.modules);
  return container;
}

/** The container's ports, built if they were not yet. */
export async function resolvePorts(
  container: Container,
): Promise<
  Omit<SearcherPorts, 'clock'> & Required<Pick<SearcherPorts, 'generator' | 'judge' | 'imageOps' | 'store'>>
> {
  const [policy, searchEngine, generator, judge, imageOps, store] = await Promise.all([
    container.getAsync<PolicyBackend>(TOKENS.PolicyBackend),
    container.getAsync<SearchEngine>(TOKENS.SearchEngine),
    container.getAsync<Generator>(TOKENS.Generator),
    container.getAsync<Judge>(TOKENS.Judge),
    container.getAsync<ImageOps>(TOKENS.ImageOps),
    container.getAsync<Store>(TOKENS.Store),
  ]);
  return { policy, searchEngine, generator, judge, imageOps, store };
}

/**
 * The container's Searcher; with `config`, a Searcher over the same ports under another
 * configuration (e.g. another phase's reward weights), its `adapters` section ignored.
 */
export async function resolveSearcher(container: Container, config?: SearcherConfigInput): Promise<Searcher> {
  if (config === undefined) return container.getAsync<Searcher>(TOKENS.Searcher);
  return createSearcher(await resolvePorts(container), config);
}

/** Closes what the container built and holds open (SQLite indexes, stores); ports given in `options.ports` stay open. */
export async function closeSearcherContainer(container: Container): Promise<void> {
  await container.unbindAllAsync();
}
