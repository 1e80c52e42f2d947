import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ICD_FLOW_OPTIONS, runIcdFlow } from '../src/run/icd/flow';
import type { IcdTableResult } from '../src/run/icd/table';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const cli = (...args: string[]) =>
  run(join(root, 'node_modules', '.bin', 'tsx'), ['src/cli/main.ts', 'icd', ...args], { cwd: root });

describe('searcher-rl icd', () => {
  it('has --help on each command', async () => {
    for (const command of ['normalise', 'eval', 'mine', 'inject', 'control', 'train', 'table']) {
      const { stdout } = await cli(command, '--help');
      expect(stdout, command).toMatch(/^searcher-rl icd /);
    }
  }, 60_000);

  it('normalises raw data with varying K to K, then eval checks it and prints the stored-trajectory oracle; a wrong K is a typed error', async () => {
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
      storedOracleAtK: 0.5,
    });
    const failure = await cli('eval', '--data', join(dir, 'raw.jsonl'), '--pool-size', '8').catch(
      (e: { stderr: string }) => e,
    );
    expect((failure as { stderr: string }).stderr).toMatch(/query 3: pool size 3 != 8/);
  }, 60_000);
});

describe('searcher-rl icd table (npm run bench:icd) on a small setting', () => {
  it('prints every row from one command, one JSON line per figure and the table with its wall time; the beam width is respected and its calls counted; the oracle bounds every selection; the rows are what icd train gives', async () => {
    const json = join(await mkdtemp(join(tmpdir(), 'icd-table-')), 'table.json');
    const sizes = ['--queries', '60', '--steps', '10', '--warm-up-epochs', '1', '--beam-width', '3'];
    const { stdout } = await run(
      join(root, 'node_modules', '.bin', 'tsx'),
      ['src/cli/main.ts', 'icd', 'table', '--seeds', '7,8', ...sizes, '--json', json],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    const result = JSON.parse(await readFile(json, 'utf8')) as IcdTableResult;
    const names = [
      'random',
      'cosine top-2',
      'beam search (width 3',
      'warm-up (cross-entropy on cosine top-2 labels)',
      'warm-up (cross-entropy on beam labels)',
      'GRPO (10 steps), no warm-up',
      'GRPO (10 steps) after the cosine warm-up',
      'GRPO (10 steps) after the beam warm-up',
      'oracle@64 over all 4032 ordered choices, before injection',
      'oracle@64 over all 4032 ordered choices, after injection',
    ];
    expect(result.rows.map((r, i) => r.selection.slice(0, names[i]!.length))).toEqual(names);
    for (const name of names) expect(stdout).toContain(`| ${name}`);
    expect(stdout).toMatch(/wall time \d+\.\d s \(seed 7 \d+\.\d s, seed 8 \d+\.\d s\)/);
    expect(stdout).toMatch(/\| random \| 0\.\d{3} \(0\.\d{3} \/ 0\.\d{3}\) \|/);
    expect(stdout).toContain('oracle@64 (docs/method.md#oracle-at-k): for each query, the best accuracy');

    // One JSON line per figure, agreeing with the table's result.
    const figures = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map(
        (line) => JSON.parse(line) as { figure: string; value: number; selection?: string; seed?: number },
      );
    const heldOutFigures = figures.filter((f) => f.figure === 'held-out mean accuracy');
    expect(heldOutFigures).toHaveLength(names.length * 2);
    for (const row of result.rows)
      for (const [s, seed] of [7, 8].entries())
        expect(
          heldOutFigures.find((f) => f.selection === row.key && f.seed === seed)?.value,
          `${row.key} seed ${seed}`,
        ).toBeCloseTo(row.heldOut[s]!, 3);
    expect(figures.filter((f) => f.figure === 'wall time s')).toHaveLength(3);

    const row = (key: string) => result.rows.find((r) => r.key === key)!;
    for (const r of result.rows)
      for (const x of [...r.heldOut, ...(r.train ?? [])]) expect(x >= 0 && x <= 1).toBe(true);
    // The beam search of width 3 scores 64 singles, then 3 beams x 63 pairs, for every query.
    expect(row('beam-search').callsPerQuery).toEqual([64 + 3 * 63, 64 + 3 * 63]);
    for (const [s] of result.seeds.entries()) {
      const before = row('oracle-before');
      const after = row('oracle-after');
      expect(after.train![s]).toBeGreaterThanOrEqual(before.train![s]!);
      // The oracle over every pair bounds every selection from the same pools (the beam search included).
      for (const r of result.rows.slice(0, 8)) {
        expect(after.heldOut[s]).toBeGreaterThanOrEqual(r.heldOut[s]!);
        expect(after.train![s]).toBeGreaterThanOrEqual(r.train![s]!);
      }
      expect(row('beam-search').heldOut[s]).toBeGreaterThan(row('cosine').heldOut[s]!);
      expect(result.seeds[s]!.labelAccuracy.beam).toBeGreaterThan(result.seeds[s]!.labelAccuracy.cosine);
    }

    const flow = await runIcdFlow({
      ...DEFAULT_ICD_FLOW_OPTIONS,
      seed: 8,
      queries: 60,
      grpoSteps: 10,
      warmUpEpochs: 1,
      beamWidth: 3,
      warmUp: 'cosine',
      log: () => undefined,
    });
    expect(flow.heldOut.grpo).toBe(row('grpo-cosine').heldOut[1]);
    expect(flow.heldOut.warmUp).toBe(row('warm-up-cosine').heldOut[1]);
    expect(flow.heldOut.beamSearch).toBe(row('beam-search').heldOut[1]);

    const failure = await cli('table', '--seeds', '7,x').catch((e: { stderr: string; code: number }) => e);
    expect((failure as { code: number }).code).not.toBe(0);
    expect((failure as { stderr: string }).stderr).toMatch(/--seeds/);
  }, 240_000);
});
