import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import { createRandom } from '../../core/random';
import { runSft } from '../../core/rl/policy-update';
import type { LossFunction, RolloutSession } from '../../ports/policy-backend';
import { tokenizerFromCheckpoint } from './checkpoint';
import { createTfjsPolicy } from './policy';
import type { TfjsPolicySettings } from './settings';
import { createVocabularyTokenizer } from '../../core/protocol/tokenizer';
import { rollTwoTurns } from '../../testing/policy-contract';
import { useTinyPolicies } from './__fixtures__/tiny-policy';

const tiny = useTinyPolicies();

describe('TfjsPolicy: learning, sessions, checkpoints, settings', () => {
  it('learns a demonstration by SFT and then stops at the closing tag', async () => {
    const policy = await tiny({ optimizer: { learningRate: 1e-2, weightDecay: 0 } });
    const tok = policy.tokenizer;
    const prompt = tok.encode('Q: find cats\n');
    const answer = tok.encode('<search>cats</search>');
    const inputIds = [...prompt, ...answer, ...tok.encode('never seen')];
    const positions = answer.map((_, k) => prompt.length + k);
    const summary = await runSft(
      policy,
      [{ inputIds, positions }],
      { epochs: 60, batchSize: 1 },
      { random: createRandom(1) },
    );
    expect(summary.epochLoss[summary.epochLoss.length - 1]).toBeLessThan(0.05);
    const session = await policy.begin([prompt]);
    const [out] = await session.generateTurn([0], {
      stopAfter: ['</search>'],
      maxTokens: 20,
      temperature: 0,
      topP: 1,
    });
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
    const [rc] = await Promise.all([
      rollTwoTurns(c, { temperature: 1, topP: 0.9 }),
      rollTwoTurns(c, { temperature: 1, topP: 0.9 }),
    ]);
    expect(rc.first.map((o) => o.steps.length)).toEqual(ra.first.map((o) => o.steps.length));
    const full = await c.logProbs({
      inputIds: rc.sequences,
      positions: rc.steps.map((row) => row.map((s) => s.position)),
    });
    rc.steps.forEach((row, i) =>
      row.forEach((s, k) => expect(Math.abs(s.logProb - full[i]![k]!)).toBeLessThan(1e-5)),
    );
  });

  it('respects per-rollout token budgets and the model context', async () => {
    const policy = await tiny();
    const tok = policy.tokenizer;
    const session = await policy.begin([tok.encode('a'), tok.encode('b'.repeat(88))]);
    const out = await session.generateTurn([0, 1], {
      stopAfter: [],
      maxTokens: [4, 30],
      temperature: 1,
      topP: 1,
    });
    expect(out.map((o) => [o.steps.length, o.finishReason])).toEqual([
      [4, 'length'],
      [8, 'length'],
    ]);
    await expect(session.append(1, [1])).rejects.toThrow(InvalidArgumentError);
    await expect(
      session.generateTurn([2], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/no rollout 2/);
    await expect(policy.begin([tok.encode('c'.repeat(96))])).rejects.toThrow(
      /promptTokenIds\[0\].*context is 96/,
    );
    await expect(policy.logProbs({ inputIds: [[1, 2, 999]], positions: [[2]] })).rejects.toThrow(
      /batch.inputIds\[0\]\[2\].*outside the vocabulary/,
    );
    await expect(policy.logProbs({ inputIds: [[1, 2]], positions: [[0]] })).rejects.toThrow(
      /batch.positions\[0\]\[0\]/,
    );
    const ended: RolloutSession = session;
    await ended.end();
    await expect(
      ended.generateTurn([0], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/session has ended/);
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
    const sa = await (await a.begin([[1, 2]])).generateTurn([0], {
      stopAfter: [],
      maxTokens: 5,
      temperature: 1,
      topP: 1,
    });
    const sb = await (await b.begin([[1, 2]])).generateTurn([0], {
      stopAfter: [],
      maxTokens: 5,
      temperature: 1,
      topP: 1,
    });
    expect(sb).toEqual(sa);
    const wide = await tiny({ model: { layers: 2, width: 32, heads: 2, contextLength: 96 } });
    await expect(wide.load(checkpoint)).rejects.toThrow(/checkpoint.metadata.model.width/);
    await expect(b.load({ ...checkpoint, format: 'other' })).rejects.toThrow(/checkpoint.format/);
    await expect(
      b.load({ ...checkpoint, blobs: { ...checkpoint.blobs, 'model.safetensors': new Uint8Array(8) } }),
    ).rejects.toThrow(/model.safetensors/);
  });

  it('ends one session without disturbing another decoding alongside it, and refuses overlapping turns', async () => {
    const policy = await tiny();
    const tok = policy.tokenizer;
    const a = await policy.begin([tok.encode('alpha'), tok.encode('beta')]);
    const b = await policy.begin([tok.encode('gamma')]);
    const turnA = a.generateTurn([0, 1], { stopAfter: [], maxTokens: 20, temperature: 1, topP: 1 });
    const turnB = b.generateTurn([0], { stopAfter: [], maxTokens: 20, temperature: 1, topP: 1 });
    await expect(
      a.generateTurn([1], { stopAfter: [], maxTokens: 1, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/rollout 1 is already generating/);
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
    await runSft(
      policy,
      [{ inputIds, positions }],
      { epochs: 60, batchSize: 1 },
      { random: createRandom(1) },
    );
    const session = await policy.begin([prompt]);
    const [out] = await session.generateTurn([0], {
      stopAfter: ['</search>'],
      maxTokens: 30,
      temperature: 0,
      topP: 1,
    });
    expect(out!.finishReason).toBe('stop');
    expect(tok.decode(out!.steps.map((s) => s.tokenId))).toBe('<search>cats</search>');
  });

  it('without coalescing, a session decodes the same numbers alone or beside another', async () => {
    const run = async (withNeighbour: boolean) => {
      const policy = await tiny({ seed: 8, coalesceSessions: false });
      const tok = policy.tokenizer;
      const main = policy.begin([tok.encode('Question: one\n'), tok.encode('Q: two, longer prompt\n')]);
      const other = withNeighbour
        ? await policy.begin([tok.encode('x'), tok.encode('yy'), tok.encode('zzz')])
        : null;
      const session = await main;
      const turns = [session.generateTurn([0, 1], { stopAfter: [], maxTokens: 12, temperature: 1, topP: 1 })];
      if (other)
        turns.push(other.generateTurn([0, 1, 2], { stopAfter: [], maxTokens: 7, temperature: 1, topP: 1 }));
      const [outputs] = await Promise.all(turns);
      return outputs!.map((o) => o.steps);
    };
    expect(await run(true)).toEqual(await run(false));
  });

  it('scores batches whose rows are one token long', async () => {
    const policy = await tiny();
    expect(await policy.logProbs({ inputIds: [[5], [6]], positions: [[], []] })).toEqual([[], []]);
    expect(
      (
        await policy.logProbs({
          inputIds: [
            [5, 7],
            [6, 8],
          ],
          positions: [[1], [1]],
        })
      ).map((r) => r.length),
    ).toEqual([1, 1]);
  });

  it('refuses a bad checkpoint without changing anything', async () => {
    const a = await tiny({ seed: 1 });
    const batch = { inputIds: [[1, 2, 3, 4, 5]], positions: [[2, 4]] };
    await a.update(batch, (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -1)) }));
    const checkpoint = await a.save();
    const b = await tiny({ seed: 2 });
    const before = await b.logProbs(batch);
    const { 'optimizer.safetensors': _dropped, ...withoutMoments } = checkpoint.blobs;
    await expect(b.load({ ...checkpoint, blobs: withoutMoments })).rejects.toThrow(/optimizer.safetensors/);
    await expect(
      b.load({ ...checkpoint, metadata: { ...checkpoint.metadata, sampling: {} } }),
    ).rejects.toThrow(/sessionCounter/);
    expect(await b.logProbs(batch)).toEqual(before);
    expect(b.optimizerStep).toBe(0);
    // A tokenizer with the same vocabulary size but other token texts is refused too.
    const base = b.tokenizer;
    const other = await tiny({ seed: 2 });
    const renamed = await tiny(
      { seed: 2 },
      { tokenizer: { ...base, tokenText: (id: number) => (id === 65 ? 'a' : base.tokenText(id)) } },
    );
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
    const batch = {
      inputIds: [tokenizer.encode('<search>Corcor revenue 2019</search>')],
      positions: [[1, 2, 3]],
    };
    expect(await b.logProbs(batch)).toEqual(await a.logProbs(batch));
    expect(tokenizerFromCheckpoint({ ...checkpoint, metadata: {} }).vocabulary).toBeUndefined();
  });

  it('validates its settings by field', async () => {
    await expect(createTfjsPolicy({ model: { width: 10, heads: 3 } } as TfjsPolicySettings)).rejects.toThrow(
      /model.width/,
    );
    await expect(createTfjsPolicy({ optimizer: { learningRate: -1 } } as TfjsPolicySettings)).rejects.toThrow(
      /createTfjsPolicy.optimizer.learningRate/,
    );
  });
});
