import type { Store } from '../ports/store';

/** Step metrics a checkpoint can be judged by (higher is better). */
export const CHECKPOINT_METRICS = ['rewardMean', 'successRate', 'ndcgMean'] as const;
export type CheckpointMetric = (typeof CHECKPOINT_METRICS)[number];

export interface RetentionSettings {
  /** Keep this many of the latest checkpoints (`null`: every checkpoint). */
  keepLast: number | null;
  /** Also keep the checkpoint best by this metric (`null`: none). */
  keepBestBy: CheckpointMetric | null;
}

/** A checkpoint retention kept, and why (the latest, the best). */
export interface KeptCheckpoint {
  key: string;
  step: number;
  /** Bytes of its files (blobs and state.json). */
  bytes: number;
  why: Array<'latest' | 'best'>;
  /** Its score by `keepBestBy`, where known. */
  score?: number;
}

/** What checkpoint retention kept and removed, and the bytes kept. */
export interface Retention {
  kept: KeptCheckpoint[];
  /** Checkpoints deleted by this call. */
  removed: string[];
  /** Bytes of the kept checkpoints. */
  bytes: number;
}

/**
 * Keeps a store run's last `keepLast` checkpoints and its best by `keepBestBy`, deleting the others'
 * files (their `checkpoint` records stay: the log of what was written). A checkpoint is scored by
 * the metrics of the step after it, the rollouts its weights produced (a checkpoint at step s holds
 * the weights after update s; step s + 1 samples from them); the newest has no score yet and is
 * kept as the latest. Ties go to the later checkpoint. Deleting a folder again is harmless, so a
 * crash mid-way is finished by the next call; the latest checkpoint is never deleted.
 */
export async function applyRetention(
  store: Store,
  runId: string,
  settings: RetentionSettings,
  signal?: AbortSignal,
): Promise<Retention> {
  const records = await store.doQuery({ kind: 'checkpoint', runId });
  // The latest record of each key, in the order of those records.
  const latest = new Map<string, { step: number; bytes: number }>();
  for (const r of records) {
    const data = r.data as { key?: unknown; bytes?: unknown } | null;
    if (typeof data?.key !== 'string') continue;
    latest.delete(data.key);
    latest.set(data.key, { step: r.step, bytes: typeof data.bytes === 'number' ? data.bytes : 0 });
  }
  const all = [...latest].map(([key, v]) => ({ key, ...v }));
  const keep = new Map<string, KeptCheckpoint>();
  const mark = (c: (typeof all)[number], why: 'latest' | 'best', score?: number) => {
    const kept = keep.get(c.key) ?? { key: c.key, step: c.step, bytes: c.bytes, why: [] };
    kept.why.push(why);
    if (score !== undefined) kept.score = score;
    keep.set(c.key, kept);
  };
  for (const c of settings.keepLast === null ? all : all.slice(-settings.keepLast)) mark(c, 'latest');
  if (settings.keepBestBy) {
    const scores = await stepScores(store, runId, settings.keepBestBy);
    let best: { c: (typeof all)[number]; score: number } | null = null;
    for (const c of all) {
      const score = scores.get(c.step + 1);
      if (score !== undefined && (best === null || score >= best.score)) best = { c, score };
    }
    if (best) mark(best.c, 'best', best.score);
  }
  const removed: string[] = [];
  if (store.doDeleteBlobs) {
    for (const c of all) {
      if (keep.has(c.key)) continue;
      await store.doDeleteBlobs(runId, c.key, signal ? { signal } : {});
      removed.push(c.key);
    }
  } else {
    // A store that cannot delete keeps everything: say so by keeping them all.
    for (const c of all) if (!keep.has(c.key)) mark(c, 'latest');
  }
  const kept = [...keep.values()].sort((a, b) => a.step - b.step);
  return { kept, removed, bytes: kept.reduce((n, c) => n + c.bytes, 0) };
}

/** The metric of each step's latest record (a resumed run's steps run again; the last record is current). */
async function stepScores(
  store: Store,
  runId: string,
  metric: CheckpointMetric,
): Promise<Map<number, number>> {
  const scores = new Map<number, number>();
  for (const r of await store.doQuery({ kind: 'metric', runId })) {
    const value = (r.data as Record<string, unknown> | null)?.[metric];
    if (typeof value === 'number' && Number.isFinite(value)) scores.set(r.step, value);
    else scores.delete(r.step);
  }
  return scores;
}

/** `phase1 checkpoints: kept step-00000040 (latest), step-00000012 (best rewardMean 0.812): 2.4 MB; removed 3`. */
export function describeRetention(
  runId: string,
  retention: Retention,
  metric: CheckpointMetric | null,
): string {
  const name = (key: string) => key.split('/').pop() ?? key;
  const kept = retention.kept
    .map(
      (c) =>
        `${name(c.key)} (${c.why.map((w) => (w === 'best' ? `best ${metric} ${c.score?.toFixed(3)}` : w)).join(', ')})`,
    )
    .join(', ');
  return `${runId} checkpoints: kept ${kept}: ${megabytes(retention.bytes)}${retention.removed.length > 0 ? `; removed ${retention.removed.length}` : ''}`;
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
