import type { CallOptions, SetupCheck } from './common';

/**
 * What a stored record holds: a trajectory, a reward, a step's metrics, a lifecycle event or a checkpoint's
 * metadata.
 */
export type StoreRecordKind = 'trajectory' | 'reward' | 'metric' | 'event' | 'checkpoint';

/** One stored record. Every record carries its run and step; per-sample records their ids. */
export interface StoreRecord {
  kind: StoreRecordKind;
  runId: string;
  step: number;
  promptUid?: string;
  sampleId?: string;
  rolloutIndex?: number;
  /** Milliseconds since the epoch. */
  time: number;
  /** JSON-serialisable payload. */
  data: unknown;
}

/** Which records to read: one kind of one run, optionally narrowed to a step, a prompt or a sample. */
export interface StoreQuery {
  kind: StoreRecordKind;
  runId: string;
  step?: number;
  promptUid?: string;
  sampleId?: string;
  limit?: number;
}

/** Append-only storage of trajectories, rewards, metrics, events and checkpoint blobs. */
export interface Store extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /** Appends records, in order. */
  doAppend(records: readonly StoreRecord[], options?: CallOptions): Promise<void>;
  /** Records in append order. */
  doQuery(query: StoreQuery, options?: CallOptions): Promise<StoreRecord[]>;
  /** Writes (or replaces) the bytes of blob `key` of run `runId` (checkpoint files). */
  doPutBlob(runId: string, key: string, bytes: Uint8Array, options?: CallOptions): Promise<void>;
  /** `undefined` when there is no such blob. */
  doGetBlob(runId: string, key: string, options?: CallOptions): Promise<Uint8Array | undefined>;
  /**
   * Deletes every blob whose key is `keyPrefix` or starts with `keyPrefix/` (a checkpoint's
   * folder), if any. Optional: without it, checkpoint retention keeps every checkpoint.
   */
  doDeleteBlobs?(runId: string, keyPrefix: string, options?: CallOptions): Promise<void>;
  /** Where a blob is kept (a file path, a database and key), for errors about its content to name. */
  blobLocation?(runId: string, key: string): string;
  /** Releases what the store holds open (a database, file handles). */
  close?(): Promise<void>;
}
