// One workload of bench/llama.ts in its own process (so that its peak RSS is that workload's): ours
// (`--child`, searcher-rl/llama on ONNX Runtime) or node-llama-cpp's rollouts (`--llama-cpp-child`).
// bench/llama.ts writes the config file and reads the one JSON line printed here.
import { readFileSync, writeFileSync } from 'node:fs';
import type { LoraTargetModule } from '../src/adapters/llama/index';
import { sftLossFunction } from '../src/core/rl/policy-update';
import type { LossFunction, PolicyBackend } from '../src/ports/policy-backend';
import type { TokenStep } from '../src/ports/types';

export type Side = 'searcher-rl' | 'pytorch' | 'llama-cpp';
/** What a child runs: bench/llama.ts's llama-cpp workload is the rollout workload on three sides. */
export type ChildWorkload = 'rollout' | 'lora' | 'full';

export interface ChildConfig {
  model: string;
  workload: ChildWorkload;
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
export interface ChildResult {
  side: Side;
  workload: ChildWorkload;
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

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

/** Every side of the rollout workload: the rows' turns until each has newTokens (EOS early: another turn). */
async function timeRollouts(
  sampler: Pick<PolicyBackend, 'begin'>,
  prompt: readonly number[],
  config: ChildConfig,
  times: number[],
): Promise<{ eosContinuations: number; lastTurns: TokenStep[][] }> {
  const { rows, newTokens, warmupTokens } = config.rollout;
  let eosContinuations = 0;
  let lastTurns: TokenStep[][] = [];
  for (let repeat = 0; repeat < config.warmup + config.repeats; repeat++) {
    const t0 = performance.now();
    const session = await sampler.begin(Array.from({ length: rows }, () => prompt));
    const remaining = new Array<number>(rows).fill(repeat < config.warmup ? warmupTokens : newTokens);
    const steps: TokenStep[][] = Array.from({ length: rows }, () => []);
    for (let turn = 0; remaining.some((n) => n > 0); turn++) {
      const ids = remaining.flatMap((n, i) => (n > 0 ? [i] : []));
      if (turn > 0) eosContinuations += ids.length;
      const outputs = await session.generateTurn(ids, {
        stopAfter: [],
        maxTokens: ids.map((i) => remaining[i]!),
        temperature: 1,
        topP: 1,
      });
      for (const output of outputs) {
        remaining[output.rolloutId]! -= output.steps.length;
        steps[output.rolloutId]!.push(...output.steps);
      }
    }
    times.push((performance.now() - t0) / 1000);
    await session.end();
    lastTurns = steps;
  }
  return { eosContinuations, lastTurns };
}

/**
 * node-llama-cpp's side of the llama-cpp workload: the same rollouts (ours' prompt ids) sampled by
 * llama.cpp, then its last repeat's first LOGPROB_ROWS rows scored by ours.
 */
async function runLlamaCpp(config: ChildConfig): Promise<ChildResult> {
  const { createLlamaCppRollouts } = await import('../src/adapters/llama/llama-cpp-rollouts');
  const { readGguf } = await import('../src/adapters/llama/gguf');
  const { ggufTokenizerFiles } = await import('../src/adapters/llama/gguf-tokenizer');
  const { createHfTokenizer } = await import('../src/provider-utils/hf-tokenizer');
  const prompt = config.promptIds;
  if (!prompt) throw new Error('the llama-cpp side needs the prompt ids of ours');
  const started = performance.now();
  const gguf = readGguf(readFileSync(config.model), config.model);
  const files = ggufTokenizerFiles(gguf);
  const tokenizer = createHfTokenizer(files.tokenizerJson, files.tokenizerConfig, {
    vocabSize: (gguf.metadata.get('tokenizer.ggml.tokens') as unknown[]).length,
    eosTokenId: Number(gguf.metadata.get('tokenizer.ggml.eos_token_id')),
  });
  const rollouts = await createLlamaCppRollouts({
    model: config.model,
    tokenizer,
    contextLength: prompt.length + config.rollout.newTokens + 1,
    sequencesPerContext: config.rollout.rows,
    threads: config.threads,
    seed: config.seed,
  });
  const loadSeconds = (performance.now() - started) / 1000;
  const loadPeakRssMb = peakRssMb();
  const stepPeakTracked = resetPeakRss();
  const times: number[] = [];
  let outcome: Awaited<ReturnType<typeof timeRollouts>>;
  try {
    outcome = await timeRollouts(rollouts, prompt, config, times);
  } finally {
    await rollouts.dispose();
  }
  const stepPeak = stepPeakTracked ? highWaterMb() : undefined;
  const rolloutPeakRssMb = peakRssMb();
  const timed = times.slice(config.warmup);
  // The training engine's log-probs of the same tokens (after the timing: its load is not counted).
  const { createLlamaPolicy } = await import('../src/adapters/llama/index');
  const policy = await createLlamaPolicy({
    model: config.model,
    finetune: 'none',
    intraOpThreads: config.threads,
  });
  const scoredRows = outcome.lastTurns;
  let diffs: number[];
  let rescoreSeconds: number;
  try {
    const batch = {
      inputIds: scoredRows.map((steps) => [...prompt, ...steps.map((s) => s.tokenId)]),
      positions: scoredRows.map((steps) => steps.map((s) => s.position)),
      temperature: 1,
    };
    await policy.logProbs(batch);
    const t0 = performance.now();
    const scored = await policy.logProbs(batch);
    rescoreSeconds = (performance.now() - t0) / 1000;
    diffs = scoredRows.flatMap((steps, r) => steps.map((s, k) => Math.abs(s.logProb - scored[r]![k]!)));
  } finally {
    await policy.dispose();
  }
  return {
    side: 'llama-cpp',
    workload: 'rollout',
    threads: config.threads,
    loadSeconds,
    firstCallSeconds: times[0]!,
    seconds: timed,
    medianSeconds: median(timed),
    tokensPerSecond: (config.rollout.rows * config.rollout.newTokens) / median(timed),
    peakRssMb: rolloutPeakRssMb,
    loadPeakRssMb,
    ...(stepPeak !== undefined && { stepPeakRssMb: stepPeak }),
    eosContinuations: outcome.eosContinuations,
    rescoreSeconds,
    logProbDiff: {
      tokens: diffs.length,
      max: Math.max(...diffs),
      mean: diffs.reduce((a, b) => a + b, 0) / diffs.length,
    },
  };
}

async function runOurs(config: ChildConfig): Promise<ChildResult> {
  const { createLlamaPolicy } = await import('../src/adapters/llama/index');
  const started = performance.now();
  const policy = await createLlamaPolicy({
    model: config.model,
    finetune: config.workload === 'rollout' ? 'none' : config.workload,
    lora: {
      rank: config.lora.rank,
      alpha: config.lora.alpha,
      targetModules: [...config.lora.targetModules] as LoraTargetModule[],
    },
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
  let peaks: { process: number; step: number | undefined } | undefined;
  try {
    if (config.workload === 'rollout') {
      const prompt = policy.tokenizer.encode(policy.chatFormat!.prompt(config.promptText));
      const { eosContinuations } = await timeRollouts(policy, prompt, config, times);
      tokens = config.rollout.rows * config.rollout.newTokens;
      extra = { promptIds: prompt, promptLength: prompt.length, eosContinuations };
    } else {
      const ids = config.train.ids;
      const batch = { inputIds: ids, positions: ids.map((row) => row.map((_, t) => t).slice(1)) };
      // The loss supervised fine-tuning trains on (sftLossFunction): its gradient is known before
      // the forward, so the engine runs each chunk's forward and backward in one pass.
      const lossFn = sftLossFunction(batch);
      const losses: number[] = [];
      for (let step = 0; step < config.warmup + config.repeats; step++) {
        const t0 = performance.now();
        const result = await policy.update(batch, lossFn);
        times.push((performance.now() - t0) / 1000);
        losses.push(Number(result.value.toFixed(4)));
      }
      // The peaks are the fused steps' (the two-pass steps below build sessions of their own).
      peaks = { process: peakRssMb(), step: stepPeakTracked ? highWaterMb() : undefined };
      // The same loss without its declared gradient, as an RL loss (whose gradient depends on the
      // new log-probs) runs: every forward, then the loss, then the backwards.
      const twoPass: LossFunction = (logProbs) => lossFn(logProbs);
      const twoPassSeconds: number[] = [];
      for (let step = 0; step < config.warmup + config.repeats; step++) {
        const t0 = performance.now();
        await policy.update(batch, twoPass);
        twoPassSeconds.push((performance.now() - t0) / 1000);
      }
      // An RL loss on policy (the first update of a GRPO step): its gradient depends on the new
      // log-probs (PPO's unclipped -A * exp(new - old), here A = 1/N), and it anticipates them at
      // the rollout's, scored before each step (untimed: a rollout records them as it samples).
      const onPolicySeconds: number[] = [];
      let corrected = 0;
      for (let step = 0; step < config.warmup + config.repeats; step++) {
        const old = await policy.logProbs(batch);
        const count = old.reduce((n, row) => n + row.length, 0);
        const onPolicy: LossFunction = Object.assign(
          (logProbs: number[][]) => ({
            value: 0,
            gradNewLogProbs: logProbs.map((row, i) =>
              row.map((lp, t) => -Math.exp(lp - old[i]![t]!) / count),
            ),
          }),
          { anticipatedLogProbs: old },
        );
        const t0 = performance.now();
        const result = await policy.update(batch, onPolicy);
        onPolicySeconds.push((performance.now() - t0) / 1000);
        corrected += result.metrics?.anticipationCorrected ?? 0;
      }
      tokens = ids.length * ids[0]!.length;
      extra = {
        trainableParameters: policy.trainableParameterCount,
        losses,
        twoPassSeconds: twoPassSeconds.slice(config.warmup),
        onPolicySeconds: onPolicySeconds.slice(config.warmup),
        onPolicyCorrected: corrected,
      };
    }
  } finally {
    await policy.dispose();
  }
  const timed = times.slice(config.warmup);
  const stepPeak = peaks ? peaks.step : stepPeakTracked ? highWaterMb() : undefined;
  return {
    side: 'searcher-rl',
    workload: config.workload,
    threads: config.threads,
    loadSeconds,
    firstCallSeconds: times[0]!,
    seconds: timed,
    medianSeconds: median(timed),
    tokensPerSecond: tokens / median(timed),
    peakRssMb: peaks?.process ?? peakRssMb(),
    loadPeakRssMb,
    ...(stepPeak !== undefined && { stepPeakRssMb: stepPeak }),
    ...extra,
  };
}

const config = JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as ChildConfig;
console.log(JSON.stringify(await (process.argv[2] === '--llama-cpp-child' ? runLlamaCpp : runOurs)(config)));
