import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const cli = (...args: string[]) =>
  run(join(root, 'node_modules', '.bin', 'tsx'), ['src/cli/main.ts', 'icd', ...args], { cwd: root });

describe('searcher-rl icd', () => {
  it('has --help on each command', async () => {
    for (const command of ['normalise', 'eval', 'mine', 'inject', 'control', 'train']) {
      const { stdout } = await cli(command, '--help');
      expect(stdout, command).toMatch(/^searcher-rl icd /);
    }
  }, 60_000);

  it('normalises raw data with varying K to K, then eval checks it and prints oracle@K; a wrong K is a typed error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'icd-cli-'));
    await writeFile(
      join(dir, 'emb.json'),
      JSON.stringify(Array.from({ length: 30 }, (_, i) => [Math.cos(i), Math.sin(i), 1])),
    );
    await writeFile(join(dir, 'q.json'), JSON.stringify({ 3: [1, 0, 0], 4: [0, 1, 0] }));
    const raw = [
      {
        query_id: 3,
        candidate_pool_ids: [5, 6, 7],
        // Global indices are given as pointer_global (a pointer holds local ones: issue 24, item 13).
        pointer_candidates: [{ pointer_global: [7, 5], vqa_acc_score: 0.6, gen_method: 'sample' }],
      },
      {
        query_id: 4,
        candidate_pool_indices: [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21],
        pointer_candidates: [
          { pointer: [11, 1], pointer_global: [21, 11], vqa_acc_score: 0, gen_method: 'beam' },
        ],
      },
    ];
    await writeFile(join(dir, 'raw.jsonl'), raw.map((r) => JSON.stringify(r)).join('\n'));
    const out = join(dir, 'norm.jsonl');
    await cli(
      'normalise',
      '--data',
      join(dir, 'raw.jsonl'),
      '--embeddings',
      join(dir, 'emb.json'),
      '--query-embeddings',
      join(dir, 'q.json'),
      '--pool-size',
      '8',
      '--out',
      out,
    );
    const records = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            candidate_pool_indices: number[];
            pointer_candidates: Array<{ pointer: number[]; pointer_global: number[] }>;
          },
      );
    expect(records.map((r) => r.candidate_pool_indices.length)).toEqual([8, 8]);
    expect(
      records.map((r) => r.pointer_candidates[0]!.pointer.map((p) => r.candidate_pool_indices[p])),
    ).toEqual([
      [7, 5],
      [21, 11],
    ]);
    const { stdout } = await cli(
      'eval',
      '--data',
      out,
      '--pool-size',
      '8',
      '--embeddings',
      join(dir, 'emb.json'),
    );
    expect(JSON.parse(stdout)).toEqual({
      queries: 2,
      poolSize: 8,
      trajectoriesPerQuery: { min: 1, max: 1 },
      oracleAtK: 0.5,
    });
    const failure = await cli('eval', '--data', join(dir, 'raw.jsonl'), '--pool-size', '8').catch(
      (e: { stderr: string }) => e,
    );
    expect((failure as { stderr: string }).stderr).toMatch(/query 3: pool size 3 != 8/);
  }, 60_000);
});
