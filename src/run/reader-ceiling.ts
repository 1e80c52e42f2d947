import { createPortGateway } from '../core/calls/gateway';
import { isJudgeSuccess } from '../core/reward/success';
import { resolvePorts } from '../container';
import { goldenEvidenceFrom } from './curate/data';
import { progressOf, type RunOptions } from './progress';
import type { RunSession } from './session';

// The reader's ceiling (issue 39): how often the run's Generator answers right (the judge's full
// score) when it is given the golden pages alone, on the evaluation split, before any training.
// No Searcher can score above it; a low ceiling says the reader, not the search, limits the run.

/** Below this share of questions answered from their golden pages, the run warns before training. */
export const LOW_READER_CEILING = 0.5;

/** The reader ceiling of a run: the share of questions the Generator answers right from their golden pages alone. */
export interface ReaderCeiling {
  /** The evaluation split's label. */
  split: string;
  /** Questions with a reference and at least one golden page found in the page index. */
  questions: number;
  /** Of those, answered with the judge's full score from the golden pages alone. */
  answered: number;
  /** answered / questions (null with no such question). */
  ceiling: number | null;
  /** Failed generator or judge calls (not counted as answered; recorded, not hidden). */
  failedCalls: number;
  /** The generator's provider (`extractive`, `llama`, `openai`, ...), so the warning names what to change. */
  generator?: string;
}

/**
 * The reader's ceiling on the run's evaluation split; null when the run has no page index (nothing
 * to look golden pages up in), or in answer mode, where the Searcher answers itself and no frozen
 * reader bounds it.
 */
export async function measureReaderCeiling(
  session: RunSession,
  options: RunOptions & { limit?: number } = {},
): Promise<ReaderCeiling | null> {
  if (session.env.dbPath === null) return null;
  const { config } = session;
  if (config.searcher.episode.mode === 'answer') return null;
  const { label, prompts } = session.env.evaluation(config.evaluation.split);
  const limit = options.limit ?? config.evaluation.limit ?? prompts.length;
  const questions = prompts
    .filter((p) => p.reference !== undefined && (p.goldenBasenames?.length ?? 0) > 0)
    .slice(0, limit);
  const ports = await resolvePorts(session.container);
  // Through the run's call policies (retries, timeouts, validation), as every other call of the run.
  const gateway = createPortGateway(
    { generator: ports.generator, judge: ports.judge },
    config.searcher.calls,
  );
  // The golden pages as they are (no enlarged copy: that is the verifier's help, not a reader's).
  const golden = await goldenEvidenceFrom(
    session.env.dbPath,
    options.signal ? { signal: options.signal } : {},
  );
  const progress = progressOf(options, 'reader ceiling (golden pages alone)', questions.length);
  let counted = 0;
  let answered = 0;
  let failedCalls = 0;
  try {
    for (const [i, p] of questions.entries()) {
      const evidence = await golden.lookup({ episode: { goldenBasenames: p.goldenBasenames! } });
      if (evidence.length > 0) {
        counted++;
        try {
          const { answer } = await gateway.answer(p.question, evidence, options.signal);
          const verdict = await gateway.score(p.question, answer, p.reference!, options.signal);
          if (isJudgeSuccess(verdict.score)) answered++;
        } catch (error) {
          if (options.signal?.aborted) throw error;
          failedCalls++;
        }
      }
      progress.update(i + 1);
    }
  } finally {
    golden.close();
  }
  return {
    split: label,
    questions: counted,
    answered,
    ceiling: counted > 0 ? answered / counted : null,
    failedCalls,
    generator: ports.generator.provider,
  };
}

/** The line a run prints, with a warning when the ceiling is low. */
export function describeReaderCeiling(c: ReaderCeiling): string {
  if (c.ceiling === null) return `reader ceiling on ${c.split}: no question with a golden page in the index`;
  const pct = (c.ceiling * 100).toFixed(1);
  const failed = c.failedCalls > 0 ? `, ${c.failedCalls} failed calls` : '';
  const line = `reader ceiling on ${c.split}: the generator answers ${c.answered} of ${c.questions} (${pct}%) from the golden pages alone${failed}`;
  // SmolLM2 (type llama) reads no better than the extractive reader on some pages (attribute:
  // value lines, docs/own-data.md#pages-of-other-shapes), so its name is no remedy once it is the reader.
  const stronger =
    c.generator === undefined || c.generator === 'extractive'
      ? 'a stronger generator, e.g. adapters.generator type llama or an API model, may raise it'
      : `a stronger generator than this one (${c.generator}), e.g. a larger model or an API model, may raise it`;
  return c.ceiling < LOW_READER_CEILING
    ? `${line}. WARNING: the reader, not the search, limits this run: no Searcher can score above ${pct}% (${stronger})`
    : line;
}
