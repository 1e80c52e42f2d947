// A brand-new dataset to train on (docs/own-data.md, "Your own pages learn"): invented countries,
// their facts on text pages, a question per (country, fact) with a split column, and the run's
// config, written to DIR (default: own-data-countries). Then: searcher-rl train --config DIR/train.yaml.
//   --shape lines|kv|table   how the pages hold the facts (default lines: one fact a page; kv: one
//                            page a country of `attribute: value` lines; table: one page an attribute,
//                            a Markdown table with a row a country)
//   --hold-out pairs|entities  the test questions: every fourth (country, fact) pair (default), or
//                            every question of every fourth country (no training question names it)
//   --wording page|reworded  questions with their page's words (default) or none of them but the country
//   --countries N            default 20 (6 questions each)
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  HOLD_OUTS,
  type HoldOut,
  NEW_DATASET_CONFIG,
  SHAPES,
  type Shape,
  WORDINGS,
  type Wording,
  writeNewDataset,
} from '../test/support/new-dataset';

const CHOICES = { shape: SHAPES, 'hold-out': HOLD_OUTS, wording: WORDINGS } as const;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    shape: { type: 'string', default: 'lines' },
    'hold-out': { type: 'string', default: 'pairs' },
    wording: { type: 'string', default: 'page' },
    countries: { type: 'string', default: '20' },
  },
});
for (const [option, allowed] of Object.entries(CHOICES)) {
  const given = values[option as keyof typeof CHOICES];
  if (!(allowed as readonly string[]).includes(given!)) {
    console.error(`bench:own-data: --${option} must be one of ${allowed.join(', ')}, not '${given}'`);
    process.exit(2);
  }
}
const countries = Number(values.countries);
if (!(Number.isInteger(countries) && countries >= 4)) {
  console.error(`bench:own-data: --countries must be an integer of at least 4, not '${values.countries}'`);
  process.exit(2);
}

const dir = resolve(positionals[0] ?? 'own-data-countries');
const data = await writeNewDataset(join(dir, 'data'), {
  countries,
  shape: values.shape as Shape,
  holdOut: values['hold-out'] as HoldOut,
  wording: values.wording as Wording,
});
await writeFile(join(dir, 'train.yaml'), NEW_DATASET_CONFIG);
console.log(
  JSON.stringify({
    dir,
    shape: values.shape,
    holdOut: values['hold-out'],
    wording: values.wording,
    pages: data.pages,
    train: data.train,
    test: data.test,
    config: join(dir, 'train.yaml'),
  }),
);
