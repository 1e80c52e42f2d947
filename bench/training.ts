// Training and rollout throughput of the TensorFlow.js policy for one fixed model size, and the
// same model's training step and KV-cached sampling in PyTorch (bench/torch_reference.py) run side
// by side when python3 with torch is present. Prints one JSON line per figure, ratios included.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createTfjsPolicy } from '../src/adapters/tfjs/policy';
import { createRandom } from '../src/core/random';

const MODEL = { layers: 4, width: 128, heads: 4, contextLength: 256 };
const TRAIN = { batch: 8, length: 256, scoredFrom: 64, steps: Number(process.env.BENCH_TRAIN_STEPS ?? 5) };
const ROLLOUT = { rollouts: 16, promptLength: 64, generate: 64 };

const print = (figure: string, value: number, extra: Record<string, unknown> = {}) => console.log(JSON.stringify({ bench: 'training', figure, value: Number(value.toPrecision(4)), ...extra }));

const policy = await createTfjsPolicy({ model: MODEL, seed: 0, optimizer: { learningRate: 1e-4 } });
const backend = policy.backend.name;
const random = createRandom(1);
const inputIds = Array.from({ length: TRAIN.batch }, () => Array.from({ length: TRAIN.length }, () => random.nextInt(256)));
const positions = inputIds.map(() => Array.from({ length: TRAIN.length - TRAIN.scoredFrom }, (_, k) => TRAIN.scoredFrom + k));
const lossFn = (lp: number[][]) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => 0.01)) });
for (let i = 0; i < 2; i++) await policy.update({ inputIds, positions }, lossFn);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const stepSeconds: number[] = [];
for (let i = 0; i < TRAIN.steps; i++) {
  const started = performance.now();
  await policy.update({ inputIds, positions }, lossFn);
  stepSeconds.push((performance.now() - started) / 1000);
}
const trainSeconds = median(stepSeconds);
const tfjsTrain = (TRAIN.batch * TRAIN.length) / trainSeconds;
const common = { backend, model: MODEL, parameters: policy.parameterCount };
print('tfjs_train_tokens_per_second', tfjsTrain, { ...common, batch: TRAIN.batch, length: TRAIN.length, steps: TRAIN.steps, note: 'sequence tokens through one forward + backward + AdamW step per second, median step' });

const prompts = Array.from({ length: ROLLOUT.rollouts }, () => Array.from({ length: ROLLOUT.promptLength }, () => random.nextInt(256)));
const rollout = async () => {
  const session = await policy.begin(prompts);
  await session.generateTurn(
    prompts.map((_, i) => i),
    { stopAfter: [], maxTokens: ROLLOUT.generate, temperature: 1, topP: 1 },
  );
  await session.end();
};
await rollout();
const rolloutSeconds: number[] = [];
for (let i = 0; i < 3; i++) {
  const started = performance.now();
  await rollout();
  rolloutSeconds.push((performance.now() - started) / 1000);
}
const tfjsRollout = (ROLLOUT.rollouts * ROLLOUT.generate) / median(rolloutSeconds);
print('tfjs_rollout_tokens_per_second', tfjsRollout, { ...common, ...ROLLOUT, note: 'sampled tokens per second (prompt prefill included), KV cache, all rollouts decoding together, median of 3' });
const onnxRollout = await measureOnnxRollouts();

function findTorchPython(): string | null {
  for (const python of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(python, ['-c', 'import torch'], { stdio: 'ignore' });
      return python;
    } catch {
      // Try the next interpreter.
    }
  }
  return null;
}

const python = findTorchPython();
if (!python) {
  print('torch_reference_skipped', 0, { reason: 'no python3 with torch (Debian: apt-get install python3-torch libopenblas0-pthread)' });
} else {
  const script = fileURLToPath(new URL('./torch_reference.py', import.meta.url));
  for (const threads of [...new Set([1, cpus().length])]) {
    const config = { vocab: policy.tokenizer.vocabSize, context: MODEL.contextLength, layers: MODEL.layers, width: MODEL.width, heads: MODEL.heads, threads, trainBatch: TRAIN.batch, trainLength: TRAIN.length, scoredFrom: TRAIN.scoredFrom, trainSteps: TRAIN.steps, ...ROLLOUT };
    const lines = execFileSync(python, [script, JSON.stringify(config)], { encoding: 'utf8' }).trim().split('\n');
    const figures = Object.fromEntries(lines.map((line) => JSON.parse(line) as { figure: string; value: number; torch: string }).map((f) => [f.figure, f]));
    const torchTrain = figures.torch_train_tokens_per_second!;
    const torchRollout = figures.torch_rollout_tokens_per_second!;
    print('torch_train_tokens_per_second', torchTrain.value, { threads, torch: torchTrain.torch, python });
    print('torch_rollout_tokens_per_second', torchRollout.value, { threads, torch: torchRollout.torch, python });
    print('train_ratio_tfjs_over_torch', tfjsTrain / torchTrain.value, { backend, torchThreads: threads, note: 'tfjs-wasm runs one thread' });
    print('rollout_ratio_tfjs_over_torch', tfjsRollout / torchRollout.value, { backend, torchThreads: threads });
    if (onnxRollout) print('rollout_ratio_onnx_over_torch', onnxRollout.value / torchRollout.value, { onnxThreads: onnxRollout.threads, torchThreads: threads });
  }
}
policy.dispose();

// ONNX Runtime rollouts (`rollouts: 'onnx'`): the same ROLLOUT shape and the same weights, at 1
// and 2 intra-op threads; prints the best. Skipped when onnxruntime-node is not installed.
async function measureOnnxRollouts(): Promise<{ value: number; threads: number } | null> {
  const checkpoint = await policy.save();
  let best: { value: number; threads: number } | null = null;
  for (const threads of [1, 2]) {
    let onnx;
    try {
      onnx = await createTfjsPolicy({ model: MODEL, seed: 0, backend, rollouts: 'onnx', onnx: { intraOpThreads: threads } });
    } catch (error) {
      print('onnx_rollout_skipped', 0, { reason: error instanceof Error ? error.message : String(error) });
      return null;
    }
    await onnx.load(checkpoint);
    const once = async () => {
      const session = await onnx.begin(prompts);
      await session.generateTurn(prompts.map((_, i) => i), { stopAfter: [], maxTokens: ROLLOUT.generate, temperature: 1, topP: 1 });
      await session.end();
    };
    await once();
    const seconds: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await once();
      seconds.push((performance.now() - started) / 1000);
    }
    onnx.dispose();
    const value = (ROLLOUT.rollouts * ROLLOUT.generate) / median(seconds);
    print('onnx_rollout_tokens_per_second_at_threads', value, { threads, ...ROLLOUT });
    if (!best || value > best.value) best = { value, threads };
  }
  print('onnx_rollout_tokens_per_second', best!.value, { threads: best!.threads, ...common, ...ROLLOUT, note: 'the same rollouts through ONNX Runtime (rollouts: onnx), best of 1 and 2 intra-op threads, median of 3' });
  print('rollout_ratio_onnx_over_tfjs', best!.value / tfjsRollout, { backend });
  return best;
}
