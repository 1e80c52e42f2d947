// The Llama engine as the Python-side tests see it (python/tests/test_llama_engine.py): one JSON
// request in a file, one JSON answer on stdout. Log-probs, greedy tokens with and without the
// key/value cache, gradients by every trainable weight, and in-process training steps whose result
// is written as a transformers folder or a peft adapter, so that PyTorch can check each one.
//   tsx scripts/llama-probe.ts REQUEST.json
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FloatAdamW } from '../src/adapters/llama/adamw';
import { hfModelFiles, peftAdapterFiles } from '../src/adapters/llama/checkpoint';
import { createLlamaEngine, type LlamaRow, type WeightMap } from '../src/adapters/engines/llama/engine';
import {
  type LoraShape,
  type LoraTargetModule,
  loraWeightShapes,
} from '../src/adapters/engines/llama/llama-graph';
import { loadLlamaModel, loadPeftAdapter } from '../src/adapters/llama/loader';
import { ort } from '../src/adapters/onnx/runtime';
import { createRandom } from '../src/core/random';

interface Request {
  model: string;
  adapter?: string;
  lora?: { rank: number; alpha: number; targetModules: LoraTargetModule[] };
  score?: { sequences: number[][]; temperature?: number };
  greedy?: { prompt: number[]; maxTokens: number; cache: boolean };
  gradients?: {
    sequences: number[][];
    upstream: number[][];
    temperature?: number;
    entropyWeight?: number;
    mode: 'full' | 'lora';
  };
  train?: {
    mode: 'full' | 'lora';
    sequences: number[][];
    steps?: number;
    learningRate?: number;
    saveTo: string;
  };
}

const request = JSON.parse(await readFile(process.argv[2]!, 'utf8')) as Request;
const loaded = await loadLlamaModel(request.model);
const { config } = loaded;
let lora: { shape: LoraShape; weights: WeightMap; alpha: number } | undefined;
if (request.adapter) {
  const adapter = await loadPeftAdapter(request.adapter, config);
  lora = {
    shape: {
      rank: adapter.rank,
      scaling: adapter.alpha / adapter.rank,
      targets: adapter.targets,
      dropout: false,
    },
    weights: adapter.weights,
    alpha: adapter.alpha,
  };
} else if (request.lora) {
  const shape: LoraShape = {
    rank: request.lora.rank,
    scaling: request.lora.alpha / request.lora.rank,
    targets: request.lora.targetModules,
    dropout: false,
  };
  const random = createRandom(0, 1);
  const weights: WeightMap = new Map();
  for (const { name, shape: dims } of loraWeightShapes(config, shape)) {
    const values = new Float32Array(dims[0]! * dims[1]!);
    if (name.endsWith('lora_A.weight'))
      for (let i = 0; i < values.length; i++) values[i] = (random.nextFloat() * 2 - 1) / Math.sqrt(dims[1]!);
    weights.set(name, values);
  }
  lora = { shape, weights, alpha: request.lora.alpha };
}
const trainBase = request.gradients?.mode === 'full' || request.train?.mode === 'full';
const engine = await createLlamaEngine(ort, {
  config,
  base: loaded.weights,
  ...(lora && { lora: { shape: lora.shape, weights: lora.weights } }),
  trainBase,
  session: { intraOpThreads: 2 },
  maxBatchRows: 8,
  maxChunkTokens: 8192,
});
const allPositions = (sequences: number[][]) => sequences.map((s) => s.slice(1).map((_, i) => i + 1));
const split = (flat: Float32Array, sequences: number[][]) => {
  let at = 0;
  return sequences.map((s) => {
    const row = Array.from(flat.subarray(at, at + s.length - 1));
    at += s.length - 1;
    return row;
  });
};
const answer: Record<string, unknown> = {};

if (request.score) {
  const { sequences, temperature = 1 } = request.score;
  const result = await engine.score(sequences, allPositions(sequences), temperature);
  answer.logProbs = split(result.tokenLogProbs, sequences);
  answer.entropySum = result.entropySum;
}

if (request.greedy) {
  const { prompt, maxTokens, cache } = request.greedy;
  const newRow = (sequence: number[]): LlamaRow => ({
    sequence,
    cached: 0,
    keys: Array.from({ length: config.layers }, () => new Float32Array(0)),
    values: Array.from({ length: config.layers }, () => new Float32Array(0)),
    capacity: 0,
    random: createRandom(0, 0),
    busy: false,
  });
  const argmax = (values: Float32Array) => values.reduce((best, v, i) => (v > values[best]! ? i : best), 0);
  const tokens: number[] = [];
  const row = newRow([...prompt]);
  for (let step = 0; step < maxTokens; step++) {
    const [logProbs] = await engine.decode([cache ? row : newRow([...prompt, ...tokens])], 1);
    const next = argmax(logProbs!);
    tokens.push(next);
    row.sequence.push(next);
  }
  answer.greedy = tokens;
}

const gradientsOf = async (
  sequences: number[][],
  upstream: Float32Array,
  temperature: number,
  entropyWeight: number,
): Promise<WeightMap> => {
  const into: WeightMap = new Map();
  const forward = await engine.trainingForward(sequences, allPositions(sequences), temperature, {
    entropy: entropyWeight !== 0,
    keep: true,
  });
  await engine.gradients(forward, upstream, entropyWeight, into);
  return into;
};

if (request.gradients) {
  const { sequences, upstream, temperature = 1, entropyWeight = 0, mode } = request.gradients;
  const into = await gradientsOf(sequences, Float32Array.from(upstream.flat()), temperature, entropyWeight);
  const names = mode === 'full' ? [...loaded.weights.keys()] : [...(lora?.weights.keys() ?? [])];
  const shapes = new Map(
    loraWeightShapes(config, lora?.shape ?? { rank: 1, scaling: 1, targets: [], dropout: false }).map((w) => [
      w.name,
      w.shape,
    ]),
  );
  const { llamaWeightShapes } = await import('../src/adapters/engines/llama/config');
  for (const w of llamaWeightShapes(config)) shapes.set(w.name, w.shape);
  answer.gradients = Object.fromEntries(
    names.map((name) => [name, { shape: shapes.get(name), values: Array.from(into.get(name)!) }]),
  );
}

if (request.train) {
  const { mode, sequences, steps = 1, learningRate = 1e-3, saveTo } = request.train;
  const parameters = mode === 'full' ? loaded.weights : lora!.weights;
  const optimizer = new FloatAdamW({
    learningRate,
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
    weightDecay: 0,
    maxGradNorm: null,
    warmupSteps: 0,
  });
  const total = sequences.reduce((n, s) => n + s.length - 1, 0);
  // The SFT surrogate: minimise the mean negative log-likelihood of every token.
  const upstream = new Float32Array(total).fill(-1 / total);
  for (let step = 0; step < steps; step++)
    optimizer.apply(parameters, await gradientsOf(sequences, upstream, 1, 0), () => false);
  const files =
    mode === 'full'
      ? hfModelFiles(config, loaded.weights, loaded.tokenizer, loaded.chatTemplate)
      : peftAdapterFiles(
          config,
          { ...lora!.shape, alpha: lora!.alpha, dropoutRate: 0 },
          lora!.weights,
          request.model,
        );
  await mkdir(saveTo, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(saveTo, name), bytes);
  answer.saved = saveTo;
}

await engine.dispose();
process.stdout.write(`${JSON.stringify(answer)}\n`);
