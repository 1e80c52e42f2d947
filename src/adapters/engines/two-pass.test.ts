import { describe, expect, it } from 'vitest';
import { PortOutputError } from '../../core/errors';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import { type TwoPassForward, twoPassGradients } from './two-pass';

const batch: LogProbBatch = {
  inputIds: [
    [1, 2, 3, 4],
    [5, 6, 7, 8],
    [1, 1, 1, 1],
  ],
  positions: [[1, 3], [2], [1, 2, 3]],
  temperature: 1,
};
const lossFn: LossFunction = (newLogProbs) => ({
  value: newLogProbs.flat().reduce((a, b) => a + b, 0),
  gradNewLogProbs: newLogProbs.map((row, i) => row.map((_, t) => 10 * i + t)),
});

/** A fake engine: 100 bytes of activations a token; records what each run was asked. */
function fakeSteps() {
  const log: string[] = [];
  const upstreams: number[][] = [];
  const tokens = (chunk: readonly number[]) => chunk.length * 4;
  return {
    log,
    upstreams,
    steps: {
      tokens,
      async forward(chunk: readonly number[], keep: boolean, lane = 0): Promise<TwoPassForward> {
        log.push(`forward ${chunk.join()} keep=${keep}${lane > 0 ? ` lane=${lane}` : ''}`);
        const scored = chunk.flatMap((i) => batch.positions[i]!);
        return {
          tokenLogProbs: Float32Array.from(scored, (_, k) => -(k + 1)),
          entropySum: chunk.length,
          kept: keep ? {} : null,
          keptBytes: keep ? 100 * tokens(chunk) : 0,
        };
      },
      async backward(
        chunk: readonly number[],
        forward: TwoPassForward,
        upstream: Float32Array,
        _entropyWeight = 0,
        lane = 0,
      ) {
        log.push(`backward ${chunk.join()} kept=${forward.kept !== null}${lane > 0 ? ` lane=${lane}` : ''}`);
        upstreams.push([...upstream]);
      },
    },
  };
}

/** The fake engine with a fused run, whose log-probs a chunk gets are `logProbsOf(chunk)`. */
function fakeStepsWithFused(logProbsOf: (chunk: readonly number[]) => number[]) {
  const fake = fakeSteps();
  const steps = {
    ...fake.steps,
    async fused(chunk: readonly number[], upstream: Float32Array, entropyWeight: number, lane = 0) {
      fake.log.push(`fused ${chunk.join()} entropyWeight=${entropyWeight}${lane > 0 ? ` lane=${lane}` : ''}`);
      fake.upstreams.push([...upstream]);
      return { tokenLogProbs: Float32Array.from(logProbsOf(chunk)), entropySum: chunk.length };
    },
  };
  return { ...fake, steps };
}

describe('twoPassGradients', () => {
  it('with lanes, runs the chunks in groups, chunk k of a group on lane k, its backward on the lane of its forward', async () => {
    const { log, upstreams, steps } = fakeSteps();
    const plan = { chunks: [[0], [1], [2]], temperature: 1, entropyCoef: 0, scored: 6 };
    await twoPassGradients(steps, batch, lossFn, plan, {
      keptActivationBytes: 1e9,
      provider: 'test',
      lanes: 2,
    });
    expect(log).toEqual([
      'forward 0 keep=true',
      'forward 1 keep=true lane=1',
      'forward 2 keep=true',
      'backward 0 kept=true',
      'backward 1 kept=true lane=1',
      'backward 2 kept=true',
    ]);
    expect(upstreams).toEqual([[0, 1], [10], [20, 21, 22]]);
  });

  it("with lanes, decides a group's keeps counting the group's earlier keepers", async () => {
    const { log, steps } = fakeSteps();
    const plan = { chunks: [[0], [1], [2], [0]], temperature: 1, entropyCoef: 0, scored: 8 };
    // 400 bytes a chunk: the first group keeps both (nothing measured yet, 800 bytes); in the
    // second, chunk 2 fits (1200) and chunk 3 would not on top of it (1600 > 1300).
    await twoPassGradients(steps, batch, lossFn, plan, {
      keptActivationBytes: 1300,
      provider: 'test',
      lanes: 2,
    });
    expect(log.slice(0, 4)).toEqual([
      'forward 0 keep=true',
      'forward 1 keep=true lane=1',
      'forward 2 keep=true',
      'forward 0 keep=false lane=1',
    ]);
  });

  it('decides from the tokens before each forward whether it keeps: past the budget a forward fetches nothing', async () => {
    const { log, steps } = fakeSteps();
    const plan = { chunks: [[0], [1], [2]], temperature: 1, entropyCoef: 0, scored: 6 };
    // Room for two chunks of 4 tokens (800 bytes) but not a third.
    await twoPassGradients(steps, batch, lossFn, plan, { keptActivationBytes: 900, provider: 'test' });
    expect(log).toEqual([
      'forward 0 keep=true',
      'forward 1 keep=true',
      'forward 2 keep=false',
      'backward 0 kept=true',
      'backward 1 kept=true',
      'backward 2 kept=false',
    ]);
  });

  it("feeds each chunk's backward the loss's g of its rows, and gives the loss's value and the mean entropy", async () => {
    const { upstreams, steps } = fakeSteps();
    const plan = { chunks: [[2, 0], [1]], temperature: 1, entropyCoef: 0.5, scored: 6 };
    const outcome = await twoPassGradients(steps, batch, lossFn, plan, {
      keptActivationBytes: 0,
      provider: 'test',
    });
    expect(upstreams).toEqual([[20, 21, 22, 0, 1], [10]]);
    // Row 2's log-probs -1, -2, -3, row 0's -4, -5 (chunk order), row 1's -1.
    expect(outcome.value).toBe(-16);
    expect(outcome.entropy).toBeCloseTo(3 / 6);
  });

  it('stops with an AbortedError once the signal is aborted', async () => {
    const { steps } = fakeSteps();
    const controller = new AbortController();
    controller.abort();
    const plan = { chunks: [[0]], temperature: 1, entropyCoef: 0, scored: 2, signal: controller.signal };
    await expect(
      twoPassGradients(steps, batch, lossFn, plan, { keptActivationBytes: 0, provider: 'test' }),
    ).rejects.toThrow(/update/);
  });

  describe('a loss with a constant gradient (supervised fine-tuning)', () => {
    const declared = batch.positions.map((row, i) => row.map((_, t) => 10 * i + t));
    const linear: LossFunction = Object.assign((newLogProbs: number[][]) => lossFn(newLogProbs), {
      constantGradient: declared,
    });
    const withFused = () =>
      fakeStepsWithFused((chunk) => chunk.flatMap((i) => batch.positions[i]!).map((_, k) => -(k + 1)));

    it('runs each chunk forward and backward in one run, fed the declared gradient, lanes as the two passes', async () => {
      const { log, upstreams, steps } = withFused();
      const plan = { chunks: [[2, 0], [1]], temperature: 1, entropyCoef: 0.5, scored: 6 };
      const outcome = await twoPassGradients(steps, batch, linear, plan, {
        keptActivationBytes: 1e9,
        provider: 'test',
        lanes: 2,
      });
      expect(log).toEqual([`fused 2,0 entropyWeight=${0.5 / 6}`, `fused 1 entropyWeight=${0.5 / 6} lane=1`]);
      expect(upstreams).toEqual([[20, 21, 22, 0, 1], [10]]);
      // The loss is asked after, on the fused runs' log-probs: the same value as the two passes give.
      expect(outcome.value).toBe(-16);
      expect(outcome.entropy).toBeCloseTo(3 / 6);
    });

    it('runs the two passes where the engine has no fused run', async () => {
      const { log, steps } = fakeSteps();
      const plan = { chunks: [[0, 1, 2]], temperature: 1, entropyCoef: 0, scored: 6 };
      await twoPassGradients(steps, batch, linear, plan, { keptActivationBytes: 1e9, provider: 'test' });
      expect(log).toEqual(['forward 0,1,2 keep=true', 'backward 0,1,2 kept=true']);
    });

    it('refuses a declared gradient the loss does not return, naming the place', async () => {
      const { steps } = withFused();
      const wrong: LossFunction = Object.assign((newLogProbs: number[][]) => lossFn(newLogProbs), {
        constantGradient: declared.map((row, i) => row.map((g, t) => (i === 1 && t === 0 ? g + 1 : g))),
      });
      const plan = { chunks: [[0, 1, 2]], temperature: 1, entropyCoef: 0, scored: 6 };
      const run = twoPassGradients(steps, batch, wrong, plan, { keptActivationBytes: 0, provider: 'test' });
      await expect(run).rejects.toThrow(PortOutputError);
      await expect(run).rejects.toMatchObject({ field: 'lossFn.constantGradient[1][0]' });
      const misshapen: LossFunction = Object.assign((newLogProbs: number[][]) => lossFn(newLogProbs), {
        constantGradient: [[0, 1]],
      });
      await expect(
        twoPassGradients(steps, batch, misshapen, plan, { keptActivationBytes: 0, provider: 'test' }),
      ).rejects.toMatchObject({ field: 'lossFn().gradNewLogProbs' });
    });
  });

  describe('a loss that anticipates its log-probs (the first update of a step)', () => {
    /** A loss whose gradient at each place is the log-prob there: it depends on the log-probs. */
    const dependent = (anticipated: number[][]): LossFunction =>
      Object.assign(
        (newLogProbs: number[][]) => ({
          value: 0,
          gradNewLogProbs: newLogProbs.map((row) => [...row]),
          metrics: { asked: 1 },
        }),
        { anticipatedLogProbs: anticipated },
      );
    /** Each row's places score -(row + 1) - 0.5 * place: the same whatever the chunk. */
    const withFused = () =>
      fakeStepsWithFused((chunk) =>
        chunk.flatMap((i) => batch.positions[i]!.map((_, t) => -(i + 1) - 0.5 * t)),
      );
    const truth = batch.positions.map((row, i) => row.map((_, t) => -(i + 1) - 0.5 * t));
    const plan = { chunks: [[2, 0], [1]], temperature: 1, entropyCoef: 0.5, scored: 6 };

    it('runs one pass a chunk fed the gradient at the anticipated log-probs when the new ones give the same', async () => {
      const { log, upstreams, steps } = withFused();
      const nearly = truth.map((row) => row.map((v) => v * (1 + 1e-6)));
      const outcome = await twoPassGradients(steps, batch, dependent(nearly), plan, {
        keptActivationBytes: 1e9,
        provider: 'test',
        lanes: 2,
      });
      expect(log).toEqual([`fused 2,0 entropyWeight=${0.5 / 6}`, `fused 1 entropyWeight=${0.5 / 6} lane=1`]);
      expect(upstreams[0]).toEqual([...Float32Array.from([...nearly[2]!, ...nearly[0]!])]);
      expect(outcome.metrics).toEqual({ asked: 1, anticipationCorrected: 0 });
      expect(outcome.entropy).toBeCloseTo(3 / 6);
    });

    it('adds the gradient of the difference in a second run a chunk where they differ, without the entropy again', async () => {
      const { log, upstreams, steps } = withFused();
      const wrong = truth.map((row) => row.map(() => 0));
      const outcome = await twoPassGradients(steps, batch, dependent(wrong), plan, {
        keptActivationBytes: 1e9,
        provider: 'test',
        lanes: 2,
      });
      expect(log).toEqual([
        `fused 2,0 entropyWeight=${0.5 / 6}`,
        `fused 1 entropyWeight=${0.5 / 6} lane=1`,
        'fused 2,0 entropyWeight=0',
        'fused 1 entropyWeight=0 lane=1',
      ]);
      // Fed 0 first, then the whole gradient at the new log-probs: the sum is the loss's gradient there.
      expect(upstreams.slice(0, 2)).toEqual([[0, 0, 0, 0, 0], [0]]);
      expect(upstreams.slice(2)).toEqual([[...truth[2]!, ...truth[0]!], truth[1]]);
      expect(outcome.metrics.anticipationCorrected).toBe(1);
    });

    it('corrects a NaN (the optimizer then skips the step), and refuses anticipated log-probs of another shape', async () => {
      const { log, steps } = withFused();
      const nan = truth.map((row, i) => row.map((v, t) => (i === 1 && t === 0 ? Number.NaN : v)));
      await twoPassGradients(steps, batch, dependent(nan), plan, {
        keptActivationBytes: 0,
        provider: 'test',
      });
      expect(log.filter((l) => l.includes('entropyWeight=0 '))).toHaveLength(0);
      expect(log.filter((l) => l.endsWith('entropyWeight=0'))).toHaveLength(2);
      await expect(
        twoPassGradients(steps, batch, dependent([[0, 0]]), plan, {
          keptActivationBytes: 0,
          provider: 'test',
        }),
      ).rejects.toMatchObject({ field: 'lossFn.anticipatedLogProbs' });
    });

    it('runs the two passes where the engine has no fused run', async () => {
      const { log, steps } = fakeSteps();
      await twoPassGradients(
        steps,
        batch,
        dependent(truth),
        { ...plan, chunks: [[0, 1, 2]] },
        {
          keptActivationBytes: 1e9,
          provider: 'test',
        },
      );
      expect(log).toEqual(['forward 0,1,2 keep=true', 'backward 0,1,2 kept=true']);
    });
  });
});
