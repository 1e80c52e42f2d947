import { MissingDependencyError } from '../core/errors';

/** An optional peer dependency of a subpath, and the command that installs it. */
export interface OptionalPackage {
  name: string;
  install: string;
}

/**
 * Loads a subpath's implementation, which imports optional peer dependencies: when one of them
 * is not installed, one MissingDependencyError names every listed package that is missing (not
 * only the first Node tripped on) and how to install them, instead of Node's raw
 * ERR_MODULE_NOT_FOUND. Other failures pass through.
 */
export async function loadWithOptionalPackages<T>(
  subpath: string,
  packages: readonly OptionalPackage[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const first = packages.find((p) => isMissing(error, p.name));
    if (!first) throw error;
    const others = await missingPackages(packages.filter((p) => p !== first).map((p) => p.name));
    const missing = [first, ...packages.filter((p) => others.some((m) => m.name === p.name))];
    throw new MissingDependencyError({
      subpath,
      packageNames: missing.map((p) => p.name),
      install:
        missing.length === 1
          ? first.install
          : `npm install ${missing.map((p) => installSpec(p.name)).join(' ')}`,
      cause: error,
    });
  }
}

/**
 * Every optional peer dependency and the version package.json's peerDependencies give it (a test
 * keeps the two equal): what `requireOptionalPackages` puts in its one install line.
 */
export const OPTIONAL_PACKAGE_VERSIONS: Readonly<Record<string, string>> = Object.freeze({
  '@google/genai': '>=2.0.0 <3',
  '@huggingface/jinja': '^0.5.11',
  '@huggingface/tokenizers': '^0.2.0',
  '@tensorflow/tfjs': '4.22.0',
  '@tensorflow/tfjs-backend-wasm': '4.22.0',
  '@tensorflow/tfjs-node': '4.22.0',
  '@tensorflow/tfjs-node-gpu': '4.22.0',
  libsql: '^0.5.29',
  'node-llama-cpp': '3.21.1',
  'onnxruntime-node': '^1.30.0',
  openai: '>=6.0.0 <7',
  sharp: '^0.34.5',
  undici: '>=7.0.0 <8',
  ws: '^8.23.0',
});

/** Whether `error` says that `name` (or a file inside it) could not be found. */
function isMissing(error: unknown, name: string): boolean {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' ? e.message : '';
  if (!(e?.code === 'ERR_MODULE_NOT_FOUND' || /Cannot find (module|package)/.test(message))) return false;
  return [`'${name}'`, `"${name}"`, `/${name}/`, ` ${name} `].some((form) => message.includes(form));
}

/**
 * Checks up front that every optional package a task will load is installed, and throws one
 * MissingDependencyError naming all the missing ones with one `npm install` line, instead of
 * Node's raw error for the first, then the next one after the user installs it. A package that is
 * installed but fails to load (a native build for another platform) is left to its own loader,
 * which reports it. `load` is for tests.
 */
export async function requireOptionalPackages(
  subpath: string,
  names: readonly string[],
  load: (name: string) => Promise<unknown> = (name) => import(name),
): Promise<void> {
  const missing = await missingPackages(names, load);
  if (missing.length === 0) return;
  throw new MissingDependencyError({
    subpath,
    packageNames: missing.map((m) => m.name),
    install: `npm install ${missing.map((m) => installSpec(m.name)).join(' ')}`,
    cause: missing[0]!.error,
  });
}

/** The packages among `names` that cannot be found (each tried once, all at once). */
async function missingPackages(
  names: readonly string[],
  load: (name: string) => Promise<unknown> = (name) => import(name),
): Promise<Array<{ name: string; error: unknown }>> {
  const results = await Promise.all(
    [...new Set(names)].map((name) =>
      load(name).then(
        () => null,
        (error: unknown) => (isMissing(error, name) ? { name, error } : null),
      ),
    ),
  );
  return results.filter((r): r is { name: string; error: unknown } => r !== null);
}

/** `name@range` as npm takes it (package.json's peer range), quoted where the shell needs it. */
function installSpec(name: string): string {
  const range = OPTIONAL_PACKAGE_VERSIONS[name];
  if (range === undefined) return name;
  return /^[\w.^~-]+$/.test(range) ? `${name}@${range}` : `'${name}@${range}'`;
}
