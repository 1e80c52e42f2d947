import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

describe('examples', () => {
  it('quickstart runs and scores the good rollout above the bad one', async () => {
    const { stdout } = await run(tsx, ['examples/quickstart.ts'], { cwd: root });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^s0-b0-q1#0 \[ 'acme_2\.png' \] 4\.5 billion dollars 1 1\.000$/);
    expect(lines[1]).toMatch(/^s0-b0-q1#1 \[ 'acme_1\.png' \] unknown 0 -1\.000$/);
  });

  it('swap-judge runs with the judge it swapped in (the default judge would give [ 1, 1 ])', async () => {
    const { stdout } = await run(tsx, ['examples/swap-judge.ts'], { cwd: root });
    // Exact judge 0, NDCG 1: 0.8 * 0 + 0.2 * 1.
    expect(stdout.trim()).toBe('[ 0.2, 0.2 ]');
  });

  it('the tfjs recipe of docs/train.md trains: every step applies an update and computes its rewards', async () => {
    const { stdout } = await run(tsx, ['examples/train-tfjs.ts'], {
      cwd: root,
      env: { ...process.env, STEPS: '2' },
    });
    const steps = stdout
      .trim()
      .split('\n')
      .filter((line) => line.startsWith('step '));
    expect(steps).toHaveLength(2);
    for (const line of steps)
      expect(line).toMatch(
        /^step \d: reward \d\.\d{3}, success (\d\.\d{2}|-), completion \d\.\d{2}, updates applied 1$/,
      );
  }, 120_000);

  it('onnx-policy runs episodes with the ONNX fixture model and prints one line per episode', async () => {
    const { stdout } = await run(tsx, ['examples/onnx-policy.ts'], { cwd: root });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('policy: onnx on cpu, 2 layers, vocabulary 397, context 256');
    const episodes = lines.filter((line) => line.startsWith('s0-'));
    expect(episodes).toHaveLength(6);
    for (const line of episodes)
      expect(line).toMatch(
        /^s0-b\d-\w+_\d\.png#\d: \d turns, retrieved \[[\w., ]*\], answer ".*", reward \d\.\d{3}, \d+ policy tokens, log-prob -?\d+\.\d{2}$/,
      );
    expect(lines.at(-1)).toMatch(/^episodes 6, mean reward \d\.\d{3}$/);
  });
});

describe('README and docs/train.md', () => {
  it('show examples/quickstart.ts (in at most 20 lines) and examples/train-tfjs.ts verbatim', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const example = await readFile(join(root, 'examples/quickstart.ts'), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
    expect(example.trim().split('\n').length).toBeLessThanOrEqual(20);
    expect(await readFile(join(root, 'docs/train.md'), 'utf8')).toContain(
      `\`\`\`ts\n${await readFile(join(root, 'examples/train-tfjs.ts'), 'utf8')}\`\`\``,
    );
    expect(readme).toContain('npm ci && npm run demo');
    expect(readme).toContain('npm test');
  });
});
