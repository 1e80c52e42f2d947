import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { DatasetValidationError, InvalidArgumentError } from '../core/errors';
import { checkPromptRecords } from '../core/prompt-records';
import type { PromptRecord } from '../core/types';

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** One JSONL row as a prompt record; the field names of common layouts are accepted. */
export function promptFromJsonRow(row: Record<string, unknown>, index: number): PromptRecord {
  const question = str(row.question) ?? str(row.query);
  if (!question)
    throw new DatasetValidationError({
      row: index,
      field: 'question',
      message: 'every row needs a non-empty `question`',
    });
  const golden = row.golden ?? row.goldenBasenames ?? row.golden_pages ?? row.reference_page;
  const goldenList = Array.isArray(golden) ? golden.map(String) : str(golden) ? [String(golden)] : [];
  const reference =
    str(row.reference) ??
    str(row.answer) ??
    (Array.isArray(row.golden_answers) ? (row.golden_answers as string[]).join(' | ') : undefined);
  return {
    uid: str(row.uid) ?? str(row.id) ?? `row_${index}`,
    question,
    ...(reference !== undefined && { reference }),
    ...(goldenList.length > 0 && { goldenBasenames: goldenList }),
  };
}

/** Reads a dataset of questions (JSONL or verl/Search-R1 Parquet) and checks it before anything runs. */
export async function readPromptDataset(
  path: string,
  format: 'auto' | 'jsonl' | 'parquet' = 'auto',
  options: { needsReference?: boolean } = {},
): Promise<PromptRecord[]> {
  const kind =
    format === 'auto' ? (extname(path).toLowerCase() === '.parquet' ? 'parquet' : 'jsonl') : format;
  let prompts: PromptRecord[];
  if (kind === 'parquet') {
    const { readRlDataset } = await import('../adapters/store/parquet/index');
    prompts = await readRlDataset(path);
  } else {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new InvalidArgumentError({
        argument: 'dataset.path',
        message: `cannot read '${path}': ${(error as Error).message}`,
        cause: error,
      });
    }
    prompts = text.split('\n').flatMap((line, row) => {
      if (line.trim() === '') return [];
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new DatasetValidationError({
          row,
          field: '(json)',
          message: `${path} line ${row + 1} is not valid JSON`,
          cause: error,
        });
      }
      return [promptFromJsonRow(value as Record<string, unknown>, row)];
    });
  }
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
  checkPromptRecords(prompts, { needsReference: options.needsReference ?? false });
  return prompts;
}
