// Crash/resume: the CLI trainer (a child process) is killed with SIGKILL at random moments across
// one run folder, then run to the end; the result must equal an uninterrupted run with the same seed.
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRandom } from '../../src/core/random';
import { runOutcome } from '../../test/support/run-outcome';
import { TINY_SEARCHER } from '../../test/support/tiny-run';

const PHASES = ['phase1', 'phase2'];

/** Seconds per run: a tiny corpus and model, two phases with a checkpoint every 2 steps; RELIABILITY_COALESCE=1 decodes groups in shared forwards. */
function tinyConfig(root: string, runId: string) {
  return {
    runsDir: join(root, 'runs'),
    runId,
    corpus: { decks: 4, minSlides: 5, maxSlides: 5, smallPrintRate: 0.5, cacheDir: join(root, 'corpus') },
    policy: {
      layers: 1,
      width: 16,
      heads: 2,
      contextLength: 192,
      backend: 'wasm',
      coalesceSessions: process.env.RELIABILITY_COALESCE === '1',
    },
    sft: { demonstrations: 16, epochs: 3, batchSize: 4 },
    phases: [
      { name: 'phase1', steps: 6, weights: 'phase1' },
      { name: 'phase2', steps: 4, weights: 'default' },
    ],
    trainer: { batchSize: 2, saveFreq: 2 },
    searcher: TINY_SEARCHER,
    evaluation: { limit: 3 },
  };
}

interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last line the trainer printed before it ended (its stage when killed). */
  lastLine: string;
  ms: number;
  /** When the policy line came (imports done, the corpus ready): the work starts there. */
  readyMs: number | null;
}

/** Runs the CLI trainer; with `killAfterReadyMs`, SIGKILL that long after it is ready (its policy line). */
function trainChild(configPath: string, killAfterReadyMs: number | null): Promise<ChildRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'train', '--config', configPath],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let lastLine = '(starting)';
    let readyMs: number | null = null;
    let timer: NodeJS.Timeout | null = null;
    const onData = (chunk: Buffer) => {
      const lines = chunk
        .toString('utf8')
        .split(/[\r\n]+/)
        .filter((l) => l.trim().length > 0);
      if (lines.length > 0) lastLine = lines[lines.length - 1]!.trim();
      if (readyMs === null && lines.some((l) => l.startsWith('policy:'))) {
        readyMs = Date.now() - started;
        if (killAfterReadyMs !== null) timer = setTimeout(() => child.kill('SIGKILL'), killAfterReadyMs);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, lastLine, ms: Date.now() - started, readyMs });
    });
  });
}

/** The stage a kill interrupted, from the trainer's last printed line. */
function stageOf(line: string): string {
  if (/^SFT|warm start/.test(line)) return 'sft';
  if (/evaluating|before RL/.test(line)) return 'evaluation';
  if (/^(corpus|policy|\(starting\))/.test(line)) return 'startup';
  const phase = /^(phase\d)/.exec(line);
  return phase ? `${phase[1]} (rollout, reward, update or checkpoint write)` : 'other';
}

export async function crashResume(root: string, kills: number, seed = 13): Promise<Record<string, unknown>> {
  await mkdir(root, { recursive: true });
  const configFor = async (runId: string) => {
    const path = join(root, `${runId}.json`);
    await writeFile(path, JSON.stringify(tinyConfig(root, runId)));
    return path;
  };
  // The first run builds the corpus cache; the second, timed, is the uninterrupted reference.
  const warmup = await trainChild(await configFor('warmup'), null);
  if (warmup.code !== 0)
    throw new Error(`the uninterrupted run failed (exit ${warmup.code}): ${warmup.lastLine}`);
  const straightRun = await trainChild(await configFor('straight'), null);
  const straight = await runOutcome(join(root, 'runs', 'straight'), PHASES);
  const reproducible =
    JSON.stringify((await runOutcome(join(root, 'runs', 'warmup'), PHASES)).outcome) ===
    JSON.stringify(straight.outcome);
  // Kill moments: seeded delays after each attempt's policy line.
  // A folder whose run ends before its kill is checked and a new folder started.
  const random = createRandom(seed);
  const work = straightRun.ms - (straightRun.readyMs ?? 0);
  const stages: Record<string, number> = {};
  const failures: string[] = [];
  const folders: Array<{ runId: string; kills: number; equal: boolean; stepsComplete: boolean }> = [];
  let killed = 0;
  let folderKills = 0;
  let runId = 'crashed-1';
  let config = await configFor(runId);
  const finishFolder = async () => {
    const resumed = await runOutcome(join(root, 'runs', runId), PHASES);
    folders.push({
      runId,
      kills: folderKills,
      equal: JSON.stringify(resumed.outcome) === JSON.stringify(straight.outcome),
      stepsComplete: PHASES.every(
        (p) => JSON.stringify(resumed.steps[p]) === JSON.stringify(straight.steps[p]),
      ),
    });
  };
  for (let attempt = 0; killed < kills && attempt < 3 * kills; attempt++) {
    // Short delays, so that the kills fall one after another through one folder's run (each resume
    // goes on from where the last one was killed), at least long enough to get past any one stage.
    const at = Math.round(random.nextFloat() * Math.max(800, (3 * work) / kills));
    const run = await trainChild(config, at);
    if (run.signal === 'SIGKILL') {
      killed++;
      folderKills++;
      const stage = stageOf(run.lastLine);
      if (process.env.RELIABILITY_DEBUG) console.error(`killed ${at} ms after ready: ${run.lastLine}`);
      stages[stage] = (stages[stage] ?? 0) + 1;
    } else if (run.code === 0) {
      await finishFolder();
      runId = `crashed-${folders.length + 1}`;
      config = await configFor(runId);
      folderKills = 0;
    } else failures.push(`${runId} attempt ${attempt + 1} exited ${run.code}: ${run.lastLine}`);
  }
  if (folderKills > 0) {
    const final = await trainChild(config, null);
    if (final.code === 0) await finishFolder();
    else failures.push(`${runId}: the final run exited ${final.code}: ${final.lastLine}`);
  }
  return {
    figure: 'crash-resume',
    coalesceSessions: process.env.RELIABILITY_COALESCE === '1',
    killsAsked: kills,
    killed,
    killedAt: stages,
    uninterruptedMs: straightRun.ms,
    readyMs: straightRun.readyMs,
    uninterruptedReproducible: reproducible,
    folders: folders.length,
    killedFoldersEqualUninterrupted: folders.filter((f) => f.kills > 0 && f.equal).length,
    killedFolders: folders.filter((f) => f.kills > 0).length,
    noDuplicateOrMissingStep: folders.every((f) => f.stepsComplete),
    allEqual: folders.every((f) => f.equal),
    failures,
  };
}
