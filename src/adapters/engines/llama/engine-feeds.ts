import type * as Ort from 'onnxruntime-node';
import type { OnnxRuntime } from '../onnx-graph/index';
import { type LlamaConfig, rotaryTables } from './config';
import { LLAMA_MASKED, LLAMA_NAMES } from './llama-graph';

// The Llama engine's per-run inputs: rotary tables, the causal mask (the last length's kept), the
// right-padded ids with the scored places and targets, and LoRA dropout masks.

/** Dropout masks by input name, each [tokens, in]. */
export type DropoutMasks = Record<string, Float32Array>;

export const int64 = (ort: OnnxRuntime, values: ArrayLike<number>, dims: number[]) =>
  new ort.Tensor('int64', BigInt64Array.from(Array.from(values, (v) => BigInt(v))), dims);

export function createFeedBuilders(ort: OnnxRuntime, config: LlamaConfig) {
  const { headDim: hd } = config;
  const rope = (positions: number[], rows: number, length: number) => {
    const { cos, sin } = rotaryTables(config, positions);
    return {
      [LLAMA_NAMES.cos]: new ort.Tensor('float32', cos, [rows, length, 1, hd]),
      [LLAMA_NAMES.sin]: new ort.Tensor('float32', sin, [rows, length, 1, hd]),
    };
  };

  const causal = new Map<number, Ort.Tensor>();
  const causalMask = (length: number) => {
    let tensor = causal.get(length);
    if (!tensor) {
      const G = config.heads / config.kvHeads;
      const data = new Float32Array(G * length * length);
      for (let i = 0; i < G * length; i++)
        data.fill(LLAMA_MASKED, i * length + (i % length) + 1, (i + 1) * length);
      tensor = new ort.Tensor('float32', data, [1, 1, G * length, length]);
      causal.clear();
      causal.set(length, tensor);
    }
    return tensor;
  };

  const sequenceFeeds = (
    sequences: readonly (readonly number[])[],
    positions: readonly (readonly number[])[],
    temperature: number,
  ) => {
    const length = Math.max(...sequences.map((s) => s.length));
    const rows = sequences.length;
    const ids = new Array<number>(rows * length).fill(0);
    const rotary: number[] = [];
    const places: number[] = [];
    const targets: number[] = [];
    sequences.forEach((s, i) => {
      for (let t = 0; t < length; t++) {
        ids[i * length + t] = s[Math.min(t, s.length - 1)]!;
        rotary.push(t);
      }
      for (const p of positions[i]!) {
        places.push(i * length + p - 1);
        targets.push(s[p]!);
      }
    });
    return {
      ids,
      feeds: {
        [LLAMA_NAMES.ids]: int64(ort, ids, [rows, length]),
        ...rope(rotary, rows, length),
        [LLAMA_NAMES.mask]: causalMask(length),
        [LLAMA_NAMES.places]: int64(ort, places, [places.length]),
        [LLAMA_NAMES.targets]: int64(ort, targets, [targets.length]),
        [LLAMA_NAMES.temperature]: new ort.Tensor(
          'float32',
          new Float32Array([temperature > 0 ? temperature : 1]),
          [],
        ),
      } as Record<string, Ort.Tensor>,
      tokens: rows * length,
    };
  };
  const dropoutFeeds = (inputs: Set<string>, dropout: DropoutMasks | undefined, tokens: number) => {
    const feeds: Record<string, Ort.Tensor> = {};
    for (const name of inputs) {
      if (!name.startsWith('dropout.')) continue;
      const mask = dropout?.[name];
      if (!mask) throw new Error(`llama engine: the dropout mask '${name}' was not given`);
      feeds[name] = new ort.Tensor('float32', mask, [tokens, mask.length / tokens]);
    }
    return feeds;
  };

  return { rope, sequenceFeeds, dropoutFeeds };
}
