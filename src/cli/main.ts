#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  evalRun,
  InvalidArgumentError,
  loadRunConfig,
  parseRunConfig,
  runConfigSchema,
  SearcherError,
  trainRun,
} from '../index';
import { describeConfigFields } from './config-help';
import { cliRunOptions } from './progress';

// The commands' own modules (TensorFlow.js, sharp, SQLite) load only when a command runs them, so
// `--help` and `--version` work without those packages.
const commands = {
  run: () => import('../run/index'),
  icd: () => import('./icd'),
  curate: () => import('./curate'),
  serveEnv: () => import('../server/index'),
};

/**
 * Log lines to stdout, progress to stderr; the first Ctrl-C stops the run through its AbortSignal
 * (what it recorded stays, and running the command again continues it), a second one exits.
 */
const interrupted = { yes: false };
const cli = () => {
  const controller = new AbortController();
  process.once('SIGINT', () => {
    interrupted.yes = true;
    process.stderr.write('\nstopping at the next safe point (Ctrl-C again to exit now)\n');
    controller.abort(new Error('interrupted (SIGINT)'));
    process.once('SIGINT', () => process.exit(130));
  });
  return {
    ...cliRunOptions((line) => process.stdout.write(`${line}\n`), process.stderr),
    signal: controller.signal,
  };
};

const USAGE = `searcher-rl <command> [options]

Commands:
  demo                      the main job on the offline slide environment with the default
                            settings (no API keys): SFT warm start, RL, test-split judge success
                            before and after RL, a run folder under runs/ with report.html
  train [--config FILE]     the offline slide environment with your settings, or your own
                            questions and pages when FILE has a \`dataset\` (FILE: YAML or JSON)
  eval --run DIR            evaluate a run's latest checkpoint on a split
  report --run DIR          (re)write a run folder's report.html
  ablate [--config FILE]    the RL ablations from one warm start, a table of test-split success
                            before and after RL per row (npm run bench:learning)
  curate <command>          data-centric RL over a run folder: buckets, verify, rounds, distill,
                            funnel, import, loop (searcher-rl curate --help)
  serve-env [options]       serve the environment and its rewards to distributed trainers
                            (OpenEnv WebSocket protocol; searcher-rl serve-env --help)
  icd <command>             in-context demonstration selection: normalise, eval, mine, inject,
                            control, train (searcher-rl icd --help)
  help                      this text; \`searcher-rl <command> --help\` for a command's options

Options: --version, --help
`;

const HELP: Record<string, () => string> = {
  demo: () => `searcher-rl demo [--scripted [--out DIR]]

  The main job on the offline slide environment with the default settings (\`train\` with no
  --config). With --scripted: a scripted Searcher over the mock adapters instead, printing the
  rewards and advantages of one batch (3 questions x 4 rollouts) and writing them under DIR
  (default: runs).
`,
  train: () => `searcher-rl train [--config FILE]

  Builds (or reuses) the offline slide corpus, warm-starts the policy with SFT on oracle
  demonstrations, runs the RL phases, evaluates before and after RL, and writes a run folder
  with report.html. Running it again on the same runId continues the run.

  With a \`dataset\`, FILE is a run on your own questions and pages (examples/own-data/): no
  corpus and no warm start; the ports \`searcher.adapters\` leaves unset are the Searcher's
  defaults (searchEngine: sqlite-fts with pagesDir, search-r1, vrag, brave, mock; generator: openai,
  gemini, mock, slide-reader; judge: openai, gemini, rule). Without one, the unset ports are the
  slide environment's. Settings the run would ignore are refused, by name.

  FILE is YAML (.yaml, .yml) or JSON (.json); every field is optional. Fields and defaults (a
  slide run's; without a \`searcher\` section, a run on your own data uses observationMaxChars 60,
  temperature 0.5 and nAgent 4):
${describeConfigFields(runConfigSchema.out).join('\n')}
`,
  eval: () => `searcher-rl eval --run DIR [--split test|validation|train] [--limit N]

  Evaluates the latest checkpoint of the run folder DIR (one rollout per question at the run's
  evaluation temperature) and writes DIR/eval-<split>.json.
`,
  'serve-env': () => `searcher-rl serve-env [--config FILE] [--tasks FILE] [--split S] [--host H] [--port N]
                     [--workers N] [--max-sessions N] [--idle-timeout-ms N] [--token T] [--drain-ms N]

  An OpenEnv environment server (docs/scale-out.md): a WebSocket session per episode at /ws
  (reset, step with the raw assistant turn, state, close), the reward at done, and GET /health,
  /metadata, /schema, /tasks. Default: the offline slide environment (FILE's corpus and searcher
  sections as for \`train\`); with --tasks (PromptRecord JSONL) the adapters of FILE's
  searcher.adapters instead.

  --split S            the slide questions served: train (default), validation or test
  --host H             default 127.0.0.1 (0.0.0.0 to serve other machines)
  --port N             default 8000
  --workers N          worker processes behind the one port (node:cluster), default 1
  --max-sessions N     concurrent sessions across all workers (CAPACITY_REACHED beyond), default 64
  --idle-timeout-ms N  end a session silent this long, default 600000 (0: never)
  --token T            require Authorization: Bearer T (or SEARCHER_RL_TOKEN)
  --drain-ms N         on SIGTERM, how long running episodes may take to finish, default 30000
`,
  ablate: () => `searcher-rl ablate [--config FILE] [--only NAME,NAME]

  Trains the run of FILE (default: the demo's settings) once as the baseline, then each ablation's
  RL phases from the baseline's SFT checkpoint with the same seed, and prints a table of judge
  success on the test split before and after RL: baseline, ppo-clip, no-state-masking, judge-only, n-agent-4. Each row is a run folder
  under <runsDir>/<runId>/ (ablations.json, ablations.md). Rerunning continues the folders.

  --only NAME,NAME     run only these ablations (the baseline always runs first)
`,
  report: () => `searcher-rl report --run DIR

  (Re)writes DIR/report.html from a run folder: curves, difficulty buckets, an episode browser.
`,
};

function version(): string {
  // package.json sits two folders up from both src/cli/main.ts and dist/cli/main.js.
  return (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
}

function args(
  command: string,
  rest: string[],
  options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }>,
) {
  try {
    return parseArgs({
      args: rest,
      options: { ...options, help: { type: 'boolean', default: false } },
      strict: true,
    }).values as Record<string, string | boolean | undefined> & { help: boolean };
  } catch (error) {
    throw new InvalidArgumentError({
      argument: command,
      message: `${(error as Error).message}; see searcher-rl ${command} --help`,
    });
  }
}

async function main(argv: string[]): Promise<number> {
  const [command = 'help', ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (command === 'icd') return (await commands.icd()).icdCommand(rest);
  if (command === 'curate') return (await commands.curate()).curateCommand(rest);
  const help = HELP[command];
  if (!help) {
    process.stderr.write(`Unknown command '${command}'.\n\n${USAGE}`);
    return 2;
  }
  if (command === 'demo') {
    const values = args(command, rest, {
      out: { type: 'string', default: 'runs' },
      scripted: { type: 'boolean', default: false },
    });
    if (values.help) return print(help());
    if (values.scripted) {
      await (await commands.run()).runDemo({ out: values.out as string });
      return 0;
    }
    return main(['train']);
  }
  if (command === 'train') {
    const values = args(command, rest, { config: { type: 'string' } });
    if (values.help) return print(help());
    const run = await commands.run();
    const config = values.config ? await loadRunConfig(values.config as string) : parseRunConfig({});
    const result = await trainRun(config, cli());
    const report = await run.writeReport(result.runDir);
    const rise = result.after.judgeSuccess - result.before.judgeSuccess;
    process.stdout.write(
      `judge success on the ${result.after.split} ${config.dataset ? 'questions' : 'split'}: ${(result.before.judgeSuccess * 100).toFixed(1)}% before RL -> ${(result.after.judgeSuccess * 100).toFixed(1)}% after RL (${rise >= 0 ? '+' : ''}${(rise * 100).toFixed(1)} points)\nrun folder: ${result.runDir}\nreport: ${report}\n`,
    );
    return 0;
  }
  if (command === 'ablate') {
    const values = args(command, rest, { config: { type: 'string' }, only: { type: 'string' } });
    if (values.help) return print(help());
    const run = await commands.run();
    const config = values.config ? await loadRunConfig(values.config as string) : parseRunConfig({});
    const only =
      values.only === undefined
        ? []
        : (values.only as string)
            .split(',')
            .map((n) => n.trim())
            .filter((n) => n.length > 0);
    await run.runAblations(config, cli(), { only });
    return 0;
  }
  if (command === 'eval') {
    const values = args(command, rest, {
      run: { type: 'string' },
      split: { type: 'string' },
      limit: { type: 'string' },
    });
    if (values.help) return print(help());
    if (!values.run)
      throw new InvalidArgumentError({ argument: '--run', message: 'eval needs --run DIR (a run folder)' });
    const split = values.split as 'train' | 'validation' | 'test' | undefined;
    if (split !== undefined && !['train', 'validation', 'test'].includes(split))
      throw new InvalidArgumentError({
        argument: '--split',
        message: `must be train, validation or test, got '${split}'`,
      });
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
      throw new InvalidArgumentError({
        argument: '--limit',
        message: `must be a positive integer, got '${String(values.limit)}'`,
      });
    await evalRun(
      values.run as string,
      { ...(split && { split }), ...(limit !== undefined && { limit }) },
      cli(),
    );
    return 0;
  }
  if (command === 'serve-env') {
    const values = args(
      command,
      rest,
      Object.fromEntries(
        [
          'config',
          'tasks',
          'split',
          'host',
          'port',
          'workers',
          'max-sessions',
          'idle-timeout-ms',
          'token',
          'drain-ms',
        ].map((k) => [k, { type: 'string' as const }]),
      ),
    );
    if (values.help) return print(help());
    const int = (name: string, fallback: number, min: number) => {
      const raw = values[name];
      const n = raw === undefined ? fallback : Number(raw);
      if (!(Number.isInteger(n) && n >= min))
        throw new InvalidArgumentError({
          argument: `--${name}`,
          message: `must be an integer >= ${min}, got '${String(raw)}'`,
        });
      return n;
    };
    const split = (values.split as string | undefined) ?? 'train';
    if (!['train', 'validation', 'test'].includes(split))
      throw new InvalidArgumentError({
        argument: '--split',
        message: `must be train, validation or test, got '${split}'`,
      });
    const idle = int('idle-timeout-ms', 600_000, 0);
    await (await commands.serveEnv()).serveEnv(
      {
        ...(values.config !== undefined && { config: values.config as string }),
        ...(values.tasks !== undefined && { tasks: values.tasks as string }),
        split: split as 'train' | 'validation' | 'test',
        host: (values.host as string | undefined) ?? '127.0.0.1',
        port: int('port', 8000, 0),
        workers: int('workers', 1, 1),
        maxSessions: int('max-sessions', 64, 1),
        idleTimeoutMs: idle === 0 ? null : idle,
        token: (values.token as string | undefined) ?? process.env.SEARCHER_RL_TOKEN ?? null,
        drainMs: int('drain-ms', 30_000, 0),
        version: version(),
      },
      (line) => process.stderr.write(`${line}\n`),
    );
    return 0;
  }
  const values = args(command, rest, { run: { type: 'string' } });
  if (values.help) return print(help());
  if (!values.run)
    throw new InvalidArgumentError({ argument: '--run', message: 'report needs --run DIR (a run folder)' });
  process.stdout.write(`${await (await commands.run()).writeReport(values.run as string)}\n`);
  return 0;
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // Stopped by Ctrl-C: what was done is kept; the same command continues it (exit 130, as a shell's SIGINT).
    if (interrupted.yes) {
      process.stderr.write(
        `searcher-rl: stopped; what was done is kept. Run the same command again to continue.\n`,
      );
      process.exitCode = 130;
      return;
    }
    const message = SearcherError.isInstance(error) || error instanceof Error ? error.message : String(error);
    process.stderr.write(`searcher-rl: ${message}\n`);
    // The causes say what failed underneath (a file, the database, the backend).
    for (
      let cause = (error as { cause?: unknown })?.cause, depth = 0;
      cause !== undefined && depth < 5;
      cause = (cause as { cause?: unknown })?.cause, depth++
    ) {
      process.stderr.write(`  caused by: ${cause instanceof Error ? cause.message : String(cause)}\n`);
    }
    process.exitCode = 1;
  },
);
