import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError, NotTrainableError } from '../../core/errors';
import { sftLossFunction } from '../../core/rl/policy-update';
import { decodeSafetensors, encodeSafetensors, float32Of } from '../../provider-utils/safetensors';
import type { LossFunction } from '../../ports/policy-backend';
import { CHATML, writeTinyLlama } from './__fixtures__/tiny-llama';
import { chatFormatOf, createLlamaPolicy, type LlamaPolicy } from './policy';

// The policy on a tiny random Llama in a Hugging Face folder (the tiny GPT fixture's byte-level
// tokenizer, a ChatML template): rollouts, log-probs, LoRA and full updates, checkpoints.

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tiny-llama-'));
  await writeTinyLlama(dir);
});

const policies: LlamaPolicy[] = [];
afterAll(async () => {
  for (const p of policies) await p.dispose();
});
async function policy(settings: Partial<Parameters<typeof createLlamaPolicy>[0]> = {}) {
  const made = await createLlamaPolicy({ model: dir, intraOpThreads: 1, ...settings });
  policies.push(made);
  return made;
}

describe('createLlamaPolicy', () => {
  it('wraps prompts and observations in the chat template', async () => {
    const format = chatFormatOf(CHATML, {});
    expect(format.prompt('Find X')).toBe('<|im_start|>user\nFind X<|im_end|>\n<|im_start|>assistant\n');
    expect(format.observation('<information>p</information>')).toBe(
      '<|im_end|>\n<|im_start|>user\n<information>p</information><|im_end|>\n<|im_start|>assistant\n',
    );
    const p = await policy();
    expect(p.chatFormat?.prompt('a')).toBe(format.prompt('a'));
    expect((await policy({ chatTemplate: false })).chatFormat).toBeUndefined();
  });

  it('rolls out turns whose log-probs are the ones logProbs gives', async () => {
    const p = await policy();
    const prompt = p.tokenizer.encode(p.chatFormat!.prompt('Where is the river?'));
    const session = await p.begin([prompt, prompt]);
    const [a, b] = await session.generateTurn([0, 1], {
      stopAfter: ['</search>'],
      maxTokens: 12,
      temperature: 1,
      topP: 1,
    });
    await session.end();
    for (const out of [a!, b!]) {
      const ids = [...prompt, ...out.steps.map((s) => s.tokenId)];
      const [scored] = await p.logProbs({ inputIds: [ids], positions: [out.steps.map((s) => s.position)] });
      out.steps.forEach((s, k) => expect(scored![k]).toBeCloseTo(s.logProb, 4));
    }
  });

  for (const finetune of ['lora', 'full'] as const) {
    it(`${finetune}: an update raises the log-probs it is asked to, and a checkpoint restores it`, async () => {
      const p = await policy({ finetune, optimizer: { learningRate: 1e-2 } });
      const ids = p.tokenizer.encode('<search>river length</search>');
      const batch = { inputIds: [ids], positions: [ids.slice(1).map((_, i) => i + 1)] };
      const before = (await p.logProbs(batch))[0]!;
      const initial = await p.save();
      const result = await p.update(batch, (logProbs) => ({
        value: -logProbs[0]!.reduce((a, b) => a + b, 0),
        gradNewLogProbs: [logProbs[0]!.map(() => -1)],
      }));
      expect(result.applied).toBe(true);
      expect(result.gradNorm).toBeGreaterThan(0);
      const after = (await p.logProbs(batch))[0]!;
      expect(after.reduce((a, b) => a + b, 0)).toBeGreaterThan(before.reduce((a, b) => a + b, 0));
      const trained = await p.save();
      // The optimizer's settings ride along (defaults resolved), for another trainer to continue under.
      expect(trained.metadata.optimizer).toMatchObject({ learningRate: 1e-2, beta1: 0.9, beta2: 0.999 });
      expect(Object.keys(trained.blobs).sort()).toEqual(
        finetune === 'lora'
          ? ['adapter_config.json', 'adapter_model.safetensors', 'optimizer.safetensors']
          : [
              'config.json',
              'generation_config.json',
              'model.safetensors',
              'optimizer.safetensors',
              'tokenizer.json',
              'tokenizer_config.json',
            ],
      );
      await p.load(initial);
      (await p.logProbs(batch))[0]!.forEach((v, k) => expect(v).toBeCloseTo(before[k]!, 5));
      await p.load(trained);
      (await p.logProbs(batch))[0]!.forEach((v, k) => expect(v).toBeCloseTo(after[k]!, 5));
      // A fresh policy (as a resumed run or `eval` builds it) scores and samples as the trained one.
      const fresh = await policy({ finetune, optimizer: { learningRate: 1e-2 } });
      await fresh.load(trained);
      (await fresh.logProbs(batch))[0]!.forEach((v, k) => expect(v).toBeCloseTo(after[k]!, 5));
      const greedy = async (q: LlamaPolicy) => {
        const session = await q.begin([ids.slice(0, 3)]);
        const [turn] = await session.generateTurn([0], {
          maxTokens: 6,
          temperature: 0,
          topP: 1,
          stopAfter: [],
        });
        await session.end();
        return turn!.steps.map((s) => [s.tokenId, Number(s.logProb.toFixed(4))]);
      };
      expect(await greedy(fresh)).toEqual(await greedy(p));
    });
  }

  it('an update over many chunks trains the same with every activation kept, some, or none (keptActivationBytes)', async () => {
    const settings = { finetune: 'full' as const, optimizer: { learningRate: 1e-2 }, maxChunkTokens: 16 };
    const texts = [
      '<search>river length</search>',
      '<answer>1204 km</answer>',
      '<search>Nile source</search>',
    ];
    const after: number[][][] = [];
    for (const keptActivationBytes of [2 ** 31, 60_000, 0]) {
      const p = await policy({ ...settings, keptActivationBytes });
      const ids = texts.map((t) => p.tokenizer.encode(t));
      const batch = { inputIds: ids, positions: ids.map((row) => row.slice(1).map((_, i) => i + 1)) };
      const result = await p.update(batch, (logProbs) => ({
        value: -logProbs.flat().reduce((a, b) => a + b, 0),
        gradNewLogProbs: logProbs.map((row) => row.map(() => -1)),
      }));
      expect(result.applied).toBe(true);
      after.push(await p.logProbs(batch));
    }
    for (const other of after.slice(1))
      other.forEach((row, i) => row.forEach((v, k) => expect(v).toBeCloseTo(after[0]![i]![k]!, 5)));
  });

  it.each([
    ['full', {}],
    ['lora', { lora: { rank: 2, alpha: 4, dropout: 0.3 } }],
  ] as const)(
    '%s: a supervised loss trains as its two passes do, in one run a chunk (the same weights after)',
    async (finetune, extra) => {
      const settings = { finetune, ...extra, optimizer: { learningRate: 1e-2 }, maxChunkTokens: 16, seed: 3 };
      const texts = ['<search>river length</search>', '<answer>1204 km</answer>', '<search>Nile</search>'];
      const after: number[][][] = [];
      const values: number[] = [];
      for (const declared of [true, false]) {
        const p = await policy(settings);
        const ids = texts.map((t) => p.tokenizer.encode(t));
        const batch = { inputIds: ids, positions: ids.map((row) => row.slice(1).map((_, i) => i + 1)) };
        const sft = sftLossFunction(batch);
        // The same loss with its gradient not declared runs as an RL loss: every forward, then the backwards.
        const lossFn: LossFunction = declared ? sft : (logProbs) => sft(logProbs);
        // Which path ran: the one-run path makes one training session, the two passes two.
        const created = vi.spyOn(ort.InferenceSession, 'create');
        for (let step = 0; step < 2; step++) {
          const result = await p.update(batch, lossFn, { entropyCoef: 0.1 });
          expect(result.applied).toBe(true);
          values.push(result.value);
        }
        expect(created).toHaveBeenCalledTimes(declared ? 1 : 2);
        created.mockRestore();
        after.push(await p.logProbs(batch));
      }
      expect(values[0]).toBeCloseTo(values[2]!, 5);
      expect(values[1]).toBeCloseTo(values[3]!, 5);
      // The second step's loss moved, so the weights the comparison reads were trained.
      expect(values[1]).not.toBeCloseTo(values[0]!, 3);
      after[1]!.forEach((row, i) => row.forEach((v, k) => expect(v).toBeCloseTo(after[0]![i]![k]!, 5)));
    },
  );

  it.each([
    ['full', {}, true],
    ['lora', { lora: { rank: 2, alpha: 4 } }, true],
    ['lora', { lora: { rank: 2, alpha: 4, dropout: 0.3 } }, false],
  ] as const)(
    '%s: an RL loss anticipating the rollout log-probs trains as its two passes do (%o), in one run a chunk where nothing drops',
    async (finetune, extra, oneRun) => {
      const settings = { finetune, ...extra, optimizer: { learningRate: 1e-2 }, maxChunkTokens: 16, seed: 3 };
      const texts = ['<search>river length</search>', '<answer>1204 km</answer>', '<search>Nile</search>'];
      const after: number[][][] = [];
      for (const anticipate of [true, false]) {
        const p = await policy(settings);
        const ids = texts.map((t) => p.tokenizer.encode(t));
        const batch = { inputIds: ids, positions: ids.map((row) => row.slice(1).map((_, i) => i + 1)) };
        const old = await p.logProbs(batch);
        // PPO's unclipped gradient at ratio exp(new - old), with advantages of both signs.
        const loss: LossFunction = (logProbs) => ({
          value: 0,
          gradNewLogProbs: logProbs.map((row, i) =>
            row.map((lp, t) => -(i - 1) * Math.exp(lp - old[i]![t]!)),
          ),
        });
        const created = vi.spyOn(ort.InferenceSession, 'create');
        const result = await p.update(
          batch,
          anticipate ? Object.assign(loss, { anticipatedLogProbs: old }) : loss,
          {
            entropyCoef: 0.1,
          },
        );
        expect(result.applied).toBe(true);
        expect(created).toHaveBeenCalledTimes(anticipate && oneRun ? 1 : 2);
        created.mockRestore();
        if (anticipate) expect(result.metrics?.anticipationCorrected).toBe(oneRun ? 0 : undefined);
        after.push(await p.logProbs(batch));
      }
      if (oneRun)
        after[1]!.forEach((row, i) => row.forEach((v, k) => expect(v).toBeCloseTo(after[0]![i]![k]!, 5)));
    },
  );

  it('refuses a checkpoint whose optimizer moments do not fit its weights, naming the moment, and changes nothing', async () => {
    const p = await policy({ finetune: 'lora', optimizer: { learningRate: 1e-2 } });
    const ids = p.tokenizer.encode('<search>river</search>');
    const batch = { inputIds: [ids], positions: [ids.slice(1).map((_, i) => i + 1)] };
    const trained = await p.update(batch, sftLossFunction(batch));
    expect(trained.applied).toBe(true);
    const saved = await p.save();
    const moments = decodeSafetensors(saved.blobs['optimizer.safetensors']!, { argument: 'test' });
    const [name] = [...moments.tensors.keys()].filter((n) => n.startsWith('first.'));
    const tensors = [...moments.tensors].map(([n, t]) => {
      const values = float32Of(t)!;
      return {
        name: n,
        shape: [n === name ? values.length - 1 : values.length],
        values: n === name ? values.slice(1) : values,
      };
    });
    const broken = {
      ...saved,
      blobs: { ...saved.blobs, 'optimizer.safetensors': encodeSafetensors(tensors, { step: '1' }) },
    };
    const before = await p.logProbs(batch);
    await expect(p.load(broken)).rejects.toMatchObject({
      argument: `checkpoint.blobs['optimizer.safetensors']: ${name}`,
    });
    expect(await p.logProbs(batch)).toEqual(before);
    // The optimizer kept its state: the next update runs.
    expect((await p.update(batch, sftLossFunction(batch))).applied).toBe(true);
  });

  it('LoRA starts as the base model (B is zero) and counts only the adapter', async () => {
    const base = await policy({ finetune: 'none' });
    const lora = await policy({
      finetune: 'lora',
      lora: { rank: 4, alpha: 8, targetModules: ['q_proj', 'down_proj'] },
    });
    const ids = base.tokenizer.encode('hello world');
    const batch = { inputIds: [ids], positions: [[1, 2, 3, 4]] };
    expect(await lora.logProbs(batch)).toEqual(await base.logProbs(batch));
    // After an update the adapter moves the policy; its base reference stays the base model.
    const trained = await lora.update(batch, (lp) => ({ value: 0, gradNewLogProbs: [lp[0]!.map(() => -1)] }));
    expect(trained.applied).toBe(true);
    const reference = lora.baseReference();
    expect(await reference.logProbs(batch)).toEqual(await base.logProbs(batch));
    expect(await lora.logProbs(batch)).not.toEqual(await base.logProbs(batch));
    // q_proj: A [4, 32] + B [32, 4]; down_proj: A [4, 64] + B [32, 4]; two layers.
    expect(lora.trainableParameterCount).toBe(2 * (4 * 32 + 32 * 4 + 4 * 64 + 32 * 4));
    // The tiny Llama: embeddings 397 x 32 (tied head), per layer two norms, q/o 32 x 32, k/v 16 x 32, three 64 x 32 MLP matrices; the final norm.
    const baseScalars = 397 * 32 + 2 * (2 * 32 + 2 * 32 * 32 + 2 * 16 * 32 + 3 * 64 * 32) + 32;
    expect(base.describe()).toEqual({
      parameterCount: baseScalars,
      backend: 'onnxruntime-cpu',
      addedTags: [],
    });
    expect(lora.describe()).toEqual({
      parameterCount: baseScalars + lora.trainableParameterCount,
      trainableParameterCount: lora.trainableParameterCount,
      backend: 'onnxruntime-cpu',
      addedTags: [],
    });
    await expect(
      base.update(batch, () => ({ value: 0, gradNewLogProbs: [[0, 0, 0, 0]] })),
    ).rejects.toBeInstanceOf(NotTrainableError);
  });

  it('LoRA dropout trains and scores deterministically outside training', async () => {
    const p = await policy({
      finetune: 'lora',
      lora: { rank: 2, alpha: 4, dropout: 0.3 },
      optimizer: { learningRate: 1e-2 },
    });
    const ids = p.tokenizer.encode('abc def');
    const batch = { inputIds: [ids], positions: [[1, 2, 3]] };
    const result = await p.update(batch, (lp) => ({ value: 0, gradNewLogProbs: [lp[0]!.map(() => -1)] }));
    expect(result.applied).toBe(true);
    expect(await p.logProbs(batch)).toEqual(await p.logProbs(batch));
  });

  it('refuses bad settings, a missing model and bad batches by name', async () => {
    await expect(createLlamaPolicy({ model: join(dir, 'nope') })).rejects.toThrow(/model/);
    await expect(createLlamaPolicy({ model: dir, lora: { rank: 0 } as never })).rejects.toThrow(/rank/);
    const p = await policy();
    await expect(p.logProbs({ inputIds: [[1, 999]], positions: [[1]] })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(p.logProbs({ inputIds: [[1, 2]], positions: [[0]] })).rejects.toThrow(/positions\[0\]\[0\]/);
  });
});
