// A brand-new dataset to train on (docs/own-data.md, "Your own pages learn"): invented countries, 120 text
// pages, 120 questions with a split column (30 held out), and the run's config, written to DIR
// (default: own-data-countries). Then: searcher-rl train --config DIR/train.yaml.
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { NEW_DATASET_CONFIG, writeNewDataset } from '../test/support/new-dataset';

const dir = resolve(process.argv[2] ?? 'own-data-countries');
const data = await writeNewDataset(join(dir, 'data'));
await writeFile(join(dir, 'train.yaml'), NEW_DATASET_CONFIG);
console.log(
  JSON.stringify({
    dir,
    pages: data.pages,
    train: data.train,
    test: data.test,
    config: join(dir, 'train.yaml'),
  }),
);
