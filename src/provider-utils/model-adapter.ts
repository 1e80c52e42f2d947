import type { z } from 'zod';
import type { PortName } from '../core/errors';
import { parseSettings } from './settings';

/** What `modelAdapterParts` is given: the factory, its port, the vendor and how the client is made. */
export interface ModelAdapterOptions<Schema extends z.ZodType<{ model: string }>, Client> {
  /** The factory's name (`createGeminiJudge`), for errors that name a setting. */
  readonly factory: string;
  readonly port: PortName;
  /** The provider name's prefix: `gemini` gives `gemini:<model>`. */
  readonly vendor: string;
  readonly schema: Schema;
  /** The settings as the caller gave them (validated here). */
  readonly settings: unknown;
  /** Makes the adapter's client (lazily keyed: `get` resolves the key). */
  client(factory: string, settings: z.output<Schema>, caller: { port: PortName; provider: string }): Client;
}

/** The parts every model adapter of a vendor starts from (see `modelAdapterParts`). */
export interface ModelAdapterParts<Settings, Client> {
  /** The validated settings. */
  readonly resolved: Settings;
  /** `<vendor>:<model>`, as errors and records name it. */
  readonly provider: string;
  readonly client: Client;
  /** The port's common fields: `specificationVersion`, `provider`, and `doCheck`, which resolves the API key up front (a Searcher checks before its first step). */
  readonly checked: {
    readonly specificationVersion: 'v1';
    readonly provider: string;
    doCheck(): Promise<void>;
  };
}

/**
 * The start every hosted-model adapter (a vendor's generator, judge) shares: its settings parsed
 * for its factory, the provider name `<vendor>:<model>`, its client, and the port's common fields.
 */
export function modelAdapterParts<
  Schema extends z.ZodType<{ model: string }>,
  Client extends { get(): unknown },
>(options: ModelAdapterOptions<Schema, Client>): ModelAdapterParts<z.output<Schema>, Client> {
  const resolved = parseSettings(options.factory, options.schema, options.settings);
  const provider = `${options.vendor}:${resolved.model}`;
  const client = options.client(options.factory, resolved, { port: options.port, provider });
  return {
    resolved,
    provider,
    client,
    checked: {
      specificationVersion: 'v1',
      provider,
      async doCheck() {
        client.get();
      },
    },
  };
}
