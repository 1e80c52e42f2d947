import {
  CURATION_COMMANDS,
  DEFAULT_CURATION_SETTINGS,
  runCurationCommand,
  type CurationValues,
} from '../curation/index';
import type { RunOptions } from '../index';
import { parseCommandArgs, usageError } from './args';

const D = DEFAULT_CURATION_SETTINGS;
export const CURATE_HELP = `searcher-rl curate <command> -r|--run DIR [options]

  Data-centric RL over a run folder (docs/method.md#data-centric-rl); everything is written under
  DIR/curation/. A "store run" is a phase's name in the run folder (phase1, phase2, ...).
  Options are checked before anything is read or written: an option the command does not take,
  a value out of range (thresholds in [0, 1], --low below --high), or a store run the folder does
  not have is refused by name (exit 2). Running a command again replaces its files.

  buckets  [--phase phase1] [--low ${D.bucketLow}] [--high ${D.bucketHigh}]
           difficulty buckets on mean NDCG per prompt: B > high, A in [low, high], 0 < low
  verify   [--phase phase2] [--ndcg ${D.candidateNdcg}] [--judge-high ${D.candidateJudgeHigh}]
           ground-truth verification of the candidates (judge 0, or 0 < judge <= judge-high, with
           NDCG >= ndcg) through the run's Generator (given the golden page) and Judge; labels
           GT_ERROR, GEN_ERROR, UNCERTAIN, BOTH_WRONG, FORMAT_DIFF; verdicts.json
  rounds   [--phase1 phase1] [--phase2 phase2] [--round 1|2] [--round1-max ${D.round1MaxScore}] [--round2-max ${D.round2MaxScore}]
           focused round 1 (bucket A with mean score <= round1-max, plus verified bucket 0) or
           round 2 (round-1 prompts scoring <= round2-max in --phase2, minus GT errors), written as
           focused_roundN.parquet (verl/Search-R1 layout) and .jsonl, with its budget
  distill  [--phase phase2] [--top-k ${D.distillTopK}] [--max-success-rate ${D.distillMaxSuccessRate}] [--keep-zero-search] [--keep-zero-ndcg] [--rewrite]
           rare-success SFT data: sft.parquet and sft.jsonl (messages, uid, format_version);
           --rewrite: think-only rewriting through the Generator with the safety post-pass
  funnel   [--phase1 phase1] [--phase2 phase2]
           the funnel with counts, NDCG-vs-judge disagreements, failure causes, hallucination
           share: funnel.json (and a section of report.html)
  import   --db FILE   the run folder's JSONL logs as an SQLite store (rebuilt on each import)
  loop     [--phase phase2] [--epochs 4] [--steps 5]   (offline slide runs)
           the closed loop: distill, SFT the policy on it (store run sft-distilled), then focused
           round 1 from that checkpoint (store run focused-round1) with the round's budget
`;

const OPTIONS = {
  run: { type: 'string' },
  phase: { type: 'string' },
  phase1: { type: 'string' },
  phase2: { type: 'string' },
  low: { type: 'string' },
  high: { type: 'string' },
  ndcg: { type: 'string' },
  'judge-high': { type: 'string' },
  round: { type: 'string' },
  'round1-max': { type: 'string' },
  'round2-max': { type: 'string' },
  'top-k': { type: 'string' },
  'max-success-rate': { type: 'string' },
  'keep-zero-search': { type: 'boolean' },
  'keep-zero-ndcg': { type: 'boolean' },
  rewrite: { type: 'boolean' },
  db: { type: 'string' },
  epochs: { type: 'string' },
  steps: { type: 'string' },
} as const;

/** `searcher-rl curate <command>`: the arguments, then the curation library (`searcher-rl/curation`). */
export async function curateCommand(
  argv: string[],
  options: RunOptions = { onLog: (line) => process.stdout.write(`${line}\n`) },
): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help')
    return (process.stdout.write(CURATE_HELP), 0);
  if (!(CURATION_COMMANDS as readonly string[]).includes(command))
    throw usageError({
      argument: 'curate',
      message: `unknown command '${command}'; one of ${CURATION_COMMANDS.join(', ')} (searcher-rl curate --help)`,
    });
  const { values: parsed } = parseCommandArgs('curate', rest, OPTIONS);
  const { help, ...values } = parsed as CurationValues & { help: boolean };
  if (help) return (process.stdout.write(CURATE_HELP), 0);
  const runDir = values.run as string | undefined;
  if (!runDir) throw usageError({ argument: '--run', message: 'curate needs --run DIR (a run folder)' });
  // The library checks the options, the run folder and the packages the command needs before it writes anything.
  await runCurationCommand(command, runDir, values, options);
  return 0;
}
