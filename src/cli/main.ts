#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { SearcherError } from '../core/errors';
import { runDemo } from './demo';
import { icdCommand } from './icd';
import { writeReport } from './report';
import { loadRunConfig, parseRunConfig } from './run-config';
import { evalRun, trainRun } from './train-run';

const USAGE = `searcher-rl <command> [options]

Commands:
  demo                      the main job on the offline slide environment with the default
                            settings (no API keys): SFT warm start, RL, test-split judge success
                            before and after RL, a run folder under runs/ with report.html
  demo --scripted [--out DIR]
                            a scripted Searcher over the mock adapters: rewards and advantages of
                            one batch (default DIR: runs)
  train [--config FILE]     the offline slide environment: SFT warm start, RL phases, evaluation
                            before and after RL, a run folder with report.html (FILE: YAML or JSON)
  eval --run DIR [--split test|validation|train] [--limit N]
                            evaluate the run's latest checkpoint; writes DIR/eval-<split>.json
  report --run DIR          (re)write DIR/report.html from a finished run folder
  icd <command>             in-context demonstration selection: normalise, eval, mine, inject,
                            control, train (searcher-rl icd --help)
  help                      show this text
`;

async function main(argv: string[]): Promise<number> {
  const [command = 'help', ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === 'demo') {
    const { values } = parseArgs({ args: rest, options: { out: { type: 'string', default: 'runs' }, scripted: { type: 'boolean', default: false } }, strict: true });
    if (values.scripted) {
      await runDemo({ out: values.out! });
      return 0;
    }
    return main(['train']);
  }
  if (command === 'train') {
    const { values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true });
    const config = values.config ? await loadRunConfig(values.config) : parseRunConfig({});
    const result = await trainRun(config, { log: (line) => process.stdout.write(`${line}\n`), stream: process.stderr });
    const report = await writeReport(result.runDir);
    const rise = result.after.judgeSuccess - result.before.judgeSuccess;
    process.stdout.write(`judge success on the ${result.after.split} split: ${(result.before.judgeSuccess * 100).toFixed(1)}% before RL -> ${(result.after.judgeSuccess * 100).toFixed(1)}% after RL (${rise >= 0 ? '+' : ''}${(rise * 100).toFixed(1)} points)\nrun folder: ${result.runDir}\nreport: ${report}\n`);
    return 0;
  }
  if (command === 'eval') {
    const { values } = parseArgs({ args: rest, options: { run: { type: 'string' }, split: { type: 'string' }, limit: { type: 'string' } }, strict: true });
    if (!values.run) throw new Error('eval needs --run DIR (a run folder)');
    const split = values.split as 'train' | 'validation' | 'test' | undefined;
    if (split !== undefined && !['train', 'validation', 'test'].includes(split)) throw new Error(`--split must be train, validation or test, got '${split}'`);
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) throw new Error(`--limit must be a positive integer, got '${values.limit}'`);
    await evalRun(values.run, { ...(split && { split }), ...(limit !== undefined && { limit }) }, { log: (line) => process.stdout.write(`${line}\n`), stream: process.stderr });
    return 0;
  }
  if (command === 'icd') return icdCommand(rest);
  if (command === 'report') {
    const { values } = parseArgs({ args: rest, options: { run: { type: 'string' } }, strict: true });
    if (!values.run) throw new Error('report needs --run DIR (a run folder)');
    process.stdout.write(`${await writeReport(values.run)}\n`);
    return 0;
  }
  process.stderr.write(`Unknown command '${command}'.\n\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = SearcherError.isInstance(error) || error instanceof Error ? error.message : String(error);
    process.stderr.write(`searcher-rl: ${message}\n`);
    // The causes say what failed underneath (a file, the database, the backend).
    for (let cause = (error as { cause?: unknown })?.cause, depth = 0; cause !== undefined && depth < 5; cause = (cause as { cause?: unknown })?.cause, depth++) {
      process.stderr.write(`  caused by: ${cause instanceof Error ? cause.message : String(cause)}\n`);
    }
    process.exitCode = 1;
  },
);
