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
  verify   [--phase phase2] [--phase1 phase1] [--ndcg ${D.candidateNdcg}] [--judge-high ${D.candidateJudgeHigh}] [--low ${D.bucketLow}] [--high ${D.bucketHigh}]
           ground-truth verification through the run's Generator (given the golden page alone)
           and Judge: the rollouts of --phase judged wrong although they found the evidence (judge
           0, or 0 < judge <= judge-high, with NDCG >= ndcg), and every bucket-0 prompt of --phase1
           (no rollout finds its golden page, so a wrong golden page or reference shows only
           here: a golden page that cannot give the reference is GT_ERROR); labels GT_ERROR,
           GEN_ERROR, UNCERTAIN, BOTH_WRONG, FORMAT_DIFF, GT_OK; verdicts.json; a progress line
  rounds   [--round 1|2|3] [--phase1 phase1] [--phase2 phase2] [--round1-max ${D.round1MaxScore}] [--round2-max ${D.round2MaxScore}]
           [--results STORE_RUN|RUN_DIR/STORE_RUN] [--steps N]
           round 1: bucket A with mean --phase2 score <= round1-max, plus bucket 0; round 2: the
           round-1 prompts scoring <= round2-max in round 1's own results (--results, default
           the loop's store run focused-round1; a round-1 run of its own: RUN_DIR/focused-round1);
           round 3: round 2's prompts again, from the distilled SFT checkpoint (sft-distilled,
           which curate loop makes; refused without it). GT errors and
           uncertain items (verdicts.json) are out of every round. Writes focused_roundN.parquet
           (verl/Search-R1 layout), .jsonl, .json and focused_roundN.config.yaml: a run config
           with the round's budget (settings table: B 16/8/32, n_agent 8/16/16, max_turns 7/15/15)
           and its start as policy.initFrom, for searcher-rl train --config (--steps: its steps;
           default one epoch over the round)
  distill  [--phase phase2] [--top-k ${D.distillTopK}] [--max-success-rate ${D.distillMaxSuccessRate}] [--keep-zero-search] [--keep-zero-ndcg] [--rewrite]
           rare-success SFT data: sft.parquet and sft.jsonl (messages, uid, format_version); a
           success is judge score 1 (answer mode, the Search-R1 reward: an exact match); rows
           with an action tag inside a <think> are dropped; --rewrite: think-only rewriting
           through the Generator with the safety post-pass
  funnel   [--phase1 phase1] [--phase2 phase2]
           the funnel with counts (rounds 2 and 3 once round 1 has results), NDCG-vs-judge
           disagreements, failure causes, hallucination share: funnel.json (and a section of report.html)
  import   --db FILE   the run folder's JSONL logs as an SQLite store (rebuilt on each import)
  loop     [--phase phase2] [--phase1 phase1] [--epochs 4] [--steps N] [distill's options]
           the whole loop on any run (slides or your own data) with its own tfjs policy: verify,
           round 1 trained from the run's latest checkpoint (store run focused-round1), round 2
           from round 1's results (focused-round2), the rounds' rare successes distilled and
           SFT'd (sft-distilled), round 3 from that checkpoint (focused-round3); each round with
           its budget and written as a ready config; --steps per round (default one epoch;
           0: round 1's files only)
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
  results: { type: 'string' },
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
