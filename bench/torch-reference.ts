// The PyTorch side of `npm run bench:training`: the same model's training step and KV-cached sampling
// in PyTorch, run as separate processes at each thread count.
//
// The anchor is the current PyTorch (2.15, python/requirements.txt) from the pinned environment the
// Python tests use: BENCH_PYTHON if set, else `$SEARCHER_RL_VENV/bin/python`, else the environment
// scripts/python-env.sh creates (.cache/python-env). It runs bench/torch_reference.py eager and
// compiled (torch.compile; BENCH_TORCH_COMPILE=0 leaves it out) at 1 and 2 threads, and at 2
// threads eager also with OpenMP's idle threads asleep (OMP_WAIT_POLICY=PASSIVE, as compiled
// always runs); ratios are against its best setting. Debian's python3-torch (1.13), when /usr/bin/python3 has it, runs the
// earlier anchor (bench/torch_reference_legacy.py) beside it, printed as `debian_torch_*`.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchPython } from './python-env';

/** One setting's figures. */
export interface TorchFigures {
  threads: number;
  setting: string;
  train: number;
  rollout: number;
}

export interface TorchShape {
  vocab: number;
  model: { layers: number; width: number; heads: number; contextLength: number };
  train: { batch: number; length: number; scoredFrom: number };
  rollout: { rollouts: number; promptLength: number; generate: number };
  threads: number[];
  minSeconds: number;
  minRepeats: number;
}

/**
 * One way of running the script. `env`: extra environment (OMP_WAIT_POLICY: whether OpenMP's idle
 * threads spin or sleep; spinning threads on a shared 2-core machine took a 2-thread run from
 * 8,300 to 1,300 training tokens/s in one window, and inductor's OpenMP kernels from 5,000 to
 * 1,800); `pooled`: only where there is a thread pool (2 threads and up).
 */
interface Setting {
  setting: string;
  compile?: boolean;
  env?: Record<string, string>;
  pooled?: boolean;
}

const PASSIVE = { OMP_WAIT_POLICY: 'PASSIVE' };

type Print = (figure: string, value: number, extra?: Record<string, unknown>) => void;
type Line = Record<string, unknown> & { figure: string; value: number };

/** torch's version under `python`, or null when it does not import torch. */
function torchVersion(python: string): string | null {
  try {
    return execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

function runScript(
  python: string,
  script: string,
  config: Record<string, unknown>,
  env: Record<string, string> = {},
): Map<string, Line> {
  const threads = String(config.threads);
  const threadEnv = Object.fromEntries(
    ['OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'BLIS_NUM_THREADS'].map((n) => [
      n,
      threads,
    ]),
  );
  const out = execFileSync(
    python,
    [fileURLToPath(new URL(script, import.meta.url)), JSON.stringify(config)],
    {
      encoding: 'utf8',
      env: { ...process.env, ...threadEnv, ...env },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const lines = out
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Line);
  return new Map(lines.map((line) => [line.figure, line]));
}

function scriptConfig(shape: TorchShape, threads: number): Record<string, unknown> {
  return {
    vocab: shape.vocab,
    context: shape.model.contextLength,
    layers: shape.model.layers,
    width: shape.model.width,
    heads: shape.model.heads,
    threads,
    trainBatch: shape.train.batch,
    trainLength: shape.train.length,
    scoredFrom: shape.train.scoredFrom,
    minSeconds: shape.minSeconds,
    minRepeats: shape.minRepeats,
    ...shape.rollout,
  };
}

/**
 * Runs `script` at each thread count and setting, printing each figure as `<prefix>_*`; the figures,
 * or null where the BLAS is refused (printed as `<prefix>_reference_refused`).
 */
function measureSettings(
  print: Print,
  prefix: string,
  python: string,
  script: string,
  shape: TorchShape,
  settings: Setting[],
): TorchFigures[] | null {
  const results: TorchFigures[] = [];
  let attentionPrinted = false;
  for (const threads of shape.threads) {
    for (const { setting, compile, env, pooled } of settings) {
      if (pooled && threads < 2) continue;
      const figures = runScript(
        python,
        script,
        { ...scriptConfig(shape, threads), ...(compile !== undefined && { compile }) },
        env,
      );
      const blas = figures.get('torch_blas')!;
      const refused = figures.get('torch_refused');
      if (refused) {
        print(`${prefix}_reference_refused`, 0, {
          threads,
          blas: blas.blas,
          library: blas.library,
          reason: refused.reason,
          python,
        });
        return null;
      }
      const attention = figures.get('torch_attention');
      if (attention && !attentionPrinted) {
        attentionPrinted = true;
        print(`${prefix}_attention`, 0, {
          torch: attention.torch,
          train: attention.train,
          decodeGrowing: attention.decodeGrowing,
          decodeStatic: attention.decodeStatic,
          note: attention.note,
        });
      }
      const train = figures.get('torch_train_tokens_per_second')!;
      const rollout = figures.get('torch_rollout_tokens_per_second')!;
      const about = {
        threads,
        setting,
        torch: train.torch,
        blas: blas.blas,
        library: blas.library,
        ...(blas.cpuCapability !== undefined && { cpuCapability: blas.cpuCapability }),
        attention: attention ? 'scaled_dot_product_attention' : 'written out (matmul, mask, softmax, matmul)',
        python,
      };
      const cpu = (line: Line) => ({ tokensPerCpuSecond: line.tokensPerCpuSecond });
      const compiled = (line: Line) =>
        line.compileSeconds !== undefined ? { compileSeconds: line.compileSeconds } : {};
      print(`${prefix}_train_tokens_per_second`, train.value, {
        ...about,
        repeats: train.repeats,
        ...cpu(train),
        ...compiled(train),
      });
      print(`${prefix}_rollout_tokens_per_second`, rollout.value, {
        ...about,
        repeats: rollout.repeats,
        ...cpu(rollout),
        ...compiled(rollout),
      });
      results.push({ threads, setting, train: train.value, rollout: rollout.value });
    }
  }
  return results;
}

/** The anchor's figures per setting (null when skipped or refused, reported), and Debian's 1.x beside it. */
export function measureTorch(
  print: Print,
  shape: TorchShape,
): { anchor: TorchFigures[] | null; debian: TorchFigures[] | null } {
  let anchor: TorchFigures[] | null = null;
  const found = benchPython();
  const version = 'python' in found ? torchVersion(found.python) : null;
  if (!('python' in found)) print('torch_reference_skipped', 0, { reason: found.reason });
  else if (!version)
    print('torch_reference_skipped', 0, {
      reason: `${found.python} (${found.source}) does not import torch: rebuild it with scripts/python-env.sh`,
    });
  else {
    const settings: Setting[] = [
      { setting: 'eager', compile: false },
      { setting: 'eager, OMP_WAIT_POLICY=PASSIVE', compile: false, env: PASSIVE, pooled: true },
      ...(process.env.BENCH_TORCH_COMPILE === '0'
        ? []
        : [{ setting: 'compiled, OMP_WAIT_POLICY=PASSIVE', compile: true, env: PASSIVE }]),
    ];
    anchor = measureSettings(print, 'torch', found.python, './torch_reference.py', shape, settings);
  }
  let debian: TorchFigures[] | null = null;
  const debianVersion = torchVersion('/usr/bin/python3');
  if (!debianVersion)
    print('debian_torch_skipped', 0, {
      reason:
        "/usr/bin/python3 does not import torch (Debian's python3-torch 1.13 not installed): no earlier-anchor figure",
    });
  else if (!debianVersion.startsWith('1.'))
    print('debian_torch_skipped', 0, {
      reason: `/usr/bin/python3 has torch ${debianVersion}, not Debian's 1.x: the anchor covers it`,
    });
  else
    debian = measureSettings(
      print,
      'debian_torch',
      '/usr/bin/python3',
      './torch_reference_legacy.py',
      shape,
      [{ setting: 'eager' }],
    );
  return { anchor, debian };
}

/** The setting with the most training tokens/s and the one with the most rollout tokens/s. */
export function bestOf(figures: TorchFigures[]): { train: TorchFigures; rollout: TorchFigures } {
  return {
    train: figures.reduce((a, b) => (b.train > a.train ? b : a)),
    rollout: figures.reduce((a, b) => (b.rollout > a.rollout ? b : a)),
  };
}
