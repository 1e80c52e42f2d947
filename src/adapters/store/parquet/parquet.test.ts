import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRlDataset, readSftDataset, writeRlDataset, writeSftDataset } from './datasets';
import { readParquetFile, topLevelColumns, writeParquetFile } from './parquet-files';

// A copy of ../shared/peer-data/search-r1/nq_search_test.parquet (see __fixtures__/README.md).
const SEARCH_R1 = new URL('./__fixtures__/nq_search_test.parquet', import.meta.url).pathname;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parquet-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the Search-R1 NQ test file', () => {
  it('reads all 3,610 rows, writes them back and reads the same values, nested columns included', async () => {
    const table = await readParquetFile(SEARCH_R1);
    expect(table.rows).toHaveLength(3610);
    expect(topLevelColumns(table.schema)).toEqual([
      'id',
      'question',
      'golden_answers',
      'data_source',
      'prompt',
      'ability',
      'reward_model',
      'extra_info',
    ]);
    expect(table.rows[0]).toMatchObject({
      id: 'test_0',
      data_source: 'nq',
      ability: 'fact-reasoning',
      reward_model: { ground_truth: { target: ['Wilhelm Conrad Röntgen'] }, style: 'rule' },
      extra_info: { index: 0n, split: 'test' },
    });
    const path = join(dir, 'nq.parquet');
    await writeParquetFile(path, table);
    const back = await readParquetFile(path);
    expect(back.schema.map((e) => [e.name, e.type, e.repetition_type, e.num_children])).toEqual(
      table.schema.map((e) => [e.name, e.type, e.repetition_type, e.num_children]),
    );
    expect(back.rows).toEqual(table.rows);
  });
  it('reads as prompt records (question, reference from ground_truth.target)', async () => {
    const prompts = await readRlDataset(SEARCH_R1);
    expect(prompts).toHaveLength(3610);
    expect(prompts[0]).toMatchObject({
      uid: 'test_0',
      question: 'who got the first nobel prize in physics?',
      reference: 'Wilhelm Conrad Röntgen',
    });
    // Natural Questions' several golden answers: every one accepted by the exact-match check.
    const raw = (await readParquetFile(SEARCH_R1)).rows;
    const k = raw.findIndex((r) => (r.golden_answers as string[]).length > 1);
    expect(prompts[k]!.answers).toEqual(raw[k]!.golden_answers);
    expect(prompts[k]!.reference).toBe((raw[k]!.golden_answers as string[]).join(' | '));
    expect(prompts[0]!.answers).toBeUndefined();
  });
});

describe('our layouts', () => {
  it('an RL dataset with golden pages round-trips as prompt records', async () => {
    const path = join(dir, 'rl.parquet');
    const prompts = [
      {
        uid: 'q1',
        question: 'What was revenue in 2019?',
        reference: '12 million',
        goldenBasenames: ['acme_3.png'],
      },
      {
        uid: 'q2',
        question: '매출은 얼마인가? 图中',
        reference: '3',
        goldenBasenames: ['beta_1.png', 'beta_2.png'],
      },
    ];
    await writeRlDataset(path, prompts, { split: 'train' });
    const raw = await readParquetFile(path);
    expect(raw.rows[1]).toMatchObject({
      data_source: 'searcher-rl',
      prompt: [{ role: 'user', content: prompts[1]!.question }],
      reward_model: { ground_truth: { target: ['3'] } },
      extra_info: {
        index: 1n,
        split: 'train',
        file_name: 'beta',
        reference_page: ['beta_1.png', 'beta_2.png'],
      },
    });
    expect((await readRlDataset(path)).map(({ metadata: _m, ...p }) => p)).toEqual(prompts);
  });
  it('writes every accepted answer as ground_truth.target and reads them back', async () => {
    const path = join(dir, 'answers.parquet');
    await writeRlDataset(path, [
      { uid: 'q', question: 'Who?', reference: 'Mick Jagger', answers: ['Mick Jagger', 'Keith Richards'] },
    ]);
    expect((await readParquetFile(path)).rows[0]).toMatchObject({
      reward_model: { ground_truth: { target: ['Mick Jagger', 'Keith Richards'] } },
    });
    expect((await readRlDataset(path))[0]).toMatchObject({ answers: ['Mick Jagger', 'Keith Richards'] });
  });
  it('page numbers in reference_page are pages of file_name', async () => {
    const { promptFromRlRow } = await import('./datasets');
    expect(
      promptFromRlRow(
        {
          question: 'q',
          reward_model: { ground_truth: 'x' },
          extra_info: { file_name: 'deck.pdf', reference_page: [3n] },
        },
        0,
      ),
    ).toMatchObject({ reference: 'x', goldenBasenames: ['deck_3.png'], uid: 'row_0' });
  });
  it('an SFT dataset round-trips', async () => {
    const path = join(dir, 'sft.parquet');
    const rows = [
      {
        uid: 's#0',
        format_version: 'searcher-rl-sft-v1',
        messages: [
          { role: 'system' as const, content: 'sys' },
          { role: 'user' as const, content: 'q' },
          { role: 'assistant' as const, content: '<think>a</think>\n<search>x</search>' },
        ],
      },
    ];
    await writeSftDataset(path, rows);
    expect(await readSftDataset(path)).toEqual(rows);
  });
});
