import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../src/run/scripted-demo';

describe('npm run demo', () => {
  it('scores 3 x 4 rollouts, prints rewards and advantages, and records the run', async () => {
    const out = await mkdtemp(join(tmpdir(), 'searcher-rl-demo-'));
    try {
      const lines: string[] = [];
      const { batch, runId } = await runDemo({ out, log: (line) => lines.push(line) });
      expect(batch.episodes).toHaveLength(12);
      const byRollout = (i: number) =>
        batch.episodes.filter((e) => e.trajectory.rolloutIndex === i).map((e) => e.trajectory.reward);
      expect(byRollout(0)).toEqual([1, 1, 1]); // precise search: judge 1, NDCG 1
      expect(byRollout(2)).toEqual([0, 0, 0]); // off-topic search: wrong answer, golden missed
      expect(byRollout(3)).toEqual([0, 0, 0]); // a tag-less turn fails the format gate
      // Vague then precise: the golden page comes second, NDCG 1/log2(3).
      expect(batch.episodes[1]!.trajectory.reward).toBeCloseTo(0.8 + 0.2 / Math.log2(3), 12);
      for (let group = 0; group < 3; group++) {
        const sum = batch.episodes
          .slice(group * 4, group * 4 + 4)
          .reduce((s, e) => s + e.trajectory.advantage!, 0);
        expect(Math.abs(sum)).toBeLessThan(1e-9);
      }
      expect(lines.join('\n')).toMatch(/advantage/);
      expect(lines.join('\n')).toMatch(/mean reward 0\.\d{3}/);
      const trajectories = (await readFile(join(out, runId, 'trajectory.jsonl'), 'utf8')).trim().split('\n');
      expect(trajectories).toHaveLength(12);
      const rewards = (await readFile(join(out, runId, 'reward.jsonl'), 'utf8')).trim().split('\n');
      expect(rewards).toHaveLength(12);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
