import type { z } from 'zod';
import type { Generator } from '../ports/generator';
import type { ImageOps } from '../ports/image-ops';
import type { Judge } from '../ports/judge';
import type { PolicyBackend } from '../ports/policy-backend';
import type { SearchEngine } from '../ports/search-engine';
import type { Store } from '../ports/store';

/** The ports a configuration's `adapters` section fills, each with the port type its adapters implement. */
export interface AdapterPorts {
  searchEngine: SearchEngine;
  generator: Generator;
  judge: Judge;
  policy: PolicyBackend;
  imageOps: ImageOps;
  store: Store;
}

/** A key of `adapters` in a configuration: `searchEngine`, `generator`, `judge`, `policy`, `imageOps`, `store`. */
export type AdapterPortName = keyof AdapterPorts;

/** The ports of `adapters`, in the order a configuration lists them. */
export const ADAPTER_PORT_NAMES: readonly AdapterPortName[] = Object.freeze([
  'searchEngine',
  'policy',
  'generator',
  'judge',
  'imageOps',
  'store',
]);

/** A strict zod object: the settings an adapter takes from a configuration (an unknown key is an error naming it). */
export type AdapterSettingsSchema = z.ZodObject<z.ZodRawShape, z.core.$strict>;

/**
 * A setting of an adapter that names a file or folder the adapter reads: its key (dotted for a
 * nested one, `lora.adapter`), and optionally when it is read (`dbPath` only where nothing is
 * indexed into it). A run configuration file's relative paths there are resolved from the file's
 * folder (src/run/config-file.ts), so that a config works from any working directory.
 */
export type AdapterInputPath =
  | string
  | {
      /** The setting's key, dotted for a nested one. */
      readonly key: string;
      /** Whether the adapter reads it, given its settings as written. */
      readonly when: (settings: Record<string, unknown>) => boolean;
    };

/** What `create` is told besides its settings. */
export interface AdapterContext {
  /** The configuration path of the adapter (`adapters.searchEngine`), for errors that name a field under it. */
  readonly field: string;
}

/**
 * An adapter describing itself once, for the composition root: the port it fills, the `type` a
 * configuration names it by, the zod schema of its settings, the optional packages it loads, and
 * `create`, which builds it from validated settings. An adapter with a vendor SDK loads it inside
 * `create` (a dynamic import of the adapter's entry), so that naming the definition loads nothing; an SDK-free one may
 * build at once (then `container.get` works without `getAsync`).
 */
export interface AdapterDefinition<
  Port extends AdapterPortName = AdapterPortName,
  Type extends string = string,
  Settings extends AdapterSettingsSchema = AdapterSettingsSchema,
> {
  readonly port: Port;
  readonly type: Type;
  /** The settings under `adapters.<port>` besides `type`. */
  readonly settings: Settings;
  /** The optional peer dependencies `create` loads (checked up front by `searcher-rl train`). */
  readonly packages: readonly string[];
  /** One line for the port's configuration reference (`searcher-rl config --help`). */
  readonly description?: string;
  /**
   * The settings that name a file or folder the adapter reads (a model, a corpus, an image folder),
   * not what it writes; a model *name* of a remote API is not one.
   */
  readonly inputPaths?: readonly AdapterInputPath[];
  /** Builds the adapter from its validated settings. */
  create(
    settings: z.output<Settings>,
    context: AdapterContext,
  ): AdapterPorts[Port] | Promise<AdapterPorts[Port]>;
}

/**
 * Declares an adapter (a typed identity: the literal `port` and `type` are kept for the
 * configuration types derived from a registry).
 *
 * @example
 * ```ts
 * export const echoJudgeAdapter = defineAdapter({
 *   port: 'judge',
 *   type: 'echo',
 *   settings: z.object({ score: z.number().min(0).max(1) }).strict(),
 *   packages: [],
 *   create: (settings) => createEchoJudge(settings),
 * });
 * ```
 */
export function defineAdapter<
  const Port extends AdapterPortName,
  const Type extends string,
  Settings extends AdapterSettingsSchema,
>(definition: AdapterDefinition<Port, Type, Settings>): AdapterDefinition<Port, Type, Settings> {
  return definition;
}

/** The loaded entry of an adapter family, as `adaptersFromEntry` names it. */
export interface AdapterEntry<Entry> {
  /** The optional peer dependencies the entry loads (every adapter of the family declares them). */
  readonly packages: readonly string[];
  /** Loads the entry (a dynamic import), at the first `create` of one of its adapters. */
  load(): Promise<Entry>;
}

/** An adapter of a family loaded from one entry: as {@link AdapterDefinition} without `packages` (the family's), and `create` given the loaded entry first. */
export interface EntryAdapterDeclaration<
  Entry,
  Port extends AdapterPortName,
  Type extends string,
  Settings extends AdapterSettingsSchema,
> extends Omit<AdapterDefinition<Port, Type, Settings>, 'packages' | 'create'> {
  /** Builds the adapter from the loaded entry and its validated settings. */
  create(
    entry: Entry,
    settings: z.output<Settings>,
    context: AdapterContext,
  ): AdapterPorts[Port] | Promise<AdapterPorts[Port]>;
}

/**
 * The adapters of one family whose SDK sits behind one entry: the entry's packages and its dynamic
 * import are written once, and each adapter of the family says its port, type, settings schema and
 * which factory of the entry builds it. Naming the definitions loads nothing; the entry is loaded
 * by `create`.
 *
 * @example
 * ```ts
 * // loadGeminiEntry: a dynamic import of the adapter's entry, `index.ts`
 * const fromGeminiEntry = adaptersFromEntry({ packages: ['@google/genai'], load: loadGeminiEntry });
 * export const geminiJudgeAdapter = fromGeminiEntry({
 *   port: 'judge',
 *   type: 'gemini',
 *   settings: geminiSettingsSchema,
 *   create: (entry, settings) => entry.createGeminiJudge(settings),
 * });
 * ```
 */
export function adaptersFromEntry<Entry>(
  family: AdapterEntry<Entry>,
): <const Port extends AdapterPortName, const Type extends string, Settings extends AdapterSettingsSchema>(
  declaration: EntryAdapterDeclaration<Entry, Port, Type, Settings>,
) => AdapterDefinition<Port, Type, Settings> {
  return (declaration) => {
    const { create, ...described } = declaration;
    return defineAdapter({
      ...described,
      packages: family.packages,
      create: async (settings, context) => create(await family.load(), settings, context),
    });
  };
}
