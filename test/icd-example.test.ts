import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../src/adapters/mock/index';
import { DEFAULT_ICD_FLOW_OPTIONS, runIcdFlow } from '../src/run/icd/flow';

describe('the ICD flow on the embedded demo (a small run of examples/icd-selection.ts)', () => {
  it('raises oracle@K by injection, and the GRPO selector beats the beam labels on held-out queries; a resumed run continues from its checkpoint', async () => {
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
    expect(data.figures.oracleAfter).toBeGreaterThan(data.figures.oracleBefore);
    expect(heldOut.grpo).toBeGreaterThan(heldOut.beam + 0.2);
    expect(heldOut.grpo).toBeGreaterThan(heldOut.random + 0.2);
    expect(result.resumedFromStep).toBeNull();

    const resumed = await runIcdFlow({ ...options, grpoSteps: 84, log: () => undefined });
    expect(resumed.resumedFromStep).toBe(80);
    expect(resumed.grpoRewards).toHaveLength(4);
    expect(resumed.heldOut.warmUp).toBe(heldOut.warmUp);
  }, 120_000);
});
