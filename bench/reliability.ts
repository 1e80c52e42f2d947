// The reliability figures (docs/reliability.md): crash/resume of the CLI trainer, a fault run of
// 1,000 episodes through local servers injecting faults, bad input, a secret canary, and the
// hostile-input classes (ICD records, checkpoints and data files, credentials, paths and bodies, serve-env's clients, the CLI), the data-centric loop's checks and TRL under faults (TRL_FAULTS_STEPS, default 12). Prints one JSON line per
// figure. RELIABILITY_KILLS sets the number of kills (default 20); RELIABILITY_ONLY=a,b runs a
// subset of the names below (all by default).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crashResume } from './reliability/crash-resume';
import { faultRun } from './reliability/faults';
import { secrets } from './reliability/secrets';
import { badInput } from './reliability/bad-input';
import { icdReliability } from './reliability/icd';
import { files } from './reliability/files';
import { trust } from './reliability/trust';
import { serverReliability } from './reliability/server';
import { cliHostileInput } from './reliability/cli';
import { trackersReliability } from './reliability/trackers';
import { curationReliability } from './reliability/curation';
import { trlFaults } from './reliability/trl-faults';

const figures: Record<string, (dir: string) => Promise<unknown>> = {
  faults: (dir) =>
    faultRun(
      dir,
      Number(process.env.RELIABILITY_EPISODES ?? 1000),
      Number(process.env.RELIABILITY_FAULT_RATE ?? 0.1),
    ),
  'bad-input': badInput,
  secrets,
  icd: icdReliability,
  files,
  trust,
  server: () => serverReliability(),
  cli: cliHostileInput,
  trackers: (dir) => trackersReliability(dir, Number(process.env.RELIABILITY_TRACKER_FAULT_RATE ?? 0.2)),
  curation: curationReliability,
  crash: (dir) => crashResume(dir, Number(process.env.RELIABILITY_KILLS ?? 20)),
  'trl-faults': () => trlFaults(Number(process.env.TRL_FAULTS_STEPS ?? 12)),
};

const only = process.env.RELIABILITY_ONLY?.split(',') ?? Object.keys(figures);
const unknown = only.filter((name) => !(name in figures));
if (unknown.length > 0) {
  console.error(
    `unknown RELIABILITY_ONLY name(s): ${unknown.join(', ')}; known: ${Object.keys(figures).join(', ')}`,
  );
  process.exit(2);
}
const root = await mkdtemp(join(tmpdir(), 'searcher-rl-reliability-'));
try {
  for (const name of Object.keys(figures))
    if (only.includes(name)) console.log(JSON.stringify(await figures[name]!(join(root, name))));
} finally {
  await rm(root, { recursive: true, force: true });
}
