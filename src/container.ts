import { Container, ContainerModule } from 'inversify';
import {
  parseSearcherConfig,
  type SearcherConfig,
  type SearcherConfigInput,
  type SearcherConfigInputOf,
} from './config';
import { ConfigValidationError } from './core/errors';
import type { AdapterPortName, AdapterPorts } from './provider-utils/adapter-definition';
import type { AdapterRegistry, AnyAdapterDefinition } from './registry/adapter-registry';
import { ADAPTER_REGISTRY, type BuiltInAdapter } from './registry/adapters';
import type { Generator } from './ports/generator';
import type { ImageOps } from './ports/image-ops';
import type { Judge } from './ports/judge';
import type { PolicyBackend } from './ports/policy-backend';
import type { SearchEngine } from './ports/search-engine';
import type { Store } from './ports/store';
import { createSearcher, type Searcher, type SearcherPorts } from './searcher';

export { ADAPTER_REGISTRY, BUILT_IN_ADAPTERS, type BuiltInAdapter } from './registry/adapters';
export { createTracker } from './registry/trackers';
export {
  createAdapterRegistry,
  type AdapterRegistry,
  type AnyAdapterDefinition,
  type AdapterConfigOf,
  type AdapterConfigInputOf,
  type AdaptersSectionSchema,
  type PortConfigSchema,
  type PortDefaults,
} from './registry/adapter-registry';

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
  /** The adapter registry the port modules build from (`ADAPTER_REGISTRY`, or `options.registry`). */
  AdapterRegistry: Symbol.for('searcher-rl.AdapterRegistry'),
});

/** Releases what an adapter holds (an SQLite index, a store's files, a model's weights) when the container is closed. */
const closeAdapter = async (port: unknown) => {
  const held = port as { close?: () => unknown; dispose?: () => unknown } | null;
  if (typeof held?.close === 'function') await held.close();
  else if (typeof held?.dispose === 'function') await held.dispose();
};

const tokenName = (token: symbol) =>
  Object.entries(TOKENS).find(([, t]) => t === token)?.[0] ?? String(token);

/**
 * The module of one port: binds the adapter `config.adapters.<port>` names, built at first use by
 * its definition in the registry bound to `TOKENS.AdapterRegistry`, and closed with the container.
 */
function portModule<Port extends AdapterPortName>(port: Port, token: symbol): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind<AdapterPorts[Port]>(token)
      .toResolvedValue(
        (config: SearcherConfig, registry: AdapterRegistry) => {
          const chosen = config.adapters[port];
          if (!chosen)
            throw new ConfigValidationError({
              issues: [
                {
                  field: `adapters.${port}`,
                  message: `no ${port} configured: set adapters.${port}, give ports.${port}, or rebind TOKENS.${tokenName(token)}`,
                },
              ],
            });
          return registry.build(port, chosen);
        },
        [TOKENS.Config, TOKENS.AdapterRegistry],
      )
      .inSingletonScope()
      .onDeactivation(closeAdapter);
  });
}

/** Binds the SearchEngine that `config.adapters.searchEngine` names; closed with the container. */
export const searchEngineModule = portModule('searchEngine', TOKENS.SearchEngine);
/** Binds the Generator that `config.adapters.generator` names. */
export const generatorModule = portModule('generator', TOKENS.Generator);
/** Binds the Judge that `config.adapters.judge` names. */
export const judgeModule = portModule('judge', TOKENS.Judge);
/** Binds the ImageOps that `config.adapters.imageOps` names. */
export const imageOpsModule = portModule('imageOps', TOKENS.ImageOps);
/** Binds the Store that `config.adapters.store` names; closed with the container. */
export const storeModule = portModule('store', TOKENS.Store);
/** Binds the policy that `config.adapters.policy` names; closed (or disposed) with the container. */
export const policyModule = portModule('policy', TOKENS.PolicyBackend);

/**
 * The configuration the Searcher is made with: all of it, or without `adapters` when they name
 * adapters of a registry of yours (the Searcher validates its configuration against the built-in ones).
 */
function sectionsOf(config: SearcherConfig): SearcherConfigInput {
  const builtIn = Object.entries(config.adapters).every(
    ([port, chosen]) =>
      chosen === undefined || ADAPTER_REGISTRY.definition(port as AdapterPortName, chosen.type) !== undefined,
  );
  if (builtIn) return config;
  const { adapters: _adapters, ...sections } = config;
  return sections;
}

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
      ) => createSearcher({ policy, searchEngine, generator, judge, imageOps, store }, sectionsOf(config)),
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

/** Options of `createSearcherContainer`: port objects you already have, extra modules, adapters of your own. */
export interface CreateContainerOptions<D extends AnyAdapterDefinition = BuiltInAdapter> {
  /** The adapters `config.adapters` may name (default `ADAPTER_REGISTRY`; `ADAPTER_REGISTRY.with(yours)` adds yours). */
  registry?: AdapterRegistry<D>;
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
export function createSearcherContainer<D extends AnyAdapterDefinition = BuiltInAdapter>(
  config: NoInfer<SearcherConfigInputOf<D>> = {},
  options: CreateContainerOptions<D> = {},
): Container {
  const registry = (options.registry ?? ADAPTER_REGISTRY) as AdapterRegistry;
  const resolved = parseSearcherConfig(config, registry);
  const container = new Container();
  container.bind<SearcherConfig>(TOKENS.Config).toConstantValue(resolved);
  container.bind<AdapterRegistry>(TOKENS.AdapterRegistry).toConstantValue(registry);
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
