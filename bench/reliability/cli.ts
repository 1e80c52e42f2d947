// The CLI against hostile input (issue 24, items 17, 18, 20, 22): every bad option, argument,
// config or input of every command must end with the usage exit code (2) or a failure (1) and a
// message naming the option or field, and write nothing (the folder tree is compared before and
// after each case); commands run twice must not duplicate what they wrote; missing optional
// packages are named all at once. Runs `searcher-rl` as a user does (node + tsx), offline.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseRunConfig } from '../../src/run/config';
import { trainRun } from '../../src/run/run';
import { openSqlite } from '../../src/provider-utils/sqlite';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

interface Case {
  name: string;
  args: string[];
  code: number;
  /** What stderr must name (the option or field). */
  names: RegExp;
  hide?: string[];
}

async function cli(args: string[], hide: string[] = []) {
  const imports = hide.length > 0 ? ['--import', './test/support/hide-packages.mjs'] : [];
  return exec(process.execPath, [...imports, '--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    env: { ...process.env, SEARCHER_RL_HIDE_PACKAGES: hide.join(',') },
    timeout: 120_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

/** Every path under `dir` with its size. */
async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      out.push(`${prefix}${entry.name}/`, ...(await tree(path, `${prefix}${entry.name}/`)));
    else out.push(`${prefix}${entry.name} ${(await stat(path)).size}`);
  }
  return out.sort();
}

export async function cliHostileInput(dir: string): Promise<Record<string, unknown>> {
  const started = performance.now();
  await mkdir(dir, { recursive: true });
  const runs = join(dir, 'runs');
  // A finished run folder (own data, a scripted policy that passes the format gate) for the commands that take one.
  const run = (
    await trainRun(
      parseRunConfig({
        runsDir: runs,
        runId: 'run',
        dataset: { path: join(root, 'examples/own-data/questions.jsonl') },
        phases: [
          { name: 'phase1', steps: 1, weights: 'phase1' },
          { name: 'phase2', steps: 1, weights: 'default' },
        ],
        trainer: { batchSize: 3 },
        searcher: {
          episode: { instructions: '' },
          rl: { nAgent: 2 },
          adapters: {
            searchEngine: {
              type: 'sqlite-fts',
              pagesDir: join(root, 'examples/own-data/pages'),
              dbPath: join(dir, 'pages.sqlite'),
            },
            imageOps: { type: 'sharp' },
            policy: {
              type: 'scripted',
              script: [
                '<think>a</think><search>Acme</search>',
                '<think>b</think><search_complete>true</search_complete>',
              ],
            },
          },
        },
      }),
    )
  ).runDir;
  const file = async (name: string, text: string) => {
    await writeFile(join(dir, name), text);
    return join(dir, name);
  };
  const own = (runId: string, extra = '') =>
    [
      `runsDir: ${runs}`,
      `runId: ${runId}`,
      `dataset: { path: ${join(root, 'examples/own-data/questions.jsonl')} }`,
      'policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: cpu }',
      'phases: [{ name: phase1, steps: 1, weights: phase1 }]',
      'searcher:',
      extra === '' ? "  episode: { instructions: '' }" : extra,
      '  adapters:',
      `    searchEngine: { type: sqlite-fts, pagesDir: ${join(root, 'examples/own-data/pages')}, dbPath: ${join(dir, 'own.sqlite')} }`,
      '    imageOps: { type: sharp }',
    ].join('\n');
  const ok = await file('own.yaml', own('fresh'));
  // The protocol's own instructions (null): a run of its own policy on your data gets a compact line by default since issue 25.
  const trap = await file('trap.yaml', own('trap', '  episode: { instructions: null }\n  rl: { nAgent: 2 }'));
  const bad = await file(
    'bad.yaml',
    'seed: one\nrunId: ../escape\ncorpus: { decks: -1 }\npolicy: { layers: 0 }\nsearcher: { rl: { nAgent: 0 } }\nextra: 1\n',
  );
  const badRows = await file(
    'rows.jsonl',
    '{"uid": "a", "question": "q?", "reference": "r"}\n{"uid": "b", "question": ""}\n',
  );
  const typo = join(dir, 'rnu');
  const cases: Case[] = [
    { name: 'no arguments', args: [], code: 2, names: /searcher-rl <command>/ },
    { name: 'unknown command', args: ['trian'], code: 2, names: /unknown command 'trian'/ },
    { name: 'unknown option', args: ['train', '--confg', ok], code: 2, names: /--confg/ },
    {
      name: 'missing config file',
      args: ['train', '-c', join(dir, 'nope.yaml')],
      code: 2,
      names: /--config/,
    },
    {
      name: 'config: every field wrong',
      args: ['train', '-c', bad],
      code: 2,
      names:
        /^(?=[\s\S]*: seed')(?=[\s\S]*: runId')(?=[\s\S]*corpus\.decks)(?=[\s\S]*policy\.layers)(?=[\s\S]*searcher\.rl\.nAgent)(?=[\s\S]*: extra')/,
    },
    {
      name: 'override: unknown path',
      args: ['train', '-c', ok, 'searcher.rl.nAgnt=4'],
      code: 2,
      names: /searcher\.rl\.nAgnt.*searcher\.rl\.nAgnt=4/,
    },
    { name: 'override: not key=value', args: ['train', '-c', ok, 'nAgent'], code: 2, names: /'nAgent'/ },
    { name: 'override: not YAML', args: ['train', '-c', ok, 'seed=[1'], code: 2, names: /'seed'/ },
    {
      name: 'override: into a value',
      args: ['train', '-c', ok, 'seed.x=1'],
      code: 2,
      names: /seed[\s\S]*seed\.x=1/,
    },
    { name: 'override: prototype', args: ['train', '-c', ok, '__proto__.x=1'], code: 2, names: /__proto__/ },
    {
      name: 'prompt does not fit (the config trap)',
      args: ['train', '-c', trap],
      code: 2,
      names: /searcher\.episode\.instructions[\s\S]*policy\.contextLength/,
    },
    {
      name: 'turn does not fit',
      args: ['train', '-c', ok, 'searcher.episode.maxTurnTokens=300'],
      code: 2,
      names: /searcher\.episode\.maxTurnTokens/,
    },
    {
      name: 'window above the policy',
      args: ['train', '-c', ok, 'searcher.episode.maxContextTokens=512'],
      code: 2,
      names: /searcher\.episode\.maxContextTokens/,
    },
    {
      name: 'dataset file missing',
      args: ['train', '-c', ok, `dataset.path=${join(dir, 'none.jsonl')}`],
      code: 1,
      names: /dataset\.path/,
    },
    {
      name: 'dataset row with an empty question',
      args: ['train', '-c', ok, `dataset.path=${badRows}`],
      code: 1,
      names: /row 1/,
    },
    { name: 'eval without --run', args: ['eval'], code: 2, names: /--run/ },
    { name: 'eval --run typo', args: ['eval', '-r', typo], code: 2, names: /--run/ },
    { name: 'eval --split dev', args: ['eval', '-r', run, '--split', 'dev'], code: 2, names: /--split/ },
    { name: 'eval --limit -3', args: ['eval', '-r', run, '--limit', '-3'], code: 2, names: /--limit/ },
    { name: 'report --run typo', args: ['report', '-r', typo], code: 2, names: /--run/ },
    { name: 'serve-env --port 99999', args: ['serve-env', '--port', '99999'], code: 2, names: /--port/ },
    { name: 'serve-env --workers 0', args: ['serve-env', '--workers', '0'], code: 2, names: /--workers/ },
    {
      name: 'serve-env --tasks missing',
      args: ['serve-env', '--tasks', join(dir, 'none.jsonl')],
      code: 2,
      names: /--tasks/,
    },
    { name: 'demo --out without --scripted', args: ['demo', '--out', dir], code: 2, names: /--out/ },
    { name: 'ablate --only unknown', args: ['ablate', '-c', ok, '--only', 'nope'], code: 2, names: /--only/ },
    { name: 'curate --run typo', args: ['curate', 'buckets', '-r', typo], code: 2, names: /--run/ },
    { name: 'curate unknown command', args: ['curate', 'bukets', '-r', run], code: 2, names: /bukets/ },
    {
      name: 'curate rounds --round foo',
      args: ['curate', 'rounds', '-r', run, '--round', 'foo'],
      code: 2,
      names: /--round/,
    },
    {
      name: 'curate rounds --round 2 before 1',
      args: ['curate', 'rounds', '-r', run, '--round', '2'],
      code: 2,
      names: /--round/,
    },
    {
      name: 'curate rounds --phase2 typo',
      args: ['curate', 'rounds', '-r', run, '--round', '1', '--phase2', 'phsae2'],
      code: 2,
      names: /--phase2/,
    },
    {
      name: 'curate funnel --phase1 typo',
      args: ['curate', 'funnel', '-r', run, '--phase1', 'phsae1'],
      code: 2,
      names: /--phase1/,
    },
    {
      name: 'curate distill --phase ../x',
      args: ['curate', 'distill', '-r', run, '--phase', '../phase2'],
      code: 2,
      names: /--phase/,
    },
    {
      name: 'curate distill --top-k -1',
      args: ['curate', 'distill', '-r', run, '--top-k=-1'],
      code: 2,
      names: /--top-k/,
    },
    {
      name: 'curate buckets --low 0.9 --high 0.1',
      args: ['curate', 'buckets', '-r', run, '--low', '0.9', '--high', '0.1'],
      code: 2,
      names: /--low/,
    },
    {
      name: 'curate verify --ndcg 2',
      args: ['curate', 'verify', '-r', run, '--ndcg', '2'],
      code: 2,
      names: /--ndcg/,
    },
    {
      name: 'curate option it does not take',
      args: ['curate', 'buckets', '-r', run, '--top-k', '3'],
      code: 2,
      names: /--top-k/,
    },
    { name: 'curate import without --db', args: ['curate', 'import', '-r', run], code: 2, names: /--db/ },
    {
      name: 'curate import over a page index',
      args: ['curate', 'import', '-r', run, '--db', join(dir, 'pages.sqlite')],
      code: 2,
      names: /--db/,
    },
    {
      name: 'missing packages (sharp, libsql, @tensorflow/tfjs)',
      args: ['train', '-c', ok],
      code: 1,
      names:
        /'sharp', 'libsql', '@tensorflow\/tfjs'[\s\S]*npm install sharp@\S+ libsql@\S+ @tensorflow\/tfjs@\S+/,
      hide: ['sharp', 'libsql', '@tensorflow/tfjs'],
    },
  ];
  const failures: string[] = [];
  let exitAsExpected = 0;
  let named = 0;
  let wroteFiles = 0;
  for (const c of cases) {
    const before = await tree(dir);
    const result = await cli(c.args, c.hide);
    const after = await tree(dir);
    if (result.code === c.code) exitAsExpected++;
    else failures.push(`${c.name}: exit ${result.code}, expected ${c.code}: ${result.stderr.slice(0, 200)}`);
    if (c.names.test(result.stderr)) named++;
    else failures.push(`${c.name}: stderr does not name ${c.names}: ${result.stderr.slice(0, 300)}`);
    if (after.join('\n') !== before.join('\n')) {
      wroteFiles++;
      failures.push(`${c.name}: wrote ${after.filter((p) => !before.includes(p)).join(', ')}`);
    }
  }
  // Run twice: the second run must leave what the first wrote, not add to it.
  const twice: Record<string, boolean> = {};
  const db = join(dir, 'store.db');
  const records = () => {
    const connection = openSqlite({ file: db });
    try {
      return (connection.prepare('SELECT count(*) AS n FROM records').get() as { n: number }).n;
    } finally {
      connection.close();
    }
  };
  const counts: number[] = [];
  for (let i = 0; i < 2; i++) {
    await cli(['curate', 'import', '-r', run, '--db', db]);
    counts.push(records());
  }
  twice['import: records'] = counts[0]! > 0 && counts[0] === counts[1];
  const verdictEvents = async () =>
    (await readFile(join(run, 'curation', 'event.jsonl'), 'utf8').catch(() => ''))
      .split('\n')
      .filter((l) => l.includes('"verdict"')).length;
  const verdicts: number[] = [];
  for (let i = 0; i < 2; i++) {
    await cli(['curate', 'verify', '-r', run, '--ndcg', '0', '--judge-high', '1']);
    verdicts.push(await verdictEvents());
  }
  twice['verify: logged verdicts'] = verdicts[0]! > 0 && verdicts[0] === verdicts[1];
  const trees: string[] = [];
  for (let i = 0; i < 2; i++) {
    await cli(['curate', 'rounds', '-r', run, '--round', '1']);
    trees.push((await tree(join(run, 'curation'))).join('\n'));
  }
  twice['rounds: files'] = trees[0] === trees[1] && trees[0]!.includes('focused_round1.parquet');
  for (const [name, same] of Object.entries(twice))
    if (!same) failures.push(`${name}: changed on a second run`);
  return {
    figure: 'cli-hostile-input',
    cases: cases.length,
    exitCodeAsExpected: exitAsExpected,
    namedTheOptionOrField: named,
    casesThatWroteFiles: wroteFiles,
    runTwiceUnchanged: `${Object.values(twice).filter(Boolean).length} of ${Object.keys(twice).length}`,
    failures,
    seconds: Math.round((performance.now() - started) / 1000),
  };
}
