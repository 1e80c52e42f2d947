import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRandom } from '../../core/random';
import { ppoClipLoss } from '../../core/rl/__fixtures__/loss-settings';
import { trajectoryWith } from '../../core/rl/__fixtures__/trajectories';
import { updatePolicy, type PolicyUpdateSettings } from '../../core/rl/policy-update';
import { buildUpdateBatch, createLossFunction } from '../../core/rl/update-batch';
import { writeTinyLlama } from './__fixtures__/tiny-llama';
import { createLlamaPolicy, type LlamaPolicy } from './policy';

// updatePolicy takes the optimizer step of a minibatch whose advantages are all 0 without its
// forward and backward (core/rl/policy-update.ts, zeroGradientStep): on a real engine, the weights
// must end exactly where the whole minibatch's forward and backward put them.

let dir: string;
const policies: LlamaPolicy[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tiny-llama-no-signal-'));
  await writeTinyLlama(dir);
});
afterAll(async () => {
  for (const p of policies) await p.dispose();
});

const settings: PolicyUpdateSettings = {
  loss: ppoClipLoss(),
  ppoEpochs: 1,
  miniBatchSize: null,
  entropyCoef: 0,
  temperature: 1,
};
const withSignal = () => [trajectoryWith('g#0', 12, [4, 5, 6], 1), trajectoryWith('g#1', 10, [3, 4], -1)];
const noSignal = () => [trajectoryWith('h#0', 12, [4, 5, 6], 0), trajectoryWith('h#1', 10, [3, 4], 0)];
const probe = { inputIds: [Array.from({ length: 16 }, (_, i) => 120 + i)], positions: [[3, 7, 11, 15]] };

describe('an update on a minibatch with no signal', () => {
  for (const finetune of ['full', 'lora'] as const) {
    it(`${finetune}: moves the weights exactly as the minibatch's forward and backward do (AdamW's moments, weight decay, schedule)`, async () => {
      const make = async () => {
        const made = await createLlamaPolicy({
          model: dir,
          intraOpThreads: 1,
          finetune,
          lora: { rank: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj'] },
          optimizer: { learningRate: 1e-2, weightDecay: 0.1, warmupSteps: 3 },
        });
        policies.push(made);
        return made;
      };
      const [shortcut, full] = [await make(), await make()];
      // A first step with signal on both: the optimizer's moments are no longer 0.
      for (const p of [shortcut, full])
        await updatePolicy(p, withSignal(), settings, { random: createRandom(1) });
      const before = await shortcut.logProbs(probe);
      expect(await full.logProbs(probe)).toEqual(before);

      const summary = await updatePolicy(shortcut, noSignal(), settings, { random: createRandom(1) });
      expect(summary).toMatchObject({ updates: 1, applied: 1, noSignal: 1, tokens: 0, loss: 0, gradNorm: 0 });
      const { recomputed: _, ...batch } = buildUpdateBatch(noSignal());
      const whole = await full.update(
        { inputIds: batch.inputIds, positions: batch.positions, temperature: 1 },
        createLossFunction(batch, settings.loss),
        { entropyCoef: 0 },
      );
      expect(whole).toMatchObject({ applied: true, gradNorm: 0 });

      const after = await shortcut.logProbs(probe);
      expect(after).toEqual(await full.logProbs(probe));
      expect(after).not.toEqual(before); // the step was taken: the moments moved the weights
    });
  }
});
