import { describe, expect, it } from 'vitest';
import { buildIcdDemoData, DEFAULT_ICD_DATA_OPTIONS } from './data';

describe('the demo data flow', () => {
  it("error rule 4's warnings reach the flow's log (issue 24, item 14), and every query ends with exactly 12 trajectories, repeats counted (issue 41)", async () => {
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
    // Property 6 (issue 41): every query has exactly 12; repeats only where fewer distinct exist, and counted.
    let repeats = 0;
    for (const record of data.final) {
      expect(record.pointer_candidates).toHaveLength(12);
      repeats += 12 - new Set(record.pointer_candidates.map((t) => t.pointer.join(','))).size;
    }
    expect(data.figures.repeatedTrajectories).toBe(repeats);
    expect(lines.find((l) => l.startsWith('control:'))).toBe(
      `control: ${data.final.length} queries x 12 trajectories; ${data.figures.queriesWithRepeats} with fewer than 12 distinct, filled by ${repeats} repeats`,
    );
  }, 60_000);
});
