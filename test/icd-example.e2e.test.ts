import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../src/adapters/mock/index';
import { DEFAULT_ICD_FLOW_OPTIONS, runIcdFlow } from '../src/run/icd/flow';

describe('the ICD flow on the embedded demo (a small run of examples/icd-selection.ts)', () => {
  it('raises oracle@K by injection, and the GRPO selector beats cosine top-2 on held-out queries; a resumed run continues from its checkpoint', async () => {
    const store = createMemoryStore();
    const lines: string[] = [];
    const options = {
      ...DEFAULT_ICD_FLOW_OPTIONS,
      queries: 200,
      warmUpEpochs: 2,
      grpoSteps: 80,
      checkpointEvery: 40,
      store,
      runId: 'icd-test',
      log: (line: string) => lines.push(line),
    };
    const result = await runIcdFlow(options);
    const { data, heldOut } = result;
    expect(
      data.final.every((r) => r.candidate_pool_indices.length === 64 && r.pointer_candidates.length === 12),
    ).toBe(true);
    const { oracle } = data.figures;
    expect(oracle.after.shareFull).toBeGreaterThan(oracle.before.shareFull);
    expect(oracle.after.meanBest).toBeGreaterThan(oracle.before.meanBest);
    expect(heldOut.grpo).toBeGreaterThan(heldOut.cosineTopK + 0.2);
    expect(heldOut.grpo).toBeGreaterThan(heldOut.random + 0.2);
    // Every query's oracle bounds what any choice from its pool reaches.
    expect(oracle.heldOut.meanBest).toBeGreaterThanOrEqual(
      Math.max(heldOut.grpo, heldOut.beamSearch, heldOut.cosineTopK),
    );
    expect(result.resumedFromStep).toBeNull();

    const resumed = await runIcdFlow({ ...options, grpoSteps: 84, log: () => undefined });
    expect(resumed.resumedFromStep).toBe(80);
    expect(resumed.grpoRewards).toHaveLength(4);
    expect(resumed.heldOut.warmUp).toBe(heldOut.warmUp);
    // A run is resumed with the warm-up it was started with, or refused by name.
    await expect(runIcdFlow({ ...options, warmUp: 'none', log: () => undefined })).rejects.toThrow(
      /started with warm-up 'beam', not 'none'/,
    );
  }, 120_000);
});
