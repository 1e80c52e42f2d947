import { describe, expect, it } from 'vitest';
import { createRandom } from '../../../core/random';
import { ort } from '../../onnx/runtime';
import { type LlamaConfig, llamaWeightShapes, parseLlamaConfig } from './config';
import { createLlamaEngine, type LlamaRow, type WeightMap } from './engine';
import { loraWeightShapes, type LoraShape } from './llama-graph';

// The engine against itself: log-probs from the decode graph with a cache equal the score graph's,
// and the train graph's gradients equal central differences of the score graph's objective. The
// exactness against transformers is python/tests/test_llama_engine.py.

function tinyConfig(modelType: 'llama' | 'qwen2' | 'qwen3', tie: boolean): LlamaConfig {
  return parseLlamaConfig(
    {
      model_type: modelType,
      vocab_size: 40,
      hidden_size: 16,
      intermediate_size: 24,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 4,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      max_position_embeddings: 64,
      tie_word_embeddings: tie,
      eos_token_id: 1,
    },
    'tiny',
  );
}

function randomWeights(
  shapes: Array<{ name: string; shape: number[] }>,
  seed: number,
  scale = 0.3,
): WeightMap {
  const random = createRandom(seed, 1);
  const out: WeightMap = new Map();
  for (const { name, shape } of shapes) {
    const n = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    for (let i = 0; i < n; i++)
      values[i] =
        name.endsWith('norm.weight') || name.endsWith('layernorm.weight')
          ? 1 + (random.nextFloat() - 0.5) * 0.2
          : (random.nextFloat() - 0.5) * 2 * scale;
    out.set(name, values);
  }
  return out;
}

const sequences = [
  [3, 7, 9, 11, 2, 5, 8],
  [4, 4, 6, 1, 12],
];
const positions = [
  [1, 2, 3, 4, 5, 6],
  [2, 3, 4],
];

async function engineFor(config: LlamaConfig, options: { lora?: LoraShape; trainBase?: boolean }) {
  const base = randomWeights(llamaWeightShapes(config), 7);
  const lora = options.lora
    ? { shape: options.lora, weights: randomWeights(loraWeightShapes(config, options.lora), 9, 0.2) }
    : undefined;
  const engine = await createLlamaEngine(ort, {
    config,
    base,
    ...(lora && { lora }),
    trainBase: options.trainBase ?? false,
    session: { intraOpThreads: 1 },
    maxBatchRows: 8,
    maxChunkTokens: 64,
  });
  return { engine, base, lora };
}

describe('the Llama engine on tiny random models', () => {
  for (const [modelType, tie] of [
    ['llama', true],
    ['qwen2', false],
    ['qwen3', true],
  ] as const) {
    it(`${modelType}: cached decoding gives the scored log-probs`, async () => {
      const config = tinyConfig(modelType, tie);
      const { engine } = await engineFor(config, {});
      const scored = await engine.score(sequences, positions, 1);
      const rows: LlamaRow[] = sequences.map((s) => ({
        sequence: s.slice(0, 3),
        cached: 0,
        keys: [],
        values: [],
        capacity: 0,
        random: createRandom(0, 0),
        busy: false,
      }));
      for (const r of rows) {
        r.keys = Array.from({ length: config.layers }, () => new Float32Array(0));
        r.values = Array.from({ length: config.layers }, () => new Float32Array(0));
      }
      // Feed the prompts together, then one token at a time; compare with the scored positions.
      const decoded: number[][] = [[], []];
      let out = await engine.decode(rows, 1);
      for (let step = 3; step < 7; step++) {
        rows.forEach((_r, i) => {
          const s = sequences[i]!;
          if (step < s.length) decoded[i]!.push(out[i]![s[step]!]!);
        });
        const live = rows.filter((_, i) => step < sequences[i]!.length);
        for (const r of live) r.sequence.push(sequences[rows.indexOf(r)]![step]!);
        out = await engine.decode(live, 1);
        const full = new Array(rows.length);
        live.forEach((r, k) => {
          full[rows.indexOf(r)] = out[k];
        });
        out = full;
      }
      expect(decoded[0]!.length).toBe(4);
      decoded[0]!.forEach((v, k) => expect(v).toBeCloseTo(scored.tokenLogProbs[2 + k]!, 4));
      // Row 1: positions 3 and 4 were decoded; its scored positions are 2, 3, 4 (offsets 6..8).
      decoded[1]!.forEach((v, k) => expect(v).toBeCloseTo(scored.tokenLogProbs[6 + 1 + k]!, 4));
      await engine.dispose();
    });

    for (const mode of ['full', 'lora'] as const) {
      it(`${modelType} ${mode}: gradients equal central differences`, async () => {
        const config = tinyConfig(modelType, tie);
        const lora: LoraShape | undefined =
          mode === 'lora'
            ? { rank: 2, scaling: 2, targets: ['q_proj', 'v_proj', 'down_proj'], dropout: false }
            : undefined;
        const {
          engine,
          base,
          lora: adapter,
        } = await engineFor(config, { ...(lora && { lora }), trainBase: mode === 'full' });
        const upstream = new Float32Array(9).map((_, i) => (i % 3) - 0.7);
        const entropyWeight = 0.05;
        const objective = async () => {
          const s = await engine.score(sequences, positions, 1.3);
          return s.tokenLogProbs.reduce((a, v, i) => a + v * upstream[i]!, 0) - entropyWeight * s.entropySum;
        };
        const into: WeightMap = new Map();
        const forward = await engine.trainingForward(sequences, positions, 1.3, {
          entropy: true,
          keep: true,
        });
        const scoredNow = await engine.score(sequences, positions, 1.3);
        forward.tokenLogProbs.forEach((v, i) => expect(v).toBeCloseTo(scoredNow.tokenLogProbs[i]!, 5));
        expect(forward.kept).not.toBeNull();
        expect(forward.keptBytes).toBeGreaterThan(0);
        await engine.gradients(forward, upstream, entropyWeight, into);
        expect(forward.kept).toBeNull();
        // Not kept: the backward runs the forward again, to the same gradients.
        const again: WeightMap = new Map();
        const unkept = await engine.trainingForward(sequences, positions, 1.3, {
          entropy: true,
          keep: false,
        });
        expect(unkept.kept).toBeNull();
        await engine.gradients(unkept, upstream, entropyWeight, again);
        for (const [name, g] of into) expect(Array.from(again.get(name)!), name).toEqual(Array.from(g));
        // One run (a loss with a constant gradient): the same log-probs and gradients as the two runs.
        const fused: WeightMap = new Map();
        const step = await engine.trainingStep(
          sequences,
          positions,
          1.3,
          { entropy: true },
          upstream,
          entropyWeight,
          fused,
        );
        expect(Array.from(step.tokenLogProbs)).toEqual(Array.from(forward.tokenLogProbs));
        expect(step.entropySum).toBeCloseTo(forward.entropySum, 5);
        expect([...fused.keys()].sort()).toEqual([...into.keys()].sort());
        for (const [name, g] of into)
          fused.get(name)!.forEach((v, i) => expect(Math.abs(v - g[i]!), name).toBeLessThan(1e-6));
        const weights = mode === 'full' ? base : adapter!.weights;
        const names =
          mode === 'full'
            ? [
                'model.embed_tokens.weight',
                'model.layers.0.self_attn.q_proj.weight',
                'model.layers.1.mlp.down_proj.weight',
                'model.layers.0.input_layernorm.weight',
                'model.norm.weight',
                ...(config.qkNorm ? ['model.layers.1.self_attn.k_norm.weight'] : []),
                ...(config.attentionBias ? ['model.layers.0.self_attn.k_proj.bias'] : []),
              ]
            : ['model.layers.0.self_attn.q_proj.lora_A.weight', 'model.layers.1.mlp.down_proj.lora_B.weight'];
        for (const name of names) {
          const w = weights.get(name)!;
          const g = into.get(name)!;
          expect(g, name).toBeDefined();
          for (const index of [0, Math.min(5, w.length - 2), w.length - 1]) {
            const keep = w[index]!;
            const h = 1e-2;
            w[index] = keep + h;
            const plus = await objective();
            w[index] = keep - h;
            const minus = await objective();
            w[index] = keep;
            const numeric = (plus - minus) / (2 * h);
            expect(Math.abs(g[index]! - numeric), `${name}[${index}] ${g[index]} vs ${numeric}`).toBeLessThan(
              2e-3 + 2e-2 * Math.abs(numeric),
            );
          }
        }
        await engine.dispose();
      });
    }
  }

  it('keeps a memory arena on the one-run training session only, unless trainingMemoryArena says otherwise', async () => {
    const config = tinyConfig('llama', true);
    const expected = new Map<boolean | 'one-run' | undefined, boolean[]>([
      [undefined, [true, true, false, false]],
      ['one-run', [true, true, false, false]],
      [true, [true, true, true, true]],
      [false, [true, false, false, false]],
    ]);
    for (const [trainingMemoryArena, sessions] of expected) {
      const seen: boolean[] = [];
      const recording = {
        ...ort,
        InferenceSession: {
          create: async (model: Uint8Array, options: Record<string, unknown>) => {
            const session = await ort.InferenceSession.create(model, options);
            seen.push(options.enableCpuMemArena !== false);
            return session;
          },
        },
      } as typeof ort;
      const engine = await createLlamaEngine(recording, {
        config,
        base: randomWeights(llamaWeightShapes(config), 7),
        trainBase: true,
        session: { intraOpThreads: 1 },
        maxBatchRows: 8,
        maxChunkTokens: 64,
        ...(trainingMemoryArena !== undefined && { trainingMemoryArena }),
      });
      await engine.score(sequences, positions, 1);
      const upstream = new Float32Array(9).fill(0.1);
      await engine.trainingStep(sequences, positions, 1, { entropy: false }, upstream, 0, new Map());
      const forward = await engine.trainingForward(sequences, positions, 1, { entropy: false, keep: true });
      await engine.gradients(forward, upstream, 0, new Map());
      // score, train (one run), train-forward, train-backward.
      expect(seen, String(trainingMemoryArena)).toEqual(sessions);
      await engine.dispose();
    }
  });
});
