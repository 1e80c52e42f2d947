import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The Python interpreter a bench runs, as the Python tests find it: BENCH_PYTHON if set, else
 * `$SEARCHER_RL_VENV/bin/python`, else the environment `scripts/python-env.sh` makes
 * (`.cache/python-env`); `source` says which. A reason naming the path and the remedy when it is
 * not there.
 */
export function benchPython(): { python: string; source: string } | { reason: string } {
  if (process.env.BENCH_PYTHON) {
    const python = process.env.BENCH_PYTHON;
    return existsSync(python)
      ? { python, source: 'BENCH_PYTHON' }
      : { reason: `no Python at ${python} (BENCH_PYTHON)` };
  }
  const venv = process.env.SEARCHER_RL_VENV ?? join(ROOT, '.cache', 'python-env');
  const source = process.env.SEARCHER_RL_VENV ? 'SEARCHER_RL_VENV' : 'scripts/python-env.sh';
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python))
    return {
      reason: `no Python environment at ${venv} (${source}): create it with scripts/python-env.sh (python/requirements.txt; several minutes), or set SEARCHER_RL_VENV or BENCH_PYTHON`,
    };
  return { python, source };
}
