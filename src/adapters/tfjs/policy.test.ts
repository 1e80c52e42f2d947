import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError, InvalidArgumentError } from '../../core/errors';
import { createRandom } from '../../core/random';
import { runSft } from '../../core/rl/policy-update';
import { createLossFunction } from '../../core/rl/update-batch';
import type { LogProbBatch, LossFunction, RolloutSession, } from '../../ports/policy-backend';
import { selectTfjsBackend } from './backends';
import { tokenizerFromCheckpoint } from './checkpoint';
import { createTfjsPolicy, type TfjsPolicy } from './policy';
import type { TfjsPolicySettings } from './settings';
import { createVocabularyTokenizer } from '../../core/protocol/tokenizer';
import { incrementalLogProbError, rollTwoTurns } from '../../testing/policy-contract';
import { useTinyPolicies } from './__fixtures__/tiny-policy';

const tiny = useTinyPolicies();

describe('backend selection', () => {
  it('picks the highest-priority backend that initialises and reports what it passed over', async () => {
    const selected = await selectTfjsBackend('auto');
    // tfjs-node(-gpu) cannot be installed on this machine; wasm is the default here.
    expect(selected.name).toBe('wasm');
    expect(selected.skipped.map((s) => s.name)).toEqual(['tensorflow-gpu', 'tensorflow']);
    expect(selected.skipped[1]!.reason).toMatch(/npm install @tensorflow\/tfjs-node/);
  });

  it('prefers tfjs-node over wasm when it loads', async () => {
    const cpuFactory = tf.findBackendFactory('cpu')!;
    const loaded: string[] = [];
    const loader = async (name: string) => {
      loaded.push(name);
      if (name === '@tensorflow/tfjs-node') tf.registerBackend('tensorflow', cpuFactory);
      else if (name !== '@tensorflow/tfjs-backend-wasm') throw new Error(`Cannot find package '${name}'`);
    };
    try {
      const selected = await selectTfjsBackend('auto', loader);
      expect(selected.name).toBe('tensorflow');
      expect(loaded).toEqual(['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']);
    } finally {
      await tf.setBackend('wasm');
      tf.removeBackend('tensorflow');
    }
  });

  it('a named backend that is missing is a clear error, and an unknown name lists the known ones', async () => {
    const error = await selectTfjsBackend('tensorflow').catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('tensorflow');
    expect((error as Error).message).toMatch(/@tensorflow\/tfjs-node/);
    await expect(selectTfjsBackend('webgpu' as never)).rejects.toThrow(/unknown backend; use 'auto' or one of tensorflow-gpu, tensorflow, wasm, cpu/);
    await expect(selectTfjsBackend('tensorflow', async () => undefined)).rejects.toThrow(/registered no 'tensorflow' backend/);
    await expect(createTfjsPolicy({ backend: 'tensorflow-gpu' })).rejects.toThrow(/tfjs-node-gpu/);
  });
});

describe('numeric contract (every backend)', () => {
  const reference: { logProbs?: number[][]; batch?: LogProbBatch } = {};
  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: incremental log-probs equal a full forward within 1e-5`, async () => {
      const policy = await tiny({ backend });
      expect(policy.backend.name).toBe(backend);
      for (const options of [{ temperature: 1, topP: 1 }, { temperature: 0.7, topP: 0.9 }]) {
        const { maxError, positionsHold, rollout } = await incrementalLogProbError(policy, options);
        expect(positionsHold).toBe(true);
        expect(maxError).toBeLessThan(1e-5);
        const { sequences, steps } = rollout;
        if (options.temperature === 1) {
          // The same seed gives the same weights on every backend: their log-probs agree.
          const batch = reference.batch ?? { inputIds: sequences, positions: steps.map((row) => row.map((s) => s.position)) };
          const lp = await policy.logProbs(batch);
          if (!reference.logProbs) Object.assign(reference, { batch, logProbs: lp });
          else lp.forEach((row, i) => row.forEach((v, k) => expect(v).toBeCloseTo(reference.logProbs![i]![k]!, 4)));
        }
      }
    });
  }
});

describe('TfjsPolicy', () => {
  const finiteDifferences = async (makeLoss: (batch: LogProbBatch, policy: TfjsPolicy, random: ReturnType<typeof createRandom>) => Promise<LossFunction>) => {
    const policy = await tiny({ model: { layers: 1, width: 8, heads: 2, contextLength: 16 }, seed: 9 });
    const random = createRandom(4);
    const batch: LogProbBatch = {
      inputIds: [
        [3, 70, 101, 12, 260, 99],
        [5, 8, 13, 21, 34],
      ],
      positions: [
        [2, 3, 5],
        [1, 4],
      ],
    };
    const lossFn = await makeLoss(batch, policy, random);
    const objective = async () => lossFn(await policy.logProbs(batch)).value;
    const { gradients } = await policy.gradients(batch, lossFn);
    const base = await policy.save();
    const names = Object.keys(gradients);
    const flat = (name: string) => gradients[name]!;
    const shift = async (direction: Record<string, Float32Array>, epsilon: number) => {
      const weights = new Float32Array(base.blobs['weights.f32']!.slice().buffer);
      let offset = 0;
      for (const name of names) {
        const d = direction[name]!;
        for (let i = 0; i < d.length; i++) weights[offset + i]! += epsilon * d[i]!;
        offset += d.length;
      }
      await policy.load({ ...base, blobs: { ...base.blobs, 'weights.f32': new Uint8Array(weights.buffer) } });
      return objective();
    };
    const directional = async (direction: Record<string, Float32Array>) => {
      // Small: layer norms over tiny activations curve sharply (FD converges to the analytic value as epsilon -> 0).
      const epsilon = 1e-3;
      const fd = ((await shift(direction, epsilon)) - (await shift(direction, -epsilon))) / (2 * epsilon);
      const analytic = names.reduce((s, name) => s + flat(name).reduce((t, v, i) => t + v * direction[name]![i]!, 0), 0);
      return { fd, analytic };
    };
    // Along the gradient itself, along a random direction, and along single coordinates.
    const norm = Math.sqrt(names.reduce((s, n) => s + flat(n).reduce((t, v) => t + v * v, 0), 0));
    const along = Object.fromEntries(names.map((n) => [n, flat(n).map((v) => v / norm)]));
    const randomDirection = Object.fromEntries(names.map((n) => [n, flat(n).map(() => random.nextNormal() / Math.sqrt(flat(n).length * names.length))]));
    const byGradient = await directional(along);
    expect(byGradient.fd).toBeCloseTo(norm, 2);
    expect(Math.abs(byGradient.fd - byGradient.analytic) / byGradient.analytic).toBeLessThan(1e-2);
    const byRandom = await directional(randomDirection);
    expect(Math.abs(byRandom.fd - byRandom.analytic)).toBeLessThan(1e-2 * norm);
    for (const name of ['blocks.0.attention.qkv', 'tokenEmbedding', 'finalNorm.gain', 'positionEmbedding']) {
      const values = flat(name);
      const index = values.reduce((best, v, i) => (Math.abs(v) > Math.abs(values[best]!) ? i : best), 0);
      const unit = Object.fromEntries(names.map((n) => [n, new Float32Array(flat(n).length)]));
      unit[name]![index] = 1;
      const { fd, analytic } = await directional(unit);
      expect(Math.abs(fd - analytic)).toBeLessThan(2e-2 * Math.abs(analytic) + 2e-3);
    }
  };

  it('matches finite differences of sum g*logp (the backend half)', async () => {
    await finiteDifferences(async (batch, _policy, random) => {
      const g = batch.positions.map((row) => row.map(() => random.nextNormal()));
      return (lp) => ({ value: lp.reduce((s, row, i) => s + row.reduce((t, v, k) => t + v * g[i]![k]!, 0), 0), gradNewLogProbs: g });
    });
  });

  it('matches finite differences of the core GSPO + k3 KL loss end to end', async () => {
    await finiteDifferences(async (batch, policy, random) => {
      // Old log-probs near the current ones, so that the ratios sit inside the clip range (no kinks).
      const current = await policy.logProbs(batch);
      const oldLogProbs = current.map((row) => row.map((v) => v + 0.02 * random.nextNormal()));
      return createLossFunction({ oldLogProbs, advantages: [1.2, -0.7] }, { kind: 'gspo', clipLow: 0.2, clipHigh: 0.28, aggregation: 'seq-mean-token-mean', klCoef: 0.1, klEstimator: 'k3' });
    });
  });

  it('an update moves log-probs with the sign of the advantage (GSPO and PPO-clip)', async () => {
    const policy = await tiny({ optimizer: { learningRate: 1e-3, weightDecay: 0 } });
    const { sequences, steps } = await rollTwoTurns(policy, { temperature: 1, topP: 1 });
    const positions = steps.map((row) => row.map((s) => s.position));
    const advantages = [1, -1, 0.5];
    for (const kind of ['gspo', 'ppo_clip'] as const) {
      const before = await policy.logProbs({ inputIds: sequences, positions });
      const lossFn = createLossFunction({ oldLogProbs: before, advantages }, { kind, clipLow: 0.2, clipHigh: 0.28, aggregation: 'seq-mean-token-mean', klCoef: 0, klEstimator: 'k3' });
      const result = await policy.update({ inputIds: sequences, positions }, lossFn);
      expect(result.applied).toBe(true);
      const after = await policy.logProbs({ inputIds: sequences, positions });
      const change = after.map((row, i) => row.reduce((s, v, k) => s + v - before[i]![k]!, 0));
      expect(change[0]).toBeGreaterThan(0);
      expect(change[1]).toBeLessThan(0);
      expect(change[2]).toBeGreaterThan(0);
    }
  });

  it('skips a step whose gradient norm is not finite, and says so', async () => {
    const policy = await tiny();
    const batch = { inputIds: [[1, 2, 3, 4]], positions: [[2, 3]] };
    const before = await policy.logProbs(batch);
    const result = await policy.update(batch, () => ({ value: NaN, gradNewLogProbs: [[NaN, 1]] }));
    expect(result).toMatchObject({ applied: false });
    expect(Number.isFinite(result.gradNorm)).toBe(false);
    expect(result.skippedReason).toMatch(/non-finite gradient norm/);
    expect(await policy.logProbs(batch)).toEqual(before);
    expect(policy.optimizerStep).toBe(0);
  });

  it('clips the gradient norm and reports the norm before clipping', async () => {
    const policy = await tiny({ optimizer: { maxGradNorm: 1e-3 } });
    const batch = { inputIds: [[1, 2, 3, 4]], positions: [[2, 3]] };
    const result = await policy.update(batch, (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -100)) }));
    expect(result.applied).toBe(true);
    expect(result.gradNorm).toBeGreaterThan(1e-3);
  });

  it('keeps the number of live tensors flat over 20 steps of rollouts and updates', async () => {
    const policy = await tiny();
    const run = async () => {
      const { sequences, steps } = await rollTwoTurns(policy, { temperature: 1, topP: 0.95 });
      const positions = steps.map((row) => row.map((s) => s.position));
      const old = steps.map((row) => row.map((s) => s.logProb));
      const lossFn = createLossFunction({ oldLogProbs: old, advantages: [0.5, -1, 0.5] }, { kind: 'gspo', clipLow: 3e-4, clipHigh: 4e-4, aggregation: 'seq-mean-token-mean', klCoef: 0.01, klEstimator: 'k3' });
      await policy.update({ inputIds: sequences, positions }, lossFn, { entropyCoef: 0.01 });
      await policy.logProbs({ inputIds: sequences, positions });
    };
    await run();
    const before = tf.memory().numTensors;
    const counts: number[] = [];
    for (let i = 0; i < 20; i++) {
      await run();
      counts.push(tf.memory().numTensors);
    }
    expect(counts.every((c) => c === before)).toBe(true);
  });

  it('learns a demonstration by SFT and then stops at the closing tag', async () => {
    const policy = await tiny({ optimizer: { learningRate: 1e-2, weightDecay: 0 } });
    const tok = policy.tokenizer;
    const prompt = tok.encode('Q: find cats\n');
    const answer = tok.encode('<search>cats</search>');
    const inputIds = [...prompt, ...answer, ...tok.encode('never seen')];
    const positions = answer.map((_, k) => prompt.length + k);
    const summary = await runSft(policy, [{ inputIds, positions }], { epochs: 60, batchSize: 1 }, { random: createRandom(1) });
    expect(summary.epochLoss[summary.epochLoss.length - 1]).toBeLessThan(0.05);
    const session = await policy.begin([prompt]);
    const [out] = await session.generateTurn([0], { stopAfter: ['</search>'], maxTokens: 20, temperature: 0, topP: 1 });
    expect(out!.finishReason).toBe('stop');
    expect(tok.decode(out!.steps.map((s) => s.tokenId))).toBe('<search>cats</search>');
  });

  it('is deterministic under a seed, and concurrent sessions decode together with the same numbers', async () => {
    const a = await tiny({ seed: 21 });
    const b = await tiny({ seed: 21 });
    const ra = await rollTwoTurns(a, { temperature: 1, topP: 0.9 });
    const rb = await rollTwoTurns(b, { temperature: 1, topP: 0.9 });
    expect(ra.sequences).toEqual(rb.sequences);
    // Two sessions at once on one policy: each rollout keeps its own sampling stream.
    const c = await tiny({ seed: 21 });
    const [rc] = await Promise.all([rollTwoTurns(c, { temperature: 1, topP: 0.9 }), rollTwoTurns(c, { temperature: 1, topP: 0.9 })]);
    expect(rc.first.map((o) => o.steps.length)).toEqual(ra.first.map((o) => o.steps.length));
    const full = await c.logProbs({ inputIds: rc.sequences, positions: rc.steps.map((row) => row.map((s) => s.position)) });
    rc.steps.forEach((row, i) => row.forEach((s, k) => expect(Math.abs(s.logProb - full[i]![k]!)).toBeLessThan(1e-5)));
  });

  it('respects per-rollout token budgets and the model context', async () => {
    const policy = await tiny();
    const tok = policy.tokenizer;
    const session = await policy.begin([tok.encode('a'), tok.encode('b'.repeat(88))]);
    const out = await session.generateTurn([0, 1], { stopAfter: [], maxTokens: [4, 30], temperature: 1, topP: 1 });
    expect(out.map((o) => [o.steps.length, o.finishReason])).toEqual([
      [4, 'length'],
      [8, 'length'],
    ]);
    await expect(session.append(1, [1])).rejects.toThrow(InvalidArgumentError);
    await expect(session.generateTurn([2], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 })).rejects.toThrow(/no rollout 2/);
    await expect(policy.begin([tok.encode('c'.repeat(96))])).rejects.toThrow(/promptTokenIds\[0\].*context is 96/);
    await expect(policy.logProbs({ inputIds: [[1, 2, 999]], positions: [[2]] })).rejects.toThrow(/batch.inputIds\[0\]\[2\].*outside the vocabulary/);
    await expect(policy.logProbs({ inputIds: [[1, 2]], positions: [[0]] })).rejects.toThrow(/batch.positions\[0\]\[0\]/);
    const ended: RolloutSession = session;
    await ended.end();
    await expect(ended.generateTurn([0], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 })).rejects.toThrow(/session has ended/);
  });

  it('saves and loads weights, optimizer state and sampling state; a different model is refused by name', async () => {
    const a = await tiny({ seed: 1 });
    const batch = { inputIds: [[1, 2, 3, 4, 5]], positions: [[2, 4]] };
    await a.update(batch, (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -1)) }));
    const checkpoint = await a.save();
    const b = await tiny({ seed: 2 });
    await b.load(checkpoint);
    expect(await b.logProbs(batch)).toEqual(await a.logProbs(batch));
    expect(b.optimizerStep).toBe(1);
    // Both continue identically: the same next update and the same samples.
    const lossFn: LossFunction = (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -1)) });
    await a.update(batch, lossFn);
    await b.update(batch, lossFn);
    expect(await b.logProbs(batch)).toEqual(await a.logProbs(batch));
    const sa = await (await a.begin([[1, 2]])).generateTurn([0], { stopAfter: [], maxTokens: 5, temperature: 1, topP: 1 });
    const sb = await (await b.begin([[1, 2]])).generateTurn([0], { stopAfter: [], maxTokens: 5, temperature: 1, topP: 1 });
    expect(sb).toEqual(sa);
    const wide = await tiny({ model: { layers: 2, width: 32, heads: 2, contextLength: 96 } });
    await expect(wide.load(checkpoint)).rejects.toThrow(/checkpoint.metadata.model.width/);
    await expect(b.load({ ...checkpoint, format: 'other' })).rejects.toThrow(/checkpoint.format/);
    await expect(b.load({ ...checkpoint, blobs: { ...checkpoint.blobs, 'weights.f32': new Uint8Array(8) } })).rejects.toThrow(/weights.f32/);
  });

  it('ends one session without disturbing another decoding alongside it, and refuses overlapping turns', async () => {
    const policy = await tiny();
    const tok = policy.tokenizer;
    const a = await policy.begin([tok.encode('alpha'), tok.encode('beta')]);
    const b = await policy.begin([tok.encode('gamma')]);
    const turnA = a.generateTurn([0, 1], { stopAfter: [], maxTokens: 20, temperature: 1, topP: 1 });
    const turnB = b.generateTurn([0], { stopAfter: [], maxTokens: 20, temperature: 1, topP: 1 });
    await expect(a.generateTurn([1], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 })).rejects.toThrow(/rollout 1 is already generating/);
    await expect(a.append(0, [1])).rejects.toThrow(/generating a turn/);
    await a.end();
    await expect(turnA).rejects.toThrow(/session ended while a turn was generating/);
    const [outB] = await turnB;
    expect(outB!.steps).toHaveLength(20);
  });

  it('stops at a closing tag spelled out in bytes as well as at its token', async () => {
    const policy = await tiny({ optimizer: { learningRate: 1e-2, weightDecay: 0 } });
    const tok = policy.tokenizer;
    const prompt = tok.encode('Q: find cats\n');
    const spelled = [tok.specialTokenId('<search>')!, ...new TextEncoder().encode('cats</search>')];
    const inputIds = [...prompt, ...spelled, ...tok.encode('zzzz')];
    const positions = [...spelled, 1, 2, 3, 4].map((_, k) => prompt.length + k);
    await runSft(policy, [{ inputIds, positions }], { epochs: 60, batchSize: 1 }, { random: createRandom(1) });
    const session = await policy.begin([prompt]);
    const [out] = await session.generateTurn([0], { stopAfter: ['</search>'], maxTokens: 30, temperature: 0, topP: 1 });
    expect(out!.finishReason).toBe('stop');
    expect(tok.decode(out!.steps.map((s) => s.tokenId))).toBe('<search>cats</search>');
  });

  it('without coalescing, a session decodes the same numbers alone or beside another', async () => {
    const run = async (withNeighbour: boolean) => {
      const policy = await tiny({ seed: 8, coalesceSessions: false });
      const tok = policy.tokenizer;
      const main = policy.begin([tok.encode('Question: one\n'), tok.encode('Q: two, longer prompt\n')]);
      const other = withNeighbour ? await policy.begin([tok.encode('x'), tok.encode('yy'), tok.encode('zzz')]) : null;
      const session = await main;
      const turns = [session.generateTurn([0, 1], { stopAfter: [], maxTokens: 12, temperature: 1, topP: 1 })];
      if (other) turns.push(other.generateTurn([0, 1, 2], { stopAfter: [], maxTokens: 7, temperature: 1, topP: 1 }));
      const [outputs] = await Promise.all(turns);
      return outputs!.map((o) => o.steps);
    };
    expect(await run(true)).toEqual(await run(false));
  });

  it('scores batches whose rows are one token long', async () => {
    const policy = await tiny();
    expect(await policy.logProbs({ inputIds: [[5], [6]], positions: [[], []] })).toEqual([[], []]);
    expect((await policy.logProbs({ inputIds: [[5, 7], [6, 8]], positions: [[1], [1]] })).map((r) => r.length)).toEqual([1, 1]);
  });

  it('refuses a bad checkpoint without changing anything', async () => {
    const a = await tiny({ seed: 1 });
    const batch = { inputIds: [[1, 2, 3, 4, 5]], positions: [[2, 4]] };
    await a.update(batch, (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -1)) }));
    const checkpoint = await a.save();
    const b = await tiny({ seed: 2 });
    const before = await b.logProbs(batch);
    const { 'adam-v.f32': _dropped, ...withoutMoments } = checkpoint.blobs;
    await expect(b.load({ ...checkpoint, blobs: withoutMoments })).rejects.toThrow(/adam-v.f32/);
    await expect(b.load({ ...checkpoint, metadata: { ...checkpoint.metadata, sampling: {} } })).rejects.toThrow(/sessionCounter/);
    expect(await b.logProbs(batch)).toEqual(before);
    expect(b.optimizerStep).toBe(0);
    // A tokenizer with the same vocabulary size but other token texts is refused too.
    const base = b.tokenizer;
    const other = await tiny({ seed: 2 });
    const renamed = await tiny({ seed: 2 }, { tokenizer: { ...base, tokenText: (id: number) => (id === 65 ? 'a' : base.tokenText(id)) } });
    await expect(renamed.load(checkpoint)).rejects.toThrow(/checkpoint.metadata.tokenizer/);
    await other.load(checkpoint);
    expect(await other.logProbs(batch)).toEqual(await a.logProbs(batch));
  });

  it('saves a corpus vocabulary with the checkpoint and rebuilds the tokenizer from it', async () => {
    const tokenizer = createVocabularyTokenizer(['Corcor', 'revenue', '2019']);
    const a = await tiny({ seed: 3 }, { tokenizer });
    expect(a.modelConfig.vocabSize).toBe(tokenizer.vocabSize);
    const checkpoint = await a.save();
    const rebuilt = tokenizerFromCheckpoint(checkpoint);
    expect(rebuilt.vocabulary).toEqual(['Corcor', 'revenue', '2019']);
    const b = await tiny({ seed: 4 }, { tokenizer: rebuilt });
    await b.load(checkpoint);
    const batch = { inputIds: [tokenizer.encode('<search>Corcor revenue 2019</search>')], positions: [[1, 2, 3]] };
    expect(await b.logProbs(batch)).toEqual(await a.logProbs(batch));
    expect(tokenizerFromCheckpoint({ ...checkpoint, metadata: {} }).vocabulary).toBeUndefined();
  });

  it('validates its settings by field', async () => {
    await expect(createTfjsPolicy({ model: { width: 10, heads: 3 } } as TfjsPolicySettings)).rejects.toThrow(/model.width/);
    await expect(createTfjsPolicy({ optimizer: { learningRate: -1 } } as TfjsPolicySettings)).rejects.toThrow(/createTfjsPolicy.optimizer.learningRate/);
  });
});
