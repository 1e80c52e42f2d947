import { DatasetValidationError } from '../../../core/errors';
import type { PromptRecord } from '../../../core/types';
import type { SftRow } from '../../../core/curation/distill';
import {
  group,
  int64,
  list,
  readParquetFile,
  root,
  str,
  writeParquetFile,
  type ParquetSchemaElement,
} from './parquet-files';

/**
 * The verl / Search-R1 RL dataset layout: `data_source`, `prompt` (chat messages), `ability`,
 * `reward_model {ground_truth, style}`, `extra_info {index, split, file_name, reference_page}`.
 * Search-R1's own files hold `ground_truth {target: [...]}` and `question`/`golden_answers`
 * columns; both are read. We write `ground_truth` as `{target: [reference]}` (what Search-R1's
 * reward reads) and the golden page basenames in `extra_info.reference_page`, the document in
 * `extra_info.file_name`.
 */
export const RL_DATASET_SCHEMA: ParquetSchemaElement[] = root([
  [str('id')],
  [str('question')],
  [str('data_source')],
  list('prompt', group('element', [[str('content')], [str('role')]])),
  [str('ability')],
  group('reward_model', [group('ground_truth', [list('target', [str('element')])]), [str('style')]]),
  group('extra_info', [
    [int64('index')],
    [str('split')],
    [str('file_name')],
    list('reference_page', [str('element')]),
  ]),
]);

/** The Parquet schema of the SFT layout: chat `messages`, `uid` and `format_version`. */
export const SFT_DATASET_SCHEMA: ParquetSchemaElement[] = root([
  list('messages', group('element', [[str('content')], [str('role')]])),
  [str('uid')],
  [str('format_version')],
]);

const asString = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** A verl/Search-R1 row as a prompt record; the question from `question`, else the last user message. */
export function promptFromRlRow(row: Record<string, unknown>, index: number): PromptRecord {
  const prompt = Array.isArray(row.prompt) ? (row.prompt as Array<{ role?: string; content?: string }>) : [];
  const question = asString(row.question) ?? [...prompt].reverse().find((m) => m.role === 'user')?.content;
  if (!question)
    throw new DatasetValidationError({
      row: index,
      field: 'question',
      message: 'no `question` column and no user message in `prompt`',
    });
  const rewardModel = (row.reward_model ?? {}) as { ground_truth?: unknown };
  const truth = rewardModel.ground_truth;
  const targets =
    typeof truth === 'string'
      ? [truth]
      : Array.isArray((truth as { target?: unknown })?.target)
        ? ((truth as { target: unknown[] }).target.filter((t) => typeof t === 'string') as string[])
        : Array.isArray(row.golden_answers)
          ? (row.golden_answers as string[])
          : [];
  const extra = (row.extra_info ?? {}) as {
    index?: unknown;
    split?: unknown;
    file_name?: unknown;
    reference_page?: unknown;
  };
  const pages = Array.isArray(extra.reference_page)
    ? extra.reference_page.map(String)
    : extra.reference_page !== undefined && extra.reference_page !== null
      ? [String(extra.reference_page)]
      : [];
  const fileStem = asString(extra.file_name)?.replace(/\.[A-Za-z0-9]+$/, '');
  // A bare page number is a page of `file_name`: `{stem}_{page}.png`, the corpus's basename form.
  const golden = pages.map((p) => (/^\d+$/.test(p) && fileStem ? `${fileStem}_${p}.png` : p));
  const uid =
    asString(row.id) ??
    (extra.index !== undefined && extra.index !== null
      ? `${asString(extra.split) ?? 'row'}_${String(extra.index)}`
      : `row_${index}`);
  return {
    uid,
    question,
    ...(targets.length > 0 && { reference: targets.join(' | ') }),
    ...(targets.length > 1 && { answers: targets }),
    ...(golden.length > 0 && { goldenBasenames: golden }),
    metadata: {
      dataSource: row.data_source ?? null,
      ...(asString(extra.split) !== undefined && { split: asString(extra.split) }),
    },
  };
}

/**
 * Prompt records from a Parquet file in the verl/Search-R1 RL layout (`promptFromRlRow` per row).
 */
export async function readRlDataset(path: string): Promise<PromptRecord[]> {
  const { rows } = await readParquetFile(path);
  return rows.map(promptFromRlRow);
}

/** Writes prompt records in the RL layout (`prompt` holds the question as one user message after `instructions`, when given). */
export async function writeRlDataset(
  path: string,
  prompts: readonly PromptRecord[],
  options: { dataSource?: string; ability?: string; split?: string; instructions?: string } = {},
): Promise<void> {
  const rows = prompts.map((p, index) => ({
    id: p.uid,
    question: p.question,
    data_source: options.dataSource ?? 'searcher-rl',
    prompt: [
      { content: options.instructions ? `${options.instructions}\n${p.question}` : p.question, role: 'user' },
    ],
    ability: options.ability ?? 'visual-search',
    reward_model: {
      ground_truth: { target: p.answers ?? (p.reference === undefined ? [] : [p.reference]) },
      style: 'model',
    },
    extra_info: {
      index: BigInt(index),
      split: options.split ?? 'train',
      file_name: p.goldenBasenames?.[0]?.replace(/_\d+\.[A-Za-z0-9]+$/, '') ?? null,
      reference_page: p.goldenBasenames ?? [],
    },
  }));
  await writeParquetFile(path, { schema: RL_DATASET_SCHEMA, rows });
}

/** Writes SFT rows as a Parquet file in the SFT layout. */
export async function writeSftDataset(path: string, rows: readonly SftRow[]): Promise<void> {
  await writeParquetFile(path, { schema: SFT_DATASET_SCHEMA, rows: rows.map((r) => ({ ...r })) });
}

/**
 * SFT rows from a Parquet file in the SFT layout; a row that is not one is a
 * `DatasetValidationError`.
 */
export async function readSftDataset(path: string): Promise<SftRow[]> {
  const { rows } = await readParquetFile(path);
  return rows.map((row, i) => {
    if (!Array.isArray(row.messages))
      throw new DatasetValidationError({
        row: i,
        field: 'messages',
        message: 'expected a list of {role, content}',
      });
    return {
      messages: row.messages as SftRow['messages'],
      uid: String(row.uid ?? `row_${i}`),
      format_version: String(row.format_version ?? ''),
    };
  });
}
