// TRL's GRPOTrainer (tag mode) against serve-env --workers 2 under faults, at full size: the test
// python/tests/test_trl_faults.py (a worker killed, the judge failing every 4th call, a stalled
// client), run with TRL_FAULTS_STEPS steps (default 12; `npm run test:python` runs it at 3), its
// FAULT-FIGURES line returned as the figure. Skipped, saying why, without the pinned Python
// environment (scripts/python-env.sh).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchPython } from '../python-env';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MARK = 'FAULT-FIGURES ';

export async function trlFaults(steps: number): Promise<Record<string, unknown>> {
  const found = benchPython();
  if ('reason' in found) return { figure: 'trl_faults', skipped: found.reason };
  const python = found.python;
  const started = performance.now();
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
    (resolve) =>
      execFile(
        python,
        ['-m', 'pytest', 'python/tests/test_trl_faults.py', '-q', '-s', '-p', 'no:cacheprovider'],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            TRL_FAULTS_STEPS: String(steps),
            PYTHONPATH: join(ROOT, 'python', 'src'),
            SEARCHER_RL_PYTHON: python,
          },
          maxBuffer: 64 * 1024 * 1024,
          timeout: 30 * 60_000,
        },
        (error, out, err) =>
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
            stdout: out,
            stderr: err,
          }),
      ),
  );
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  const wallS = Number(((performance.now() - started) / 1000).toFixed(1));
  if (code !== 0 || !line)
    return {
      figure: 'trl_faults',
      steps,
      passed: false,
      exitCode: code,
      tail: `${stdout}\n${stderr}`.trim().split('\n').slice(-8).join('\n'),
      pytestWallS: wallS,
    };
  return { figure: 'trl_faults', passed: true, ...JSON.parse(line.slice(MARK.length)), pytestWallS: wallS };
}
