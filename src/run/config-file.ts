import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigValidationError, InvalidArgumentError } from '../core/errors';
import { decodeUtf8Text } from '../core/text-data';

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
