import type { OracleSummary } from '../../core/icd/oracle';
import { mean } from '../../core/stats';
import { buildIcdDemoData } from './data';
import {
  DEFAULT_ICD_FLOW_OPTIONS,
  evaluateIcdBaselines,
  type IcdFlowOptions,
  type IcdSelectorResult,
  type IcdWarmUp,
  trainIcdSelector,
} from './flow';
import { splitIndices } from './selection';

/** `runIcdTable`'s options: the flow's, for each seed. */
export interface IcdTableOptions extends Omit<IcdFlowOptions, 'warmUp' | 'store' | 'runId'> {
  /** One whole run (data, baselines, selectors) per seed; the table gives the mean and each seed's figure. */
  seeds: readonly number[];
  /** Wall-clock source (tests pass a fixed one). */
  now?: () => number;
}

/** The table's defaults: the flow's, for seeds 7 and 8. */
export const DEFAULT_ICD_TABLE_OPTIONS: Omit<IcdTableOptions, 'log'> = {
  ...DEFAULT_ICD_FLOW_OPTIONS,
  seeds: [7, 8],
};

/** One row of the ICD table: a figure per seed, in the order of `seeds`. */
export interface IcdTableRow {
  /** A stable name for the row (`random`, `cosine`, `beam-search`, `warm-up-cosine`, `grpo-none`, `oracle-before`, ...). */
  key: string;
  selection: string;
  heldOut: number[];
  /** On the training queries (their pools after injection); null where it means nothing. */
  train: number[] | null;
  /** Frozen-model calls per query to make the choice (the answer's own call not counted). */
  callsPerQuery: number[];
}

/** One seed's oracle figures, label accuracies, query counts and time. */
export interface IcdTableSeed {
  seed: number;
  oracle: { before: OracleSummary; after: OracleSummary; heldOut: OracleSummary };
  labelAccuracy: { cosine: number; beam: number };
  heldOutQueries: number;
  trainQueries: number;
  wallMs: number;
}

/**
 * The table: a row per selection (mean and each seed), the figures per seed, the options and the
 * time.
 */
export interface IcdTableResult {
  seeds: IcdTableSeed[];
  rows: IcdTableRow[];
  wallMs: number;
  options: Omit<IcdTableOptions, 'log' | 'now'>;
}

/**
 * The ICD table of docs/icd.md from one run (docs/method.md#icd-selection): for each seed, the demo's
 * data, then every query choosing from its own pool by random choice, cosine top-k, the beam search
 * (width `beamWidth`, scored by the frozen model: it reads the answers), the selector after a
 * warm-up on cosine labels and on beam labels, GRPO with no warm-up and after each warm-up, and
 * oracle@K over every ordered choice before and after injection. Each selector variant is what
 * `searcher-rl icd train --warm-up <kind>` trains with the same seed.
 */
export async function runIcdTable(options: IcdTableOptions): Promise<IcdTableResult> {
  const now = options.now ?? Date.now;
  const started = now();
  const { log, now: _now, ...rest } = options;
  const perSeed: Array<{ seed: IcdTableSeed; cells: Map<string, RowCell> }> = [];
  for (const seed of options.seeds) {
    const seedStarted = now();
    const seedLog = (line: string) => log(`[seed ${seed}] ${line}`);
    const seedOptions = { ...rest, seed, log: seedLog, warn: () => undefined };
    const data = await buildIcdDemoData(seedOptions);
    const { train, heldOut } = splitIndices(data);
    const trainBase = await evaluateIcdBaselines(data, seedOptions, train);
    const heldOutBase = await evaluateIcdBaselines(data, seedOptions, heldOut);
    seedLog(
      `baselines, held-out (training): random ${heldOutBase.random.toFixed(3)} (${trainBase.random.toFixed(3)}), cosine top-${options.shots} ${heldOutBase.cosineTopK.toFixed(3)} (${trainBase.cosineTopK.toFixed(3)}), beam search ${heldOutBase.beamSearch.toFixed(3)} (${trainBase.beamSearch.toFixed(3)})`,
    );
    const variants = new Map<IcdWarmUp, IcdSelectorResult>();
    for (const warmUp of ['cosine', 'beam', 'none'] as const)
      variants.set(warmUp, await trainIcdSelector(data, { ...seedOptions, warmUp }));
    const cells = new Map<string, RowCell>();
    const calls = data.figures.oracle;
    const oracleCalls = calls.scoredCalls / (2 * data.trainIds.length + data.heldOutIds.length);
    cells.set('random', { heldOut: heldOutBase.random, train: trainBase.random, calls: 0 });
    cells.set('cosine', { heldOut: heldOutBase.cosineTopK, train: trainBase.cosineTopK, calls: 0 });
    cells.set('beam-search', {
      heldOut: heldOutBase.beamSearch,
      train: trainBase.beamSearch,
      calls: (heldOutBase.beamSearchCallsPerQuery + trainBase.beamSearchCallsPerQuery) / 2,
    });
    for (const kind of ['cosine', 'beam'] as const) {
      const warm = variants.get(kind)!.warmUp!;
      cells.set(`warm-up-${kind}`, { heldOut: warm.heldOut, train: warm.train, calls: 0 });
    }
    for (const kind of ['none', 'cosine', 'beam'] as const) {
      const { grpo } = variants.get(kind)!;
      cells.set(`grpo-${kind}`, { heldOut: grpo.heldOut, train: grpo.train, calls: 0 });
    }
    cells.set('oracle-before', {
      heldOut: calls.heldOut.meanBest,
      train: calls.before.meanBest,
      calls: oracleCalls,
    });
    cells.set('oracle-after', {
      heldOut: calls.heldOut.meanBest,
      train: calls.after.meanBest,
      calls: oracleCalls,
    });
    const wallMs = now() - seedStarted;
    seedLog(`done in ${(wallMs / 1000).toFixed(1)} s`);
    perSeed.push({
      seed: {
        seed,
        oracle: { before: calls.before, after: calls.after, heldOut: calls.heldOut },
        labelAccuracy: {
          cosine: variants.get('cosine')!.labelAccuracy!,
          beam: variants.get('beam')!.labelAccuracy!,
        },
        heldOutQueries: heldOut.length,
        trainQueries: train.length,
        wallMs,
      },
      cells,
    });
  }
  const k = options.poolSize;
  const s = options.shots;
  const choices = choicesCount(k, s);
  const names: Array<[string, string]> = [
    ['random', 'random'],
    ['cosine', `cosine top-${s}`],
    [
      'beam-search',
      `beam search (width ${options.beamWidth}, scored by the frozen model: reads the answers)`,
    ],
    ['warm-up-cosine', `warm-up (cross-entropy on cosine top-${s} labels)`],
    ['warm-up-beam', 'warm-up (cross-entropy on beam labels)'],
    ['grpo-none', `GRPO (${options.grpoSteps} steps), no warm-up`],
    ['grpo-cosine', `GRPO (${options.grpoSteps} steps) after the cosine warm-up`],
    ['grpo-beam', `GRPO (${options.grpoSteps} steps) after the beam warm-up`],
    ['oracle-before', `oracle@${k} over all ${choices} ordered choices, before injection`],
    ['oracle-after', `oracle@${k} over all ${choices} ordered choices, after injection`],
  ];
  const rows = names.map(([key, selection]) => {
    const cells = perSeed.map((p) => p.cells.get(key)!);
    return {
      key,
      selection,
      heldOut: cells.map((c) => c.heldOut),
      train: cells.map((c) => c.train),
      callsPerQuery: cells.map((c) => c.calls),
    };
  });
  return { seeds: perSeed.map((p) => p.seed), rows, wallMs: now() - started, options: rest };
}

interface RowCell {
  heldOut: number;
  train: number;
  calls: number;
}

/** K! / (K - shots)!: the ordered choices of `shots` distinct candidates of K. */
function choicesCount(k: number, shots: number): number {
  let n = 1;
  for (let i = 0; i < shots; i++) n *= k - i;
  return n;
}

/** A cell: the mean over the seeds, then each seed's figure when there are several. */
function cell(xs: readonly number[], digits = 3): string {
  const m = mean(xs).toFixed(digits);
  return xs.length > 1 ? `${m} (${xs.map((x) => x.toFixed(digits)).join(' / ')})` : m;
}

/**
 * One JSON line per figure (`{"bench":"icd","figure":...,"value":...}`): every row's held-out and
 * training mean accuracy and calls per query for each seed, the oracle's shares, the labels'
 * accuracy and the wall time.
 */
export function icdTableJsonLines(result: IcdTableResult): string {
  const lines: Array<Record<string, unknown>> = [];
  const figure = (name: string, value: number, extra: Record<string, unknown>) =>
    lines.push({ bench: 'icd', figure: name, value: Number(value.toPrecision(4)), ...extra });
  result.seeds.forEach((seed, s) => {
    for (const row of result.rows) {
      const extra = { selection: row.key, seed: seed.seed };
      figure('held-out mean accuracy', row.heldOut[s]!, extra);
      if (row.train) figure('training mean accuracy', row.train[s]!, extra);
      figure('frozen-model calls per query', row.callsPerQuery[s]!, extra);
    }
    for (const split of ['before', 'after', 'heldOut'] as const) {
      const oracle = seed.oracle[split];
      const extra = { selection: 'oracle', pools: split, seed: seed.seed, queries: oracle.queries };
      figure('oracle share with a correct choice', oracle.shareCorrect, extra);
      figure('oracle share with a choice of accuracy 1', oracle.shareFull, extra);
    }
    figure('label mean accuracy', seed.labelAccuracy.cosine, { labels: 'cosine', seed: seed.seed });
    figure('label mean accuracy', seed.labelAccuracy.beam, { labels: 'beam', seed: seed.seed });
    figure('wall time s', seed.wallMs / 1000, { seed: seed.seed });
  });
  figure('wall time s', result.wallMs / 1000, { seeds: result.seeds.map((s) => s.seed) });
  return `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`;
}

/** The table as Markdown, with the oracle's shares, the labels' accuracy and the wall time under it. */
export function formatIcdTable(result: IcdTableResult): string {
  const { options, seeds } = result;
  const seedList = seeds.map((s) => s.seed).join(' / ');
  const lines = [
    `ICD selection on the embedded demo: ${options.queries} queries (${seeds[0]?.heldOutQueries ?? 0} held out), ${options.shots} shots from K = ${options.poolSize}; seeds ${seedList}${seeds.length > 1 ? ' (cells: mean, then each seed)' : ''}`,
    '',
    '| selection | held-out mean accuracy | training queries | frozen-model calls per query to choose |',
    '| --- | --- | --- | --- |',
    ...result.rows.map(
      (row) =>
        `| ${row.selection} | ${cell(row.heldOut)} | ${row.train ? cell(row.train) : '-'} | ${cell(row.callsPerQuery, 0)} |`,
    ),
    '',
    `oracle@${options.poolSize} (docs/method.md#oracle-at-k): for each query, the best accuracy the frozen model gives over every ordered choice of ${options.shots} distinct candidates of its pool (${choicesCount(options.poolSize, options.shots)} choices; the enumeration stops at the first of accuracy 1, so its calls are fewer), averaged over the queries: the ceiling of any selection from these pools. The training column's "before" is over the pools before injection, every other training figure over the pools after it.`,
    `beam search: the top sequence of a beam search over the query's pool scored by the frozen model (docs/method.md#beam-search); it reads the query's answers, so it is a ceiling for a searcher that may query the model, not a selector.`,
    `oracle@${options.poolSize}, the training queries before -> after injection (held-out pools are never injected): share with a correct choice ${cell(seeds.map((s) => s.oracle.before.shareCorrect))} -> ${cell(seeds.map((s) => s.oracle.after.shareCorrect))}, with a choice of accuracy 1 ${cell(seeds.map((s) => s.oracle.before.shareFull))} -> ${cell(seeds.map((s) => s.oracle.after.shareFull))}; held-out: ${cell(seeds.map((s) => s.oracle.heldOut.shareCorrect))} and ${cell(seeds.map((s) => s.oracle.heldOut.shareFull))}`,
    `warm-up labels' mean accuracy on the training queries: cosine top-${options.shots} ${cell(seeds.map((s) => s.labelAccuracy.cosine))}, beam ${cell(seeds.map((s) => s.labelAccuracy.beam))}`,
    `wall time ${(result.wallMs / 1000).toFixed(1)} s (${seeds.map((s) => `seed ${s.seed} ${(s.wallMs / 1000).toFixed(1)} s`).join(', ')})`,
  ];
  return `${lines.join('\n')}\n`;
}
