import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../core/errors';

/** A file that cannot be read: an InvalidArgumentError on `argument` naming the path and why. */
function unreadableFile(path: string, argument: string, error: unknown): InvalidArgumentError {
  return new InvalidArgumentError({
    argument,
    message: `cannot read '${path}': ${(error as Error).message}`,
    cause: error,
  });
}

/** The bytes of a file of a model folder (weights, an adapter); one that cannot be read is an InvalidArgumentError on `argument` naming the path. */
export async function readFileBytes(path: string, argument: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch (error) {
    throw unreadableFile(path, argument, error);
  }
}

/**
 * A JSON object from a file of a model folder (config.json, tokenizer.json, ...): a file that
 * cannot be read or is not a JSON object is an InvalidArgumentError on `argument` naming the path;
 * a missing file that is not `required` is null.
 */
export async function readJsonObject(
  path: string,
  argument: string,
  required: boolean,
): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (!required && (error as { code?: unknown }).code === 'ENOENT') return null;
    throw unreadableFile(path, argument, error);
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error('not a JSON object');
    return value as Record<string, unknown>;
  } catch (error) {
    throw new InvalidArgumentError({
      argument,
      message: `'${path}' is not a JSON object: ${(error as Error).message}`,
      cause: error,
    });
  }
}
