import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEW_DATASET_CONFIG as CONFIG, writeNewDataset } from './support/new-dataset';

// Issue 25, "your own pages learn": a brand-new dataset made by the test (invented countries, text
// pages, questions with a split column), trained with `searcher-rl train --config` as a user runs
// it: from another working directory, the config's paths relative to the config file, no facts
// table (the extractive Generator), the default instructions, the demonstrator's warm start.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const cli = (cwd: string, ...args: string[]) =>
  run(tsx, [join(root, 'src/cli/main.ts'), ...args], { cwd, maxBuffer: 32 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'own-data-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a brand-new dataset through the CLI', () => {
  it('learns: judge success on its held-out questions within one question of naive RAG, kept by RL, then eval --split on the run', async () => {
    const project = join(dir, 'project');
    const data = await writeNewDataset(join(project, 'data'));
    expect([data.pages, data.train, data.test]).toEqual([120, 90, 30]);
    await writeFile(join(project, 'train.yaml'), CONFIG);
    // Run from elsewhere: the config's input paths are the file's, what the run writes the working directory's.
    const work = join(dir, 'work');
    await mkdir(work);
    const trained = await cli(work, 'train', '--config', join(project, 'train.yaml'));
    expect(trained.code, trained.stderr).toBe(0);
    expect(trained.stdout).toMatch(/demonstrations: \d+ episodes kept from \d+ of 90 training questions/);
    expect(trained.stdout).toMatch(/before RL \(after SFT\) on .*questions\.jsonl \(test\)/);
    const figures = /judge success on the .* questions: ([\d.]+)% before RL -> ([\d.]+)% after RL/.exec(
      trained.stdout,
    );
    expect(figures, trained.stdout).not.toBeNull();
    const [before, after] = [Number(figures![1]), Number(figures![2])];
    // Issue 42: the Searcher copies the asked country into its query, so it comes within one
    // question of naive RAG (the question's words, at its ceiling here) on held-out pairs: 96.7%
    // against 100% on this corpus and seed (docs/own-data.md); RL keeps what the warm start learnt.
    const naive = /baseline naive RAG on .*: judge success ([\d.]+)%/.exec(trained.stdout);
    expect(naive, trained.stdout).not.toBeNull();
    expect(after, trained.stdout).toBeGreaterThanOrEqual(Number(naive![1]) - 100 / 30 - 0.05);
    expect(after, trained.stdout).toBeGreaterThanOrEqual(before);
    await stat(join(work, '.cache', 'searcher-rl', 'countries.sqlite'));
    const runDir = join(work, 'runs', 'countries');
    const summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8'));
    expect(summary.before.questions).toBe(30);
    expect(summary.warnings).toBeUndefined();
    // The reader's ceiling, measured before training from the golden pages alone, printed and kept.
    expect(trained.stdout).toMatch(
      /reader ceiling on .*: the generator answers \d+ of 30 \([\d.]+%\) from the golden pages alone/,
    );
    expect(summary.readerCeiling).toMatchObject({ questions: 30, failedCalls: 0 });
    expect(summary.readerCeiling.ceiling).toBeGreaterThanOrEqual(0.5);
    expect(trained.stdout.indexOf('reader ceiling on')).toBeLessThan(
      trained.stdout.indexOf('demonstrations:'),
    );
    // eval on a split of the data run: the rows its split column marks, and the training questions.
    const test = await cli(work, 'eval', '--run', runDir, '--split', 'test');
    expect(test.code, test.stderr).toBe(0);
    expect(test.stderr).toMatch(/evaluating \(eval-test\) 30\/30/);
    expect(JSON.parse(await readFile(join(runDir, 'eval-test.json'), 'utf8'))).toMatchObject({
      questions: 30,
      judgeSuccess: summary.after.judgeSuccess,
    });
    const train = await cli(work, 'eval', '--run', runDir, '--split', 'train', '--limit', '10');
    expect(train.code, train.stderr).toBe(0);
    expect(JSON.parse(await readFile(join(runDir, 'eval-train.json'), 'utf8')).questions).toBe(10);
    const none = await cli(work, 'eval', '--run', runDir, '--split', 'validation');
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/evaluation\.split.*no validation questions.*dataset\.evalPath/);
  }, 600_000);

  it('says before any training when the reader, not the search, is the limit: attribute: value pages asked in other words', async () => {
    // One page a country of `attribute: value` lines; questions with none of the page's words but
    // the country's; test countries no training question names. The extractive reader matches a
    // line by its label, which these questions never name, so it answers by the kind of value
    // asked for; cut to one word (`maxAnswerWords: 1`) it also loses the rulers' two-word names:
    // 10 of 30 from the golden pages alone.
    const project = join(dir, 'kv');
    const data = await writeNewDataset(join(project, 'data'), {
      shape: 'kv',
      holdOut: 'entities',
      wording: 'reworded',
    });
    expect([data.pages, data.train, data.test]).toEqual([20, 90, 30]);
    await writeFile(
      join(project, 'train.yaml'),
      CONFIG.replace('runId: countries', 'runId: kv').replace(
        'generator: { type: extractive }',
        'generator: { type: extractive, maxAnswerWords: 1 }',
      ),
    );
    const work = join(dir, 'work-kv');
    await mkdir(work);
    // One epoch and one step a phase: what is checked is printed before any training.
    const trained = await cli(
      work,
      'train',
      '--config',
      join(project, 'train.yaml'),
      'sft.epochs=1',
      'phases.0.steps=1',
      'phases.1.steps=1',
    );
    expect(trained.code, trained.stderr).toBe(0);
    const ceiling = trained.stdout.indexOf(
      'the generator answers 10 of 30 (33.3%) from the golden pages alone. WARNING',
    );
    expect(ceiling, trained.stdout).toBeGreaterThan(-1);
    expect(ceiling).toBeLessThan(trained.stdout.indexOf('demonstrations:'));
    const summary = JSON.parse(await readFile(join(work, 'runs', 'kv', 'summary.json'), 'utf8'));
    expect(summary.readerCeiling.answered).toBe(10);
    expect(summary.warnings.join('\n')).toMatch(/no Searcher can score above 33\.3%/);
  });

  it('runs examples/own-data from an installed package: the built CLI, the package read-only, from the project folder', async () => {
    // node_modules/searcher-rl as npm would lay it out (package.json, dist, examples), its dependencies beside it.
    const project = join(dir, 'installed');
    const pkg = join(project, 'node_modules', 'searcher-rl');
    await mkdir(pkg, { recursive: true });
    const built = await run(
      join(root, 'node_modules', '.bin', 'tsup'),
      ['--out-dir', join(pkg, 'dist'), '--no-dts'],
      {
        cwd: root,
      },
    );
    expect(built.stderr).not.toMatch(/error/i);
    await cp(join(root, 'package.json'), join(pkg, 'package.json'));
    await cp(join(root, 'examples'), join(pkg, 'examples'), { recursive: true });
    for (const name of await readdir(join(root, 'node_modules')))
      if (name !== 'searcher-rl' && !name.startsWith('.'))
        await symlink(join(root, 'node_modules', name), join(project, 'node_modules', name));
    const setMode = async (path: string, file: number, folder: number) => {
      await chmod(path, 0o755);
      for (const entry of await readdir(path, { withFileTypes: true }))
        if (entry.isDirectory()) await setMode(join(path, entry.name), file, folder);
        else await chmod(join(path, entry.name), file);
      await chmod(path, folder);
    };
    await setMode(pkg, 0o444, 0o555);
    const { stdout } = await run(
      process.execPath,
      [
        join(pkg, 'dist', 'cli', 'main.js'),
        'train',
        '--config',
        'node_modules/searcher-rl/examples/own-data/config.yaml',
      ],
      { cwd: project },
    );
    expect(stdout).toMatch(
      /judge success on the .*questions\.jsonl questions: [\d.]+% before RL -> [\d.]+% after RL/,
    );
    await stat(join(project, 'runs', 'own-data', 'summary.json'));
    await stat(join(project, '.cache', 'searcher-rl', 'own-data.sqlite'));
    await setMode(pkg, 0o644, 0o755);
  }, 300_000);
});
