import { z } from 'zod';
import { ConfigValidationError } from '../core/errors';
import {
  ADAPTER_PORT_NAMES,
  type AdapterDefinition,
  type AdapterPortName,
  type AdapterPorts,
  type AdapterSettingsSchema,
} from '../provider-utils/adapter-definition';

/** Any adapter definition (the registry's element type). */
export type AnyAdapterDefinition = AdapterDefinition<AdapterPortName, string, AdapterSettingsSchema>;

/** `adapters.<port>` of a validated configuration for one definition: its settings' output and its `type`. */
export type AdapterConfigOf<D> =
  D extends AdapterDefinition<AdapterPortName, infer Type, infer Settings>
    ? z.output<Settings> & { type: Type }
    : never;
/** `adapters.<port>` as written for one definition: its settings' input and its `type`. */
export type AdapterConfigInputOf<D> =
  D extends AdapterDefinition<AdapterPortName, infer Type, infer Settings>
    ? z.input<Settings> & { type: Type }
    : never;

/** The definitions among `D` of one port. */
type OfPort<D, Port extends AdapterPortName> = Extract<D, { port: Port }>;

/** The schema of one port under `adapters`: a discriminated union on `type` of the port's definitions. */
export type PortConfigSchema<D, Port extends AdapterPortName> = z.ZodType<
  AdapterConfigOf<OfPort<D, Port>>,
  AdapterConfigInputOf<OfPort<D, Port>>
>;

/** The ports a configuration must fill (the policy is optional: it may be given as an object or rebound). */
type DefaultedPort = Exclude<AdapterPortName, 'policy'>;

/** The `adapters` section's schema derived from a list of definitions. */
export type AdaptersSectionSchema<D> = z.ZodObject<
  { [Port in DefaultedPort]: z.ZodPrefault<PortConfigSchema<D, Port>> } & {
    policy: z.ZodOptional<PortConfigSchema<D, 'policy'>>;
  },
  z.core.$strict
>;

/** The adapter each port uses when a configuration names none (the policy has no default). */
export type PortDefaults = Readonly<Record<DefaultedPort, string>>;

/**
 * The adapters a composition root can build: one list of definitions, and what is derived from it
 * (the `adapters` section's schema, the builder of each port, the packages a configuration needs).
 */
export interface AdapterRegistry<D extends AnyAdapterDefinition = AnyAdapterDefinition> {
  /** Every definition, in registration order. */
  readonly definitions: readonly D[];
  /** The adapter each port takes when unset. */
  readonly defaults: PortDefaults;
  /** The `adapters` section: per port, a discriminated union on `type` of the definitions' settings. */
  readonly configSchema: AdaptersSectionSchema<D>;
  /** The definition of `port` named `type`, or undefined. */
  definition(port: AdapterPortName, type: string): D | undefined;
  /**
   * Builds the adapter a validated `adapters.<port>` names; `field` is where it stands in the
   * configuration (`adapters.searchEngine`), for the errors of `create`.
   */
  build<Port extends AdapterPortName>(
    port: Port,
    config: { type: string },
    field?: string,
  ): AdapterPorts[Port] | Promise<AdapterPorts[Port]>;
  /** The optional packages of the adapters an `adapters` section names, in port order, without repeats. */
  packages(adapters: Partial<Record<AdapterPortName, { type: string } | undefined>>): string[];
  /** A registry with these definitions added (a definition of a port and type already present replaces it). */
  with<E extends AnyAdapterDefinition>(...definitions: E[]): AdapterRegistry<D | E>;
}

/**
 * A registry over `definitions`: two definitions of one port may not share a `type`; every
 * defaulted port needs its default among them.
 */
export function createAdapterRegistry<const D extends AnyAdapterDefinition>(
  definitions: readonly D[],
  defaults: PortDefaults,
): AdapterRegistry<D> {
  const byKey = new Map<string, D>();
  for (const definition of definitions) {
    const key = `${definition.port}:${definition.type}`;
    if (byKey.has(key))
      throw new Error(`two adapter definitions of ${definition.port} are named '${definition.type}'`);
    byKey.set(key, definition);
  }
  for (const [port, type] of Object.entries(defaults))
    if (!byKey.has(`${port}:${type}`)) throw new Error(`the default ${port} '${type}' has no definition`);
  const portSchema = (port: AdapterPortName) => {
    const options = definitions
      .filter((d) => d.port === port)
      .map((d) => d.settings.extend({ type: z.literal(d.type) }));
    const union = z.discriminatedUnion('type', options as unknown as [AdapterSettingsSchema]);
    const described = definitions.filter((d) => d.port === port && d.description !== undefined);
    return described.length > 0 ? union.describe(described.map((d) => d.description).join(', ')) : union;
  };
  const shape = Object.fromEntries(
    ADAPTER_PORT_NAMES.map((port) => [
      port,
      port === 'policy'
        ? portSchema(port).optional()
        : portSchema(port).prefault({ type: defaults[port as DefaultedPort] }),
    ]),
  );
  const configSchema = z.object(shape).strict() as unknown as AdaptersSectionSchema<D>;
  return {
    definitions,
    defaults,
    configSchema,
    definition: (port, type) => byKey.get(`${port}:${type}`),
    build(port, config, field = `adapters.${port}`) {
      const definition = byKey.get(`${port}:${config.type}`);
      if (!definition)
        throw new ConfigValidationError({
          issues: [
            {
              field: `${field}.type`,
              message: `no ${port} adapter named '${config.type}' (known: ${definitions
                .filter((d) => d.port === port)
                .map((d) => d.type)
                .join(', ')})`,
            },
          ],
        });
      const { type: _type, ...settings } = config;
      return definition.create(settings, { field }) as AdapterPorts[typeof port];
    },
    packages(adapters) {
      const names: string[] = [];
      for (const port of ADAPTER_PORT_NAMES) {
        const type = adapters[port]?.type;
        if (type !== undefined) names.push(...(byKey.get(`${port}:${type}`)?.packages ?? []));
      }
      return [...new Set(names)];
    },
    with: (...more) =>
      createAdapterRegistry(
        [...definitions.filter((d) => !more.some((m) => m.port === d.port && m.type === d.type)), ...more],
        defaults,
      ),
  };
}
