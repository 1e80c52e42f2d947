import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { currentRecords } from '../../src/core/store/records';
import { TIMING_METRICS } from '../../src/run/step-metrics';

/**
 * What a CLI run folder ended with, for comparing an interrupted run with an uninterrupted one:
 * every phase's metrics (timing left out), trajectories and rewards of the latest attempt (what a
 * resume superseded dropped), the after-RL evaluation, and each phase's step numbers.
 */
export async function runOutcome(
  runDir: string,
  phases: readonly string[],
): Promise<{ outcome: Record<string, unknown>; steps: Record<string, number[]> }> {
  const store = createJsonlStore({ dir: runDir });
  const outcome: Record<string, unknown> = {};
  const steps: Record<string, number[]> = {};
  for (const runId of phases) {
    const events = await store.doQuery({ kind: 'event', runId });
    const current = async (kind: 'metric' | 'trajectory' | 'reward') =>
      currentRecords(await store.doQuery({ kind, runId }), events);
    const metrics = (await current('metric')).map((r) => {
      const data: Record<string, unknown> = { ...(r.data as Record<string, unknown>) };
      for (const key of TIMING_METRICS) delete data[key];
      return data;
    });
    steps[runId] = metrics.map((m) => m.step as number);
    const samples = async (kind: 'trajectory' | 'reward') =>
      (await current(kind)).map((r) => ({ step: r.step, sampleId: r.sampleId, data: r.data }));
    outcome[runId] = { metrics, trajectories: await samples('trajectory'), rewards: await samples('reward') };
  }
  outcome.after = JSON.parse(await readFile(join(runDir, 'eval-after-rl.json'), 'utf8'));
  return { outcome, steps };
}
