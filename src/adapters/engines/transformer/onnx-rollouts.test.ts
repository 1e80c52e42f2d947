import { describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../../../core/errors';
import { createLossFunction } from '../../../core/rl/update-batch';
import { rollTwoTurns, type TwoTurnRollout } from '../../../testing/policy-contract';
import { createTfjsPolicy, type TfjsPolicy } from '../../tfjs/policy';
import { TINY, useTinyPolicies } from '../../tfjs/__fixtures__/tiny-policy';

const tiny = useTinyPolicies();

/** Each rollout's sampled positions, as `logProbs` takes them. */
const positionsOf = (rolled: TwoTurnRollout) => rolled.steps.map((row) => row.map((s) => s.position));

/** The largest |rollout log-prob - logProbs()| over every sampled token. */
async function maxLogProbGap(
  policy: TfjsPolicy,
  rolled: TwoTurnRollout,
  temperature: number,
): Promise<number> {
  const full = await policy.logProbs({
    inputIds: rolled.sequences,
    positions: positionsOf(rolled),
    temperature,
  });
  return Math.max(...rolled.steps.flatMap((row, i) => row.map((s, k) => Math.abs(s.logProb - full[i]![k]!))));
}

describe('rollouts through ONNX Runtime', () => {
  // The weights as constants of sessions made per version (the default), and for a model past
  // the constant-weight limit (set to 0 here) as inputs of one pair of sessions fed the live data.
  for (const [backend, weights] of [
    ['wasm', 'constants'],
    ['cpu', 'constants'],
    ['wasm', 'inputs'],
  ] as const) {
    it(`${backend}, weights as ${weights}: rollout log-probs equal the training backend's logProbs within 1e-5, across updates`, async () => {
      const policy = await tiny(
        {
          backend,
          rollouts: 'onnx',
          optimizer: { learningRate: 3e-2, weightDecay: 0 },
        },
        weights === 'inputs' ? { onnxConstantWeightBytes: 0 } : undefined,
      );
      expect(policy.backend.name).toBe(backend);
      const probe = { inputIds: [[3, 1, 4, 1, 5, 9, 2, 6]], positions: [[1, 4, 7]] };
      let previous = await policy.logProbs(probe);
      for (let update = 0; update < 3; update++) {
        for (const options of [
          { temperature: 1, topP: 1 },
          { temperature: 0.7, topP: 0.9 },
          { temperature: 0, topP: 1 },
        ]) {
          const rolled = await rollTwoTurns(policy, options);
          rolled.steps.forEach((row, i) =>
            row.forEach((s) => expect(rolled.sequences[i]![s.position]).toBe(s.tokenId)),
          );
          expect(await maxLogProbGap(policy, rolled, options.temperature)).toBeLessThan(1e-5);
        }
        const rolled = await rollTwoTurns(policy, { temperature: 1, topP: 1 });
        const old = rolled.steps.map((row) => row.map((s) => s.logProb));
        const lossFn = createLossFunction(
          { oldLogProbs: old, advantages: [1, -1, 0.5] },
          {
            kind: 'gspo',
            clipLow: 0.2,
            clipHigh: 0.2,
            aggregation: 'seq-mean-token-mean',
            klCoef: 0,
            klEstimator: 'k3',
          },
        );
        const result = await policy.update(
          { inputIds: rolled.sequences, positions: positionsOf(rolled) },
          lossFn,
        );
        expect(result.skippedReason).toBeUndefined();
        // The weights moved, so the next rollouts must see the new ones to pass the check above.
        const after = await policy.logProbs(probe);
        expect(after).not.toEqual(previous);
        previous = after;
        expect(
          await maxLogProbGap(policy, await rollTwoTurns(policy, { temperature: 1, topP: 1 }), 1),
        ).toBeLessThan(1e-5);
      }
    });
  }

  it('samples the same tokens as the tfjs rollouts under the same seed, with the same log-probs', async () => {
    for (const options of [
      { temperature: 1, topP: 1 },
      { temperature: 0.7, topP: 0.9 },
    ]) {
      const viaTfjs = await rollTwoTurns(await tiny({ seed: 11 }), options);
      const viaOnnx = await rollTwoTurns(await tiny({ seed: 11, rollouts: 'onnx' }), options);
      expect(viaOnnx.sequences).toEqual(viaTfjs.sequences);
      viaOnnx.steps.forEach((row, i) =>
        row.forEach((s, k) => expect(Math.abs(s.logProb - viaTfjs.steps[i]![k]!.logProb)).toBeLessThan(1e-5)),
      );
    }
  });

  it('decodes concurrent sessions together, and follows weights restored by load', async () => {
    const trained = await tiny({ seed: 3, optimizer: { learningRate: 5e-2, weightDecay: 0 } });
    const batch = { inputIds: [[1, 2, 3, 4, 5, 6]], positions: [[2, 4, 5]] };
    await trained.update(batch, (lp) => ({ value: 0, gradNewLogProbs: lp.map((row) => row.map(() => -1)) }));
    const policy = await tiny({ seed: 4, rollouts: 'onnx', onnx: { intraOpThreads: 2 } });
    await policy.load(await trained.save());
    // Two sessions at once share forwards: their rows meet in one cache block and leave it again.
    const [a, b] = await Promise.all([
      rollTwoTurns(policy, { temperature: 1, topP: 1 }),
      rollTwoTurns(policy, { temperature: 1, topP: 1 }),
    ]);
    for (const rolled of [a, b]) {
      const full = await trained.logProbs({ inputIds: rolled.sequences, positions: positionsOf(rolled) });
      rolled.steps.forEach((row, i) =>
        row.forEach((s, k) => expect(Math.abs(s.logProb - full[i]![k]!)).toBeLessThan(1e-5)),
      );
    }
  });

  it('a missing onnxruntime-node is a MissingDependencyError that says what to install (rollouts or training through it)', async () => {
    const missing = async () => {
      throw Object.assign(new Error("Cannot find package 'onnxruntime-node' imported from /app/policy.js"), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    };
    for (const engine of [{ rollouts: 'onnx' }, { training: 'onnx' }] as const) {
      const error = await createTfjsPolicy({ ...TINY, ...engine }, { loadOnnxRuntime: missing }).catch(
        (e: unknown) => e,
      );
      expect(MissingDependencyError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/npm install onnxruntime-node/);
    }
    // The tfjs rollouts and training never load it.
    await expect(
      createTfjsPolicy({ ...TINY }, { loadOnnxRuntime: missing }).then((p) => p.dispose()),
    ).resolves.toBeUndefined();
  });

  it('validates the ONNX settings by field', async () => {
    await expect(createTfjsPolicy({ ...TINY, rollouts: 'torch' as never })).rejects.toThrow(/rollouts/);
    await expect(createTfjsPolicy({ ...TINY, onnx: { intraOpThreads: 0 } })).rejects.toThrow(
      /onnx\.intraOpThreads/,
    );
  });
});
