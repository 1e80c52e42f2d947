import { describe, expect, it } from 'vitest';
import {
  ABLATIONS,
  ablationTable,
  runAblations,
  seedFigureLines,
  withSeed,
  type AblationRow,
} from './ablate';
import { parseRunConfig } from './config';
import type { EvalSummary } from './evaluate';

const summary = (judgeSuccess: number): EvalSummary => ({
  split: 'test',
  questions: 10,
  judgeSuccess,
  ndcg: 0.5,
  completion: 1,
  smallPrintSuccess: 0.25,
  cropRate: 0.1,
  smallPrintCropRate: 0.5,
  rightRegionRate: 0.8,
  wrongRegionRate: 0.2,
  needlessCropRate: 0.05,
});

describe('searcher-rl ablate', () => {
  it('changes one setting per ablation and nothing else', () => {
    const base = parseRunConfig({});
    const changed = (name: string) => ABLATIONS.find((a) => a.name === name)!.apply(base);
    expect(ABLATIONS.map((a) => a.name)).toEqual([
      'baseline',
      'ppo-clip',
      'no-state-masking',
      'judge-only',
      'n-agent-4',
    ]);
    expect(changed('baseline')).toEqual(base);
    expect(changed('ppo-clip').searcher.rl.loss).toMatchObject({
      kind: 'ppo_clip',
      clipLow: 0.2,
      clipHigh: 0.28,
    });
    expect(changed('no-state-masking').searcher.rl).toEqual({ ...base.searcher.rl, stateMasking: false });
    expect(changed('judge-only').phases.map((p) => p.weights)).toEqual(['focused', 'focused']);
    expect(changed('n-agent-4').searcher.rl).toEqual({ ...base.searcher.rl, nAgent: 4 });
    for (const a of ABLATIONS)
      expect({ ...a.apply(base), searcher: base.searcher, phases: base.phases }).toEqual(base);
  });

  it('prints one Markdown row per ablation with the rise in points', () => {
    const rows: AblationRow[] = [
      { name: 'baseline', change: 'x', before: summary(0.5), after: summary(0.75), seconds: 12 },
      { name: 'ppo-clip', change: 'y', before: summary(0.5), after: summary(0.4), seconds: 3 },
    ];
    const table = ablationTable(rows).split('\n');
    expect(table).toHaveLength(4);
    expect(table[2]).toBe(
      '| baseline | x | 50.0% -> 75.0% | +25.0 | 0.500 | 50.0% | 80.0% | 20.0% | 5.0% | 25.0% | 12 |',
    );
    expect(table[3]).toContain('| -10.0 |');
  });

  it("prints one JSON line per figure of a seed's run, right-region crops among them, before and after RL", () => {
    const lines = seedFigureLines({
      seed: 2,
      before: { ...summary(0.25), rightRegionRate: null },
      after: summary(0.75),
      seconds: 123.456,
      runDir: 'runs/x/seed-2',
    }).map((line) => JSON.parse(line));
    expect(lines.map((l) => l.figure)).toEqual([
      'judge_success',
      'ndcg',
      'small_print_cropped',
      'right_region',
      'wrong_region',
      'needless_crops',
      'small_print_success',
      'seconds',
    ]);
    expect(lines[0]).toEqual({
      bench: 'learning',
      seed: 2,
      figure: 'judge_success',
      split: 'test',
      before: 0.25,
      after: 0.75,
    });
    expect(lines[3]).toMatchObject({ figure: 'right_region', before: null, after: 0.8 });
    expect(lines[7]).toEqual({ bench: 'learning', seed: 2, figure: 'seconds', value: 123.5 });
    // A seed is the policy's, the sampling's and the corpus's.
    const seeded = withSeed(parseRunConfig({}), 3);
    expect([seeded.seed, seeded.corpus?.seed]).toEqual([3, 3]);
  });

  it('names an unknown ablation before training anything', async () => {
    await expect(
      runAblations(
        parseRunConfig({ runsDir: '/nonexistent/never-written' }),
        { onLog: () => undefined },
        { only: ['ppo', 'judge-only'] },
      ),
    ).rejects.toThrow(/unknown ablation 'ppo'/);
  });
});
