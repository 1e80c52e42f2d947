import { join } from 'node:path';
import { redactDeep, withoutSecretFields } from '../core/secrets';
import type { RunConfig } from './config';
import { readJsonFile, writeJsonAtomic } from './folder';

// A continued run reuses the figures its folder recorded before training (the reader's ceiling,
// the evaluation before RL, the baselines), so that a killed run does not measure them again. They
// are reused only when measured under the settings the run has now: the folder's config.json
// refuses other data, corpus, policy, SFT or seed (folder.ts, KEPT), but a run continued with
// another evaluation (its split, limit or temperature), episode, reward scheme or adapter
// (generator, judge, search engine, policy) measures them again; reusing them printed a reader
// ceiling of 1 question for an evaluation of 30.

/** The recorded reader's ceiling (reader-ceiling.ts). */
export const READER_CEILING_FILE = 'reader-ceiling.json';
/** The recorded baselines (baselines.ts). */
export const BASELINES_FILE = 'baselines.json';

/** The file of the run folder that says which settings each recorded figure was measured under. */
export const RECORDED_UNDER = 'recorded-under.json';

/**
 * Adapter settings that cannot change what an adapter returns, only how fast: the SQLite search
 * engine's memory of answered queries and page images (its answers are the index's either way).
 */
const ANSWER_KEEPING_SETTINGS = ['queryCache', 'imageCacheBytes'] as const;

/** `adapters` without the settings that cannot change a figure (ANSWER_KEEPING_SETTINGS). */
export function adaptersAsMeasured(adapters: RunConfig['searcher']['adapters']): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(adapters).map(([port, settings]) => [
      port,
      settings && typeof settings === 'object'
        ? Object.fromEntries(
            Object.entries(settings).filter(
              ([key]) => !(ANSWER_KEEPING_SETTINGS as readonly string[]).includes(key),
            ),
          )
        : settings,
    ]),
  );
}

/** The settings a recorded figure depends on, beyond those config.json refuses a change of. */
export function recordedBasis(config: RunConfig): Record<string, unknown> {
  const { weights: _weights, ...reward } = config.searcher.reward;
  return redactDeep(
    withoutSecretFields({
      evaluation: config.evaluation,
      'searcher.episode': config.searcher.episode,
      'searcher.reward': reward,
      'searcher.adapters': adaptersAsMeasured(config.searcher.adapters),
    }),
  );
}

/**
 * The recorded figure `file` of `runDir` (e.g. `eval-before-rl.json`) where it was measured under
 * `basis`; else null, with the settings that differ (`changed`: empty when nothing was recorded,
 * `['recorded-under.json']` when a folder written before this file records the figure but not its
 * settings).
 */
export async function readRecorded<T>(
  runDir: string,
  file: string,
  basis: Record<string, unknown>,
): Promise<{ value: T | null; changed: string[] }> {
  const value = await readJsonFile<T>(join(runDir, file));
  if (value === null) return { value: null, changed: [] };
  const under = (await readJsonFile<Record<string, Record<string, unknown>>>(join(runDir, RECORDED_UNDER)))?.[
    file
  ];
  if (!under) return { value: null, changed: [RECORDED_UNDER] };
  const changed = [...new Set([...Object.keys(basis), ...Object.keys(under)])].filter(
    (key) => JSON.stringify(basis[key]) !== JSON.stringify(under[key]),
  );
  return changed.length === 0 ? { value, changed } : { value: null, changed };
}

/** Writes the figure `file` of `runDir`, then records the settings it was measured under. */
export async function writeRecorded(
  runDir: string,
  file: string,
  value: unknown,
  basis: Record<string, unknown>,
): Promise<void> {
  await writeJsonAtomic(join(runDir, file), value);
  const path = join(runDir, RECORDED_UNDER);
  const under = (await readJsonFile<Record<string, unknown>>(path)) ?? {};
  await writeJsonAtomic(path, { ...under, [file]: basis });
}

/** The log line of a figure measured again because its recorded one was measured under other settings. */
export function describeRemeasured(what: string, changed: readonly string[]): string {
  return changed.includes(RECORDED_UNDER)
    ? `${what}: the folder's recorded figure does not say which settings it was measured under; measured again`
    : `${what}: recorded under other ${changed.join(', ')} settings than this run's; measured again`;
}
