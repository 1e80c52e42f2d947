import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../src/adapters/mock/memory-store';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { importJsonlRuns } from '../src/adapters/store/sqlite/import-jsonl';
import { DatasetValidationError, SearcherError } from '../src/core/errors';
import { parseIcdText } from '../src/core/icd/parse';
import { parseIcdVectorsText } from '../src/core/icd/vectors-text';
import { readConfigFile } from '../src/run/config-file';
import { readPromptDataset } from '../src/run/dataset';
import { buildServedEnvironment } from '../src/server/served-environment';

// Every reader of JSONL data files gets the same hostile files: rows that are not objects, Latin-1
// bytes, a byte-order mark, CRLF line ends, blank lines. Not UTF-8 and not an object are typed
// errors naming the file and the line; a BOM, CRLF and blank lines are accepted.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-data-files-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Reader {
  name: string;
  /** A valid row (the i-th), as one JSON line. */
  row(i: number): string;
  /** Writes the file's bytes where the reader looks and reads them; resolves to the rows' ids. */
  read(bytes: Uint8Array, name: string): Promise<{ ids: string[]; path: string }>;
}

const encoder = new TextEncoder();
let files = 0;
const place = async (bytes: Uint8Array, name: string) => {
  const folder = join(dir, `case-${files++}`);
  await mkdir(folder, { recursive: true });
  const path = join(folder, name);
  await writeFile(path, bytes);
  return { folder, path };
};

/** A store folder holding `run/metric.jsonl`. */
const placeRun = async (bytes: Uint8Array) => {
  const folder = join(dir, `case-${files++}`);
  await mkdir(join(folder, 'run'), { recursive: true });
  const path = join(folder, 'run', 'metric.jsonl');
  await writeFile(path, bytes);
  return { folder, path };
};

const storeRecord = (i: number) =>
  JSON.stringify({ kind: 'metric', runId: 'run', step: i, time: 0, data: { id: `r${i}` } });

const readers: Reader[] = [
  {
    name: 'prompt dataset (readPromptDataset)',
    row: (i) => JSON.stringify({ uid: `r${i}`, question: `question ${i}?`, reference: 'Café' }),
    async read(bytes, name) {
      const { path } = await place(bytes, `${name}.jsonl`);
      return { ids: (await readPromptDataset(path)).map((p) => p.uid), path };
    },
  },
  {
    name: 'serve-env --tasks (buildServedEnvironment)',
    row: (i) => JSON.stringify({ uid: `r${i}`, question: `question ${i}?`, reference: 'Café' }),
    async read(bytes, name) {
      const { path } = await place(bytes, `${name}.jsonl`);
      const { served, close } = await buildServedEnvironment({ tasksFile: path });
      await close();
      return { ids: served.tasks.map((t) => t.uid), path };
    },
  },
  {
    name: 'store log (createJsonlStore.doQuery)',
    row: storeRecord,
    async read(bytes) {
      const { folder, path } = await placeRun(bytes);
      const records = await createJsonlStore({ dir: folder }).doQuery({ kind: 'metric', runId: 'run' });
      return { ids: records.map((r) => (r.data as { id: string }).id), path };
    },
  },
  {
    name: 'curate import (importJsonlRuns)',
    row: storeRecord,
    async read(bytes) {
      const { folder, path } = await placeRun(bytes);
      const target = createMemoryStore();
      await importJsonlRuns(folder, target);
      return { ids: target.records.map((r) => (r.data as { id: string }).id), path };
    },
  },
  {
    name: 'ICD records (parseIcdText)',
    row: (i) =>
      JSON.stringify({
        query_id: i,
        candidate_pool_indices: [10, 11, 12],
        pointer_candidates: [{ pointer: [0, 1], vqa_acc_score: 1, gen_method: 'beam' }],
      }),
    async read(bytes) {
      return {
        ids: parseIcdText(bytes, 'jsonl', { source: 'records.jsonl' }).map((r) => `r${r.query_id}`),
        path: 'records.jsonl',
      };
    },
  },
];

const lines = (rows: string[], end = '\n') => encoder.encode(rows.join(end) + end);
const latin1 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));

describe.each(readers)('$name', (reader) => {
  const refused = async (bytes: Uint8Array, name: string, line: number, what: RegExp) => {
    const error = await reader.read(bytes, name).then(
      () => null,
      (e: unknown) => e,
    );
    expect(SearcherError.isInstance(error), String(error)).toBe(true);
    expect(DatasetValidationError.isInstance(error), String(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(new RegExp(`line ${line}\\b`));
    expect(message).toMatch(what);
    expect(message).toMatch(/\.jsonl/);
    expect((error as DatasetValidationError).row).toBe(line - 1);
  };

  it('refuses a null row, naming the file and the line', async () => {
    await refused(lines([reader.row(1), 'null', reader.row(3)]), 'null-row', 2, /null, not a JSON object/);
  });

  it('refuses rows that are arrays, numbers or strings, naming the line', async () => {
    await refused(
      lines([reader.row(1), `[${reader.row(2)}]`]),
      'array-row',
      2,
      /an array, not a JSON object/,
    );
    await refused(
      lines([reader.row(1), reader.row(2), '42']),
      'number-row',
      3,
      /a number, not a JSON object/,
    );
    await refused(lines(['"question"', reader.row(2)]), 'string-row', 1, /a string, not a JSON object/);
  });

  it('refuses Latin-1 text, naming the line of the first byte that is not UTF-8', async () => {
    // Lines 1-2 are UTF-8 (with non-ASCII letters), line 3 holds 'café' in Latin-1.
    const row3 = reader.row(3).replace(/}$/, ', "note": "caf\u00e9"}');
    const bytes = Uint8Array.from([...lines([reader.row(1), reader.row(2)]), ...latin1(`${row3}\n`)]);
    await refused(bytes, 'latin1', 3, /not UTF-8 \(byte 0xE9/);
  });

  it('accepts a UTF-8 byte-order mark, CRLF line ends and blank lines', async () => {
    const rows = [reader.row(1), reader.row(2)];
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...lines(rows)]);
    expect((await reader.read(bom, 'bom')).ids).toEqual(['r1', 'r2']);
    expect((await reader.read(lines(rows, '\r\n'), 'crlf')).ids).toEqual(['r1', 'r2']);
    const blank = lines([reader.row(1), '', '   ', reader.row(2), '']);
    expect((await reader.read(blank, 'blank')).ids).toEqual(['r1', 'r2']);
  });
});

describe('config files (readConfigFile)', () => {
  it('accepts a byte-order mark and CRLF; refuses Latin-1 naming the line', async () => {
    const { path } = await place(encoder.encode('\ufeffseed: 3\r\nrunId: x\r\n'), 'bom.yaml');
    expect(await readConfigFile(path)).toEqual({ seed: 3, runId: 'x' });
    const bad = await place(latin1('seed: 3\nrunId: caf\u00e9\n'), 'latin1.yaml');
    await expect(readConfigFile(bad.path)).rejects.toThrow(/latin1\.yaml.*line 2.*not UTF-8/);
  });
});

describe('ICD embedding files (parseIcdVectorsText)', () => {
  it('reads vectors a line (arrays are rows here) or one JSON value; BOM and CRLF accepted; Latin-1 refused naming the line', () => {
    const bom = [0xef, 0xbb, 0xbf];
    expect(
      parseIcdVectorsText(
        Uint8Array.from([...bom, ...encoder.encode('[1,2]\r\n\r\n[3,4]\r\n')]),
        'jsonl',
        'e.jsonl',
      ),
    ).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(
      parseIcdVectorsText(Uint8Array.from([...bom, ...encoder.encode('{"3": [1, 0]}')]), 'json', 'q.json'),
    ).toEqual({
      3: [1, 0],
    });
    expect(() => parseIcdVectorsText(latin1('[1,2]\n[3,4] \u00e9\n'), 'jsonl', 'e.jsonl')).toThrow(
      /e\.jsonl line 2 is not UTF-8/,
    );
    expect(() => parseIcdVectorsText(encoder.encode('[1,2]\n[3,'), 'jsonl', 'e.jsonl')).toThrow(
      DatasetValidationError,
    );
  });
});
