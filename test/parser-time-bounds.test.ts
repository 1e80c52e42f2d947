import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extractAnswer as extractiveAnswer } from '../src/adapters/extractive/index';
import { structureOf } from '../src/adapters/extractive/structure';
import { parseIcdText } from '../src/core/icd/parse';
import { hasObservationClaim, outsideThinks, thinkSpans } from '../src/core/curation/think-rewrite';
import { parseAction, parseBoundingBox } from '../src/core/protocol/actions';
import { queryExcerpt } from '../src/core/protocol/observation';
import { parseLocationBins, parseRegionMarks } from '../src/core/protocol/location';
import { createProtocolTokenizer } from '../src/core/protocol/tokenizer';
import { answerGamingClasses, normaliseAnswer } from '../src/core/reward/answer-gaming';
import { parseJudgeScore } from '../src/core/reward/judge-prompt';
import { checkFormatCorrectness, extractAnswer } from '../src/core/reward/search-r1';
import { parseJsonlRows } from '../src/core/text-data';
import { parseOverrides, readConfigFile } from '../src/run/config-file';
import { parseRunConfig } from '../src/run/config';

/**
 * Every parser that reads outside text finishes in time on adversarial text (issue 41): long
 * repeats of tag prefixes, spaces and nested brackets, the shapes that make a backtracking regex
 * super-linear. The bound is generous (a linear parser takes a few ms on these sizes); a quadratic
 * one takes seconds, a cubic or exponential one never returns. This is a guard, not a benchmark.
 */
const MS_PER_10_KB = 200;
const bound = (text: string) => MS_PER_10_KB * Math.max(1, text.length / 10_240);

const UNITS = [
  '<search',
  '<search>',
  '</search>',
  '<think>',
  '</think',
  '<answer>',
  '<information>',
  '<bbox>[',
  '<x1_',
  '<x1_1>',
  '[',
  '[[',
  ']',
  '{',
  '{"a":',
  '"',
  '\\',
  ' ',
  '\t',
  '  , ',
  ',',
  '1,',
  '0.',
  '1',
  'a',
  '-',
  '/',
  '<',
  '>',
  '=',
  'Question: ',
  '[Header at ',
  '이미지에서 ',
  '图中',
  'not ',
  'or ',
  '\n',
  '\r',
  '|',
  '| --- ',
  'label: ',
];
const adversarial = fc
  .tuple(
    fc.array(fc.constantFrom(...UNITS), { minLength: 1, maxLength: 4 }),
    fc.integer({ min: 500, max: 6_000 }),
    fc.constantFrom('', '!', '\u0000', '>', '</search>', ']', 'x'),
  )
  .map(([units, times, tail]) => units.join('').repeat(times).slice(0, 40_000) + tail);

const within = (name: string, text: string, call: () => unknown) => {
  const start = performance.now();
  try {
    call();
  } catch {
    // A refusal is an answer; only the time matters here.
  }
  const elapsed = performance.now() - start;
  expect(elapsed, `${name} took ${elapsed.toFixed(0)} ms on ${text.length} chars`).toBeLessThan(bound(text));
};

const tokenizer = createProtocolTokenizer();
const PARSERS: Array<[string, (text: string) => unknown]> = [
  ['parseAction (the protocol)', parseAction],
  ['parseBoundingBox', parseBoundingBox],
  ['parseLocationBins (location tokens)', parseLocationBins],
  ['parseRegionMarks (region marks)', parseRegionMarks],
  ['parseJsonlRows (JSONL)', (t) => parseJsonlRows(t, 'adversarial.jsonl')],
  ['parseIcdText (ICD JSONL)', (t) => parseIcdText(t, 'jsonl')],
  ['parseIcdText (ICD JSON)', (t) => parseIcdText(t, 'json')],
  ['parseOverrides (config overrides)', (t) => parseOverrides([t, `searcher.rl.nAgent=${t}`])],
  ['parseJudgeScore (judge replies)', (t) => parseJudgeScore(t, 'judge', 'adversarial')],
  ['checkFormatCorrectness (Search-R1 format)', checkFormatCorrectness],
  ['extractAnswer', extractAnswer],
  ['queryExcerpt (observation snippets)', (t) => queryExcerpt(t, `a x 1 ${t.slice(0, 200)}`, 2000)],
  [
    'extractive reader (page structure)',
    (t) => [structureOf(t), extractiveAnswer('What is the x of y?', [t])],
  ],
  ['thinkSpans / outsideThinks', (t) => [thinkSpans(t), outsideThinks(t)]],
  ['hasObservationClaim', hasObservationClaim],
  ['rule judge gaming check', (t) => [normaliseAnswer(t), answerGamingClasses(t, 'Paris or London', t)]],
  ['protocol tokenizer', (t) => tokenizer.encode(t)],
];

describe('parsers finish in time on adversarial text (issue 41)', () => {
  it.each(PARSERS)('%s', (name, parse) => {
    fc.assert(
      fc.property(adversarial, (text) => within(name, text, () => parse(text))),
      { numRuns: 40 },
    );
  });

  it('config files (YAML and JSON, then the run config schema)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'searcher-rl-stall-'));
    const samples = fc.sample(adversarial, { numRuns: 15, seed: 41 });
    for (const [i, text] of samples.entries()) {
      for (const ext of ['yaml', 'json']) {
        const path = join(dir, `c${i}.${ext}`);
        writeFileSync(path, text);
        const start = performance.now();
        try {
          parseRunConfig(await readConfigFile(path), path);
        } catch {
          // Refused: fine.
        }
        expect(performance.now() - start, `${ext} config of ${text.length} chars`).toBeLessThan(
          bound(text) * 2,
        );
      }
    }
  }, 60_000);
});
