#!/usr/bin/env node
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { evalRun, loadRunConfig, trainRun } from '../index';
import {
  checkingUsage,
  describeFailure,
  EXIT,
  exitCodeOf,
  parseCommandArgs,
  usageError,
  type OptionSpec,
} from './args';
import { HELP, USAGE } from './help';
import { loadCommand } from './packages';
import { cliRunOptions } from './progress';

// The commands' own modules (TensorFlow.js, sharp, SQLite) load only when a command runs them, so
// `--help` and `--version` work without those packages; a missing package is named with every
// other one the command's modules need (loadCommand), and trainRun, evalRun and the commands
// behind them check what the configuration adds before they start.
const RUN_LIBRARY = ['sharp', 'libsql'];
const commands = {
  run: (command: string) => loadCommand(command, RUN_LIBRARY, () => import('../run/index')),
  icd: () => loadCommand('icd', ['@tensorflow/tfjs'], () => import('./icd')),
  curate: () => loadCommand('curate', RUN_LIBRARY, () => import('./curate')),
  serveEnv: () => loadCommand('serve-env', ['ws', ...RUN_LIBRARY], () => import('../server/index')),
};

/**
 * Log lines to stdout, progress to stderr; the first Ctrl-C stops the run through its AbortSignal
 * (what it recorded stays, and running the command again continues it), a second one exits.
 */
const interrupted = { yes: false };
let progressLine: { endLine(): void } | null = null;
const cli = () => {
  const controller = new AbortController();
  const options = cliRunOptions((line) => process.stdout.write(`${line}\n`), process.stderr);
  progressLine = options;
  process.once('SIGINT', () => {
    interrupted.yes = true;
    options.endLine();
    process.stderr.write('\nstopping at the next safe point (Ctrl-C again to exit now)\n');
    controller.abort(new Error('interrupted (SIGINT)'));
    process.once('SIGINT', () => process.exit(EXIT.interrupted));
  });
  return { onLog: options.onLog, onProgress: options.onProgress, signal: controller.signal };
};

function version(): string {
  // package.json sits two folders up from both src/cli/main.ts and dist/cli/main.js.
  return (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
}

function print(text: string): number {
  process.stdout.write(text);
  return EXIT.ok;
}

/** `--run DIR` must name a run folder: a mistyped one is refused before anything is read or written. */
function runFolderOf(command: string, run: unknown): string {
  if (typeof run !== 'string' || run === '')
    throw usageError({ argument: '--run', message: `${command} needs --run DIR (a run folder)` });
  if (!existsSync(join(run, 'config.json')))
    throw usageError({
      argument: '--run',
      message: `'${run}' is not a run folder (it has no config.json); give the folder train wrote (runs/<runId>)`,
    });
  return run;
}

/** A file an option names must exist. */
function existingFile(option: string, path: unknown): string | undefined {
  if (path === undefined) return undefined;
  if (typeof path !== 'string' || !existsSync(path) || !statSync(path).isFile())
    throw usageError({ argument: option, message: `no such file '${String(path)}'` });
  return path;
}

const integerOption = (
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max = Infinity,
) => {
  const raw = values[name];
  const n =
    raw === undefined ? fallback : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  if (!(Number.isInteger(n) && n >= min && n <= max))
    throw usageError({
      argument: `--${name}`,
      message: `must be an integer ${max === Infinity ? `>= ${min}` : `from ${min} to ${max}`}, got '${String(raw)}'`,
    });
  return n;
};

const SPLITS = ['train', 'validation', 'test'] as const;

/** What `demo` sets over `train`'s defaults: the fast training engine (docs/train.md, The demo). */
const DEMO_SETTINGS = ['policy.training=onnx'] as const;
type Split = (typeof SPLITS)[number];
const splitOption = (value: unknown): Split | undefined => {
  if (value === undefined) return undefined;
  if (!(SPLITS as readonly unknown[]).includes(value))
    throw usageError({
      argument: '--split',
      message: `must be train, validation or test, got '${String(value)}'`,
    });
  return value as Split;
};

const SERVE_OPTIONS = [
  'config',
  'tasks',
  'split',
  'host',
  'port',
  'workers',
  'max-sessions',
  'max-sessions-per-client',
  'idle-timeout-ms',
  'token',
  'drain-ms',
];

async function main(argv: string[]): Promise<number> {
  // No arguments: the usage, on stderr, as a usage error (nothing was asked for).
  if (argv.length === 0) {
    process.stderr.write(USAGE);
    return EXIT.usage;
  }
  const [command = '', ...rest] = argv;
  if (command === '--help' || command === '-h') return print(USAGE);
  if (command === 'help') return rest.length === 0 ? print(USAGE) : main([...rest, '--help']);
  if (command === '--version' || command === '-V' || command === '-v' || command === 'version') {
    if (rest.length > 0)
      throw usageError({ argument: command, message: `takes no arguments, got '${rest.join(' ')}'` });
    return print(`${version()}\n`);
  }
  // The icd commands' module imports the tfjs pointer selector (src/run/icd/flow.ts), --help included.
  if (command === 'icd') return (await commands.icd()).icdCommand(rest);
  if (command === 'curate') return (await commands.curate()).curateCommand(rest, cli());
  const help = HELP[command];
  if (!help) {
    process.stderr.write(`searcher-rl: unknown command '${command}'.\n\n${USAGE}`);
    return EXIT.usage;
  }
  if (command === 'demo') {
    const { values, positionals } = parseCommandArgs(
      command,
      rest,
      { out: { type: 'string' }, scripted: { type: 'boolean', default: false } },
      { positionals: true },
    );
    if (values.help) return print(help());
    if (values.out !== undefined && !values.scripted)
      throw usageError({
        argument: '--out',
        message: 'goes with --scripted (a train run writes under runs/)',
      });
    if (values.scripted && positionals.length > 0)
      throw usageError({
        argument: positionals[0]!,
        message: 'settings go with the train demo, not --scripted (it has no run configuration)',
      });
    if (values.scripted) {
      await (await commands.run('demo')).runDemo({ out: (values.out as string | undefined) ?? 'runs' });
      return EXIT.ok;
    }
    // The demo trains with ONNX Runtime's gradients (the fast engine); key.path=value arguments
    // after it win (policy.training=tfjs: TensorFlow.js's).
    return main(['train', ...DEMO_SETTINGS, ...positionals]);
  }
  if (command === 'train' || command === 'ablate') {
    const spec: OptionSpec = { config: { type: 'string' } };
    if (command === 'ablate') {
      spec.only = { type: 'string' };
      spec.seeds = { type: 'string' };
    }
    const { values, positionals } = parseCommandArgs(command, rest, spec, { positionals: true });
    if (values.help) return print(help());
    const config = await checkingUsage(() =>
      loadRunConfig((values.config as string | undefined) ?? null, { overrides: positionals }),
    );
    const only =
      values.only === undefined
        ? []
        : (values.only as string)
            .split(',')
            .map((n) => n.trim())
            .filter((n) => n.length > 0);
    if (command === 'ablate') {
      // runAblations checks what the configuration adds; the run's own policy is named here with the library's packages.
      const own = config.searcher.adapters.policy === undefined ? ['@tensorflow/tfjs'] : [];
      const run = await loadCommand('ablate', [...RUN_LIBRARY, ...own], () => import('../run/index'));
      const seeds =
        values.seeds === undefined
          ? []
          : (values.seeds as string)
              .split(',')
              .map((n) => n.trim())
              .filter((n) => n.length > 0)
              .map((n) => {
                if (!/^-?\d+$/.test(n))
                  throw usageError({
                    argument: '--seeds',
                    message: `must be integers joined by ',', got '${n}'`,
                  });
                return Number(n);
              });
      await run.runAblations(config, cli(), {
        only,
        seeds,
        print: (line) => process.stdout.write(`${line}\n`),
      });
      return EXIT.ok;
    }
    // trainRun checks every package the run needs before it loads or writes anything.
    const result = await trainRun(config, cli());
    const report = await (await commands.run('train')).writeReport(result.runDir);
    const rise = result.after.judgeSuccess - result.before.judgeSuccess;
    process.stdout.write(
      `${result.after.successBy === 'answer' ? 'answer' : 'judge'} success on the ${result.after.split} ${config.dataset ? 'questions' : 'split'}: ${(result.before.judgeSuccess * 100).toFixed(1)}% before RL -> ${(result.after.judgeSuccess * 100).toFixed(1)}% after RL (${rise >= 0 ? '+' : ''}${(rise * 100).toFixed(1)} points)${result.strongest ? `; over the strongest baseline (${result.strongest.name}, ${(result.strongest.success * 100).toFixed(1)}%): ${result.after.judgeSuccess >= result.strongest.success ? '+' : ''}${((result.after.judgeSuccess - result.strongest.success) * 100).toFixed(1)} points` : ''}\nrun folder: ${result.runDir}\nreport: ${report}\n`,
    );
    return EXIT.ok;
  }
  if (command === 'eval') {
    const { values } = parseCommandArgs(command, rest, {
      run: { type: 'string' },
      split: { type: 'string' },
      limit: { type: 'string' },
    });
    if (values.help) return print(help());
    const runDir = runFolderOf(command, values.run);
    const split = splitOption(values.split);
    const limit = values.limit === undefined ? undefined : integerOption(values, 'limit', 1, 1);
    await evalRun(runDir, { ...(split && { split }), ...(limit !== undefined && { limit }) }, cli());
    return EXIT.ok;
  }
  if (command === 'serve-env') {
    const { values } = parseCommandArgs(
      command,
      rest,
      Object.fromEntries(SERVE_OPTIONS.map((k) => [k, { type: 'string' as const }])),
    );
    if (values.help) return print(help());
    const split = splitOption(values.split) ?? 'train';
    const host = (values.host as string | undefined) ?? '127.0.0.1';
    if (host.trim() === '') throw usageError({ argument: '--host', message: 'must not be empty' });
    const idle = integerOption(values, 'idle-timeout-ms', 600_000, 0);
    const maxSessions = integerOption(values, 'max-sessions', 64, 1);
    const settings = {
      ...(existingFile('--config', values.config) !== undefined && { config: values.config as string }),
      ...(existingFile('--tasks', values.tasks) !== undefined && { tasks: values.tasks as string }),
      split,
      host,
      port: integerOption(values, 'port', 8000, 0, 65_535),
      workers: integerOption(values, 'workers', 1, 1),
      maxSessions,
      // Default (in the server): half of --max-sessions, at least 1 (docs/scale-out.md#fair-sharing).
      ...(values['max-sessions-per-client'] !== undefined && {
        maxSessionsPerClient: integerOption(values, 'max-sessions-per-client', 1, 1, maxSessions),
      }),
      idleTimeoutMs: idle === 0 ? null : idle,
      token: (values.token as string | undefined) ?? process.env.SEARCHER_RL_TOKEN ?? null,
      drainMs: integerOption(values, 'drain-ms', 30_000, 0),
      version: version(),
    };
    await (await commands.serveEnv()).serveEnv(settings, (line) => process.stderr.write(`${line}\n`));
    return EXIT.ok;
  }
  // report
  const { values } = parseCommandArgs(command, rest, { run: { type: 'string' } });
  if (values.help) return print(help());
  const runDir = runFolderOf(command, values.run);
  process.stdout.write(`${await (await commands.run('report')).writeReport(runDir)}\n`);
  return EXIT.ok;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    progressLine?.endLine();
    // Stopped by Ctrl-C: what was done is kept; the same command continues it (exit 130, as a shell's SIGINT).
    if (interrupted.yes) {
      process.stderr.write(
        `searcher-rl: stopped; what was done is kept. Run the same command again to continue.\n`,
      );
      process.exitCode = EXIT.interrupted;
      return;
    }
    for (const line of describeFailure(error)) process.stderr.write(`${line}\n`);
    process.exitCode = exitCodeOf(error);
  },
);
