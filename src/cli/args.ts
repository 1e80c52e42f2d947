import { parseArgs } from 'node:util';
import { ConfigValidationError, InvalidArgumentError, SearcherError } from '../index';
import { redactSecrets } from '../provider-utils/index';

/**
 * The CLI's exit codes, as POSIX tools and argparse use them: 2 for every usage error (the command
 * line or its config file is wrong; nothing was started or written), 1 for a failure while the
 * command ran, 130 for a stop by Ctrl-C (128 + SIGINT, as a shell reports it).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const;

const usageErrors = new WeakSet<object>();

/** An InvalidArgumentError the CLI reports as a usage error (exit 2). */
export function usageError(args: {
  argument: string;
  message: string;
  cause?: unknown;
}): InvalidArgumentError {
  const error = new InvalidArgumentError(args);
  usageErrors.add(error);
  return error;
}

/**
 * Runs the checks of a command's arguments and config: whatever they throw (a bad option, a
 * config file that does not validate) is a usage error.
 */
export async function checkingUsage<T>(check: () => T | Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    if (typeof error === 'object' && error !== null) usageErrors.add(error);
    throw error;
  }
}

/**
 * A usage error: one the argument checks threw, Node's parseArgs errors (an unknown option, a
 * missing value), a configuration that does not validate (ConfigValidationError: the config file,
 * a key=value argument, a prompt that cannot fit the policy's context; refused before the run
 * writes anything), and any InvalidArgumentError naming a command-line option (`--top-k`), which
 * the libraries behind the commands throw (curation, icd).
 */
export function isUsageError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (usageErrors.has(error) || ConfigValidationError.isInstance(error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) return true;
  return InvalidArgumentError.isInstance(error) && error.argument.startsWith('-');
}

export function exitCodeOf(error: unknown): number {
  return isUsageError(error) ? EXIT.usage : EXIT.failure;
}

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; default?: string | boolean }
>;

/** The short flags every command shares: `-c` for `--config`, `-r` for `--run`, `-h` for `--help`. */
const SHORT: Record<string, string> = { config: 'c', run: 'r', help: 'h' };

/**
 * A command's options (with the shared short flags) and, where `positionals` is set, its
 * positional arguments; a parse error is a usage error pointing at the command's --help.
 */
export function parseCommandArgs(
  command: string,
  argv: readonly string[],
  options: OptionSpec,
  settings: { positionals?: boolean } = {},
): { values: Record<string, string | boolean | undefined> & { help: boolean }; positionals: string[] } {
  const all: OptionSpec = { ...options, help: { type: 'boolean', default: false } };
  const withShort = Object.fromEntries(
    Object.entries(all).map(([name, spec]) => [
      name,
      SHORT[name] && spec.short === undefined ? { ...spec, short: SHORT[name] } : spec,
    ]),
  );
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: withShort,
      strict: true,
      allowPositionals: settings.positionals === true,
    });
    return {
      values: parsed.values as Record<string, string | boolean | undefined> & { help: boolean },
      positionals: parsed.positionals,
    };
  } catch (error) {
    // The option the parse error is about (`--top-k -1`: a value that looks like an option), else the command.
    const message = (error as Error).message;
    const option = /(--[\w-]+)/.exec(message)?.[1] ?? /'(-[\w])'/.exec(message)?.[1];
    throw usageError({
      argument: option ?? command,
      message: `${message}; see searcher-rl ${command} --help`,
      cause: error,
    });
  }
}

/** The message and causes of a failure, for stderr. */
export function describeFailure(error: unknown): string[] {
  const message = SearcherError.isInstance(error) || error instanceof Error ? error.message : String(error);
  const lines = [`searcher-rl: ${message}`];
  // The causes say what failed underneath (a file, the database, the backend); one the message already quotes is left out.
  for (
    let cause = (error as { cause?: unknown })?.cause, depth = 0;
    cause !== undefined && depth < 5;
    cause = (cause as { cause?: unknown })?.cause, depth++
  ) {
    const text = cause instanceof Error ? cause.message : String(cause);
    if (!message.includes(text)) lines.push(`  caused by: ${text}`);
  }
  // A SearcherError's message is redacted already; a raw error's (a vendor SDK's, Node's) and the causes may quote a key.
  return lines.map((line) => redactSecrets(line, []));
}
