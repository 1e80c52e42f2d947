import { appendFile, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DatasetValidationError, InvalidArgumentError, ProviderCallError } from '../../../core/errors';
import {
  checkBlobKey,
  checkRunId,
  checkStoreQuery,
  checkStoreRecords,
  matchesQuery,
} from '../../../core/store/records';
import { readJsonlRows } from '../../../core/text-data';
import { redactStoreRecord } from '../../../core/secrets';
import { encodeSpecialNumbers, reviveSpecialNumbers } from '../../../core/trajectory/serialize';
import type { Store, StoreQuery, StoreRecord } from '../../../ports/store';

/** Settings of `createJsonlStore`. */
export interface JsonlStoreSettings {
  /** Folder that holds one sub-folder per run. */
  dir: string;
}

/**
 * Append-only JSON Lines files: `{dir}/{runId}/{kind}.jsonl`, one record a line, and blobs under
 * `{dir}/{runId}/blobs/`. Appends are whole lines, so a crash can at worst leave a partial last
 * line: reads skip it, and the next append first cuts it off (it was never a complete record), so
 * it is never glued to a new one. A malformed line elsewhere is an error naming the file and row.
 * Numbers JSON cannot hold (NaN, ±Infinity, -0) are tagged and read back as numbers (see trajectoryToJSON).
 * No configured secret is written (src/core/secrets.ts): every string of a record is redacted.
 */
export function createJsonlStore(settings: JsonlStoreSettings): Store {
  if (typeof settings?.dir !== 'string' || settings.dir.length === 0)
    throw new InvalidArgumentError({ argument: 'dir', message: 'must be a folder path' });
  const root = resolve(settings.dir);
  const runDir = (runId: string) => join(root, runId);
  const file = (runId: string, kind: string) => join(runDir(runId), `${kind}.jsonl`);
  const pending = new Map<string, Promise<void>>();
  const repaired = new Set<string>();

  const fail = (message: string, cause: unknown) =>
    new ProviderCallError({ port: 'store', provider: 'jsonl', message, isRetryable: false, cause });

  return {
    specificationVersion: 'v1',
    provider: 'jsonl',
    async doAppend(records) {
      checkStoreRecords(records);
      const byFile = new Map<string, string[]>();
      for (const [i, record] of records.entries()) {
        const path = file(record.runId, record.kind);
        let line: string;
        try {
          line = JSON.stringify(redactStoreRecord(record), encodeSpecialNumbers);
        } catch (error) {
          throw new InvalidArgumentError({
            argument: `records[${i}].data`,
            message: `cannot be written as JSON: ${(error as Error).message}`,
            cause: error,
          });
        }
        const lines = byFile.get(path);
        if (lines) lines.push(line);
        else byFile.set(path, [line]);
      }
      await Promise.all(
        [...byFile].map(([path, lines]) => {
          // Appends to one file are serialised so concurrent callers never interleave partial lines.
          const previous = pending.get(path) ?? Promise.resolve();
          const next = previous
            .catch(() => undefined)
            .then(async () => {
              await mkdir(dirname(path), { recursive: true });
              if (!repaired.has(path)) {
                await dropTornTail(path);
                repaired.add(path);
              }
              try {
                await appendFile(path, `${lines.join('\n')}\n`, 'utf8');
              } catch (error) {
                // A failed append may have written part of a line: check the tail again next time.
                repaired.delete(path);
                throw error;
              }
            });
          pending.set(path, next);
          return next.catch((error) => {
            throw fail(`could not append to ${path}: ${(error as Error).message}`, error);
          });
        }),
      );
    },
    async doQuery(query: StoreQuery) {
      checkStoreQuery(query);
      if (query.limit === 0) return [];
      const path = file(query.runId, query.kind);
      await pending.get(path)?.catch(() => undefined);
      let bytes: Uint8Array;
      try {
        bytes = await readFile(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw fail(`could not read ${path}: ${(error as Error).message}`, error);
      }
      // What follows the last newline is a partial line left by a crash mid-append (it may end
      // inside a multi-byte character): not a record, and not decoded.
      const complete = bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
      const out: StoreRecord[] = [];
      for (const { line, value } of readJsonlRows(complete, path, { reviver: reviveSpecialNumbers })) {
        const record = value as unknown as StoreRecord;
        if (typeof record.kind !== 'string' || typeof record.runId !== 'string')
          throw new DatasetValidationError({
            row: line - 1,
            field: typeof record.kind !== 'string' ? 'kind' : 'runId',
            message: `${path} line ${line} is not a store record (no kind or runId)`,
          });
        if (matchesQuery(record, query)) out.push(record);
        if (query.limit !== undefined && out.length >= query.limit) break;
      }
      return out;
    },
    async doPutBlob(runId, key, bytes) {
      checkRunId(runId);
      checkBlobKey(key);
      const path = join(runDir(runId), 'blobs', key);
      try {
        await mkdir(dirname(path), { recursive: true });
        // Write then rename, so a reader never sees half a checkpoint.
        await writeFile(`${path}.tmp`, bytes);
        await rename(`${path}.tmp`, path);
      } catch (error) {
        throw fail(`could not write blob ${path}: ${(error as Error).message}`, error);
      }
    },
    async doDeleteBlobs(runId, keyPrefix) {
      checkRunId(runId);
      checkBlobKey(keyPrefix);
      const path = join(runDir(runId), 'blobs', keyPrefix);
      try {
        await rm(path, { recursive: true, force: true });
      } catch (error) {
        throw fail(`could not delete ${path}: ${(error as Error).message}`, error);
      }
    },
    blobLocation(runId, key) {
      checkRunId(runId);
      checkBlobKey(key);
      return join(runDir(runId), 'blobs', key);
    },
    async doGetBlob(runId, key) {
      checkRunId(runId);
      checkBlobKey(key);
      const path = join(runDir(runId), 'blobs', key);
      try {
        return new Uint8Array(await readFile(path));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw fail(`could not read blob ${path}: ${(error as Error).message}`, error);
      }
    },
  };
}

/** Cuts a partial last line (left by a crash mid-append) so the next record starts on its own line. */
async function dropTornTail(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'r+');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return;
    const chunk = Buffer.alloc(64 * 1024);
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const { bytesRead } = await handle.read(chunk, 0, end - start, start);
      const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline >= 0) {
        const keep = start + newline + 1;
        if (keep < size) await handle.truncate(keep);
        return;
      }
      end = start;
    }
    await handle.truncate(0);
  } finally {
    await handle.close();
  }
}
