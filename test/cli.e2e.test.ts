import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunConfig, parseRunConfig } from '../src/run/config';
import { applyOverrides, parseOverrides } from '../src/run/config-file';

// The CLI as a program (tsx src/cli/main.ts), in npm run test:e2e; its parts tested in-process
// (progress lines, MissingDependencyError) are test/cli.test.ts.
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

/** The CLI with some packages made impossible to find (test/support/hide-packages.mjs). */
const cliWithout = (hidden: string[], ...args: string[]) =>
  run(
    process.execPath,
    ['--import', './test/support/hide-packages.mjs', '--import', 'tsx', 'src/cli/main.ts', ...args],
    { cwd: root, env: { ...process.env, SEARCHER_RL_HIDE_PACKAGES: hidden.join(',') } },
  ).then(
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
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/Invalid argument '--config': no such file/);
    await writeFile(join(dir, 'empty.yaml'), '# nothing yet\n\n');
    expect((await cli('train', '--config', join(dir, 'empty.yaml'))).stderr).toMatch(/is empty/);
    await writeFile(join(dir, 'config.txt'), 'seed: 1\n');
    expect((await cli('train', '--config', join(dir, 'config.txt'))).stderr).toMatch(
      /must be a YAML \(\.yaml, \.yml\) or JSON \(\.json\) file/,
    );
    await writeFile(join(dir, 'bad.yaml'), 'seed: 1.5\ncorpus:\n  decks: 0\nsft:\n  epochz: 3\n');
    const bad = await cli('train', '--config', join(dir, 'bad.yaml'));
    expect(bad.code).toBe(2);
    for (const field of ['seed', 'corpus.decks', 'sft.epochz']) expect(bad.stderr).toContain(field);
    expect(bad.stderr).not.toMatch(/and \d+ more/);
  }, 60_000);

  it('names an unknown option and points at --help', async () => {
    const { code, stderr } = await cli('eval', '--runn', 'x');
    expect(code).toBe(2);
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
    // The CLI's own process gets the signal (node --import tsx): the tsx command relays a signal to
    // its child and SIGKILLs it when the child has not answered within 30 ms (a busy machine).
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'train', '--config', config],
      {
        cwd: root,
      },
    );
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

/** A run on examples/own-data whose prompts fit a 256-token policy (instructions ''), for the commands below. */
const ownDataConfig = (runsDir: string, runId: string) =>
  [
    `runsDir: ${runsDir}`,
    `runId: ${runId}`,
    'dataset: { path: examples/own-data/questions.jsonl }',
    'policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: cpu }',
    'phases: [{ name: phase1, steps: 1, weights: phase1 }]',
    'searcher:',
    "  episode: { instructions: '' }",
    '  adapters:',
    `    searchEngine: { type: sqlite-fts, pagesDir: examples/own-data/pages, dbPath: ${join(dir, `${runId}.sqlite`)} }`,
    '    imageOps: { type: sharp }',
  ].join('\n');

describe('CLI conventions (issue 24, item 22)', () => {
  it('-V prints the version; help <command> is <command> --help; no arguments prints the usage on stderr and exits 2', async () => {
    const version = await cli('-V');
    expect([version.code, version.stdout.trim()]).toEqual([0, (await cli('--version')).stdout.trim()]);
    for (const command of ['train', 'curate', 'icd']) {
      const help = await cli('help', command);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toBe((await cli(command, '--help')).stdout);
    }
    const none = await cli();
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^searcher-rl <command> \[options\]/);
    expect(none.stderr).toMatch(/-c \(--config\), -r \(--run\), -h \(--help\)/);
  }, 120_000);

  it('one exit code, 2, for every usage error (nothing written); 1 for a failure while running', async () => {
    const runs = join(dir, 'usage-runs');
    await writeFile(join(dir, 'usage.yaml'), ownDataConfig(runs, 'usage'));
    const folder = join(dir, 'not-finished');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify(parseRunConfig({})));
    const usage: Array<[string[], RegExp]> = [
      [['frobnicate'], /unknown command 'frobnicate'/],
      [['eval', '--runn', 'x'], /Unknown option '--runn'/],
      [['eval'], /'--run': eval needs --run DIR/],
      [['eval', '-r', join(dir, 'typo')], /'--run': '.*typo' is not a run folder/],
      [['eval', '-r', folder, '--limit', '0'], /'--limit'/],
      [['report', '-r', join(dir, 'typo')], /'--run'/],
      [['serve-env', '--port', '70000'], /'--port': must be an integer from 0 to 65535/],
      [['serve-env', '--tasks', join(dir, 'no-tasks.jsonl')], /'--tasks': no such file/],
      [['demo', '--out', 'x'], /'--out': goes with --scripted/],
      [['demo', '--scripted', 'seed=2'], /'seed=2': settings go with the train demo/],
      [['demo', 'searcher.rl.nAgent'], /'searcher\.rl\.nAgent': unexpected argument/],
      [['ablate', '-c', join(dir, 'usage.yaml'), '--seeds', '1,x'], /'--seeds': must be integers/],
      [
        ['train', '-c', join(dir, 'usage.yaml'), 'searcher.rl.nAgent'],
        /'searcher\.rl\.nAgent': unexpected argument/,
      ],
      [['ablate', '-c', join(dir, 'usage.yaml'), '--only', 'nope'], /'--only': unknown ablation 'nope'/],
      [['curate', 'buckets', '-r', join(dir, 'typo')], /'--run'/],
      [['curate', 'bukets', '-r', folder], /unknown command 'bukets'/],
    ];
    for (const [args, message] of usage) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
    expect(await readdir(dir)).not.toContain('typo');
    expect(await readdir(runs).catch(() => [])).toEqual([]);
    // A run folder that has no summary.json yet: the report fails while running (exit 1).
    const failed = await cli('report', '-r', folder);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/has no summary\.json/);
  }, 300_000);

  it('key.path=value arguments apply after the config file, as YAML values; an unknown path is refused naming the argument', async () => {
    const overrides = parseOverrides([
      'searcher.rl.nAgent=4',
      'searcher.episode.instructions=',
      'evaluation.limit=null',
      'phases=[{name: p1, steps: 2, weights: phase1}]',
      'phases.0.learningRate=1e-4',
      "runId='007'",
    ]);
    const config = parseRunConfig(applyOverrides({ searcher: { rl: { nAgent: 8 } }, seed: 3 }, overrides));
    expect(config.searcher.rl.nAgent).toBe(4);
    expect(config.searcher.episode.instructions).toBe('');
    expect(config.searcher.episode.maxTurnTokens).toBe(48);
    expect(config.evaluation.limit).toBeNull();
    expect(config.phases).toEqual([
      { name: 'p1', steps: 2, weights: 'phase1', learningRate: 1e-4, warmupSteps: 5 },
    ]);
    expect([config.runId, config.seed]).toEqual(['007', 3]);
    expect(() => applyOverrides({ seed: 3 }, parseOverrides(['seed.x=1']))).toThrow(/'seed' is a value/);
    const runs = join(dir, 'override-runs');
    await writeFile(join(dir, 'override.yaml'), ownDataConfig(runs, 'override'));
    // The library's loadRunConfig takes the same settings (null: no file, the defaults).
    const fromFile = await loadRunConfig(join(dir, 'override.yaml'), { overrides: ['searcher.rl.nAgent=3'] });
    expect([fromFile.searcher.rl.nAgent, fromFile.searcher.episode.instructions, fromFile.runId]).toEqual([
      3,
      '',
      'override',
    ]);
    expect((await loadRunConfig(null, { overrides: ['seed=9'] })).seed).toBe(9);
    expect(() => parseOverrides(['__proto__.polluted=1'])).toThrow(/not a setting/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const unknown = await cli('train', '-c', join(dir, 'override.yaml'), 'searcher.rl.nAgnt=4');
    expect(unknown.code, unknown.stderr).toBe(2);
    expect(unknown.stderr).toMatch(/searcher\.rl\.nAgnt.*from the argument 'searcher\.rl\.nAgnt=4'/);
    // Applied after the file: a turn budget of 300 no longer fits the 256-token policy (refused before the run starts).
    const turn = await cli('train', '-c', join(dir, 'override.yaml'), 'searcher.episode.maxTurnTokens=300');
    expect(turn.code, turn.stderr).toBe(2);
    expect(turn.stderr).toMatch(/searcher\.episode\.maxTurnTokens 300\) it needs \d+/);
    expect(await readdir(runs).catch(() => [])).not.toContain('override');
  }, 120_000);
});

describe('missing optional packages (issue 24, item 20)', () => {
  it('the CLI checks every package a command will load before it starts; the usage and the help of train need none', async () => {
    const hidden = ['sharp', 'libsql', '@tensorflow/tfjs'];
    const runs = join(dir, 'missing-runs');
    await writeFile(join(dir, 'missing.yaml'), ownDataConfig(runs, 'missing'));
    const train = await cliWithout(hidden, 'train', '-c', join(dir, 'missing.yaml'));
    expect(train.code).toBe(1);
    expect(train.stderr).toContain(
      "searcher-rl train needs the packages 'sharp', 'libsql', '@tensorflow/tfjs', which are not installed: npm install sharp@^0.34.5 libsql@^0.5.29 @tensorflow/tfjs@4.22.0",
    );
    expect(await readdir(runs).catch(() => [])).toEqual([]);
    const folder = join(dir, 'missing-folder');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify(parseRunConfig({})));
    for (const args of [
      ['report', '-r', folder],
      ['curate', 'import', '-r', folder, '--db', join(dir, 'missing.db')],
      ['demo', '--scripted', '--out', join(dir, 'demo-out')],
    ]) {
      const result = await cliWithout(hidden, ...args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr, args.join(' ')).toMatch(
        /needs the packages 'sharp', 'libsql'.*npm install sharp@\S+ libsql@\S+/,
      );
    }
    // The curation commands' module (the help's defaults are its own) renders and indexes pages.
    const curateHelp = await cliWithout(hidden, 'curate', '--help');
    expect(curateHelp.code).toBe(1);
    expect(curateHelp.stderr).toMatch(/searcher-rl curate needs the packages 'sharp', 'libsql'/);
    for (const args of [['--help'], ['train', '--help'], ['help', 'serve-env'], ['-V']]) {
      const result = await cliWithout([...hidden, 'ws', 'onnxruntime-node', 'openai'], ...args);
      expect(result.code, args.join(' ')).toBe(0);
    }
    // The icd commands' module loads the tfjs pointer selector (src/run/icd/flow.ts): each needs @tensorflow/tfjs, and says so.
    const icd = await cliWithout(hidden, 'icd', 'eval', '--data', 'x.jsonl');
    expect(icd.code).toBe(1);
    expect(icd.stderr).toMatch(
      /searcher-rl icd needs the '@tensorflow\/tfjs' package, which is not installed: npm install @tensorflow\/tfjs@4\.22\.0/,
    );
  }, 300_000);
});
