import type { z } from 'zod';
import type { PortName } from '../core/errors';
import {
  GENERATOR_INSTRUCTIONS,
  JUDGE_INSTRUCTIONS,
  judgePrompt,
  parseJudgeScore,
} from '../core/reward/judge-prompt';
import type { CallOptions } from '../ports/common';
import type { Generator, GeneratorAnswer } from '../ports/generator';
import type { Judge } from '../ports/judge';
import type { Evidence } from '../ports/types';
import { loadApiKey } from './api-key';
import { parseSettings } from './settings';

/** The settings every hosted-model adapter takes: the model, the key (else from the environment), its own instructions. */
type ModelSettings = { model: string; apiKey?: string | undefined; instructions?: string | undefined };

/** What `modelAdapterParts` is given: the factory, its port, the vendor and how the client is made. */
export interface ModelAdapterOptions<Schema extends z.ZodType<ModelSettings>, Client> {
  /** The factory's name (`createGeminiJudge`), for errors that name a setting. */
  readonly factory: string;
  readonly port: PortName;
  /** The provider name's prefix: `gemini` gives `gemini:<model>`. */
  readonly vendor: string;
  /** Where the key is read when the `apiKey` setting is absent, and the vendor as the missing key's error names it (`Gemini`). */
  readonly apiKey: { readonly vendorName: string; readonly environmentVariableNames: readonly string[] };
  readonly schema: Schema;
  /** The settings as the caller gave them (validated here). */
  readonly settings: unknown;
  /** Makes the adapter's client, lazily keyed: `get` calls `resolveKey` (`loadApiKey` for this factory). */
  client(
    settings: z.output<Schema>,
    caller: { port: PortName; provider: string },
    resolveKey: () => string,
  ): Client;
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
 * for its factory, the provider name `<vendor>:<model>`, its client with the key read at the first
 * call (the `apiKey` setting, else the vendor's environment variables), and the port's common fields.
 */
export function modelAdapterParts<Schema extends z.ZodType<ModelSettings>, Client extends { get(): unknown }>(
  options: ModelAdapterOptions<Schema, Client>,
): ModelAdapterParts<z.output<Schema>, Client> {
  const resolved = parseSettings(options.factory, options.schema, options.settings);
  const provider = `${options.vendor}:${resolved.model}`;
  const resolveKey = () =>
    loadApiKey({
      apiKey: resolved.apiKey,
      environmentVariableNames: options.apiKey.environmentVariableNames,
      vendor: options.apiKey.vendorName,
      factory: options.factory,
    });
  const client = options.client(resolved, { port: options.port, provider }, resolveKey);
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

/** What a vendor's hosted-model adapters share (`modelAdapterFamily`): all of `ModelAdapterOptions` but the factory, its port and its settings. */
export type ModelAdapterFamily<Schema extends z.ZodType<ModelSettings>, Client> = Omit<
  ModelAdapterOptions<Schema, Client>,
  'factory' | 'port' | 'settings'
>;

/** What a hosted generator's call is given: its client and provider, the instructions (the setting, else GENERATOR_INSTRUCTIONS), the question and the evidence. */
export interface GeneratorCall<Client> {
  readonly client: Client;
  readonly provider: string;
  readonly instructions: string;
  readonly question: string;
  readonly evidence: readonly Evidence[];
}

/** What a hosted judge's call is given: its client and provider, the instructions (the setting, else JUDGE_INSTRUCTIONS) and the grading prompt. */
export interface JudgeCall<Client> {
  readonly client: Client;
  readonly provider: string;
  readonly instructions: string;
  readonly prompt: string;
}

/** The factories of a vendor's hosted-model adapters (`modelAdapterFamily`). */
export interface ModelAdapterFactories<Settings, Client> {
  /** A Generator for `factory` (`createGeminiGenerator`): `answer` makes the vendor's call. */
  generator(
    factory: string,
    settings: Settings,
    answer: (call: GeneratorCall<Client>, options?: CallOptions) => Promise<GeneratorAnswer>,
  ): Generator;
  /**
   * A Judge for `factory` (docs/method.md#judge): `reply` makes the vendor's call, asking for
   * structured output `{score}`, and gives the reply's text, which `parseJudgeScore` checks.
   */
  judge(
    factory: string,
    settings: Settings,
    reply: (call: JudgeCall<Client>, options?: CallOptions) => Promise<string>,
  ): Judge;
}

/**
 * A vendor's hosted-model adapters (its generator, its judge) declared once: the vendor, its key's
 * variables, its settings schema and its client. Each factory then names itself, passes the
 * caller's settings (`modelAdapterParts`) and makes the vendor's call; the instructions' default,
 * the judge's prompt and the parsing of its score are the same for every vendor.
 */
export function modelAdapterFamily<
  Schema extends z.ZodType<ModelSettings>,
  Client extends { get(): unknown },
>(family: ModelAdapterFamily<Schema, Client>): ModelAdapterFactories<z.input<Schema>, Client> {
  const parts = (factory: string, port: PortName, settings: z.input<Schema>) =>
    modelAdapterParts({ ...family, factory, port, settings });
  return {
    generator(factory, settings, answer) {
      const { resolved, provider, client, checked } = parts(factory, 'generator', settings);
      const instructions = resolved.instructions ?? GENERATOR_INSTRUCTIONS;
      return {
        ...checked,
        async doAnswer(question, evidence, options) {
          return answer({ client, provider, instructions, question, evidence }, options);
        },
      };
    },
    judge(factory, settings, reply) {
      const { resolved, provider, client, checked } = parts(factory, 'judge', settings);
      const instructions = resolved.instructions ?? JUDGE_INSTRUCTIONS;
      return {
        ...checked,
        async doScore(question, answer, reference, options) {
          const prompt = judgePrompt(question, answer, reference);
          const raw = await reply({ client, provider, instructions, prompt }, options);
          return { score: parseJudgeScore(raw, 'judge', provider), raw };
        },
      };
    },
  };
}
