import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { z } from 'zod';
import { searcherConfigSchema } from '../config';
import { DatasetValidationError, InvalidArgumentError } from '../core/errors';
import { checkPromptRecords } from '../core/prompt-records';
import type { PromptRecord } from '../core/types';
import { runConfigSchema, runPolicySchema } from './config';

const positiveInt = () => z.number().int().positive();

/**
 * A training run on your own questions and pages (`searcher-rl train --config FILE` with a
 * `dataset`): the dataset, the Searcher with its `adapters` (search engine, generator, judge),
 * the policy, the RL phases and the evaluation. Everything goes through the composition root.
 */
export const dataRunConfigSchema = z
  .object({
    runsDir: runConfigSchema.shape.runsDir,
    runId: runConfigSchema.shape.runId,
    seed: z.number().int().default(1),
    dataset: z
      .object({
        path: z.string().min(1).describe('Questions: JSONL ({uid|id, question, reference|answer, golden|goldenBasenames: page basenames}) or Parquet in the verl/Search-R1 layout.'),
        format: z.enum(['auto', 'jsonl', 'parquet']).default('auto').describe('`auto`: by the file extension.'),
        evalPath: z.string().min(1).nullable().default(null).describe('Questions to evaluate on (same formats); `null`: the training questions.'),
      })
      .strict(),
    policy: runPolicySchema
      .extend({
        initFrom: z.string().min(1).nullable().default(null).describe('Start from a checkpoint: `RUN_DIR/STORE_RUN` (e.g. runs/x/sft-distilled), its latest checkpoint.'),
      })
      .prefault({}),
    phases: runConfigSchema.shape.phases,
    trainer: runConfigSchema.shape.trainer,
    searcher: searcherConfigSchema.prefault({ episode: { maxTurns: 4, maxTurnTokens: 48, maxContextTokens: 256, observationMaxChars: 60, temperature: 0.5 }, rl: { nAgent: 4 } }),
    evaluation: z
      .object({
        limit: positiveInt().nullable().default(null).describe('Questions evaluated (`null`: all).'),
        temperature: z.number().min(0).default(0),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    // A rollouts-only policy (ONNX Runtime runs the graph forward only) can be evaluated, not trained.
    const policy = config.searcher.adapters.policy;
    const training = config.phases.filter((p) => p.steps > 0);
    if (policy?.type === 'onnx' && training.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['searcher', 'adapters', 'policy', 'type'], message: `the 'onnx' policy runs rollouts only and cannot be trained; set the steps of phase${training.length > 1 ? 's' : ''} ${training.map((p) => `'${p.name}'`).join(', ')} to 0 to evaluate it, or train a 'tfjs' policy` });
    }
  });

export type DataRunConfig = z.output<typeof dataRunConfigSchema>;

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** One JSONL row as a prompt record; the field names of common layouts are accepted. */
export function promptFromJsonRow(row: Record<string, unknown>, index: number): PromptRecord {
  const question = str(row.question) ?? str(row.query);
  if (!question) throw new DatasetValidationError(index, 'question', 'every row needs a non-empty `question`');
  const golden = row.golden ?? row.goldenBasenames ?? row.golden_pages ?? row.reference_page;
  const goldenList = Array.isArray(golden) ? golden.map(String) : str(golden) ? [String(golden)] : [];
  const reference = str(row.reference) ?? str(row.answer) ?? (Array.isArray(row.golden_answers) ? (row.golden_answers as string[]).join(' | ') : undefined);
  return { uid: str(row.uid) ?? str(row.id) ?? `row_${index}`, question, ...(reference !== undefined && { reference }), ...(goldenList.length > 0 && { goldenBasenames: goldenList }) };
}

/** Reads a dataset of questions (JSONL or verl/Search-R1 Parquet) and checks it before anything runs. */
export async function readPromptDataset(path: string, format: 'auto' | 'jsonl' | 'parquet' = 'auto', options: { needsReference?: boolean } = {}): Promise<PromptRecord[]> {
  const kind = format === 'auto' ? (extname(path).toLowerCase() === '.parquet' ? 'parquet' : 'jsonl') : format;
  let prompts: PromptRecord[];
  if (kind === 'parquet') {
    const { readRlDataset } = await import('../adapters/store/parquet/index');
    prompts = await readRlDataset(path);
  } else {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new InvalidArgumentError('dataset.path', `cannot read '${path}': ${(error as Error).message}`, { cause: error });
    }
    prompts = text.split('\n').flatMap((line, row) => {
      if (line.trim() === '') return [];
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new DatasetValidationError(row, '(json)', `${path} line ${row + 1} is not valid JSON`, { cause: error });
      }
      return [promptFromJsonRow(value as Record<string, unknown>, row)];
    });
  }
  if (prompts.length === 0) throw new DatasetValidationError(-1, '(file)', `'${path}' has no questions`);
  const seen = new Set<string>();
  prompts.forEach((p, row) => {
    if (seen.has(p.uid)) throw new DatasetValidationError(row, 'uid', `'${p.uid}' appears twice (rewards and logs are keyed by it)`);
    seen.add(p.uid);
  });
  checkPromptRecords(prompts, { needsReference: options.needsReference ?? false });
  return prompts;
}
