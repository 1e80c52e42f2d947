import { MissingDependencyError } from '../index';
import { requireOptionalPackages } from '../provider-utils/index';

// The CLI loads a command's modules (searcher-rl/run, /curation, /server, /icd) only when the
// command runs. Those import optional packages; when one is missing, Node names only the first it
// tripped on. Here every package the command's modules need is tried, and all the missing ones
// are named in one MissingDependencyError with one install line (requireOptionalPackages, as the
// run library does for what a configuration adds: trainRun, evalRun, runAblations and
// runCurationCommand check those before they start).

const isModuleNotFound = (error: unknown) => {
  const e = error as { code?: unknown; message?: unknown };
  return (
    e?.code === 'ERR_MODULE_NOT_FOUND' ||
    (typeof e?.message === 'string' && /Cannot find (module|package)/.test(e.message))
  );
};

/** Loads a command's modules; a missing package among `packages` is one MissingDependencyError naming all the missing ones. */
export async function loadCommand<T>(
  command: string,
  packages: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isModuleNotFound(error) || MissingDependencyError.isInstance(error)) throw error;
    await requireOptionalPackages(`searcher-rl ${command}`, packages);
    throw error;
  }
}
