import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { ProviderCallError } from '../../core/errors';
import { responseTooLarge } from '../../provider-utils/index';
import { shapeError } from './http';

/**
 * A page image named by a search server (`image_file`), read from under `imageRoot` only: the
 * server's answer is not trusted with the file system, since what is read is sent on to the
 * Generator's provider. Refused, as a PortOutputError naming `field`: an absolute path (POSIX or
 * Windows), any `..` segment, and a path whose real location (links resolved) is outside the
 * root. A file over `maxBytes` is not read.
 */
export async function readImageUnderRoot(options: {
  provider: string;
  /** Where in the answer the path was (`[0][2].image_file`). */
  field: string;
  path: string;
  imageRoot: string;
  maxBytes: number;
  signal?: AbortSignal | undefined;
}): Promise<Uint8Array> {
  const { provider, field, path } = options;
  const refuse = (why: string) =>
    shapeError(
      provider,
      field,
      `${JSON.stringify(path)} ${why}; only files under imageRoot (${options.imageRoot}) are read`,
    );
  if (path.length === 0 || path.includes('\0')) throw refuse('is not a file path');
  if (/^([\\/]|[A-Za-z]:)/.test(path)) throw refuse('is an absolute path');
  if (path.split(/[\\/]/).includes('..')) throw refuse("has a '..' segment");
  let root: string;
  try {
    root = await realpath(resolve(options.imageRoot));
  } catch (error) {
    throw new ProviderCallError({
      port: 'searchEngine',
      provider,
      isRetryable: false,
      message: `imageRoot ${options.imageRoot} cannot be read: ${(error as Error).message}`,
      cause: error,
    });
  }
  const failed = (error: unknown) =>
    new ProviderCallError({
      port: 'searchEngine',
      provider,
      message: `cannot read page image ${path} under ${options.imageRoot}: ${(error as Error).message}`,
      isRetryable: false,
      cause: error,
    });
  let real: string;
  try {
    real = await realpath(resolve(root, path));
  } catch (error) {
    throw failed(error);
  }
  if (!real.startsWith(root + sep)) throw refuse('leads outside imageRoot through a link');
  // The resolved path is opened, not following a link put in its place since the check.
  let handle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    throw failed(error);
  }
  try {
    const { size } = await handle.stat();
    if (size > options.maxBytes)
      throw responseTooLarge({ port: 'searchEngine', provider }, options.maxBytes, size, 'maxImageBytes');
    return new Uint8Array(await handle.readFile(options.signal ? { signal: options.signal } : {}));
  } catch (error) {
    if (ProviderCallError.isInstance(error)) throw error;
    throw failed(error);
  } finally {
    await handle.close();
  }
}
