import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// A brand-new dataset made from nothing, unrelated to the slide corpus or examples/own-data:
// invented countries, text-only pages of their facts (one per (country, attribute) by default;
// other shapes: `Shape`), one question per (country, attribute). The
// questions of every fourth (country, attribute) pair are held out (split: test), so that the
// held-out questions ask for pairs the policy never saw, of countries and attributes it did.

const SYLLABLES = ['zor', 'vel', 'qua', 'rin', 'tho', 'mab', 'kel', 'dru', 'pas', 'nix', 'lor', 'fen'];
const CITIES = ['Amberford', 'Belltown', 'Cindervale', 'Dunmore', 'Eastwick', 'Fallowmere', 'Glenholt'];
const GOODS = ['copper', 'salt', 'timber', 'wool', 'glass', 'honey', 'amber', 'cotton', 'tin'];
const RIVERS = ['Alder', 'Brook', 'Cress', 'Dove', 'Elm', 'Fern', 'Heron', 'Iris', 'Jade', 'Kite'];
const RULERS = ['Queen Ada', 'King Bram', 'Queen Cora', 'King Dane', 'Queen Elin', 'King Finn'];

export interface NewDataset {
  pagesDir: string;
  questionsPath: string;
  pages: number;
  train: number;
  test: number;
}

/**
 * Which questions are held out: `pairs` (default), every fourth (country, attribute) pair, so
 * that every held-out country is also named by training questions; `entities`, every question of
 * every fourth country, so that no training question names a held-out country (its pages are in
 * the index all the same).
 */
export const HOLD_OUTS = ['pairs', 'entities'] as const;
export type HoldOut = (typeof HOLD_OUTS)[number];

/**
 * How the questions are worded: `page` (default), with the words of their page ("What is the
 * capital of X?" for "X capital city Y"); `reworded`, with none of their page's words but the
 * country's ("Which town is the seat of government of X?"), so that the question's words find
 * the country's six pages and not which of them answers.
 */
export const WORDINGS = ['page', 'reworded'] as const;
export type Wording = (typeof WORDINGS)[number];

/**
 * How the facts are written on the pages: `lines` (default), one page per (country, attribute)
 * holding the fact as one line ("X capital city Y"); `kv`, one page per country of
 * `attribute: value` lines ("capital: Y"), so every question about a country has the same golden
 * page; `table`, one page per attribute, a Markdown table of every country's value (a row per
 * country), so the golden page of a question is shared by every country's.
 */
export const SHAPES = ['lines', 'kv', 'table'] as const;
export type Shape = (typeof SHAPES)[number];

/** The label of each attribute on a `kv` page and in a `table` page's header. */
const LABELS: Record<string, string> = {
  capital: 'capital',
  founded: 'founded',
  export: 'main export',
  population: 'population',
  river: 'longest river',
  ruler: 'ruler',
};

/** The reworded question of each attribute: no word of its page's text or name but the country's. */
const REWORDED: Record<string, (country: string) => string> = {
  capital: (c) => `Which town is the seat of government of ${c}?`,
  founded: (c) => `In which year did ${c} begin?`,
  export: (c) => `Which goods does ${c} sell abroad?`,
  population: (c) => `How many inhabitants does ${c} have?`,
  river: (c) => `Which is the biggest stream of ${c}?`,
  ruler: (c) => `Who reigns over ${c}?`,
};

/** What `writeNewDataset` writes. */
export interface NewDatasetOptions {
  countries?: number;
  holdOut?: HoldOut;
  wording?: Wording;
  /** Which corpus: 0 (default), or another whose countries share no name with corpus 0's (nor with each other's). */
  corpus?: number;
  shape?: Shape;
}

/** Writes the pages of `countries` x 6 facts (NAME.txt, as `shape` lays them out) and their questions (questions.jsonl, with a split column) under `dir`. */
export async function writeNewDataset(dir: string, options: NewDatasetOptions = {}): Promise<NewDataset> {
  const { countries = 20, holdOut = 'pairs', wording = 'page', corpus = 0, shape = 'lines' } = options;
  for (const [name, value, allowed] of [
    ['shape', shape, SHAPES],
    ['holdOut', holdOut, HOLD_OUTS],
    ['wording', wording, WORDINGS],
  ] as const)
    if (!(allowed as readonly string[]).includes(value))
      throw new RangeError(
        `writeNewDataset: ${name} must be one of ${allowed.join(', ')}, not ${String(value)}`,
      );
  const names: string[] = [];
  for (let i = 0; names.length < countries * (corpus + 1); i++) {
    if (i > SYLLABLES.length ** 3)
      throw new RangeError(`writeNewDataset: no ${countries} more country names`);
    const a = SYLLABLES[(i * 7) % SYLLABLES.length]!;
    const b = SYLLABLES[(i * 5 + Math.floor(i / SYLLABLES.length)) % SYLLABLES.length]!;
    const name = `${a[0]!.toUpperCase()}${a.slice(1)}${b}`;
    if (!names.includes(name)) names.push(name);
  }
  const pagesDir = join(dir, 'pages');
  await mkdir(pagesDir, { recursive: true });
  const rows: Array<Record<string, unknown>> = [];
  const pages = new Map<string, string[]>();
  const write = (page: string, line: string) => {
    const lines = pages.get(page);
    if (lines) lines.push(line);
    else pages.set(page, [line]);
  };
  for (const [k, country] of names.slice(countries * corpus).entries()) {
    // The facts by the country's place among all corpora's; the split by its place in this one.
    const i = k + countries * corpus;
    const year = String(1400 + ((i * 37) % 500));
    const people = String(1000 + ((i * 7919) % 90000));
    const facts: Array<[string, string, string, string]> = [
      [
        'capital',
        `${country} capital city ${CITIES[i % CITIES.length]}`,
        `What is the capital of ${country}?`,
        CITIES[i % CITIES.length]!,
      ],
      ['founded', `${country} was founded in ${year}`, `When was ${country} founded?`, year],
      [
        'export',
        `${country} main export ${GOODS[i % GOODS.length]}`,
        `What does ${country} export?`,
        GOODS[i % GOODS.length]!,
      ],
      [
        'population',
        `${country} population ${people} people`,
        `What is the population of ${country}?`,
        people,
      ],
      [
        'river',
        `${country} longest river ${RIVERS[i % RIVERS.length]}`,
        `What is the longest river of ${country}?`,
        RIVERS[i % RIVERS.length]!,
      ],
      [
        'ruler',
        `${country} ruler ${RULERS[i % RULERS.length]}`,
        `Who is the ruler of ${country}?`,
        RULERS[i % RULERS.length]!,
      ],
    ];
    for (const [j, [attribute, text, question, answer]] of facts.entries()) {
      let page: string;
      if (shape === 'lines') {
        page = `${country.toLowerCase()}_${attribute}.txt`;
        write(page, text);
      } else if (shape === 'kv') {
        page = `${country.toLowerCase()}.txt`;
        if (!pages.has(page)) write(page, country);
        write(page, `${LABELS[attribute]}: ${answer}`);
      } else {
        page = `${attribute}.txt`;
        if (!pages.has(page)) {
          write(page, `| country | ${LABELS[attribute]} |`);
          write(page, '| --- | --- |');
        }
        write(page, `| ${country} | ${answer} |`);
      }
      rows.push({
        uid: `${country.toLowerCase()}-${attribute}`,
        question: wording === 'page' ? question : REWORDED[attribute]!(country),
        reference: answer,
        golden: [page],
        split: (holdOut === 'pairs' ? (k + j) % 4 === 0 : k % 4 === 3) ? 'test' : 'train',
      });
    }
  }
  for (const [page, lines] of pages) await writeFile(join(pagesDir, page), `${lines.join('\n')}\n`);
  const questionsPath = join(dir, 'questions.jsonl');
  await writeFile(questionsPath, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const test = rows.filter((r) => r.split === 'test').length;
  return { pagesDir, questionsPath, pages: pages.size, train: rows.length - test, test };
}

/**
 * The run of the new dataset, as `dir/train.yaml` beside `data/`: a small policy, the warm start's
 * SFT on the demonstrator's episodes (up to four a question, their names fresh each epoch, 120
 * epochs: copying is learnt after 45-135 epochs of one a question, docs/method.md#copying-names),
 * two RL phases; the paths are the file's, the index a cache in the working directory. Everything
 * else is the default (the instructions included). The recipe was chosen on corpus 0's held-out
 * questions, seed 1; `npm run bench:copying` reports it on corpus 1. A page longer than an
 * observation shows the lines its search names (`observationExcerpt: query`): chosen on corpus 0's
 * reworded tables, seeds 1-3 (held-out success after SFT 46.7-96.7% with the page's start, 100.0%
 * with the excerpt, whose row of the asked country lets fresh names rename it); the default
 * one-line pages fit whole, so it changes nothing there.
 */
export const NEW_DATASET_CONFIG = [
  'runsDir: runs',
  'runId: countries',
  'seed: 1',
  'dataset: { path: data/questions.jsonl }',
  'policy: { layers: 1, width: 48, heads: 4, contextLength: 128, coalesceSessions: false }',
  'sft: { demonstrations: 1000, epochs: 120, batchSize: 4, keepPerQuestion: 4, freshNames: true }',
  'phases:',
  '  - { name: phase1, steps: 20, weights: phase1, learningRate: 1.0e-3, warmupSteps: 0 }',
  '  - { name: phase2, steps: 20, weights: default, learningRate: 1.0e-3, warmupSteps: 0 }',
  'trainer: { batchSize: 8 }',
  'searcher:',
  '  episode: { maxTurns: 3, maxTurnTokens: 16, maxContextTokens: 128, temperature: 0.7, observationExcerpt: query }',
  '  rl: { nAgent: 4 }',
  '  adapters:',
  '    searchEngine: { type: sqlite-fts, pagesDir: data/pages, dbPath: .cache/searcher-rl/countries.sqlite }',
  '    generator: { type: extractive }',
  '    judge: { type: rule }',
  '',
].join('\n');
