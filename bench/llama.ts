// The Llama engine (searcher-rl/llama, ONNX Runtime) on SmolLM2-135M-Instruct against PyTorch
// 2.15 on the same model and the same float32 weights (transformers dequantises the same GGUF;
// SDPA attention, peft for LoRA), side by side in one run: rollout tokens/s, LoRA and full
// training tokens/s, the peak RSS of each workload and the model's load time. One JSON line per
// figure, then the ratios (ours at its best thread count / PyTorch at its best).
//
// Workloads, identical on both sides:
// - rollout: ROLLOUT.rows copies of one ChatML prompt (the model's own template, 64 tokens), each
//   sampling exactly ROLLOUT.newTokens new tokens (temperature 1, top-p 1, no stop); tokens/s =
//   rows x newTokens / the wall time of the whole turn, prefill included (median of ROLLOUT.timed
//   turns after one warm-up turn of ROLLOUT.warmupTokens). PyTorch: `model.generate(do_sample,
//   min_new_tokens = max_new_tokens, use_cache)`; ours: `begin` + `generateTurn`, and a row that
//   samples end-of-sequence early goes on in another turn until it has its tokens
//   (min_new_tokens masks EOS out instead; `eosContinuations` counts ours). Both without an
//   adapter (ours `finetune: 'none'`, PyTorch the plain model).
// - lora / full training step: a fixed batch of random token ids (TRAIN_SEED) of TRAIN.length
//   tokens, every position after the first scored, loss = mean negative log-likelihood, one AdamW
//   step (lr 1e-4, weight decay 0, gradient norm clipped at 1: the policy's default); tokens/s =
//   rows x length / the median of TIMED_STEPS steps after WARMUP_STEPS. LoRA: rank 8, alpha 16 on
//   q/k/v/o_proj (peft's get_peft_model on the PyTorch side). Ours: `policy.update(batch, lossFn)`
//   with the core's `sftLossFunction` (its constant gradient declared, so each chunk's forward and
//   backward run in one pass; default maxChunkTokens, 1024: a batch over it runs in chunks), then
//   the same steps with the gradient not declared, as an RL loss runs (`*_two_pass_*`: every
//   forward, the loss, then the backwards), then an RL loss on policy, as a GRPO step's first
//   update runs (`*_on_policy_*`: PPO's unclipped gradient, anticipating the rollout's log-probs,
//   scored untimed before each step: one run a chunk, a second where the anticipated gradient was
//   off, `corrected` counts those); PyTorch: python/scripts/llama_bench.py (forward,
//   cross-entropy, backward, AdamW).
//
// - llama-cpp: the rollout workload (same prompt ids, rows, new tokens and EOS continuations) on
//   three sides at the same thread count (BENCH_LLAMA_CPP_THREADS, default 2): ours, PyTorch and
//   node-llama-cpp (llama.cpp 3.21.1's prebuilt CPU binary, src/adapters/llama/llama-cpp-rollouts.ts:
//   top-k and top-p off, a seed a token from each rollout's stream). The sides do not compute the
//   same numbers: ours and PyTorch run float32 weights dequantised from the GGUF; llama.cpp runs
//   the GGUF's Q4_1 (Q8_0 embeddings) blocks as they are, quantising activations to 8 bits for
//   its dot products. `llama_cpp_logprob_abs_diff` says how far apart that puts them: after its
//   timed turns the llama-cpp child scores its last repeat's rows (rows x newTokens tokens) with
//   ours (`logProbs`, the training engine's log-probs) and prints the largest and the mean absolute
//   difference from the log-probs llama.cpp sampled with. The policy's `rollouts: 'llama-cpp'`
//   records the trainer's log-probs instead (one `logProbs` a turn): that scoring's time (second
//   call, warm) is `rescoreSeconds`, and `llama_cpp_rollout_with_rescore_tokens_per_s` counts it.
//   Without node-llama-cpp installed (an optional peer dependency) its side prints an `error` line.
//
// Sizes: the 8x256 batches at 1 and 2 threads, 4 steps each, take ~30 minutes on this
// 2-core machine; by default both training batches are TRAIN_ROWS_DEFAULT x256 (every line says its
// `batch`), near 10 minutes. BENCH_LLAMA_TRAIN_ROWS=8 BENCH_LLAMA_FULL_ROWS=4 runs the sizes.
//
// Each (side, workload, threads) is its own child process (bench/llama-child.ts), so its peak RSS (Node's
// resourceUsage().maxRSS, Python's ru_maxrss) is that workload's, load included; `stepPeakRssMb`
// is the peak from just after the load (Linux's VmHWM reset through /proc/self/clear_refs).
// Threads: ours at intraOpThreads 1 and 2, PyTorch at torch.set_num_threads 1 and 2 (and
// OMP_NUM_THREADS likewise). PyTorch's first child reads the GGUF (its load time is
// `llama_load_seconds` with `loadedFrom: gguf`) and saves the dequantised model; later children load
// that copy (transformers' GGUF reader takes ~25 s a child here). Without the model file or the
// Python environment it prints one `skipped` line.
//
// Environment: SEARCHER_RL_MODELS (the models folder, default .cache/models; scripts/fetch-models.sh
// fills it), BENCH_PYTHON (else $SEARCHER_RL_VENV/bin/python, else .cache/python-env/bin/python),
// BENCH_LLAMA_TRAIN_ROWS / BENCH_LLAMA_FULL_ROWS (batch rows of LoRA / full training),
// BENCH_LLAMA_THREADS (e.g. `2`; default `1,2`), BENCH_LLAMA_CPP_THREADS (the llama-cpp workload's,
// default `2`), BENCH_LLAMA_WORKLOADS (e.g. `lora,full`; default `rollout,llama-cpp,lora,full`,
// llama-cpp only where node-llama-cpp is installed),
// BENCH_LLAMA_CHILD_TIMEOUT_S (one child's limit, default 420).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRandom } from '../src/core/random';
import type { ChildConfig, ChildResult, ChildWorkload, Side } from './llama-child';
import { benchPython } from './python-env';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf';
/** The warm-up turn samples a few tokens: it builds the decode session and runs prefill and decode once. */
const ROLLOUT = { rows: 16, newTokens: 64, warmupTokens: 4, timed: 3 };
/** With the chat template's system message, ~64 prompt tokens; a long answer, so that EOS seldom comes before 64. */
const PROMPT_TEXT =
  "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle on a stormy night. Describe the sea, the storm and the keeper's thoughts.";
const TRAIN_ROWS_DEFAULT = 2;
const TRAIN = {
  length: 256,
  loraRows: Number(process.env.BENCH_LLAMA_TRAIN_ROWS ?? TRAIN_ROWS_DEFAULT),
  fullRows: Number(process.env.BENCH_LLAMA_FULL_ROWS ?? TRAIN_ROWS_DEFAULT),
};
const TRAIN_SEED = 20_251;
const WARMUP_STEPS = 1;
const TIMED_STEPS = 3;
const LORA = { rank: 8, alpha: 16, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const };
const LEARNING_RATE = 1e-4;
const THREADS = [
  ...new Set(
    (process.env.BENCH_LLAMA_THREADS ?? '1,2').split(',').map((n) => Math.min(Number(n), cpus().length)),
  ),
];
const LLAMA_CPP_THREADS = [
  ...new Set(
    (process.env.BENCH_LLAMA_CPP_THREADS ?? '2').split(',').map((n) => Math.min(Number(n), cpus().length)),
  ),
];
const ALL_WORKLOADS = ['rollout', 'llama-cpp', 'lora', 'full'] as const;
/** BENCH_LLAMA_WORKLOADS: a comma-separated subset of rollout, llama-cpp, lora, full (default all four, llama-cpp when installed). */
const llamaCppInstalled = (() => {
  try {
    createRequire(import.meta.url).resolve('node-llama-cpp');
    return true;
  } catch {
    return false;
  }
})();
/** By default the llama-cpp workload runs only where node-llama-cpp is installed (an optional peer dependency). */
const DEFAULT_WORKLOADS = ALL_WORKLOADS.filter((w) => w !== 'llama-cpp' || llamaCppInstalled);
const WORKLOADS = (process.env.BENCH_LLAMA_WORKLOADS ?? DEFAULT_WORKLOADS.join(',')).split(',').map((w) => {
  const known = ALL_WORKLOADS.find((k) => k === w);
  if (!known) throw new Error(`BENCH_LLAMA_WORKLOADS: '${w}' is not one of ${ALL_WORKLOADS.join(', ')}`);
  return known;
});
const CHILD_TIMEOUT_MS = Number(process.env.BENCH_LLAMA_CHILD_TIMEOUT_S ?? 420) * 1000;

type Workload = (typeof ALL_WORKLOADS)[number];

const print = (line: Record<string, unknown>) => console.log(JSON.stringify({ bench: 'llama', ...line }));
const round = (value: number) => Number(value.toPrecision(4));
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

// --- the driver ------------------------------------------------------------------------------------

function modelPath(): string {
  return join(process.env.SEARCHER_RL_MODELS ?? join(ROOT, '.cache', 'models'), MODEL_FILE);
}

/** The bench's Python interpreter (`benchPython`) when it imports torch, transformers, peft and gguf, or why not. */
function llamaPython(): { python: string } | { reason: string } {
  const found = benchPython();
  if ('reason' in found) return found;
  try {
    execFileSync(found.python, ['-c', 'import torch, transformers, peft, gguf'], { stdio: 'ignore' });
  } catch {
    return {
      reason: `${found.python} does not import torch, transformers, peft and gguf (python/requirements.txt)`,
    };
  }
  return { python: found.python };
}

function runChild(
  side: Side,
  config: ChildConfig,
  folder: string,
  python: string,
): Promise<ChildResult | { error: string }> {
  const file = join(folder, `${side}-${config.workload}-${config.threads}.json`);
  const child = side === 'llama-cpp' ? '--llama-cpp-child' : '--child';
  writeFileSync(file, JSON.stringify(config));
  const threads = String(config.threads);
  const env = {
    ...process.env,
    ...Object.fromEntries(
      ['OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'].map((name) => [name, threads]),
    ),
  };
  const [command, args] =
    side === 'pytorch'
      ? [python, [join(ROOT, 'python', 'scripts', 'llama_bench.py'), file]]
      : [process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'llama-child.ts'), child, file]];
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: ROOT, env, timeout: CHILD_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const line = stdout
          .trim()
          .split('\n')
          .reverse()
          .find((l) => l.startsWith('{'));
        if (error || !line) {
          const tail = stderr.trim().split('\n').slice(-3).join(' | ');
          resolve({ error: `${error ? errorText(error).split('\n')[0] : 'no result line'}: ${tail}` });
          return;
        }
        resolve(JSON.parse(line) as ChildResult);
      },
    );
  });
}

const FIGURE: Record<Workload, string> = {
  rollout: 'llama_rollout',
  'llama-cpp': 'llama_cpp_rollout',
  lora: 'llama_lora_train',
  full: 'llama_full_train',
};

const isRollout = (workload: Workload) => workload === 'rollout' || workload === 'llama-cpp';
const rowsOf = (workload: Workload) =>
  isRollout(workload) ? ROLLOUT.rows : workload === 'lora' ? TRAIN.loraRows : TRAIN.fullRows;
const shapeOf = (workload: Workload) =>
  isRollout(workload)
    ? { rows: ROLLOUT.rows, newTokens: ROLLOUT.newTokens }
    : { batch: `${rowsOf(workload)}x${TRAIN.length}` };

/** A training child's tokens/s on the two-pass path (the loss without its constant gradient), if it measured it. */
function twoPassTokensPerSecond(
  workload: Workload,
  result: ChildResult,
  key: 'twoPassSeconds' | 'onPolicySeconds' = 'twoPassSeconds',
): number | undefined {
  const seconds = result[key];
  if (!Array.isArray(seconds) || seconds.length === 0) return undefined;
  const sorted = [...(seconds as number[])].sort((a, b) => a - b);
  return (rowsOf(workload) * TRAIN.length) / sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const model = modelPath();
  if (!existsSync(model)) {
    print({
      figure: 'llama',
      skipped: `no model at ${model}: run scripts/fetch-models.sh (or set SEARCHER_RL_MODELS)`,
    });
    return;
  }
  const found = llamaPython();
  if ('reason' in found) {
    print({ figure: 'llama', skipped: found.reason });
    return;
  }
  const random = createRandom(TRAIN_SEED);
  const trainIds = Array.from({ length: Math.max(TRAIN.loraRows, TRAIN.fullRows) }, () =>
    Array.from({ length: TRAIN.length }, () => random.nextInt(49_152)),
  );
  const folder = mkdtempSync(join(tmpdir(), 'searcher-rl-bench-llama-'));
  const dequantised = join(folder, 'pytorch-model');
  const results: Record<Workload, Record<Side, Map<number, ChildResult>>> = {
    rollout: { 'searcher-rl': new Map(), pytorch: new Map(), 'llama-cpp': new Map() },
    'llama-cpp': { 'searcher-rl': new Map(), pytorch: new Map(), 'llama-cpp': new Map() },
    lora: { 'searcher-rl': new Map(), pytorch: new Map(), 'llama-cpp': new Map() },
    full: { 'searcher-rl': new Map(), pytorch: new Map(), 'llama-cpp': new Map() },
  };
  let promptIds: number[] | undefined;
  const started = performance.now();
  const loadStart = loadavg()[0]!;
  try {
    for (const workload of WORKLOADS) {
      const shape = shapeOf(workload);
      const childWorkload: ChildWorkload = workload === 'llama-cpp' ? 'rollout' : workload;
      const sides: readonly Side[] =
        workload === 'llama-cpp' ? ['searcher-rl', 'pytorch', 'llama-cpp'] : ['searcher-rl', 'pytorch'];
      // Ours first at the most threads: its prompt ids (the model's chat template) go to the others.
      for (const threads of [...(workload === 'llama-cpp' ? LLAMA_CPP_THREADS : THREADS)].reverse())
        for (const side of sides) {
          const figure = `${FIGURE[workload]}_tokens_per_s`;
          const common = { side, threads, ...shape };
          if (side !== 'searcher-rl' && isRollout(workload) && !promptIds) {
            print({ figure, ...common, error: "no prompt ids: ours' rollout child failed" });
            continue;
          }
          const saved = existsSync(join(dequantised, 'config.json'));
          const config: ChildConfig = {
            model,
            workload: childWorkload,
            threads,
            seed: 0,
            warmup: WARMUP_STEPS,
            repeats: isRollout(workload) ? ROLLOUT.timed : TIMED_STEPS,
            learningRate: LEARNING_RATE,
            lora: LORA,
            rollout: ROLLOUT,
            train: { ids: isRollout(workload) ? [] : trainIds.slice(0, rowsOf(workload)) },
            promptText: PROMPT_TEXT,
            ...(promptIds && { promptIds }),
            ...(side === 'pytorch' && (saved ? { loadFrom: dequantised } : { saveTo: dequantised })),
          };
          const result = await runChild(side, config, folder, found.python);
          if ('error' in result) {
            print({ figure, ...common, error: result.error });
            continue;
          }
          results[workload][side].set(threads, result);
          if (result.promptIds) promptIds = result.promptIds;
          print({
            figure,
            ...common,
            value: round(result.tokensPerSecond),
            medianSeconds: round(result.medianSeconds),
            seconds: result.seconds.map(round),
            ...(result.promptLength !== undefined && { promptLength: result.promptLength }),
            ...(result.eosContinuations !== undefined && { eosContinuations: result.eosContinuations }),
            ...(result.losses !== undefined && { losses: result.losses }),
          });
          if (Array.isArray(result.twoPassSeconds))
            print({
              figure: `${FIGURE[workload]}_two_pass_tokens_per_s`,
              ...common,
              value: round(twoPassTokensPerSecond(workload, result)!),
              seconds: (result.twoPassSeconds as number[]).map(round),
              note: 'the same loss without its constant gradient declared, as an RL loss runs: every forward, the loss, then the backwards',
            });
          if (Array.isArray(result.onPolicySeconds))
            print({
              figure: `${FIGURE[workload]}_on_policy_tokens_per_s`,
              ...common,
              value: round(twoPassTokensPerSecond(workload, result, 'onPolicySeconds')!),
              seconds: (result.onPolicySeconds as number[]).map(round),
              corrected: result.onPolicyCorrected,
              note: "an RL loss on policy (a GRPO step's first update) anticipating the rollout's log-probs: one run a chunk, corrected by a second where its gradient was off",
            });
          if (typeof result.rescoreSeconds === 'number')
            print({
              figure: 'llama_cpp_rollout_with_rescore_tokens_per_s',
              ...common,
              value: round(
                (ROLLOUT.rows * ROLLOUT.newTokens) / (result.medianSeconds + result.rescoreSeconds),
              ),
              rescoreSeconds: round(result.rescoreSeconds),
            });
          if (result.logProbDiff !== undefined) {
            const diff = result.logProbDiff as { tokens: number; max: number; mean: number };
            print({
              figure: 'llama_cpp_logprob_abs_diff',
              threads,
              value: round(diff.max),
              mean: round(diff.mean),
              tokens: diff.tokens,
              note: "|llama.cpp's sampled log-prob (Q4_1 weights) - ours' logProbs (float32 weights dequantised from the same GGUF)|, temperature 1",
            });
          }
          print({
            figure: `${FIGURE[workload]}_peak_rss_mb`,
            ...common,
            value: round(result.peakRssMb),
            loadPeakRssMb: round(result.loadPeakRssMb),
            ...(result.stepPeakRssMb !== undefined && { stepPeakRssMb: round(result.stepPeakRssMb) }),
          });
          print({
            figure: 'llama_load_seconds',
            side,
            threads,
            workload,
            value: round(result.loadSeconds),
            ...(result.loadedFrom !== undefined && { loadedFrom: result.loadedFrom }),
            firstCallSeconds: round(result.firstCallSeconds),
          });
        }
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }

  for (const workload of WORKLOADS) {
    if (workload === 'llama-cpp') {
      // The three sides at each thread count of the workload: llama.cpp over ours and over PyTorch.
      for (const threads of LLAMA_CPP_THREADS) {
        const at = (side: Side) => results[workload][side].get(threads);
        const cpp = at('llama-cpp');
        for (const [name, other] of [
          ['ours', at('searcher-rl')],
          ['torch', at('pytorch')],
        ] as const)
          print({
            figure: `llama_cpp_rollout_ratio_vs_${name}`,
            threads,
            ...shapeOf(workload),
            ...(cpp && other
              ? { value: round(cpp.tokensPerSecond / other.tokensPerSecond) }
              : { skipped: `no ${cpp ? name : 'llama-cpp'} figure at ${threads} threads` }),
          });
        const ours = at('searcher-rl');
        if (cpp && ours && typeof cpp.rescoreSeconds === 'number')
          print({
            figure: 'llama_cpp_rollout_with_rescore_ratio_vs_ours',
            threads,
            ...shapeOf(workload),
            value: round(ours.medianSeconds / (cpp.medianSeconds + cpp.rescoreSeconds)),
          });
      }
      continue;
    }
    const best = (side: Side) =>
      [...results[workload][side].values()].sort((a, b) => b.tokensPerSecond - a.tokensPerSecond)[0];
    const ours = best('searcher-rl');
    const torch = best('pytorch');
    const shape = shapeOf(workload);
    if (!ours || !torch) {
      print({
        figure: `${FIGURE[workload]}_ratio`,
        ...shape,
        skipped: `no ${ours ? 'PyTorch' : 'searcher-rl'} figure`,
      });
      continue;
    }
    const pair = { ours_threads: ours.threads, torch_threads: torch.threads, ...shape };
    print({
      figure: `${FIGURE[workload]}_ratio`,
      value: round(ours.tokensPerSecond / torch.tokensPerSecond),
      ...pair,
    });
    const twoPass = twoPassTokensPerSecond(workload, ours);
    if (twoPass !== undefined)
      print({
        figure: `${FIGURE[workload]}_two_pass_ratio`,
        value: round(twoPass / torch.tokensPerSecond),
        ...pair,
      });
    const onPolicy = twoPassTokensPerSecond(workload, ours, 'onPolicySeconds');
    if (onPolicy !== undefined)
      print({
        figure: `${FIGURE[workload]}_on_policy_ratio`,
        value: round(onPolicy / torch.tokensPerSecond),
        ...pair,
      });
    if (workload !== 'rollout')
      print({
        figure: `${FIGURE[workload]}_peak_rss_ratio`,
        value: round(ours.peakRssMb / torch.peakRssMb),
        ...pair,
        ...(ours.stepPeakRssMb !== undefined &&
          torch.stepPeakRssMb !== undefined && {
            stepPeakRatio: round(ours.stepPeakRssMb / torch.stepPeakRssMb),
          }),
        note: 'peak RSS of the training child, ours / PyTorch, each at its fastest thread count',
      });
  }
  print({
    figure: 'llama_bench_wall_seconds',
    value: round((performance.now() - started) / 1000),
    cpus: cpus().length,
    // Other work on the machine slows both sides: the 1-minute load average at the start and end.
    loadAverage: [round(loadStart), round(loadavg()[0]!)],
  });
}

await main();
