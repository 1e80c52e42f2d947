import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../cli/args';
import { curateCommand } from '../../cli/curate';
import { InvalidArgumentError } from '../../core/errors';
import { openSqlite } from '../../provider-utils/sqlite';
import { parseRunConfig } from '../config';
import { resolveInputPaths } from '../config-file';
import { trainRun } from '../run';

// Item 17 of issue 24: every curation command checks its options and inputs before it writes
// anything, and running it again replaces what it wrote instead of adding to it. One tiny run on
// examples/own-data (offline: mock generator, rule judge) is the run folder of every case.
// biome-ignore lint/suspicious/noExplicitAny: the example YAML is edited field by field below.
type RawConfig = Record<string, any>;
let dir = '';
let runDir = '';
const quiet = { onLog: () => undefined };

/** Every file and folder under `root` with its size: what a refused command must leave as it was. */
async function tree(root: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true }).catch(() => [])) {
    const path = join(root, entry.name);
    if (entry.isDirectory())
      out.push(`${prefix}${entry.name}/`, ...(await tree(path, `${prefix}${entry.name}/`)));
    else out.push(`${prefix}${entry.name} ${(await stat(path)).size}`);
  }
  return out.sort();
}

/** Runs a curate command that must be refused: a usage error (exit 2) naming `argument`, and no file written or changed. */
async function refused(argv: string[], argument: string | RegExp) {
  const before = await tree(dir);
  const error = await curateCommand(argv, quiet).catch((e: unknown) => e);
  expect(InvalidArgumentError.isInstance(error), `${argv.join(' ')}: ${String(error)}`).toBe(true);
  expect((error as InvalidArgumentError).argument).toMatch(argument);
  expect(exitCodeOf(error)).toBe(2);
  expect(await tree(dir)).toEqual(before);
  return error as InvalidArgumentError;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'curate-'));
  const example = new URL('../../../examples/own-data/config.yaml', import.meta.url);
  // The example's paths are the file's (issue 25), as loadRunConfig reads them.
  const raw = resolveInputPaths(parseYaml(await readFile(example, 'utf8')), example.pathname) as RawConfig;
  const { policy: _ownPolicy, ...rest } = raw;
  const config = parseRunConfig({
    ...rest,
    runsDir: dir,
    runId: 'run',
    phases: raw.phases.map((p: Record<string, unknown>) => ({ ...p, steps: 1 })),
    searcher: {
      ...raw.searcher,
      // A named policy gets the protocol's instructions unless told otherwise; this scripted one needs none.
      episode: { ...raw.searcher.episode, instructions: '' },
      adapters: {
        ...raw.searcher.adapters,
        searchEngine: { ...raw.searcher.adapters.searchEngine, dbPath: join(dir, 'pages.sqlite') },
        // A scripted policy that passes the format gate: every episode is judged (verify has candidates).
        policy: {
          type: 'scripted',
          script: [
            '<think>a</think><search>Acme</search>',
            '<think>b</think><search_complete>true</search_complete>',
          ],
        },
      },
    },
  });
  runDir = (await trainRun(config, quiet)).runDir;
}, 300_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('curate: options and inputs are checked before anything is written', () => {
  it('a mistyped --run is refused, and no <typo>/curation/ appears', async () => {
    const typo = join(dir, 'rnu');
    await refused(['buckets', '--run', typo], '--run');
    await expect(stat(typo)).rejects.toThrow();
  });

  it('refuses --round other than 1 or 2, a --phase1/--phase2/--phase the run folder does not have, and an option the command does not take', async () => {
    expect(await curateCommand(['buckets', '--run', runDir], quiet)).toBe(0);
    expect(await curateCommand(['rounds', '--run', runDir, '--round', '1'], quiet)).toBe(0);
    // Round 2 is built from round 1's results (issue 25): none in this folder, so it is refused by name
    // until a store run holding them is given.
    await refused(['rounds', '--run', runDir, '--round', '2'], '--results');
    expect(
      await curateCommand(['rounds', '--run', runDir, '--round', '2', '--results', 'phase2'], quiet),
    ).toBe(0);
    await refused(['rounds', '--run', runDir, '--round', 'foo'], '--round');
    await refused(['rounds', '--run', runDir, '--round', '1', '--results', 'phase2'], '--results');
    await refused(
      ['rounds', '--run', runDir, '--round', '2', '--results', join(dir, 'nowhere', 'focused-round1')],
      '--results',
    );
    const typo = await refused(['rounds', '--run', runDir, '--round', '2', '--phase2', 'phsae2'], '--phase2');
    expect(typo.message).toMatch(/'phsae2'.*store runs: .*phase1.*phase2/);
    await refused(['funnel', '--run', runDir, '--phase1', 'phsae1'], '--phase1');
    await refused(['buckets', '--run', runDir, '--phase', 'phsae1'], '--phase');
    await refused(['distill', '--run', runDir, '--phase', '../phase2'], '--phase');
    await refused(['buckets', '--run', runDir, '--top-k', '3'], '--top-k');
  }, 120_000);

  it('range-checks numbers: --top-k a positive integer, thresholds in [0, 1], --low below --high', async () => {
    await refused(['distill', '--run', runDir, '--top-k', '-1'], '--top-k');
    await refused(['distill', '--run', runDir, '--top-k=-1'], '--top-k');
    await refused(['distill', '--run', runDir, '--top-k', '1.5'], '--top-k');
    await refused(['distill', '--run', runDir, '--max-success-rate', '2'], '--max-success-rate');
    await refused(['buckets', '--run', runDir, '--low', '0.9', '--high', '0.1'], '--low');
    await refused(['buckets', '--run', runDir, '--low', ''], '--low');
    await refused(['verify', '--run', runDir, '--ndcg', 'NaN'], '--ndcg');
    await refused(['loop', '--run', runDir, '--epochs', '0'], '--epochs');
    await refused(['import', '--run', runDir], '--db');
    await refused(['import', '--run', runDir, '--db', join(dir, 'no-such-folder', 'x.db')], '--db');
  });

  it('round 2 before round 1 is refused, not built from nothing', async () => {
    await rm(join(runDir, 'curation'), { recursive: true, force: true });
    await refused(['rounds', '--run', runDir, '--round', '2'], '--round');
  });
});

describe('curate: running a command again replaces what it wrote', () => {
  it('import twice gives the same records table; a database that is not a store is not replaced', async () => {
    const db = join(dir, 'curation.db');
    const count = () => {
      const connection = openSqlite({ file: db });
      try {
        return (connection.prepare('SELECT count(*) AS n FROM records').get() as { n: number }).n;
      } finally {
        connection.close();
      }
    };
    expect(await curateCommand(['import', '--run', runDir, '--db', db], quiet)).toBe(0);
    const first = count();
    expect(first).toBeGreaterThan(0);
    expect(await curateCommand(['import', '--run', runDir, '--db', db], quiet)).toBe(0);
    expect(count()).toBe(first);
    await refused(['import', '--run', runDir, '--db', join(dir, 'pages.sqlite')], '--db');
  }, 120_000);

  it('verify twice leaves each verdict logged once', async () => {
    const verdictEvents = async () =>
      (await readFile(join(runDir, 'curation', 'event.jsonl'), 'utf8').catch(() => ''))
        .split('\n')
        .filter((line) => line.includes('"verdict"')).length;
    expect(await curateCommand(['verify', '--run', runDir, '--ndcg', '0', '--judge-high', '1'], quiet)).toBe(
      0,
    );
    const summary = JSON.parse(await readFile(join(runDir, 'curation', 'verdicts.json'), 'utf8'));
    expect(summary.candidates).toBeGreaterThan(0);
    expect(await verdictEvents()).toBe(summary.candidates);
    expect(await curateCommand(['verify', '--run', runDir, '--ndcg', '0', '--judge-high', '1'], quiet)).toBe(
      0,
    );
    expect(await verdictEvents()).toBe(summary.candidates);
  }, 120_000);
});
