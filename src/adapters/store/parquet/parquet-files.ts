import { readFile, writeFile } from 'node:fs/promises';
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { redactDeep } from '../../../core/secrets';
import { DatasetValidationError } from '../../../core/errors';

/** A Parquet schema element as hyparquet reads and hyparquet-writer writes it (the file's flattened schema tree). */
export interface ParquetSchemaElement {
  name: string;
  type?: string;
  repetition_type?: 'REQUIRED' | 'OPTIONAL' | 'REPEATED';
  num_children?: number;
  converted_type?: string;
  logical_type?: { type: string };
  [key: string]: unknown;
}

/** A Parquet table: its schema and its rows. */
export interface ParquetTable {
  schema: ParquetSchemaElement[];
  /** Rows as objects; nested groups as objects, LIST columns as arrays, INT64 as bigint. */
  rows: Array<Record<string, unknown>>;
}

/** Reads every row of a Parquet file with its schema. Values are as the file holds them (INT64 stays bigint). */
export async function readParquetFile(path: string): Promise<ParquetTable> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new DatasetValidationError({
      row: -1,
      field: '(file)',
      message: `cannot read the Parquet file '${path}': ${(error as Error).message}`,
      cause: error,
    });
  }
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  try {
    const metadata = await parquetMetadataAsync(file);
    const rows = (await parquetReadObjects({ file, metadata })) as Array<Record<string, unknown>>;
    return { schema: metadata.schema as unknown as ParquetSchemaElement[], rows };
  } catch (error) {
    throw new DatasetValidationError({
      row: -1,
      field: '(file)',
      message: `'${path}' is not a readable Parquet file: ${(error as Error).message}`,
      cause: error,
    });
  }
}

/** The names of the schema's top-level columns. */
export function topLevelColumns(schema: readonly ParquetSchemaElement[]): string[] {
  const names: string[] = [];
  // Walk the flattened tree: each element is followed by its num_children subtrees.
  let index = 1;
  const skip = (at: number): number => {
    let next = at + 1;
    for (let c = 0; c < (schema[at]!.num_children ?? 0); c++) next = skip(next);
    return next;
  };
  for (let c = 0; c < (schema[0]?.num_children ?? 0); c++) {
    names.push(schema[index]!.name);
    index = skip(index);
  }
  return names;
}

/** Writes rows under an explicit schema (nested groups and lists included), so Python readers see the same types. */
export function encodeParquet(table: ParquetTable): ArrayBuffer {
  const columns = topLevelColumns(table.schema);
  return parquetWriteBuffer({
    schema: table.schema as never,
    columnData: columns.map((name) => ({ name, data: table.rows.map((row) => row[name] ?? null) })) as never,
  });
}

/** Writes a table; no configured secret is written (src/core/secrets.ts: every string is redacted). */
export async function writeParquetFile(path: string, table: ParquetTable): Promise<void> {
  await writeFile(path, new Uint8Array(encodeParquet({ ...table, rows: redactDeep(table.rows) })));
}

// Schema builders for the layouts below.
export const str = (
  name: string,
  repetition: 'OPTIONAL' | 'REQUIRED' = 'OPTIONAL',
): ParquetSchemaElement => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  repetition_type: repetition,
});
export const int64 = (name: string): ParquetSchemaElement => ({
  name,
  type: 'INT64',
  repetition_type: 'OPTIONAL',
});
export const group = (name: string, children: ParquetSchemaElement[][]): ParquetSchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', num_children: children.length },
  ...children.flat(),
];
/** A three-level LIST (`name.list.element`), as pyarrow writes it. */
export const list = (name: string, element: ParquetSchemaElement[]): ParquetSchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  ...element.map((e, i) => (i === 0 ? { ...e, name: 'element' } : e)),
];
export const root = (columns: ParquetSchemaElement[][]): ParquetSchemaElement[] => [
  { name: 'schema', repetition_type: 'REQUIRED', num_children: columns.length },
  ...columns.flat(),
];
