import { readdir } from 'node:fs/promises';

import { STORE_RECORD_KINDS } from '../../../core/store/records';
import type { Store } from '../../../ports/store';
import { createJsonlStore } from '../jsonl/index';

/**
 * Copies the JSONL logs of a folder (`{dir}/{runId}/{kind}.jsonl`, as the JSONL store and the CLI's
 * run folders write them) into another store, run by run, in append order; checkpoint blobs stay
 * where they are. Returns the records copied per run.
 */
export async function importJsonlRuns(
  dir: string,
  target: Store,
  options: { runIds?: readonly string[]; batchSize?: number } = {},
): Promise<Record<string, number>> {
  const source = createJsonlStore({ dir });
  const runIds =
    options.runIds ??
    (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  const copied: Record<string, number> = {};
  for (const runId of runIds) {
    let count = 0;
    for (const kind of STORE_RECORD_KINDS) {
      const records = await source.doQuery({ kind, runId });
      const size = options.batchSize ?? 500;
      for (let i = 0; i < records.length; i += size) await target.doAppend(records.slice(i, i + size));
      count += records.length;
    }
    if (count > 0) copied[runId] = count;
  }
  return copied;
}
