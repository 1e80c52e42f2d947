import { withReliability } from '../../core/calls/with-reliability';
import { beamSearchDemonstrations } from '../../core/icd/beam-search';
import { CandidatePoolInjector } from '../../core/icd/injector';
import { poolOracle, storedOracleAtK, summariseOracle, type OracleSummary } from '../../core/icd/oracle';
import { TrajectoryQualityController } from '../../core/icd/controller';
import {
  createEmbeddingTable,
  embeddingRow,
  similarities,
  topK,
  type EmbeddingTable,
} from '../../core/icd/embeddings';
import { pointerToGlobal } from '../../core/icd/index-maps';
import { GlobalPositiveMiner, type MinedPositive } from '../../core/icd/miner';
import { normaliseIcdPools } from '../../core/icd/normalise';
import { createIcdScoreCall, type IcdScoreCall } from '../../core/icd/scoring';
import { isVqaCorrect } from '../../core/icd/vqa-accuracy';
import {
  DEFAULT_ICD_SETTINGS,
  type IcdGenMethod,
  type IcdQueryRecord,
  type IcdTrajectory,
} from '../../core/icd/types';
import { createRandom, permutation, RANDOM_STREAMS, type Random } from '../../core/random';
import { createHashedEmbedder } from '../../adapters/icd/hashed-embedder';
import {
  createIcdDemo,
  createOfflineIcdScorer,
  demonstrationText,
  type IcdDemo,
} from '../../adapters/icd/demo';
import type { Embedder } from '../../ports/embedder';

/** The embedded ICD demo's data: seed, queries, pool size, shots, held-out share and beam width. */
export interface IcdDataOptions {
  seed: number;
  queries: number;
  poolSize: number;
  /** Share of the queries held out for evaluation (never mined, injected or trained on). */
  heldOutShare: number;
  /** Demonstrations per prompt (a pointer's length). */
  shots: number;
  /** The beam search that makes the `beam` trajectories (Lever-LM's data generation): sequences kept per shot. */
  beamWidth: number;
  /** Where progress lines go. */
  log: (line: string) => void;
  /** Error rule 4's warnings (injection did not raise a query's oracle); default: `log`, prefixed `warning: `. */
  warn?: (line: string) => void;
}

/** The demo data's defaults (seed 7, 360 queries, K and shots from `DEFAULT_ICD_SETTINGS`). */
export const DEFAULT_ICD_DATA_OPTIONS: Omit<IcdDataOptions, 'log'> = {
  seed: 7,
  queries: 360,
  poolSize: DEFAULT_ICD_SETTINGS.poolSize,
  heldOutShare: 0.3,
  shots: DEFAULT_ICD_SETTINGS.shots,
  beamWidth: DEFAULT_ICD_SETTINGS.beamWidth,
};

/**
 * The demo's data at each stage: raw, normalised, injected and final records, embeddings, positives
 * and the split.
 */
export interface IcdDemoData {
  demo: IcdDemo;
  table: EmbeddingTable;
  queryTable: EmbeddingTable;
  score: IcdScoreCall;
  raw: IcdQueryRecord[];
  normalised: IcdQueryRecord[];
  positives: Map<number, MinedPositive[]>;
  injected: IcdQueryRecord[];
  final: IcdQueryRecord[];
  trainIds: number[];
  heldOutIds: number[];
  figures: {
    /**
     * oracle@K over every ordered choice of each pool (`poolOracle`, docs/method.md#oracle-at-k):
     * the training queries before and after injection, and the held-out queries (never injected).
     */
    oracle: { before: OracleSummary; after: OracleSummary; heldOut: OracleSummary; scoredCalls: number };
    /** The share of training queries with a correct stored trajectory (`storedOracleAtK`), before and after injection. */
    storedOracle: { before: number; after: number };
    /** Frozen-model calls of the beam searches that made the raw data's `beam` trajectories. */
    beamSearchCalls: number;
    injectedCandidates: number;
    transferred: number;
    evaluatedPairs: number;
    warnings: number;
    /** Copies in the final data (queries with fewer distinct trajectories than the target), and the queries that have them. */
    repeatedTrajectories: number;
    queriesWithRepeats: number;
  };
}

async function embedAll(embedder: Embedder, texts: readonly string[]): Promise<EmbeddingTable> {
  const reliable = withReliability(embedder, 'embedder');
  const vectors: number[][] = [];
  for (let i = 0; i < texts.length; i += 256)
    vectors.push(
      ...(await reliable.doEmbed(texts.slice(i, i + 256).map((text) => ({ kind: 'text' as const, text })))),
    );
  return createEmbeddingTable(vectors);
}

/** The pool's local indices ordered by cosine similarity to the query (its first `shots`: cosine top-k). */
export function bySimilarity(
  table: EmbeddingTable,
  query: ArrayLike<number>,
  pool: readonly number[],
): number[] {
  const all = similarities(table, query);
  return pool
    .map((g, local) => ({ local, s: all[g]! }))
    .sort((a, b) => b.s - a.s || a.local - b.local)
    .map((x) => x.local);
}

/**
 * The raw RL data of the demo, as the seed's pipeline had it before normalisation: pools of
 * varying size (K not fixed) and trajectories from a beam search scored by the frozen model
 * (Lever-LM's data generation, width `beamWidth`: its top sequence), sampling among the 8
 * candidates most similar to the query, and random choice, each scored by the frozen model and
 * kept by commit-on-improve.
 */
async function rawRecords(
  data: Pick<IcdDemoData, 'demo' | 'table' | 'queryTable' | 'score'>,
  options: IcdDataOptions,
  random: Random,
  controller: TrajectoryQualityController,
): Promise<{ records: IcdQueryRecord[]; beamSearchCalls: number }> {
  const { demo, table, queryTable, score } = data;
  const { shots, beamWidth } = options;
  const demonstration = (g: number) => demo.demonstrations[g]!;
  const records: IcdQueryRecord[] = [];
  let beamSearchCalls = 0;
  const distinct = (draw: () => number) => {
    const picked: number[] = [];
    while (picked.length < shots) {
      const p = draw();
      if (!picked.includes(p)) picked.push(p);
    }
    return picked;
  };
  for (const query of demo.queries) {
    const size = Math.max(shots + 8, options.poolSize - 24 + random.nextInt(48));
    const q = embeddingRow(queryTable, query.id);
    const near = topK(similarities(table, q), Math.round(size * 0.6));
    const others = permutation(table.rows, random)
      .filter((g) => !near.includes(g))
      .slice(0, size - near.length);
    const pool = [...near, ...others];
    const ranked = bySimilarity(table, q, pool);
    const search = await beamSearchDemonstrations(query, pool, { demonstration, score, beamWidth, shots });
    beamSearchCalls += search.scoredCalls;
    const best = search.beams[0]!;
    // The top beam is always kept: it is the warm-up's label. The other beams are not stored:
    // the beam labels would otherwise hold the lower sequences commit-on-improve keeps for
    // their new accuracy values (0.6, 0), which are poor labels for a cross-entropy warm-up.
    const top: IcdTrajectory = {
      pointer: best.pointer,
      vqa_correct: isVqaCorrect(best.accuracy),
      vqa_acc_score: best.accuracy,
      gen_method: 'beam',
    };
    const tries: Array<{ pointer: number[]; method: IcdGenMethod }> = [];
    for (let i = 0; i < 3; i++)
      tries.push({ pointer: distinct(() => ranked[random.nextInt(8)]!), method: 'sample' });
    for (let i = 0; i < 3; i++)
      tries.push({ pointer: permutation(pool.length, random).slice(0, shots), method: 'random' });
    const scored: IcdTrajectory[] = [];
    for (const t of tries) {
      const result = await score(query, pointerToGlobal(t.pointer, pool).map(demonstration));
      scored.push({
        pointer: t.pointer,
        vqa_correct: isVqaCorrect(result.accuracy),
        vqa_acc_score: result.accuracy,
        gen_method: t.method,
      });
    }
    records.push({
      query_id: query.id,
      candidate_pool_indices: pool,
      pointer_candidates: [top, ...controller.commitOnImprove(scored, [top])],
    });
  }
  return { records, beamSearchCalls };
}

/** The whole data side of the demo: raw data, normalisation to K, mining, injection, quality control. */
export async function buildIcdDemoData(
  options: IcdDataOptions,
  until: 'normalise' | 'mine' | 'inject' | 'control' = 'control',
): Promise<IcdDemoData> {
  const random = createRandom(options.seed, RANDOM_STREAMS.icdData);
  const demo = createIcdDemo({ seed: options.seed, queries: options.queries });
  const embedder = createHashedEmbedder({ dimensions: 128, seed: options.seed });
  const table = await embedAll(embedder, demo.demonstrations.map(demonstrationText));
  const queryTable = await embedAll(
    embedder,
    demo.queries.map((q) => q.question),
  );
  const scoreCall = createIcdScoreCall(createOfflineIcdScorer());
  const controller = new TrajectoryQualityController();
  const base = { demo, table, queryTable, score: scoreCall };
  const { records: raw, beamSearchCalls } = await rawRecords(base, options, random, controller);
  const queryEmbedding = (id: number) => embeddingRow(queryTable, id);
  const { records: normalised, changes } = normaliseIcdPools(raw, {
    poolSize: options.poolSize,
    table,
    queryEmbedding,
    shots: options.shots,
  });
  const beamAccuracy = raw.reduce((a, r) => a + r.pointer_candidates[0]!.vqa_acc_score, 0) / raw.length;
  options.log(
    `raw data: beam search (width ${options.beamWidth}, ${options.shots} shots) scored by the frozen model, ${beamSearchCalls} calls (${(beamSearchCalls / raw.length).toFixed(0)} per query); top beam's mean accuracy ${beamAccuracy.toFixed(3)}`,
  );
  options.log(
    `normalise: ${raw.length} queries, raw pool sizes ${Math.min(...raw.map((r) => r.candidate_pool_indices.length))}..${Math.max(...raw.map((r) => r.candidate_pool_indices.length))} -> ${options.poolSize} (${changes.reduce((n, c) => n + c.added, 0)} candidates added, ${changes.reduce((n, c) => n + c.dropped, 0)} dropped)`,
  );
  const order = permutation(demo.queries.length, createRandom(options.seed, RANDOM_STREAMS.icdData, 1));
  const heldOutCount = Math.round(demo.queries.length * options.heldOutShare);
  const heldOutIds = order.slice(0, heldOutCount).sort((a, b) => a - b);
  const trainIds = order.slice(heldOutCount).sort((a, b) => a - b);
  const data: IcdDemoData = {
    ...base,
    raw,
    normalised,
    positives: new Map(),
    injected: normalised,
    final: normalised,
    trainIds,
    heldOutIds,
    figures: {
      oracle: {
        before: summariseOracle([]),
        after: summariseOracle([]),
        heldOut: summariseOracle([]),
        scoredCalls: 0,
      },
      storedOracle: { before: storedOracleAtK(trainIds.map((i) => normalised[i]!)), after: 0 },
      beamSearchCalls,
      injectedCandidates: 0,
      transferred: 0,
      evaluatedPairs: 0,
      warnings: 0,
      repeatedTrajectories: 0,
      queriesWithRepeats: 0,
    },
  };
  if (until === 'normalise') return data;

  const miner = new GlobalPositiveMiner({
    table,
    demonstration: (g) => demo.demonstrations[g]!,
    score: scoreCall,
    searchTopK: DEFAULT_ICD_SETTINGS.searchTopK,
    maxEvalPairs: DEFAULT_ICD_SETTINGS.maxEvalPairs,
    shots: options.shots,
  });
  for (const id of trainIds)
    data.positives.set(
      id,
      await miner.minePositivesForQuery(
        demo.queries[id]!,
        queryEmbedding(id),
        normalised[id]!.candidate_pool_indices,
        random,
      ),
    );
  data.figures.evaluatedPairs = miner.evaluatedPairs;
  options.log(
    `mine: ${miner.evaluatedPairs} pairs scored, ${[...data.positives.values()].filter((p) => p.length > 0).length}/${trainIds.length} training queries with positives`,
  );
  if (until === 'mine') return data;

  const warn = options.warn ?? ((line: string) => options.log(`warning: ${line}`));
  const injector = new CandidatePoolInjector({
    table,
    warn: (line) => {
      data.figures.warnings++;
      warn(line);
    },
  });
  data.injected = normalised.map((record) => {
    const positives = data.positives.get(record.query_id);
    if (!positives) return record;
    const result = injector.injectPositives(record, positives, queryEmbedding(record.query_id));
    data.figures.injectedCandidates += result.replaced.length;
    data.figures.transferred += result.transferred;
    return result.record;
  });
  data.figures.storedOracle.after = storedOracleAtK(trainIds.map((i) => data.injected[i]!));
  const oracleOf = async (records: readonly IcdQueryRecord[]) => {
    const bests: number[] = [];
    for (const record of records) {
      const oracle = await poolOracle(demo.queries[record.query_id]!, record.candidate_pool_indices, {
        demonstration: (g) => demo.demonstrations[g]!,
        score: scoreCall,
        shots: options.shots,
      });
      data.figures.oracle.scoredCalls += oracle.scoredCalls;
      bests.push(oracle.best);
    }
    return summariseOracle(bests);
  };
  data.figures.oracle.before = await oracleOf(trainIds.map((i) => normalised[i]!));
  data.figures.oracle.after = await oracleOf(trainIds.map((i) => data.injected[i]!));
  data.figures.oracle.heldOut = await oracleOf(heldOutIds.map((i) => data.injected[i]!));
  const { before, after } = data.figures.oracle;
  options.log(
    `inject: ${data.figures.injectedCandidates} candidates replaced, ${data.figures.transferred} positive trajectories transferred (${data.figures.warnings} queries whose best stored trajectory did not rise: warned)`,
  );
  options.log(
    `oracle@${options.poolSize} over every ordered choice of ${options.shots} (training queries, before -> after injection): mean best ${before.meanBest.toFixed(3)} -> ${after.meanBest.toFixed(3)}, share with a correct choice ${before.shareCorrect.toFixed(3)} -> ${after.shareCorrect.toFixed(3)}, with a choice of accuracy 1 ${before.shareFull.toFixed(3)} -> ${after.shareFull.toFixed(3)} (${data.figures.oracle.scoredCalls} calls); stored trajectories only: share correct ${data.figures.storedOracle.before.toFixed(3)} -> ${data.figures.storedOracle.after.toFixed(3)}`,
  );
  if (until === 'inject') return data;

  data.final = data.injected.map((record) => {
    const generated = record.pointer_candidates.filter((t) => t.gen_method !== 'global_positive_transfer');
    const transferred = record.pointer_candidates.filter((t) => t.gen_method === 'global_positive_transfer');
    const committed = [...generated, ...controller.commitOnImprove(transferred, generated)];
    const final = controller.selectFinal(committed);
    data.figures.repeatedTrajectories += final.repeated;
    if (final.repeated > 0) data.figures.queriesWithRepeats++;
    return { ...record, pointer_candidates: final.trajectories };
  });
  const m = controller.settings.targetTrajectoryCount;
  options.log(
    `control: ${data.final.length} queries x ${m} trajectories; ${data.figures.queriesWithRepeats} with fewer than ${m} distinct, filled by ${data.figures.repeatedTrajectories} repeats`,
  );
  return data;
}
