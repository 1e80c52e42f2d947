import { describe, expect, it } from 'vitest';
import { ConfigValidationError, parseSearcherConfig } from '../src/index';
import { ADVANTAGE_STD_ESTIMATORS, ADVANTAGE_STD_KINDS } from '../src/core/rl/advantages';
import { trajectoryWith } from '../src/core/rl/__fixtures__/trajectories';
import { batchAdvantages } from '../src/core/rl/group-rule';
import { POLICY_LOSS_KINDS, POLICY_LOSSES, policyLoss } from '../src/core/rl/policy-loss';
import { updatePolicy } from '../src/core/rl/policy-update';
import { createRandom } from '../src/core/random';
import type { LogProbBatch, LossFunction, PolicyBackend, UpdateResult } from '../src/ports/policy-backend';

// Every entry of the core's RL registries is reachable from a configuration and used by the
// update; nothing is registered here, so a new entry is checked as it is added.

function fieldOf(input: unknown): string | null {
  try {
    parseSearcherConfig(input as Parameters<typeof parseSearcherConfig>[0]);
    return null;
  } catch (error) {
    expect(ConfigValidationError.isInstance(error)).toBe(true);
    return (error as ConfigValidationError).field;
  }
}

/** The old log-prob `trajectoryWith` records at position p, and the new one the fake policy gives. */
const oldAt = (p: number) => -0.1 * p;
const newAt = (p: number) => oldAt(p) + 0.15 * ((p % 3) - 1);

/** A policy whose update evaluates the core's loss at `newAt` and reports it. */
function fakePolicy() {
  const seen: Array<{ batch: LogProbBatch; value: number }> = [];
  const policy: Pick<PolicyBackend, 'logProbs' | 'update'> = {
    logProbs: async () => [],
    async update(batch: LogProbBatch, lossFn: LossFunction): Promise<UpdateResult> {
      const { value } = lossFn(batch.positions.map((row) => row.map(newAt)));
      seen.push({ batch, value });
      return { value, gradNorm: 1, applied: true };
    },
  };
  return { policy: policy as PolicyBackend, seen };
}

describe('POLICY_LOSSES', () => {
  it.each(POLICY_LOSS_KINDS)('%s: the config takes it and the update computes its loss', async (kind) => {
    const config = parseSearcherConfig({ rl: { loss: { kind, clipLow: 0.2, clipHigh: 0.2 } } });
    expect(config.rl.loss.kind).toBe(kind);
    const positions = [
      [2, 3, 4, 5],
      [3, 4],
    ];
    const advantages = [1, -1];
    const trajectories = positions.map((p, i) => trajectoryWith(`g#${i}`, 8, p, advantages[i]!));
    const { policy, seen } = fakePolicy();
    const summary = await updatePolicy(
      policy,
      trajectories,
      { loss: config.rl.loss, ppoEpochs: 1, miniBatchSize: null, entropyCoef: 0, temperature: 1 },
      { random: createRandom(1) },
    );
    expect(summary.applied).toBe(1);
    const expected = policyLoss({
      kind,
      oldLogProbs: positions.map((row) => row.map(oldAt)),
      newLogProbs: positions.map((row) => row.map(newAt)),
      mask: positions.map((row) => row.map(() => 1)),
      advantages,
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: config.rl.loss.aggregation,
      ...POLICY_LOSSES[kind].inputOptions(config.rl.loss),
    });
    expect(seen[0]!.value).toBeCloseTo(expected.value, 14);
  });

  it('gives each kind its own loss value on the same batch (the kind is not ignored)', async () => {
    const values = await Promise.all(
      POLICY_LOSS_KINDS.map(async (kind) => {
        const config = parseSearcherConfig({ rl: { loss: { kind, clipLow: 0.2, clipHigh: 0.2 } } });
        const { policy, seen } = fakePolicy();
        await updatePolicy(
          policy,
          [trajectoryWith('g#0', 8, [2, 3, 4, 5], 1)],
          { loss: config.rl.loss, ppoEpochs: 1, miniBatchSize: null, entropyCoef: 0, temperature: 1 },
          { random: createRandom(1) },
        );
        return seen[0]!.value;
      }),
    );
    expect(new Set(values).size).toBe(POLICY_LOSS_KINDS.length);
  });

  it("the config refuses a loss's own settings on another kind, naming the field, and an unknown kind", () => {
    const settingValue = { dualClip: true, clipRatioC: 3, logRatioClamp: 20 } as const;
    for (const kind of POLICY_LOSS_KINDS) {
      const own = POLICY_LOSSES[kind].ownSettings as readonly string[];
      for (const other of POLICY_LOSS_KINDS)
        for (const field of POLICY_LOSSES[other].ownSettings) {
          const refused = fieldOf({ rl: { loss: { kind, [field]: settingValue[field] } } });
          expect(refused, `${field} on ${kind}`).toBe(own.includes(field) ? null : `rl.loss.${field}`);
        }
    }
    expect(fieldOf({ rl: { loss: { kind: 'dapo' } } })).toBe('rl.loss.kind');
  });
});

describe('ADVANTAGE_STD_ESTIMATORS', () => {
  it.each(ADVANTAGE_STD_KINDS)('%s: the config takes it and the advantages use it', (std) => {
    const config = parseSearcherConfig({ rl: { advantage: { std } } });
    expect(config.rl.advantage.std).toBe(std);
    const rewards = [0, 1, 3];
    const { advantages } = batchAdvantages(rewards, ['g', 'g', 'g'], config.rl.advantage);
    const { degreesOfFreedomLost, defaultEps } = ADVANTAGE_STD_ESTIMATORS[std];
    const mean = 4 / 3;
    const squared = rewards.reduce((s, r) => s + (r - mean) ** 2, 0);
    const scale = Math.sqrt(squared / (rewards.length - degreesOfFreedomLost)) + defaultEps;
    advantages.forEach((a, i) => expect(a).toBeCloseTo((rewards[i]! - mean) / scale, 12));
  });

  it('gives each estimator its own advantages, and the config refuses an unknown one', () => {
    const firsts = ADVANTAGE_STD_KINDS.map(
      (std) => batchAdvantages([0, 1, 3], ['g', 'g', 'g'], { std }).advantages[0],
    );
    expect(new Set(firsts).size).toBe(ADVANTAGE_STD_KINDS.length);
    expect(fieldOf({ rl: { advantage: { std: 'mad' } } })).toBe('rl.advantage.std');
  });
});
