import {
  checkBlobKey,
  checkRunId,
  checkStoreQuery,
  checkStoreRecords,
  matchesQuery,
} from '../../core/store/records';
import { redactStoreRecord } from '../../core/secrets';
import type { Store, StoreQuery, StoreRecord } from '../../ports/store';

export interface MemoryStore extends Store {
  readonly records: readonly StoreRecord[];
}

/** Keeps everything in memory; records are deep-copied in and out (configured secrets redacted), as a real store would serialise them. */
export function createMemoryStore(): MemoryStore {
  const records: StoreRecord[] = [];
  const blobs = new Map<string, Uint8Array>();
  return {
    specificationVersion: 'v1',
    provider: 'memory',
    records,
    async doAppend(batch) {
      checkStoreRecords(batch);
      for (const record of batch) records.push(structuredClone(redactStoreRecord(record)));
    },
    async doQuery(query: StoreQuery) {
      checkStoreQuery(query);
      return records
        .filter((r) => matchesQuery(r, query))
        .slice(0, query.limit ?? Number.POSITIVE_INFINITY)
        .map((r) => structuredClone(r));
    },
    async doPutBlob(runId, key, bytes) {
      checkRunId(runId);
      checkBlobKey(key);
      blobs.set(`${runId}/${key}`, new Uint8Array(bytes));
    },
    async doDeleteBlobs(runId, keyPrefix) {
      checkRunId(runId);
      checkBlobKey(keyPrefix);
      const at = `${runId}/${keyPrefix}`;
      for (const key of [...blobs.keys()]) if (key === at || key.startsWith(`${at}/`)) blobs.delete(key);
    },
    async doGetBlob(runId, key) {
      checkRunId(runId);
      checkBlobKey(key);
      const bytes = blobs.get(`${runId}/${key}`);
      return bytes ? new Uint8Array(bytes) : undefined;
    },
  };
}
