import { DatasetValidationError } from './errors';
import type { PromptRecord } from './types';

/**
 * Checks a batch (or a dataset) of prompts before anything runs: a bad record is a
 * DatasetValidationError naming its row (the index in `prompts`) and field, instead of a failed
 * episode or a missing reward later. `needsReference`: the reward needs a reference answer (a
 * judge weight above 0, or the Search-R1 answer check).
 */
export function checkPromptRecords(
  prompts: readonly PromptRecord[],
  options: { needsReference: boolean },
): void {
  if (!Array.isArray(prompts))
    throw new DatasetValidationError({
      row: -1,
      field: 'prompts',
      message: `expected an array of prompt records ({uid, question, reference?, goldenBasenames?}), got ${prompts === null ? 'null' : typeof prompts}`,
    });
  // Every index, not forEach: a hole in a sparse array is a missing record, not one to skip.
  for (let row = 0; row < prompts.length; row++) checkPromptRecord(prompts[row], row, options);
}

function checkPromptRecord(
  prompt: PromptRecord | undefined,
  row: number,
  options: { needsReference: boolean },
): void {
  const bad = (field: string, message: string) => new DatasetValidationError({ row, field, message });
  if (typeof prompt !== 'object' || prompt === null || Array.isArray(prompt))
    throw bad('(record)', 'expected an object {uid, question, reference?, goldenBasenames?}');
  if (typeof prompt.uid !== 'string' || prompt.uid.length === 0)
    throw bad('uid', 'must be a non-empty string (rewards and logs are keyed by it)');
  if (typeof prompt.question !== 'string' || prompt.question.trim().length === 0)
    throw bad('question', 'must be a non-empty string');
  if (prompt.reference !== undefined && typeof prompt.reference !== 'string')
    throw bad('reference', 'must be a string when given');
  if (options.needsReference && (prompt.reference === undefined || prompt.reference.trim().length === 0)) {
    throw bad(
      'reference',
      'is needed: the reward compares the answer with a reference answer (judge weight above 0, or the Search-R1 answer check)',
    );
  }
  if (prompt.answers !== undefined) {
    if (!Array.isArray(prompt.answers) || prompt.answers.length === 0)
      throw bad('answers', 'must be a non-empty array of answers when given');
    for (let k = 0; k < prompt.answers.length; k++) {
      const a: unknown = prompt.answers[k];
      if (typeof a !== 'string' || a.trim().length === 0)
        throw bad(`answers.${k}`, 'must be a non-empty string');
    }
  }
  if (prompt.goldenBasenames !== undefined) {
    if (!Array.isArray(prompt.goldenBasenames))
      throw bad('goldenBasenames', 'must be an array of page basenames when given');
    for (let k = 0; k < prompt.goldenBasenames.length; k++) {
      const b: unknown = prompt.goldenBasenames[k];
      if (typeof b !== 'string' || b.length === 0)
        throw bad(`goldenBasenames.${k}`, 'must be a non-empty string (a page basename)');
    }
  }
}
