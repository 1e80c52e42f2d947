import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { DatasetValidationError, InvalidArgumentError } from '../core/errors';
import { checkPromptRecords } from '../core/prompt-records';
import { readJsonlRows } from '../core/text-data';
import type { PromptRecord } from '../core/types';

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** One JSONL row as a prompt record; the field names of common layouts are accepted. */
export function promptFromJsonRow(row: Record<string, unknown>, index: number): PromptRecord {
  if (typeof row !== 'object' || row === null || Array.isArray(row))
    throw new DatasetValidationError({
      row: index,
      field: '(row)',
      message: 'expected an object {uid, question, reference?, goldenBasenames?}',
    });
  const question = str(row.question) ?? str(row.query);
  if (!question)
    throw new DatasetValidationError({
      row: index,
      field: 'question',
      message: 'every row needs a non-empty `question`',
    });
  const golden = row.golden ?? row.goldenBasenames ?? row.golden_pages ?? row.reference_page;
  const goldenList = Array.isArray(golden) ? golden.map(String) : str(golden) ? [String(golden)] : [];
  // Every accepted answer (Search-R1's `golden_answers`): the exact-match check takes any of them.
  const answersField = row.answers !== undefined ? 'answers' : 'golden_answers';
  const listed = row[answersField];
  if (listed !== undefined && (!Array.isArray(listed) || listed.some((a) => str(a) === undefined)))
    throw new DatasetValidationError({
      row: index,
      field: answersField,
      message: 'must be an array of non-empty strings (every answer the exact-match check accepts)',
    });
  const answers = (listed as string[] | undefined) ?? [];
  const reference =
    str(row.reference) ?? str(row.answer) ?? (answers.length > 0 ? answers.join(' | ') : undefined);
  const split = str(row.split);
  return {
    uid: str(row.uid) ?? str(row.id) ?? `row_${index}`,
    question,
    ...(reference !== undefined && { reference }),
    ...(answers.length > 0 && { answers: [...answers] }),
    ...(goldenList.length > 0 && { goldenBasenames: goldenList }),
    ...(split !== undefined && { metadata: { split } }),
  };
}

/** A dataset row's split: the rows a run trains on, chooses its recipe on, or reports. */
export type DatasetSplit = 'train' | 'validation' | 'test';

/** A row's split (JSONL `split`, Parquet `extra_info.split`), with the common spellings (`val`, `dev`, `valid`) read as validation. */
export function splitOf(prompt: PromptRecord): DatasetSplit | null {
  const split = (prompt.metadata as { split?: unknown } | undefined)?.split;
  if (typeof split !== 'string') return null;
  const name = split.trim().toLowerCase();
  if (name === 'train' || name === 'training') return 'train';
  if (['validation', 'valid', 'val', 'dev'].includes(name)) return 'validation';
  if (name === 'test') return 'test';
  return null;
}

/**
 * A dataset's rows by split (`splitOf`): rows marked validation or test are held out and the rest
 * are the training questions, unless every row is held out (a file of one split is the user's
 * training set). What a run trains and evaluates on, and what `serve-env --tasks` serves.
 */
export function splitRows(rows: readonly PromptRecord[]): Record<DatasetSplit, PromptRecord[]> {
  const bySplit: Record<DatasetSplit, PromptRecord[]> = { train: [], validation: [], test: [] };
  for (const row of rows) bySplit[splitOf(row) ?? 'train'].push(row);
  return bySplit.train.length === 0 ? { train: [...rows], validation: [], test: [] } : bySplit;
}

/** Reads a dataset of questions (JSONL or verl/Search-R1 Parquet) and checks it before anything runs. */
export async function readPromptDataset(
  path: string,
  format: 'auto' | 'jsonl' | 'parquet' = 'auto',
  options: { needsReference?: boolean } = {},
): Promise<PromptRecord[]> {
  const kind =
    format === 'auto' ? (extname(path).toLowerCase() === '.parquet' ? 'parquet' : 'jsonl') : format;
  let prompts: PromptRecord[] = [];
  /** The file line of each prompt (JSONL only). */
  let lines: number[] | undefined;
  if (kind === 'parquet') {
    const { readRlDataset } = await import('../adapters/store/parquet/index');
    prompts = await readRlDataset(path);
  } else {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (error) {
      throw new InvalidArgumentError({
        argument: 'dataset.path',
        message: `cannot read '${path}': ${(error as Error).message}`,
        cause: error,
      });
    }
    const rows = readJsonlRows(bytes, path);
    lines = rows.map((r) => r.line);
    // A row without a uid is named by its 0-based line (`row_N`), as it always was.
    prompts = rows.map(({ line, value }) => {
      try {
        return promptFromJsonRow(value, line - 1);
      } catch (error) {
        throw atLine(error, path, line);
      }
    });
  }
  try {
    checkDataset(path, prompts, options.needsReference ?? false);
  } catch (error) {
    const line = lines && DatasetValidationError.isInstance(error) ? lines[error.row] : undefined;
    throw line === undefined ? error : atLine(error, path, line);
  }
  return prompts;
}

/** A record's error from a JSONL file, naming the file and the line (row: the 0-based line, as the line reader's). */
function atLine(error: unknown, path: string, line: number): unknown {
  if (!DatasetValidationError.isInstance(error)) return error;
  const message = error.message.replace(/^Invalid record at (?:row \d+, )?field '[^']*': /, '');
  return new DatasetValidationError({
    row: line - 1,
    field: error.field,
    message: `${path} line ${line}: ${message}`,
    cause: error,
  });
}

function checkDataset(path: string, prompts: readonly PromptRecord[], needsReference: boolean): void {
  if (prompts.length === 0)
    throw new DatasetValidationError({ row: -1, field: '(file)', message: `'${path}' has no questions` });
  const seen = new Set<string>();
  prompts.forEach((p, row) => {
    if (seen.has(p.uid))
      throw new DatasetValidationError({
        row,
        field: 'uid',
        message: `'${p.uid}' appears twice (rewards and logs are keyed by it)`,
      });
    seen.add(p.uid);
  });
  checkPromptRecords(prompts, { needsReference });
}
