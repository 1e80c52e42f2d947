// Training and rollout throughput of the TensorFlow.js policy for one fixed model size, and the
// same model's training step and KV-cached sampling in PyTorch (bench/torch-reference.ts: PyTorch
// 2.15 from the pinned Python environment, eager and compiled, at 1 and 2 threads, OpenMP's wait
// policy at 2; Debian's 1.13 beside it when /usr/bin/python3 has it) in the same run. Ratios are
// against PyTorch 2.15's best setting. Prints one JSON line per figure.
//
// Sections: training engines (tfjs, and ONNX Runtime (`training: 'onnx'`) at 1 and 2 intra-op
// threads and on 2 data-parallel lanes when onnxruntime-node is installed; the best of those again
// with the loss declaring its constant gradient, the path SFT takes, and anticipating its
// log-probs, the path an on-policy RL update takes), rollout engines (each a `RolloutEngine`; another engine's figure slots
// into `rolloutEngines`: tfjs, and ONNX Runtime (`rollouts: 'onnx'`) at 1 and 2 intra-op threads
// when onnxruntime-node is installed), what a new version of the weights costs the ONNX rollouts
// (their sessions are made again, once per update: `onnx_rollout_ms_after_weight_change`, and the
// rollout figure as if every rollout followed an update), the PyTorch reference, ratios. BENCH_MIN_SECONDS sets how long each figure
// repeats its step after its warm-up (default 25 s, in process and per torch setting: this 2-core
// machine's speed wanders by 20% over tens of seconds, and 10 s windows left two quiet runs' rollout
// figures 15% apart, 25 s ones within 9%); BENCH_PYTHON names the interpreter (else
// SEARCHER_RL_VENV's, else scripts/python-env.sh's .cache/python-env), BENCH_TORCH_COMPILE=0 leaves
// torch.compile out.
import { figurePrinter } from './figures';
import { cpus, loadavg } from 'node:os';
import { createTfjsPolicy, type TfjsPolicy } from '../src/adapters/tfjs/policy';
import { createRandom, type Random } from '../src/core/random';
import { median, secondsOf, timedSteps } from './step-timing';
import { bestOf, measureTorch, type TorchFigures } from './torch-reference';
import type { LossFunction } from '../src/ports/policy-backend';
import { anticipatingLoss, constantGradientLoss, lossFn } from './training-losses';

const MODEL = { layers: 4, width: 128, heads: 4, contextLength: 256 };
const TRAIN = { batch: 8, length: 256, scoredFrom: 64 };
const ROLLOUT = { rollouts: 16, promptLength: 64, generate: 64 };
const MIN_SECONDS = Number(process.env.BENCH_MIN_SECONDS ?? 25);
const MIN_REPEATS = 5;
/** A training step takes about a second: more repeats than a rollout's for a steadier median. */
const TRAIN_MIN_REPEATS = 9;
/** Thread counts PyTorch runs at (capped at the cores there are); ONNX Runtime rollouts run at the same intra-op counts. */
const TORCH_THREADS = [...new Set([1, 2].map((n) => Math.min(n, cpus().length)))];
const ONNX_THREADS = TORCH_THREADS;
/**
 * ONNX Runtime training at each thread count, and at one thread on each of 2 data-parallel lanes
 * (`trainingLanes`: the rows split between the main thread and a worker thread) where there are 2 cores.
 */
const ONNX_TRAIN_SETTINGS: { intraOpThreads: number; trainingLanes?: number }[] = [
  ...ONNX_THREADS.map((intraOpThreads) => ({ intraOpThreads })),
  ...(cpus().length >= 2 ? [{ intraOpThreads: 1, trainingLanes: 2 }] : []),
];

const print = figurePrinter('training');

/** `timedSteps` at this bench's defaults. */
const timed = (step: () => Promise<void>, options: { minSeconds?: number; minRepeats?: number } = {}) =>
  timedSteps(step, { minSeconds: MIN_SECONDS, minRepeats: MIN_REPEATS, ...options });

/** ROLLOUT.rollouts random prompts of ROLLOUT.promptLength tokens. */
const rolloutPrompts = (random: Random) =>
  Array.from({ length: ROLLOUT.rollouts }, () =>
    Array.from({ length: ROLLOUT.promptLength }, () => random.nextInt(256)),
  );

// --- training engines ------------------------------------------------------------------------

interface TrainingFigure {
  figure: string;
  tokensPerSecond: number;
  setting?: Record<string, unknown>;
}

/** Training tokens per second of `policy.update` on one fixed batch (a forward + backward + AdamW step). */
async function measureTraining(
  policy: TfjsPolicy,
  batch: { inputIds: number[][]; positions: number[][] },
  loss: LossFunction = lossFn,
) {
  const { seconds, cpuSeconds, repeats, warmupSteps } = await timed(
    async () => {
      await policy.update(batch, loss);
    },
    { minRepeats: TRAIN_MIN_REPEATS },
  );
  const tokens = TRAIN.batch * TRAIN.length;
  return {
    tokensPerSecond: tokens / seconds,
    tokensPerCpuSecond: Math.round(tokens / cpuSeconds),
    repeats,
    warmupSteps,
  };
}

/**
 * A copy of `policy` (its checkpoint's weights) that runs `engine` through ONNX Runtime at
 * `intraOpThreads`, or `null` after printing `skippedFigure` when onnxruntime-node cannot be loaded.
 */
async function onnxCopy(
  policy: TfjsPolicy,
  checkpoint: Awaited<ReturnType<TfjsPolicy['save']>>,
  engine: 'rollouts' | 'training',
  intraOpThreads: number,
  skippedFigure: string,
  trainingLanes?: number,
): Promise<TfjsPolicy | null> {
  let onnx: TfjsPolicy;
  try {
    onnx = await createTfjsPolicy({
      model: MODEL,
      seed: 0,
      backend: policy.backend.name,
      [engine]: 'onnx',
      onnx: { intraOpThreads, ...(trainingLanes !== undefined && { trainingLanes }) },
    });
  } catch (error) {
    print(skippedFigure, 0, { reason: error instanceof Error ? error.message : String(error) });
    return null;
  }
  await onnx.load(checkpoint);
  return onnx;
}

/** tfjs training, then the same weights trained through ONNX Runtime at each thread count (none without onnxruntime-node). */
async function measureTrainingEngines(policy: TfjsPolicy, random: Random): Promise<TrainingFigure[]> {
  const inputIds = Array.from({ length: TRAIN.batch }, () =>
    Array.from({ length: TRAIN.length }, () => random.nextInt(256)),
  );
  const batch = {
    inputIds,
    positions: inputIds.map(() =>
      Array.from({ length: TRAIN.length - TRAIN.scoredFrom }, (_, k) => TRAIN.scoredFrom + k),
    ),
  };
  const about = { model: MODEL, parameters: policy.parameterCount, ...TRAIN };
  const note =
    'sequence tokens through one forward + backward + AdamW step per second, median step after the warm-up';
  const checkpoint = await policy.save();
  const tfjs = await measureTraining(policy, batch);
  print('tfjs_train_tokens_per_second', tfjs.tokensPerSecond, {
    backend: policy.backend.name,
    ...about,
    repeats: tfjs.repeats,
    warmupSteps: tfjs.warmupSteps,
    tokensPerCpuSecond: tfjs.tokensPerCpuSecond,
    note,
  });
  const figures: TrainingFigure[] = [
    { figure: 'tfjs_train_tokens_per_second', tokensPerSecond: tfjs.tokensPerSecond },
  ];
  /** One setting's figure on a copy of the weights tfjs started from (so both engines train the same model). */
  const measureOnnx = async (
    figure: string,
    { intraOpThreads, trainingLanes }: (typeof ONNX_TRAIN_SETTINGS)[number],
    setting: Record<string, unknown>,
    loss: LossFunction,
    what: string,
  ) => {
    const onnx = await onnxCopy(
      policy,
      checkpoint,
      'training',
      intraOpThreads,
      'onnx_train_skipped',
      trainingLanes,
    );
    if (!onnx) return null;
    const measured = await measureTraining(onnx, batch, loss);
    onnx.dispose();
    print(figure, measured.tokensPerSecond, {
      ...setting,
      ...about,
      repeats: measured.repeats,
      warmupSteps: measured.warmupSteps,
      tokensPerCpuSecond: measured.tokensPerCpuSecond,
      note: `${what}; ${note}`,
    });
    return measured;
  };
  let best: TrainingFigure | null = null;
  for (const at of ONNX_TRAIN_SETTINGS) {
    const setting = {
      intraOpThreads: at.intraOpThreads,
      ...(at.trainingLanes !== undefined && { trainingLanes: at.trainingLanes }),
    };
    const measured = await measureOnnx(
      'onnx_train_tokens_per_second_at_setting',
      at,
      setting,
      lossFn,
      `training: onnx (gradients in ONNX Runtime, AdamW on ${policy.backend.name})`,
    );
    if (!measured) return figures;
    if (!best || measured.tokensPerSecond > best.tokensPerSecond)
      best = {
        figure: 'onnx_train_tokens_per_second',
        tokensPerSecond: measured.tokensPerSecond,
        setting,
      };
  }
  if (best) {
    print(best.figure, best.tokensPerSecond, { ...best.setting, ...about, note: 'best setting' });
    figures.push(best);
    // The best setting again with the loss's gradient declared (the path supervised fine-tuning
    // takes), and anticipating its log-probs (the path an on-policy RL update takes).
    const variants = [
      {
        figure: 'onnx_train_constant_gradient_tokens_per_second',
        flag: { constantGradient: true },
        loss: constantGradientLoss(batch.positions),
        note: "the best setting, the loss declaring its constant gradient (as SFT's does): each chunk's forward and backward in one run",
      },
      {
        figure: 'onnx_train_on_policy_tokens_per_second',
        flag: { onPolicy: true },
        loss: anticipatingLoss(batch.positions),
        note: "the best setting, an RL loss on policy anticipating the rollout's log-probs: one run a chunk",
      },
    ];
    for (const { figure, flag, loss, note } of variants) {
      const setting = { ...best.setting, ...flag };
      const at = best.setting as (typeof ONNX_TRAIN_SETTINGS)[number];
      const measured = await measureOnnx(figure, at, setting, loss, note);
      if (measured) figures.push({ figure, tokensPerSecond: measured.tokensPerSecond, setting });
    }
  }
  return figures;
}

// --- rollout engines -------------------------------------------------------------------------

/** Something that samples ROLLOUT.generate tokens after each prompt, all rollouts decoding together. */
interface RolloutEngine {
  figure: string;
  /** Printed with the figure. */
  describe: Record<string, unknown>;
  /**
   * One of several settings of the same figure (e.g. thread counts), printed as `<figure>_at_setting`;
   * `figure` itself is then printed once, the best setting's.
   */
  setting?: Record<string, unknown>;
  rollout(prompts: number[][]): Promise<void>;
  dispose?(): void;
}

async function policyRollout(policy: TfjsPolicy, prompts: number[][]): Promise<void> {
  const session = await policy.begin(prompts);
  await session.generateTurn(
    prompts.map((_, i) => i),
    { stopAfter: [], maxTokens: ROLLOUT.generate, temperature: 1, topP: 1 },
  );
  await session.end();
}

function tfjsRolloutEngine(policy: TfjsPolicy): RolloutEngine {
  return {
    figure: 'tfjs_rollout_tokens_per_second',
    describe: {
      backend: policy.backend.name,
      note: 'sampled tokens per second (prompt prefill included), KV cache, all rollouts decoding together, median',
    },
    rollout: (prompts) => policyRollout(policy, prompts),
  };
}

/**
 * The same rollouts through ONNX Runtime (`rollouts: 'onnx'`), the same weights (a checkpoint of
 * `policy`), one engine per intra-op thread count; none when onnxruntime-node is not installed.
 */
async function onnxRolloutEngines(policy: TfjsPolicy): Promise<RolloutEngine[]> {
  const checkpoint = await policy.save();
  const engines: RolloutEngine[] = [];
  for (const intraOpThreads of ONNX_THREADS) {
    const onnx = await onnxCopy(policy, checkpoint, 'rollouts', intraOpThreads, 'onnx_rollout_skipped');
    if (!onnx) {
      for (const engine of engines) engine.dispose?.();
      return [];
    }
    engines.push({
      figure: 'onnx_rollout_tokens_per_second',
      describe: {
        note: 'the tfjs rollouts through ONNX Runtime (rollouts: onnx), the same weights; the figure is the best intra-op thread count',
      },
      setting: { intraOpThreads },
      rollout: (prompts) => policyRollout(onnx, prompts),
      dispose: () => onnx.dispose(),
    });
  }
  return engines;
}

interface RolloutFigure {
  tokensPerSecond: number;
  setting?: Record<string, unknown>;
}

/** Each engine's figure (the best of its settings), by figure name, in the order of `engines`. */
async function measureRollouts(
  engines: RolloutEngine[],
  random: Random,
): Promise<Map<string, RolloutFigure>> {
  const prompts = rolloutPrompts(random);
  const figures = new Map<string, RolloutFigure>();
  for (const engine of engines) {
    const { seconds, cpuSeconds, repeats } = await timed(() => engine.rollout(prompts));
    engine.dispose?.();
    const tokensPerSecond = (ROLLOUT.rollouts * ROLLOUT.generate) / seconds;
    const name = engine.setting ? `${engine.figure}_at_setting` : engine.figure;
    print(name, tokensPerSecond, {
      ...engine.describe,
      ...engine.setting,
      model: MODEL,
      ...ROLLOUT,
      repeats,
      tokensPerCpuSecond: Math.round((ROLLOUT.rollouts * ROLLOUT.generate) / cpuSeconds),
    });
    const best = figures.get(engine.figure);
    if (!best || tokensPerSecond > best.tokensPerSecond)
      figures.set(engine.figure, { tokensPerSecond, ...(engine.setting && { setting: engine.setting }) });
  }
  for (const [figure, { tokensPerSecond, setting }] of figures) {
    if (setting)
      print(figure, tokensPerSecond, { ...setting, model: MODEL, ...ROLLOUT, note: 'best setting' });
  }
  const tfjs = figures.get('tfjs_rollout_tokens_per_second');
  for (const [figure, { tokensPerSecond, setting }] of figures) {
    if (tfjs && figure !== 'tfjs_rollout_tokens_per_second')
      print('rollout_ratio_over_tfjs', tokensPerSecond / tfjs.tokensPerSecond, {
        engine: figure,
        ...setting,
      });
  }
  return figures;
}

/**
 * What a new version of the weights costs the ONNX rollouts: they make their sessions again (the
 * weights are constants of them) at the first forward after an update. Median over a few (update,
 * rollout) pairs of the rollout after the update, beside the median steady rollout in the same
 * loop; the update itself is not timed. `null` without onnxruntime-node.
 */
async function measureOnnxWeightChange(
  policy: TfjsPolicy,
  random: Random,
  intraOpThreads: number,
): Promise<{ afterChange: number; steady: number } | null> {
  const checkpoint = await policy.save();
  const onnx = await onnxCopy(policy, checkpoint, 'rollouts', intraOpThreads, 'onnx_rollout_skipped');
  if (!onnx) return null;
  const prompts = rolloutPrompts(random);
  const nudge = { inputIds: [prompts[0]!.slice(0, 8)], positions: [[4, 5, 6, 7]] };
  const afterChange: number[] = [];
  const steady: number[] = [];
  await policyRollout(onnx, prompts);
  for (let i = 0; i < 7; i++) {
    await onnx.update(nudge, lossFn);
    afterChange.push(await secondsOf(() => policyRollout(onnx, prompts)));
    steady.push(await secondsOf(() => policyRollout(onnx, prompts)));
  }
  onnx.dispose();
  return { afterChange: median(afterChange), steady: median(steady) };
}

// --- run ---------------------------------------------------------------------------------------

print('conditions', cpus().length, {
  cores: cpus().length,
  loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
  node: process.version,
  note: 'value: cores; figures from one run, compare ratios',
});
const policy = await createTfjsPolicy({ model: MODEL, seed: 0, optimizer: { learningRate: 1e-4 } });
const random = createRandom(1);
const trainingFigures = await measureTrainingEngines(policy, random);
// Another rollout engine (e.g. the same weights on another runtime) is one more entry here.
const rolloutEngines: RolloutEngine[] = [tfjsRolloutEngine(policy), ...(await onnxRolloutEngines(policy))];
const rolloutFigures = await measureRollouts(rolloutEngines, random);
const onnxRollouts = rolloutFigures.get('onnx_rollout_tokens_per_second');
const weightChange = onnxRollouts
  ? await measureOnnxWeightChange(policy, random, Number(onnxRollouts.setting?.intraOpThreads ?? 1))
  : null;
if (weightChange) {
  print('onnx_rollout_ms_after_weight_change', weightChange.afterChange * 1000, {
    steadyMs: Number((weightChange.steady * 1000).toFixed(1)),
    sessionMs: Number(((weightChange.afterChange - weightChange.steady) * 1000).toFixed(1)),
    ...onnxRollouts!.setting,
    note: 'the first rollout (16 x 64 tokens) after an update: the ONNX rollouts make their sessions again for the new weights (constants of the session), once per update; sessionMs is the difference to a steady rollout in the same loop',
  });
  rolloutFigures.set('onnx_rollout_tokens_per_second_one_update_per_rollout', {
    tokensPerSecond: (ROLLOUT.rollouts * ROLLOUT.generate) / weightChange.afterChange,
    ...(onnxRollouts!.setting && { setting: onnxRollouts!.setting }),
  });
}
const torch = measureTorch(print, {
  vocab: policy.tokenizer.vocabSize,
  model: MODEL,
  train: TRAIN,
  rollout: ROLLOUT,
  threads: TORCH_THREADS,
  minSeconds: MIN_SECONDS,
  minRepeats: MIN_REPEATS,
});
if (torch.anchor && torch.anchor.length > 0) printRatios('best_torch', torch.anchor);
if (torch.debian && torch.debian.length > 0) printRatios('debian_torch', torch.debian);

/** Each engine's ratio to the best setting of `reference` (`..._over_<against>`). */
function printRatios(against: string, reference: TorchFigures[]) {
  const best = bestOf(reference);
  const torchAbout = {
    torchThreads: best.train.threads,
    torchSetting: best.train.setting,
    torchTokensPerSecond: Number(best.train.train.toPrecision(4)),
  };
  for (const { figure, tokensPerSecond, setting } of trainingFigures) {
    const name =
      figure === 'tfjs_train_tokens_per_second'
        ? `train_ratio_tfjs_over_${against}`
        : figure === 'onnx_train_constant_gradient_tokens_per_second'
          ? `train_ratio_onnx_constant_gradient_over_${against}`
          : figure === 'onnx_train_on_policy_tokens_per_second'
            ? `train_ratio_onnx_on_policy_over_${against}`
            : `train_ratio_onnx_over_${against}`;
    print(name, tokensPerSecond / best.train.train, {
      ...setting,
      ...torchAbout,
      ...(!setting && { backend: policy.backend.name, note: 'tfjs-wasm runs one thread' }),
    });
  }
  const bestEngine = trainingFigures.reduce((a, b) => (b.tokensPerSecond > a.tokensPerSecond ? b : a));
  print(`train_ratio_best_over_${against}`, bestEngine.tokensPerSecond / best.train.train, {
    engine: bestEngine.figure,
    ...bestEngine.setting,
    ...torchAbout,
    note: 'the fastest in-process training engine',
  });
  for (const [figure, { tokensPerSecond, setting }] of rolloutFigures) {
    print(`rollout_ratio_over_${against}`, tokensPerSecond / best.rollout.rollout, {
      engine: figure,
      ...setting,
      torchThreads: best.rollout.threads,
      torchSetting: best.rollout.setting,
      torchTokensPerSecond: Number(best.rollout.rollout.toPrecision(4)),
    });
  }
}
print('conditions_after', loadavg()[0]!, { loadAverage1m: Number(loadavg()[0]!.toFixed(2)) });
policy.dispose();
