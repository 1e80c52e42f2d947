import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, isAbsolute, resolve as resolvePath } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigValidationError, InvalidArgumentError } from '../core/errors';
import { decodeUtf8Text } from '../core/text-data';
import {
  ADAPTER_PORT_NAMES,
  type AdapterInputPath,
  type AdapterPortName,
} from '../provider-utils/adapter-definition';
import { ADAPTER_REGISTRY } from '../registry/adapters';

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A `key.path=value` setting: the path's keys, the value, the argument as given. */
export interface ConfigOverride {
  path: string[];
  value: unknown;
  text: string;
}

/** A YAML or JSON configuration file as data (a mapping), not yet validated. */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  const ext = extname(path).toLowerCase();
  if (!['.yaml', '.yml', '.json'].includes(ext))
    throw new InvalidArgumentError({
      argument: '--config',
      message: `'${path}' must be a YAML (.yaml, .yml) or JSON (.json) file`,
    });
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new InvalidArgumentError({
      argument: '--config',
      message:
        code === 'ENOENT' ? `no such file '${path}'` : `cannot read '${path}': ${(error as Error).message}`,
      cause: error,
    });
  }
  let text: string;
  try {
    text = decodeUtf8Text(bytes, path);
  } catch (error) {
    // The data reader's message names the line and the byte (a byte-order mark is accepted).
    throw new ConfigValidationError({
      issues: [
        {
          field: path,
          message: (error as Error).message.replace(/^Invalid record at [^:]*: /, '').replace(`${path} `, ''),
        },
      ],
    });
  }
  // An empty file is a mistake, not a request for the whole default job.
  if (
    text.trim() === '' ||
    text.split('\n').every((line) => line.trim() === '' || line.trim().startsWith('#'))
  ) {
    throw new InvalidArgumentError({
      argument: '--config',
      message: `'${path}' is empty; give at least one setting (npx searcher-rl train --help lists them), or leave out --config for the defaults`,
    });
  }
  let data: unknown;
  try {
    data = ext === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigValidationError({
      issues: [
        {
          field: path,
          message: `not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${error instanceof Error ? error.message : String(error)}`,
        },
      ],
    });
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new ConfigValidationError({
      issues: [{ field: `${path}: (root)`, message: 'expected a mapping of settings (key: value)' }],
    });
  return data as Record<string, unknown>;
}

const OVERRIDE = /^([A-Za-z_][\w-]*(?:\.[\w-]+)*)=([\s\S]*)$/;

/**
 * `key.path=value` arguments (as Hydra's and verl's users write them), the value read as a YAML
 * scalar or flow value (`4`, `1e-3`, `true`, `null`, `[a, b]`, `{kind: gspo}`); `key=` is the empty
 * string. An argument that is not one is refused, by name.
 */
export function parseOverrides(args: readonly string[]): ConfigOverride[] {
  return args.map((text) => {
    const match = OVERRIDE.exec(text);
    if (!match)
      throw new InvalidArgumentError({
        argument: text,
        message: `unexpected argument; settings after the options are key.path=value (e.g. searcher.rl.nAgent=4)`,
      });
    const raw = match[2]!;
    let value: unknown;
    try {
      value = raw === '' ? '' : parseYaml(raw);
    } catch (error) {
      throw new InvalidArgumentError({
        argument: match[1]!,
        message: `the value of '${text}' is not a YAML value: ${(error as Error).message}`,
        cause: error,
      });
    }
    const path = match[1]!.split('.');
    // A key that reaches an object's prototype would change every object, not a setting.
    if (path.some((key) => key === '__proto__' || key === 'constructor' || key === 'prototype'))
      throw new InvalidArgumentError({ argument: match[1]!, message: 'is not a setting' });
    return { path, value, text };
  });
}

/**
 * The config file's mapping with the overrides applied in order (a missing section is created; a
 * numeric segment indexes a list). Unknown paths are left to the schema, which names them.
 */
export function applyOverrides(
  config: Record<string, unknown>,
  overrides: readonly ConfigOverride[],
): Record<string, unknown> {
  const root = structuredClone(config);
  for (const { path, value, text } of overrides) {
    let node: unknown = root;
    for (const [i, key] of path.entries()) {
      const last = i === path.length - 1;
      const container = node as Record<string, unknown> | unknown[];
      if (Array.isArray(container)) {
        const index = Number(key);
        if (!(Number.isInteger(index) && index >= 0 && index <= container.length))
          throw new InvalidArgumentError({
            argument: path.slice(0, i + 1).join('.'),
            message: `'${text}': '${path.slice(0, i).join('.')}' is a list of ${container.length}; give an index from 0 to ${container.length}`,
          });
        if (last) container[index] = value;
        else node = container[index] ??= {};
      } else if (isMapping(container)) {
        if (last) container[key] = value;
        else {
          const next = container[key];
          if (next !== undefined && next !== null && typeof next !== 'object')
            throw new InvalidArgumentError({
              argument: path.slice(0, i + 1).join('.'),
              message: `'${text}': '${path.slice(0, i + 1).join('.')}' is a value (${JSON.stringify(next)}), not a section`,
            });
          node = next ?? (container[key] = {});
        }
      }
    }
  }
  return root;
}

/**
 * The fields of a run configuration outside `searcher.adapters` that name a file or folder the run
 * reads (not what it writes: `runsDir`, caches and trackers' folders are the working directory's).
 * Each is a path of keys.
 */
const RUN_INPUT_PATHS: readonly (readonly string[])[] = [
  ['dataset', 'path'],
  ['dataset', 'evalPath'],
  ['policy', 'initFrom'],
];

/** The registry's declared input paths of an adapter (`AdapterDefinition.inputPaths`). */
export type AdapterInputPathsOf = (port: AdapterPortName, type: string) => readonly AdapterInputPath[];

const builtInInputPaths: AdapterInputPathsOf = (port, type) =>
  ADAPTER_REGISTRY.definition(port, type)?.inputPaths ?? [];

/**
 * A configuration file's input paths resolved from the file's folder, so that a config works from
 * any working directory (and from an installed package): the run's own (`RUN_INPUT_PATHS`) and,
 * under `searcher.adapters`, those the named adapter declares (`AdapterDefinition.inputPaths`: a
 * local model file, a corpus, a page folder; an API's model name is not one). A relative path is
 * the one beside the file where that exists, else the one from the working directory where that
 * exists (configs written before paths were the file's), else the one beside the file (which the
 * error names).
 */
export function resolveInputPaths(
  raw: Record<string, unknown>,
  configPath: string,
  exists: (path: string) => boolean = existsSync,
  inputPathsOf: AdapterInputPathsOf = builtInInputPaths,
): Record<string, unknown> {
  const base = dirname(resolvePath(configPath));
  const out = structuredClone(raw);
  const resolveAt = (
    parent: unknown,
    keys: readonly string[],
    when?: (p: Record<string, unknown>) => boolean,
  ) => {
    for (const key of keys.slice(0, -1)) parent = isMapping(parent) ? parent[key] : undefined;
    if (!isMapping(parent)) return;
    const key = keys[keys.length - 1]!;
    const value = parent[key];
    if (typeof value !== 'string' || value === '' || isAbsolute(value)) return;
    if (when && !when(parent)) return;
    const beside = resolvePath(base, value);
    parent[key] = exists(beside) || !exists(value) ? beside : resolvePath(value);
  };
  for (const keys of RUN_INPUT_PATHS) resolveAt(out, keys);
  const searcher = out.searcher;
  const adapters = isMapping(searcher) ? searcher.adapters : undefined;
  if (isMapping(adapters))
    for (const port of ADAPTER_PORT_NAMES) {
      const adapter = adapters[port];
      if (!isMapping(adapter) || typeof adapter.type !== 'string') continue;
      for (const field of inputPathsOf(port, adapter.type)) {
        const { key, when } = typeof field === 'string' ? { key: field, when: undefined } : field;
        // A nested key's condition sees the adapter's settings, not the nested mapping.
        resolveAt(adapter, key.split('.'), when && (() => when(adapter)));
      }
    }
  return out;
}
