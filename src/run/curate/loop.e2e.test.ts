import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curateCommand } from '../../cli/curate';
import { loadRunConfig, parseRunConfig } from '../config';
import type { RunProgress } from '../progress';
import { trainRun } from '../run';

// Issue 25, the data-centric loop in full (docs/method.md#focused-rounds), on runs of both kinds. A run on your own questions where one
// question's golden page is wrong (a page that exists but says something else), and a slide run.
// biome-ignore lint/suspicious/noExplicitAny: the example YAML is edited field by field below.
type RawConfig = Record<string, any>;
const root = resolve(import.meta.dirname, '../../..');
const example = join(root, 'examples/own-data');
let dir = '';
const lines: string[] = [];
const finished: string[] = [];
const context = {
  onLog: (line: string) => lines.push(line),
  onProgress: (event: RunProgress) => {
    if (event.finished) finished.push(`${event.task} ${event.done}/${event.total}`);
  },
};
const curate = (...argv: string[]) => curateCommand(argv, context);
const json = async (path: string) => JSON.parse(await readFile(path, 'utf8'));
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** The example's questions with acme-revenue's golden page swapped for Initech's (it says nothing about Acme). */
async function questionsWithWrongGoldenPage(): Promise<string> {
  const rows = (await readFile(join(example, 'questions.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { uid: string; golden: string[] });
  for (const row of rows) if (row.uid === 'acme-revenue') row.golden = ['initech_1.png'];
  const path = join(dir, 'questions.jsonl');
  await writeFile(path, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return path;
}

/** The example config's search engine on the example's pages, its index in this test's folder. */
const examplePagesEngine = (raw: RawConfig) => ({
  ...raw.searcher.adapters.searchEngine,
  pagesDir: join(example, 'pages'),
  dbPath: join(dir, 'pages.sqlite'),
});

async function dataRunConfig(runId: string, extra: RawConfig = {}) {
  const { sft, ...raw } = parseYaml(await readFile(join(example, 'config.yaml'), 'utf8')) as RawConfig;
  return parseRunConfig({
    ...raw,
    // A run from a checkpoint has no warm start; otherwise no warm start either, as a fresh policy
    // (the case of the issue: every question in bucket 0, where nothing was verified before).
    ...(extra.policy?.initFrom ? {} : { sft: { ...sft, demonstrations: 0 } }),
    runsDir: join(dir, 'runs'),
    runId,
    dataset: { path: await questionsWithWrongGoldenPage() },
    policy: { ...raw.policy, rollouts: 'tfjs', coalesceSessions: false, ...extra.policy },
    // Two steps of three questions: every question is seen in each phase.
    phases: raw.phases.map((p: Record<string, unknown>) => ({ ...p, steps: 2 })),
    searcher: {
      ...raw.searcher,
      adapters: {
        ...raw.searcher.adapters,
        searchEngine: examplePagesEngine(raw),
      },
    },
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'curate-loop-'));
});
afterAll(async () => {
  if (!process.env.KEEP) await rm(dir, { recursive: true, force: true });
});

describe('a wrong golden page is caught by verification and kept out of round 1', () => {
  it('bucket 0 is reviewed with the golden page: the wrong one is GT_ERROR, the others GT_OK, and round 1 leaves it out', async () => {
    const { runDir } = await trainRun(await dataRunConfig('wrong-golden'), context);
    // A fresh policy finds no golden page: every question is in bucket 0, where no rollout is ever a
    // candidate (they need NDCG >= 0.5), so before this review nothing was verified at all.
    expect(await curate('buckets', '--run', runDir)).toBe(0);
    expect((await json(join(runDir, 'curation', 'buckets.json'))).counts['0']).toBe(6);
    expect(await curate('verify', '--run', runDir)).toBe(0);
    // Verification reports progress (a line that fills as the golden pages are checked).
    expect(finished).toContain('verifying 6/6');
    const verdicts = await json(join(runDir, 'curation', 'verdicts.json'));
    const label = (uid: string) => verdicts.verdicts.find((v: { promptUid: string }) => v.promptUid === uid);
    expect(label('acme-revenue')).toMatchObject({
      reason: 'bucket0_review',
      label: 'GT_ERROR',
      detail: {
        goldenPages: ['initech_1.png'],
        reference: '4.5 billion dollars',
      },
    });
    // What the generator read from Initech's page (the example's extractive reader) is not the reference.
    expect(label('acme-revenue').detail.goldenAnswer).not.toMatch(/4\.5 billion/);
    expect(label('acme-headcount')).toMatchObject({ reason: 'bucket0_review', label: 'GT_OK' });
    expect(verdicts.bucket0).toMatchObject({ reviewed: 6 });
    expect(lines.some((l) => /bucket 0 reviewed with the golden page: 6, removed [1-6]/.test(l))).toBe(true);

    expect(await curate('rounds', '--run', runDir, '--round', '1')).toBe(0);
    const round1 = await json(join(runDir, 'curation', 'focused_round1.json'));
    expect(round1.promptUids).not.toContain('acme-revenue');
    expect(round1.promptUids).toContain('acme-headcount');
    expect(round1.excluded).toContainEqual({ promptUid: 'acme-revenue', label: 'GT_ERROR' });
    const dataset = await readFile(join(runDir, 'curation', 'focused_round1.jsonl'), 'utf8');
    expect(dataset).not.toContain('acme-revenue');
  }, 300_000);
});

describe('curate loop on a run on your own data that started from a checkpoint (policy.initFrom)', () => {
  it('verifies, trains rounds 1, 2 (from round 1 results) and 3, and writes each round as a ready config', async () => {
    const first = await trainRun(await dataRunConfig('base'), context);
    const config = await dataRunConfig('from-checkpoint', {
      policy: { initFrom: join(first.runDir, 'phase2') },
    });
    const { runDir } = await trainRun(config, context);
    lines.length = 0;
    finished.length = 0;
    expect(await curate('loop', '--run', runDir, '--steps', '1')).toBe(0);
    // The loop's long steps each report progress.
    expect(finished).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^verifying /),
        'focused-round1 1/1',
        'focused-round2 1/1',
        'focused-round3 1/1',
      ]),
    );
    for (const storeRun of ['focused-round1', 'focused-round2', 'focused-round3'])
      expect(await exists(join(runDir, storeRun, 'trajectory.jsonl')), storeRun).toBe(true);
    const round1 = await json(join(runDir, 'curation', 'focused_round1.json'));
    const round2 = await json(join(runDir, 'curation', 'focused_round2.json'));
    const round3 = await json(join(runDir, 'curation', 'focused_round3.json'));
    expect(round1.promptUids).not.toContain('acme-revenue');
    // Round 2 is round 1's prompts that scored <= 0.3 in round 1's own rollouts.
    expect(round2.counts.previous).toBe(round1.promptUids.length);
    expect(lines.some((l) => l.startsWith('focused_round2:') && l.includes('from focused-round1'))).toBe(
      true,
    );
    expect(round3.promptUids).toEqual(round2.promptUids);
    // The fresh policy has no successes to distill: round 3 starts from round 2 and says so.
    expect(lines.some((l) => l.startsWith('no rare successes to distill'))).toBe(true);
    const ready = await loadRunConfig(join(runDir, 'curation', 'focused_round3.config.yaml'));
    expect(ready.policy?.initFrom).toBe(resolve(runDir, 'focused-round2'));
    expect(ready.searcher.rl.nAgent).toBe(16);
    expect(ready.searcher.episode.maxTurns).toBe(15);
    expect(ready.trainer.batchSize).toBe(Math.min(32, round3.promptUids.length));
    expect(ready.phases).toMatchObject([{ name: 'focused-round3', weights: 'focused' }]);
    const loop = await json(join(runDir, 'curation', 'loop.json'));
    expect(loop.round1.config).toBe(join(runDir, 'curation', 'focused_round1.config.yaml'));
    // Round 2 on its own from the loop's round-1 results; round 3 needs the distilled checkpoint, which this run has none of.
    expect(await curate('rounds', '--run', runDir, '--round', '2')).toBe(0);
    expect((await json(join(runDir, 'curation', 'focused_round2.json'))).promptUids).toEqual(
      round2.promptUids,
    );
    const refused = await curate('rounds', '--run', runDir, '--round', '3').catch((e: Error) => e);
    expect(String(refused)).toMatch(/--round.*sft-distilled/);
    // Run again, the loop replaces what it wrote: the same records, not twice as many.
    const count = async (path: string) => (await readFile(path, 'utf8')).trim().split('\n').length;
    const before = await Promise.all(
      ['focused-round1/trajectory.jsonl', 'focused-round3/trajectory.jsonl', 'curation/event.jsonl'].map(
        (f) => count(join(runDir, f)),
      ),
    );
    expect(await curate('loop', '--run', runDir, '--steps', '1')).toBe(0);
    expect(
      await Promise.all(
        ['focused-round1/trajectory.jsonl', 'focused-round3/trajectory.jsonl', 'curation/event.jsonl'].map(
          (f) => count(join(runDir, f)),
        ),
      ),
    ).toEqual(before);
  }, 300_000);
});

const run = promisify(execFile);

describe('curate loop on a slide run', () => {
  it('distills the rounds rare successes, SFTs, starts round 3 from that checkpoint; the ready config runs with train --config', async () => {
    const config = parseRunConfig({
      runsDir: join(dir, 'runs'),
      runId: 'slides',
      // No small print: this 1-layer policy, a step a round, finds no small-print fact to crop,
      // and the loop needs rare successes among the hard questions to distill (corpus seeds 3-6
      // leave some after one step; seeds 1 and 2 of the corpus with pointer lines left none).
      corpus: {
        seed: 3,
        decks: 12,
        minSlides: 5,
        maxSlides: 6,
        smallPrintRate: 0,
        cacheDir: join(dir, 'corpus'),
      },
      policy: {
        layers: 1,
        width: 32,
        heads: 2,
        contextLength: 256,
        backend: 'wasm',
        rollouts: 'tfjs',
        coalesceSessions: false,
      },
      // The slide oracle's demonstrations (not the default rejection sampling): the loop's mechanics
      // need a warm start that leaves rare successes after one step, which this tiny policy gets from
      // the oracle's 400 episodes.
      sft: { demonstrator: 'oracle', demonstrations: 400, epochs: 6, batchSize: 8 },
      phases: [
        { name: 'phase1', steps: 1, weights: 'phase1' },
        { name: 'phase2', steps: 1, weights: 'default' },
      ],
      trainer: { batchSize: 8, saveFreq: 1 },
      searcher: {
        episode: {
          instructions: '',
          maxTurns: 3,
          maxTurnTokens: 24,
          maxContextTokens: 256,
          observationMaxChars: 40,
        },
        rl: { nAgent: 4 },
      },
      evaluation: { limit: 4 },
    });
    const { runDir } = await trainRun(config, context);
    lines.length = 0;
    expect(await curate('loop', '--run', runDir, '--steps', '1')).toBe(0);
    const loop = await json(join(runDir, 'curation', 'loop.json'));
    expect(loop.distilled.rows).toBeGreaterThan(0);
    expect(loop.sft.examples).toBe(loop.distilled.rows);
    expect(await exists(join(runDir, 'sft-distilled', 'checkpoint.jsonl'))).toBe(true);
    const path = join(runDir, 'curation', 'focused_round3.config.yaml');
    const ready = await loadRunConfig(path);
    expect(ready.policy?.initFrom).toBe(resolve(runDir, 'sft-distilled'));
    // The command builds round 3 the same way on its own once the checkpoint exists.
    expect(await curate('rounds', '--run', runDir, '--round', '3')).toBe(0);
    expect((await loadRunConfig(path)).policy?.initFrom).toBe(resolve(runDir, 'sft-distilled'));
    // The slide environment's ports, made explicit: the ready config is a run on its own.
    expect(ready.searcher.adapters.generator).toMatchObject({ type: 'slide-reader' });
    const tsx = join(root, 'node_modules', '.bin', 'tsx');
    const { stdout } = await run(tsx, [join(root, 'src/cli/main.ts'), 'train', '--config', path], {
      cwd: dir,
    });
    expect(stdout).toMatch(/warm start: sft-distilled\//);
    expect(
      await exists(join(dir, 'runs', 'slides-focused-round3', 'focused-round3', 'trajectory.jsonl')),
    ).toBe(true);
  }, 300_000);
});

/** A run on the example's questions whose rollouts follow `scripts` (one per rollout index): every episode is scored. */
async function scriptedRun(runId: string, scripts: string[][], searcher: RawConfig = {}) {
  const raw = parseYaml(await readFile(join(example, 'config.yaml'), 'utf8')) as RawConfig;
  const { policy: _own, ...rest } = raw;
  return trainRun(
    parseRunConfig({
      ...rest,
      runsDir: join(dir, 'runs'),
      runId,
      dataset: { path: join(example, 'questions.jsonl') },
      phases: raw.phases.map((p: Record<string, unknown>) => ({ ...p, steps: 2 })),
      searcher: {
        ...raw.searcher,
        ...searcher,
        // Room for a whole scripted turn (the example's 24 tokens cut the longer ones); no
        // instructions (a named policy gets the protocol's, which do not fit the 256-token context).
        episode: { ...raw.searcher.episode, maxTurnTokens: 48, instructions: '', ...searcher.episode },
        adapters: {
          ...raw.searcher.adapters,
          searchEngine: examplePagesEngine(raw),
          policy: { type: 'scripted', script: scripts },
        },
      },
    }),
    context,
  );
}
const sftRows = async (runDir: string) =>
  (await readFile(join(runDir, 'curation', 'sft.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: string }> });

describe('curate distill', () => {
  it('drops a successful rollout whose <think> holds an action tag (the parser accepts it as a valid turn)', async () => {
    const polluted = '<think>use <bbox> then</think><search>Acme revenue 2019</search>';
    const { runDir } = await scriptedRun('polluted', [
      [polluted, '<think>b</think><search_complete>true</search_complete>'],
      [
        '<think>a</think><search>Acme revenue 2019</search>',
        '<think>b</think><search_complete>true</search_complete>',
      ],
    ]);
    expect(await curate('distill', '--run', runDir, '--max-success-rate', '1')).toBe(0);
    const rows = await sftRows(runDir);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.flatMap((r) => r.messages.map((m) => m.content)).some((c) => c.includes('<bbox>'))).toBe(
      false,
    );
    const counts = await json(join(runDir, 'curation', 'distill.json'));
    expect(counts.excludedActionTagInThink).toBeGreaterThan(0);
    expect(counts.rows).toBe(counts.selected - counts.excludedActionTagInThink);
  }, 300_000);

  it('distills a Search-R1-layout run (answer mode, no judge) with the reward as the success signal', async () => {
    const search = '<think>a</think><search>Acme revenue 2019</search>';
    const { runDir } = await scriptedRun(
      'answer-mode',
      [
        [search, '<think>b</think><answer>4.5 billion dollars</answer>'],
        [search, '<think>b</think><answer>no idea</answer>'],
      ],
      { episode: { mode: 'answer' }, reward: { scheme: 'search-r1' } },
    );
    expect(await curate('distill', '--run', runDir)).toBe(0);
    const rows = await sftRows(runDir);
    // acme-revenue: one exact match in two rollouts (rare); no other question is ever answered.
    expect(rows.length).toBeGreaterThan(0);
    expect(
      rows.every((r) => r.messages.at(-1)!.content.includes('<answer>4.5 billion dollars</answer>')),
    ).toBe(true);
  }, 300_000);
});
