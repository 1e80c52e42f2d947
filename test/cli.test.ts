import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const cli = (...args: string[]) =>
  run(tsx, ['src/cli/main.ts', ...args], { cwd: root }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the CLI', () => {
  it('prints its version', async () => {
    const { code, stdout } = await cli('--version');
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('has --help for every command; train lists the config fields with their defaults', async () => {
    for (const command of ['demo', 'train', 'eval', 'report']) {
      const { code, stdout } = await cli(command, '--help');
      expect(code, command).toBe(0);
      expect(stdout, command).toMatch(new RegExp(`^searcher-rl ${command}`));
    }
    const { stdout } = await cli('train', '--help');
    expect(stdout).toMatch(/corpus\.decks {2}integer \(default 200\)/);
    expect(stdout).toMatch(/searcher\.rl\.nAgent {2}integer \(default 8\)/);
    expect(stdout).toMatch(/searcher\.adapters\.judge\.type {2}one of rule, openai, gemini/);
  }, 60_000);

  it('refuses a missing, empty or wrongly named config file, and lists every problem of a bad one', async () => {
    const missing = await cli('train', '--config', join(dir, 'nope.yaml'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/Invalid argument '--config': no such file/);
    await writeFile(join(dir, 'empty.yaml'), '# nothing yet\n\n');
    expect((await cli('train', '--config', join(dir, 'empty.yaml'))).stderr).toMatch(/is empty/);
    await writeFile(join(dir, 'config.txt'), 'seed: 1\n');
    expect((await cli('train', '--config', join(dir, 'config.txt'))).stderr).toMatch(
      /must be a YAML \(\.yaml, \.yml\) or JSON \(\.json\) file/,
    );
    await writeFile(join(dir, 'bad.yaml'), 'seed: 1.5\ncorpus:\n  decks: 0\nsft:\n  epochz: 3\n');
    const bad = await cli('train', '--config', join(dir, 'bad.yaml'));
    expect(bad.code).toBe(1);
    for (const field of ['seed', 'corpus.decks', 'sft.epochz']) expect(bad.stderr).toContain(field);
    expect(bad.stderr).not.toMatch(/and \d+ more/);
  }, 60_000);

  it('names an unknown option and points at --help', async () => {
    const { code, stderr } = await cli('eval', '--runn', 'x');
    expect(code).toBe(1);
    expect(stderr).toMatch(/searcher-rl eval --help/);
  });

  it('stops a run at Ctrl-C through its AbortSignal: exit 130, the steps done kept, and a line saying how to continue', async () => {
    const config = join(dir, 'sigint.yaml');
    await writeFile(
      config,
      [
        `runsDir: ${join(dir, 'runs')}`,
        'runId: sigint',
        `corpus: { decks: 3, minSlides: 5, maxSlides: 5, cacheDir: ${join(dir, 'corpus')} }`,
        'policy: { layers: 1, width: 16, heads: 2, contextLength: 192, backend: wasm }',
        'sft: { demonstrations: 4, epochs: 1 }',
        'phases: [{ name: phase1, steps: 200, weights: phase1 }]',
        'trainer: { batchSize: 2, saveFreq: 1 }',
        'searcher: { episode: { maxTurns: 2, maxTurnTokens: 12, maxContextTokens: 192 }, rl: { nAgent: 2 } }',
        'evaluation: { limit: 2 }',
      ].join('\n'),
    );
    const child = spawn(tsx, ['src/cli/main.ts', 'train', '--config', config], { cwd: root });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        // A progress line of phase 1 (non-TTY: plain lines) means the phase has taken steps.
        if (/phase1 \d+\/200/.test(stderr)) resolve();
      }),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/stopped; what was done is kept\. Run the same command again to continue/);
    const metrics = (await readFile(join(dir, 'runs', 'sigint', 'phase1', 'metric.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(metrics.length).toBeGreaterThan(0);
  }, 120_000);
});
