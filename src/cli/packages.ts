import { readFileSync } from 'node:fs';
import { MissingDependencyError } from '../index';

// The CLI loads a command's modules (searcher-rl/run, /curation, /server, /icd) only when the
// command runs. Those import optional packages; when one is missing, Node names only the first it
// tripped on. Here every package the command's modules need is tried, and all the missing ones
// are named in one MissingDependencyError with one install line (the versions are package.json's
// peerDependencies). The run library does the same for what a configuration adds (a policy, an
// adapter): trainRun, evalRun, runAblations and runCurationCommand check those before they start.

const isMissing = (error: unknown, name?: string) => {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' ? e.message : '';
  const missing = e?.code === 'ERR_MODULE_NOT_FOUND' || /Cannot find (module|package)/.test(message);
  return missing && (name === undefined || message.includes(`'${name}'`) || message.includes(`/${name}/`));
};

function peerRanges(): Record<string, string> {
  // package.json sits two folders up from both src/cli/ and dist/cli/.
  return (
    (
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        peerDependencies?: Record<string, string>;
      }
    ).peerDependencies ?? {}
  );
}

/** Loads a command's modules; a missing package among `packages` is one MissingDependencyError naming all the missing ones. */
export async function loadCommand<T>(
  command: string,
  packages: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isMissing(error) || MissingDependencyError.isInstance(error)) throw error;
    const missing = (
      await Promise.all(
        packages.map((name) =>
          import(name).then(
            () => null,
            (e: unknown) => (isMissing(e, name) ? name : null),
          ),
        ),
      )
    ).filter((name): name is string => name !== null);
    if (missing.length === 0) throw error;
    const ranges = peerRanges();
    const spec = (name: string) => {
      const range = ranges[name];
      if (range === undefined) return name;
      return /^[\w.^~-]+$/.test(range) ? `${name}@${range}` : `'${name}@${range}'`;
    };
    throw new MissingDependencyError({
      subpath: `searcher-rl ${command}`,
      packageNames: missing,
      install: `npm install ${missing.map(spec).join(' ')}`,
      cause: error,
    });
  }
}
