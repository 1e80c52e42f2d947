import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import { InvalidArgumentError } from '../../core/errors';

/** The options of the curation commands, by their CLI names (`searcher-rl curate --help`); numbers may be given as strings. */
export type CurationValues = Record<string, string | boolean | undefined>;

/** The curation commands (docs/method.md#data-centric-rl). */
export const CURATION_COMMANDS = [
  'buckets',
  'verify',
  'rounds',
  'distill',
  'funnel',
  'import',
  'loop',
] as const;
/** A `searcher-rl curate` command (`CURATION_COMMANDS`). */
export type CurationCommand = (typeof CURATION_COMMANDS)[number];

const DISTILL = ['phase', 'top-k', 'max-success-rate', 'keep-zero-search', 'keep-zero-ndcg', 'rewrite'];

/** The options each command takes (besides --run and --help); any other is refused, not ignored. */
export const CURATION_OPTIONS: Readonly<Record<CurationCommand, readonly string[]>> = {
  buckets: ['phase', 'low', 'high'],
  verify: ['phase', 'phase1', 'ndcg', 'judge-high', 'low', 'high'],
  rounds: ['phase1', 'phase2', 'round', 'round1-max', 'round2-max', 'low', 'high', 'results', 'steps'],
  distill: DISTILL,
  funnel: ['phase1', 'phase2', 'low', 'high'],
  import: ['db'],
  loop: [...DISTILL, 'phase1', 'ndcg', 'judge-high', 'low', 'high', 'epochs', 'steps'],
};

/** Where round 2 reads round 1's results by default: the store run `curate loop` trains it as. */
export const ROUND1_RESULTS = 'focused-round1';

const D = DEFAULT_CURATION_SETTINGS;
const UNIT = [
  ['low', D.bucketLow],
  ['high', D.bucketHigh],
  ['ndcg', D.candidateNdcg],
  ['judge-high', D.candidateJudgeHigh],
  ['round1-max', D.round1MaxScore],
  ['round2-max', D.round2MaxScore],
  ['max-success-rate', D.distillMaxSuccessRate],
] as const;
const COUNTS = [
  ['top-k', 1],
  ['epochs', 1],
  ['steps', 0],
] as const;

const bad = (name: string, message: string) => new InvalidArgumentError({ argument: `--${name}`, message });

/**
 * A number option: finite, in [0, 1] for the thresholds, an integer >= its minimum for the counts.
 * Checked for every command before anything is read or written.
 */
export const numberOf = (values: CurationValues, name: string, fallback: number): number => {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n)) throw bad(name, `must be a number, got '${String(raw)}'`);
  const unit = UNIT.find(([option]) => option === name);
  if (unit && !(n >= 0 && n <= 1)) throw bad(name, `must be in [0, 1], got ${raw}`);
  const count = COUNTS.find(([option]) => option === name);
  if (count && !(Number.isInteger(n) && n >= count[1]))
    throw bad(name, `must be an integer >= ${count[1]}, got ${raw}`);
  return n;
};

const STORE_RUN = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** The store runs of a run folder that recorded trajectories (phase1, phase2, eval-after-rl, ...). */
async function storeRunsWithTrajectories(runDir: string): Promise<string[]> {
  const entries = await readdir(runDir, { withFileTypes: true }).catch(() => []);
  const runs: string[] = [];
  for (const entry of entries)
    if (
      entry.isDirectory() &&
      ((await stat(join(runDir, entry.name, 'trajectory.jsonl')).catch(() => null))?.size ?? 0) > 0
    )
      runs.push(entry.name);
  return runs.sort();
}

/**
 * Everything a curation command is given, checked before it reads the run or writes a file: the
 * command, the options it takes (no others), their ranges (`--low` < `--high`, `--round` 1 or 2,
 * `--top-k` a positive integer, ...), the run folder (a folder with its config.json), the store
 * runs it names (they hold trajectories), what round 2 and `import` need. A mistyped name is an
 * error naming the option, never an empty result or a new folder.
 */
export async function checkCurationCommand(
  command: string,
  runDir: string,
  values: CurationValues,
): Promise<{ phase1: string; phase2: string }> {
  if (!(CURATION_COMMANDS as readonly string[]).includes(command))
    throw new InvalidArgumentError({
      argument: 'curate',
      message: `unknown command '${command}'; one of ${CURATION_COMMANDS.join(', ')} (searcher-rl curate --help)`,
    });
  const takes = CURATION_OPTIONS[command as CurationCommand];
  for (const [name, value] of Object.entries(values))
    if (value !== undefined && name !== 'run' && name !== 'help' && !takes.includes(name))
      throw bad(
        name,
        `'curate ${command}' does not take it; its options: ${takes.map((o) => `--${o}`).join(', ') || 'none'}`,
      );
  for (const [name] of [...UNIT, ...COUNTS]) numberOf(values, name, 0);
  const low = numberOf(values, 'low', D.bucketLow);
  const high = numberOf(values, 'high', D.bucketHigh);
  if (!(low < high)) throw bad('low', `must be below --high (${high}), got ${low}`);
  if (values.round !== undefined && !['1', '2', '3'].includes(values.round as string))
    throw bad('round', `must be 1, 2 or 3, got '${String(values.round)}'`);
  if (values.results !== undefined && values.round !== '2')
    throw bad('results', "goes with --round 2 (the store run holding round 1's results)");
  if ((await stat(join(runDir, 'config.json')).catch(() => null))?.isFile() !== true)
    throw new InvalidArgumentError({
      argument: '--run',
      message: `'${runDir}' is not a run folder (it has no config.json); give the folder train wrote (runs/<runId>)`,
    });
  const phase1 = (values.phase1 as string | undefined) ?? 'phase1';
  const phase2 = (values.phase2 as string | undefined) ?? (values.phase as string | undefined) ?? 'phase2';
  const named: Array<[string, string]> =
    command === 'buckets'
      ? [['phase', (values.phase as string | undefined) ?? 'phase1']]
      : command === 'funnel' || command === 'rounds'
        ? [
            ['phase1', phase1],
            ['phase2', phase2],
          ]
        : command === 'verify' || command === 'loop'
          ? [
              ['phase', phase2],
              ['phase1', phase1],
            ]
          : command === 'import'
            ? []
            : [['phase', phase2]];
  const available = named.length > 0 ? await storeRunsWithTrajectories(runDir) : [];
  for (const [option, storeRun] of named)
    if (!STORE_RUN.test(storeRun) || !available.includes(storeRun))
      throw bad(
        option,
        `'${storeRun}' is not a store run of '${runDir}' with trajectories; its store runs: ${available.join(', ') || 'none'}`,
      );
  if (command === 'rounds' && values.round === '2') {
    const round1 = await readFile(join(runDir, 'curation', 'focused_round1.json'), 'utf8').catch(() => null);
    if (round1 === null)
      throw bad('round', 'round 2 needs round 1 first (searcher-rl curate rounds --round 1)');
    // Round 2 is built from round 1's own results, never from phase 2's scores again.
    const ref = (values.results as string | undefined) ?? ROUND1_RESULTS;
    const at = ref.lastIndexOf('/');
    const [dir, storeRun] = at <= 0 ? [runDir, ref] : [ref.slice(0, at), ref.slice(at + 1)];
    const there = await storeRunsWithTrajectories(dir);
    if (!STORE_RUN.test(storeRun) || !there.includes(storeRun))
      throw bad(
        'results',
        `round 2 is built from round 1's results, and '${ref}' has none: train round 1 first (searcher-rl curate loop --run ${runDir}, or searcher-rl train --config ${join(runDir, 'curation', 'focused_round1.config.yaml')}) and give --results RUN_DIR/${ROUND1_RESULTS} (store runs ${values.results === undefined ? `of '${runDir}'` : `of '${dir}'`}: ${there.join(', ') || 'none'})`,
      );
  }
  if (command === 'rounds' && values.round === '3') {
    const round2 = await readFile(join(runDir, 'curation', 'focused_round2.json'), 'utf8').catch(() => null);
    if (round2 === null)
      throw bad(
        'round',
        "round 3 is round 2's data again: build round 2 first (searcher-rl curate rounds --round 2)",
      );
    // It starts from the SFT checkpoint distilled from the rounds, which only the loop makes.
    if (((await stat(join(runDir, 'sft-distilled', 'checkpoint.jsonl')).catch(() => null))?.size ?? 0) === 0)
      throw bad(
        'round',
        `round 3 starts from the SFT checkpoint distilled from the focused rounds ('${join(runDir, 'sft-distilled')}'), which '${runDir}' does not have: searcher-rl curate loop --run ${runDir} distills it (and writes round 3)`,
      );
  }
  if (command === 'import') {
    const db = values.db;
    if (typeof db !== 'string' || db === '')
      throw bad('db', 'import needs --db FILE (the SQLite database to write)');
    if ((await stat(dirname(db)).catch(() => null))?.isDirectory() !== true)
      throw bad('db', `the folder of '${db}' does not exist`);
    if ((await stat(db).catch(() => null))?.isDirectory()) throw bad('db', `'${db}' is a folder`);
  }
  return { phase1, phase2 };
}
