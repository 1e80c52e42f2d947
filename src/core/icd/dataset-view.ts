import { DatasetValidationError, InvalidArgumentError } from '../errors';
import { queryEmbeddingProblem } from './check';
import type { EmbeddingTable } from './embeddings';
import { validateIcdRecords } from './index-maps';
import { gatherPoolEmbeddings } from './normalise';
import { DEFAULT_ICD_SETTINGS, type IcdGenMethod, type IcdQueryRecord } from './types';

/** One query as the selector's training loop sees it. */
export interface IcdDatasetItem {
  queryId: number;
  /** d numbers. */
  queryEmbedding: Float32Array;
  /** K x d, row-major: the pool's embeddings gathered by global index. */
  candidateEmbeddings: Float32Array;
  poolIndices: readonly number[];
  /**
   * The labels for the cross-entropy warm-up, in local indices: the distinct pointers of the
   * `labelMethods` trajectories (`beam`), in their order. A copy (the quota fills M with copies of
   * acc-0 trajectories) is not another label, and would weigh that one more in the warm-up.
   */
  beamLabels: number[][];
}

/**
 * The selector's training data: each query's pool as K x d embeddings by global index, with its
 * labels.
 */
export interface IcdDatasetView {
  readonly size: number;
  readonly poolSize: number;
  readonly dimensions: number;
  /** The query at `index` (0 <= index < size) with its pool's embeddings. */
  item(index: number): IcdDatasetItem;
}

function distinctPointers(trajectories: readonly { pointer: number[] }[]): number[][] {
  const seen = new Set<string>();
  const out: number[][] = [];
  for (const t of trajectories) {
    const key = t.pointer.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push([...t.pointer]);
  }
  return out;
}

/**
 * The RL data over the embedding table (the seed's RLBeamDatasetWithEmbedding, on the full pool):
 * every pool is checked to hold exactly K candidates and every pointer to be in range when the
 * view is made, then item i gathers the K x d candidate embeddings by global index.
 */
export function createIcdDatasetView(
  records: readonly IcdQueryRecord[],
  options: {
    table: EmbeddingTable;
    queryEmbedding: (queryId: number) => ArrayLike<number>;
    poolSize?: number;
    /** Shots per prompt: every pointer's length (default 2). */
    shots?: number;
    labelMethods?: readonly IcdGenMethod[];
  },
): IcdDatasetView {
  const poolSize = options.poolSize ?? DEFAULT_ICD_SETTINGS.poolSize;
  validateIcdRecords(records, {
    poolSize,
    embeddingCount: options.table.rows,
    ...(options.shots !== undefined && { shots: options.shots }),
  });
  const methods = new Set(options.labelMethods ?? ['beam']);
  return {
    size: records.length,
    poolSize,
    dimensions: options.table.dimensions,
    item(index) {
      const record = records[index];
      if (!record)
        throw new InvalidArgumentError({
          argument: 'index',
          message: `item ${index} is outside the dataset of ${records.length} queries`,
        });
      const query = options.queryEmbedding(record.query_id);
      const problem = queryEmbeddingProblem(query, options.table.dimensions, record.query_id);
      if (problem) throw new DatasetValidationError({ row: index, field: 'query_id', message: problem });
      return {
        queryId: record.query_id,
        queryEmbedding: Float32Array.from(query),
        candidateEmbeddings: gatherPoolEmbeddings(options.table, record.candidate_pool_indices),
        poolIndices: record.candidate_pool_indices,
        beamLabels: distinctPointers(record.pointer_candidates.filter((t) => methods.has(t.gen_method))),
      };
    },
  };
}
