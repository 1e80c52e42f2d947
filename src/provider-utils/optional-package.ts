import { MissingDependencyError } from '../core/errors';

/** An optional peer dependency of a subpath, and the command that installs it. */
export interface OptionalPackage {
  name: string;
  install: string;
}

/**
 * Loads a subpath's implementation, which imports optional peer dependencies: when one of them
 * is not installed, a MissingDependencyError names it and the command that installs it, instead
 * of Node's raw ERR_MODULE_NOT_FOUND. Other failures pass through.
 */
export async function loadWithOptionalPackages<T>(
  subpath: string,
  packages: readonly OptionalPackage[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    const message = typeof e?.message === 'string' ? e.message : '';
    if (e?.code === 'ERR_MODULE_NOT_FOUND' || /Cannot find (module|package)/.test(message)) {
      const missing = packages.find(
        (p) =>
          message.includes(`'${p.name}'`) ||
          message.includes(`"${p.name}"`) ||
          message.includes(`/${p.name}/`) ||
          message.includes(` ${p.name} `),
      );
      if (missing)
        throw new MissingDependencyError({
          subpath,
          packageName: missing.name,
          install: missing.install,
          cause: error,
        });
    }
    throw error;
  }
}
