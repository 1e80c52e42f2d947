import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// A brand-new dataset made from nothing, unrelated to the slide corpus or examples/own-data:
// invented countries, one text-only page per (country, attribute), one question per page. The
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

/** Writes `countries` x 6 pages (NAME.txt) and their questions (questions.jsonl, with a split column) under `dir`. */
export async function writeNewDataset(dir: string, countries = 20): Promise<NewDataset> {
  const names: string[] = [];
  for (let i = 0; names.length < countries; i++) {
    const a = SYLLABLES[(i * 7) % SYLLABLES.length]!;
    const b = SYLLABLES[(i * 5 + Math.floor(i / SYLLABLES.length)) % SYLLABLES.length]!;
    const name = `${a[0]!.toUpperCase()}${a.slice(1)}${b}`;
    if (!names.includes(name)) names.push(name);
  }
  const pagesDir = join(dir, 'pages');
  await mkdir(pagesDir, { recursive: true });
  const rows: Array<Record<string, unknown>> = [];
  for (const [i, country] of names.entries()) {
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
      const page = `${country.toLowerCase()}_${attribute}.txt`;
      await writeFile(join(pagesDir, page), `${text}\n`);
      rows.push({
        uid: `${country.toLowerCase()}-${attribute}`,
        question,
        reference: answer,
        golden: [page],
        split: (i + j) % 4 === 0 ? 'test' : 'train',
      });
    }
  }
  const questionsPath = join(dir, 'questions.jsonl');
  await writeFile(questionsPath, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const test = rows.filter((r) => r.split === 'test').length;
  return { pagesDir, questionsPath, pages: rows.length, train: rows.length - test, test };
}

/**
 * The run of the new dataset, as `dir/train.yaml` beside `data/`: a small policy, the warm start's
 * SFT on the demonstrator's episodes, two RL phases; the paths are the file's, the index a cache
 * in the working directory. Everything else is the default (the instructions included).
 */
export const NEW_DATASET_CONFIG = [
  'runsDir: runs',
  'runId: countries',
  'seed: 1',
  'dataset: { path: data/questions.jsonl }',
  'policy: { layers: 1, width: 48, heads: 4, contextLength: 128, coalesceSessions: false }',
  'sft: { demonstrations: 1000, epochs: 20, batchSize: 4 }',
  'phases:',
  '  - { name: phase1, steps: 20, weights: phase1, learningRate: 1.0e-3, warmupSteps: 0 }',
  '  - { name: phase2, steps: 20, weights: default, learningRate: 1.0e-3, warmupSteps: 0 }',
  'trainer: { batchSize: 8 }',
  'searcher:',
  '  episode: { maxTurns: 3, maxTurnTokens: 16, maxContextTokens: 128, temperature: 0.7 }',
  '  rl: { nAgent: 4 }',
  '  adapters:',
  '    searchEngine: { type: sqlite-fts, pagesDir: data/pages, dbPath: .cache/searcher-rl/countries.sqlite }',
  '    generator: { type: extractive }',
  '    judge: { type: rule }',
  '',
].join('\n');
