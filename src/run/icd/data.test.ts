import { describe, expect, it } from 'vitest';
import { buildIcdDemoData, DEFAULT_ICD_DATA_OPTIONS } from './data';

describe('the demo data flow', () => {
  it("error rule 4's warnings reach the flow's log (issue 24, item 14), and the final trajectories keep the quotas with copies counted (item 12)", async () => {
    const lines: string[] = [];
    const data = await buildIcdDemoData({
      ...DEFAULT_ICD_DATA_OPTIONS,
      queries: 60,
      log: (l) => lines.push(l),
    });
    const warnings = lines.filter((l) =>
      /^warning: query \d+: oracle@64 did not rise after injection/.test(l),
    );
    expect(data.figures.warnings).toBeGreaterThan(0);
    expect(warnings).toHaveLength(data.figures.warnings);
    for (const record of data.final) {
      const scores = record.pointer_candidates.map((t) => t.vqa_acc_score);
      expect(scores.filter((s) => s >= 1).length).toBeLessThanOrEqual(4);
      expect(scores.filter((s) => s > 0 && s < 1).length).toBeLessThanOrEqual(2);
      if (scores.includes(0)) expect(scores).toHaveLength(12);
    }
    const short = data.final.filter((r) => r.pointer_candidates.length < 12).length;
    expect(lines.find((l) => l.startsWith('control:'))).toContain(
      `${data.final.length - short} queries x 12 trajectories, ${short} with fewer`,
    );
  }, 60_000);
});
