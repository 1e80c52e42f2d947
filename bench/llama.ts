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
//   (default maxChunkTokens, 1024: a batch over it runs in chunks); PyTorch:
//   python/scripts/llama_bench.py (forward, cross-entropy, backward, AdamW).
//
// Sizes: the 8x256 batches at 1 and 2 threads, 4 steps each, take ~30 minutes on this
// 2-core machine; by default both training batches are TRAIN_ROWS_DEFAULT x256 (every line says its
// `batch`), near 10 minutes. BENCH_LLAMA_TRAIN_ROWS=8 BENCH_LLAMA_FULL_ROWS=4 runs the sizes.
//
// Each (side, workload, threads) is its own child process, so its peak RSS (Node's
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
// BENCH_LLAMA_THREADS (e.g. `2`; default `1,2`), BENCH_LLAMA_WORKLOADS (e.g. `lora,full`; default
// all three), BENCH_LLAMA_CHILD_TIMEOUT_S (one child's limit, default 420).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRandom } from '../src/core/random';

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
/** BENCH_LLAMA_WORKLOADS: a comma-separated subset of rollout, lora, full (default all three). */
const WORKLOADS = (process.env.BENCH_LLAMA_WORKLOADS ?? 'rollout,lora,full').split(',').map((w) => {
  if (w !== 'rollout' && w !== 'lora' && w !== 'full')
    throw new Error(`BENCH_LLAMA_WORKLOADS: '${w}' is not one of rollout, lora, full`);
  return w;
});
const CHILD_TIMEOUT_MS = Number(process.env.BENCH_LLAMA_CHILD_TIMEOUT_S ?? 420) * 1000;

type Side = 'searcher-rl' | 'pytorch';
type Workload = 'rollout' | 'lora' | 'full';

interface ChildConfig {
  model: string;
  workload: Workload;
  threads: number;
  seed: number;
  warmup: number;
  repeats: number;
  learningRate: number;
  lora: { rank: number; alpha: number; targetModules: readonly string[] };
  rollout: { rows: number; newTokens: number; warmupTokens: number };
  train: { ids: number[][] };
  promptText: string;
  promptIds?: number[];
  /** PyTorch: save the dequantised model here / load it from here instead of the GGUF. */
  saveTo?: string;
  loadFrom?: string;
}

/** What a child prints (one JSON line). */
interface ChildResult {
  side: Side;
  workload: Workload;
  threads: number;
  loadSeconds: number;
  firstCallSeconds: number;
  seconds: number[];
  medianSeconds: number;
  tokensPerSecond: number;
  peakRssMb: number;
  loadPeakRssMb: number;
  stepPeakRssMb?: number;
  promptIds?: number[];
  [extra: string]: unknown;
}

const print = (line: Record<string, unknown>) => console.log(JSON.stringify({ bench: 'llama', ...line }));
const round = (value: number) => Number(value.toPrecision(4));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

// --- the child: one workload of ours in this process --------------------------------------------

/** Resets this process's RSS high-water mark (VmHWM; Linux 4.0 and up), so that the step's peak shows apart from the load's. */
function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function highWaterMb(): number | undefined {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmHWM:'));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Node reports maxRSS in KiB. */
const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

async function runOurs(config: ChildConfig): Promise<ChildResult> {
  const { createLlamaPolicy } = await import('../src/adapters/llama/index');
  const started = performance.now();
  const policy = await createLlamaPolicy({
    model: config.model,
    finetune: config.workload === 'rollout' ? 'none' : config.workload,
    lora: { rank: config.lora.rank, alpha: config.lora.alpha, targetModules: [...LORA.targetModules] },
    optimizer: { learningRate: config.learningRate },
    intraOpThreads: config.threads,
    seed: config.seed,
  });
  const loadSeconds = (performance.now() - started) / 1000;
  const loadPeakRssMb = peakRssMb();
  const stepPeakTracked = resetPeakRss();
  const times: number[] = [];
  let extra: Record<string, unknown> = {};
  let tokens: number;
  try {
    if (config.workload === 'rollout') {
      const { rows, newTokens, warmupTokens } = config.rollout;
      const prompt = policy.tokenizer.encode(policy.chatFormat!.prompt(config.promptText));
      let eosContinuations = 0;
      for (let repeat = 0; repeat < config.warmup + config.repeats; repeat++) {
        const t0 = performance.now();
        const session = await policy.begin(Array.from({ length: rows }, () => prompt));
        const remaining = new Array<number>(rows).fill(repeat < config.warmup ? warmupTokens : newTokens);
        for (let turn = 0; remaining.some((n) => n > 0); turn++) {
          const ids = remaining.flatMap((n, i) => (n > 0 ? [i] : []));
          if (turn > 0) eosContinuations += ids.length;
          const outputs = await session.generateTurn(ids, {
            stopAfter: [],
            maxTokens: ids.map((i) => remaining[i]!),
            temperature: 1,
            topP: 1,
          });
          for (const output of outputs) remaining[output.rolloutId]! -= output.steps.length;
        }
        times.push((performance.now() - t0) / 1000);
        await session.end();
      }
      tokens = rows * newTokens;
      extra = { promptIds: prompt, promptLength: prompt.length, eosContinuations };
    } else {
      const ids = config.train.ids;
      const batch = { inputIds: ids, positions: ids.map((row) => row.map((_, t) => t).slice(1)) };
      const scored = batch.positions.reduce((n, p) => n + p.length, 0);
      const lossFn = (logProbs: number[][]) => ({
        value: -logProbs.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0), 0) / scored,
        gradNewLogProbs: logProbs.map((row) => row.map(() => -1 / scored)),
      });
      const losses: number[] = [];
      for (let step = 0; step < config.warmup + config.repeats; step++) {
        const t0 = performance.now();
        const result = await policy.update(batch, lossFn);
        times.push((performance.now() - t0) / 1000);
        losses.push(Number(result.value.toFixed(4)));
      }
      tokens = ids.length * ids[0]!.length;
      extra = { trainableParameters: policy.trainableParameterCount, losses };
    }
  } finally {
    await policy.dispose();
  }
  const timed = times.slice(config.warmup);
  const stepPeak = stepPeakTracked ? highWaterMb() : undefined;
  return {
    side: 'searcher-rl',
    workload: config.workload,
    threads: config.threads,
    loadSeconds,
    firstCallSeconds: times[0]!,
    seconds: timed,
    medianSeconds: median(timed),
    tokensPerSecond: tokens / median(timed),
    peakRssMb: peakRssMb(),
    loadPeakRssMb,
    ...(stepPeak !== undefined && { stepPeakRssMb: stepPeak }),
    ...extra,
  };
}

// --- the driver ------------------------------------------------------------------------------------

function modelPath(): string {
  return join(process.env.SEARCHER_RL_MODELS ?? join(ROOT, '.cache', 'models'), MODEL_FILE);
}

/** The Python interpreter with torch, transformers, peft and gguf, or why there is none. */
function benchPython(): { python: string } | { reason: string } {
  const venv = process.env.SEARCHER_RL_VENV ?? join(ROOT, '.cache', 'python-env');
  const python = process.env.BENCH_PYTHON ?? join(venv, 'bin', 'python');
  if (!existsSync(python))
    return {
      reason: `no Python at ${python}: create the environment with scripts/python-env.sh, or set SEARCHER_RL_VENV or BENCH_PYTHON`,
    };
  try {
    execFileSync(python, ['-c', 'import torch, transformers, peft, gguf'], { stdio: 'ignore' });
  } catch {
    return {
      reason: `${python} does not import torch, transformers, peft and gguf (python/requirements.txt)`,
    };
  }
  return { python };
}

function runChild(
  side: Side,
  config: ChildConfig,
  folder: string,
  python: string,
): Promise<ChildResult | { error: string }> {
  const file = join(folder, `${side}-${config.workload}-${config.threads}.json`);
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
      : [process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', file]];
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
  lora: 'llama_lora_train',
  full: 'llama_full_train',
};

const rowsOf = (workload: Workload) =>
  workload === 'rollout' ? ROLLOUT.rows : workload === 'lora' ? TRAIN.loraRows : TRAIN.fullRows;
const shapeOf = (workload: Workload) =>
  workload === 'rollout'
    ? { rows: ROLLOUT.rows, newTokens: ROLLOUT.newTokens }
    : { batch: `${rowsOf(workload)}x${TRAIN.length}` };

async function main(): Promise<void> {
  const model = modelPath();
  if (!existsSync(model)) {
    print({
      figure: 'llama',
      skipped: `no model at ${model}: run scripts/fetch-models.sh (or set SEARCHER_RL_MODELS)`,
    });
    return;
  }
  const found = benchPython();
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
    rollout: { 'searcher-rl': new Map(), pytorch: new Map() },
    lora: { 'searcher-rl': new Map(), pytorch: new Map() },
    full: { 'searcher-rl': new Map(), pytorch: new Map() },
  };
  let promptIds: number[] | undefined;
  const started = performance.now();
  const loadStart = loadavg()[0]!;
  try {
    for (const workload of WORKLOADS) {
      const shape = shapeOf(workload);
      // Ours first at the most threads: its prompt ids (the model's chat template) go to PyTorch.
      for (const threads of [...THREADS].reverse())
        for (const side of ['searcher-rl', 'pytorch'] as const) {
          const figure = `${FIGURE[workload]}_tokens_per_s`;
          const common = { side, threads, ...shape };
          if (side === 'pytorch' && workload === 'rollout' && !promptIds) {
            print({ figure, ...common, error: "no prompt ids: ours' rollout child failed" });
            continue;
          }
          const saved = existsSync(join(dequantised, 'config.json'));
          const config: ChildConfig = {
            model,
            workload,
            threads,
            seed: 0,
            warmup: WARMUP_STEPS,
            repeats: workload === 'rollout' ? ROLLOUT.timed : TIMED_STEPS,
            learningRate: LEARNING_RATE,
            lora: LORA,
            rollout: ROLLOUT,
            train: { ids: workload === 'rollout' ? [] : trainIds.slice(0, rowsOf(workload)) },
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

if (process.argv[2] === '--child') {
  const config = JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as ChildConfig;
  console.log(JSON.stringify(await runOurs(config)));
} else {
  await main();
}
