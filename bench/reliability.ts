// The reliability figures (docs/reliability.md): crash/resume of the CLI trainer, a fault run of
// 1,000 episodes through local servers injecting faults, bad input, and a secret canary.
// Prints one JSON line per figure. RELIABILITY_KILLS sets the number of kills (default 20);
// RELIABILITY_ONLY=crash,faults,bad-input,secrets,cli runs a subset.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crashResume } from './reliability/crash-resume';
import { faultRun } from './reliability/faults';
import { secrets } from './reliability/secrets';
import { badInput } from './reliability/bad-input';
import { cliHostileInput } from './reliability/cli';

const only = new Set((process.env.RELIABILITY_ONLY ?? 'crash,faults,bad-input,secrets,cli').split(','));
const root = await mkdtemp(join(tmpdir(), 'searcher-rl-reliability-'));
try {
  if (only.has('faults'))
    console.log(
      JSON.stringify(
        await faultRun(
          join(root, 'faults'),
          Number(process.env.RELIABILITY_EPISODES ?? 1000),
          Number(process.env.RELIABILITY_FAULT_RATE ?? 0.1),
        ),
      ),
    );
  if (only.has('bad-input')) console.log(JSON.stringify(await badInput(join(root, 'bad-input'))));
  if (only.has('cli')) console.log(JSON.stringify(await cliHostileInput(join(root, 'cli'))));
  if (only.has('secrets')) console.log(JSON.stringify(await secrets(join(root, 'secrets'))));
  if (only.has('crash'))
    console.log(
      JSON.stringify(await crashResume(join(root, 'crash'), Number(process.env.RELIABILITY_KILLS ?? 20))),
    );
} finally {
  await rm(root, { recursive: true, force: true });
}
