import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { writeReport } from '../src/run/report/report';
import { parseRunConfig } from '../src/run/config';
import { evalRun, trainRun } from '../src/run/run';
import { cliRunOptions } from '../src/cli/progress';
import { findChromium } from './support/chromium';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('searcher-rl train (small config) and report.html', () => {
  it('writes a run folder and a report whose charts and episodes render in Chromium', async () => {
    const root = await mkdtemp(join(tmpdir(), 'searcher-rl-run-'));
    dirs.push(root);
    const config = parseRunConfig({
      runsDir: join(root, 'runs'),
      runId: 'small',
      corpus: { decks: 6, minSlides: 5, maxSlides: 6, smallPrintRate: 0.5, cacheDir: join(root, 'corpus') },
      policy: { layers: 1, width: 32, heads: 2, contextLength: 256, backend: 'wasm' },
      sft: { demonstrations: 24, epochs: 1, batchSize: 8 },
      phases: [
        { name: 'phase1', steps: 2, weights: 'phase1' },
        { name: 'phase2', steps: 2, weights: 'default' },
      ],
      trainer: { batchSize: 2, saveFreq: 1 },
      searcher: {
        episode: {
          instructions: '',
          maxTurns: 3,
          maxTurnTokens: 24,
          maxContextTokens: 256,
          observationMaxChars: 40,
        },
        rl: { nAgent: 2 },
      },
      evaluation: { limit: 6 },
    });
    const lines: string[] = [];
    const stream = { isTTY: false, write: (text: string) => lines.push(text) };
    const result = await trainRun(
      config,
      cliRunOptions((line) => lines.push(line), stream),
    );
    expect(result.steps.map((s) => `${s.phase}:${s.step}`)).toEqual([
      'phase1:1',
      'phase1:2',
      'phase2:1',
      'phase2:2',
    ]);
    expect(result.before.questions).toBe(6);
    expect(result.after.questions).toBe(6);
    const output = lines.join('');
    expect(output).toMatch(/corpus: 6 decks/);
    expect(output).toMatch(/phase1 2\/2 reward \d\.\d{3}/);
    expect(output).toMatch(/before RL \(after SFT\) on test: judge success/);
    const runDir = join(root, 'runs', 'small');
    expect((await readdir(runDir)).sort()).toEqual(
      expect.arrayContaining([
        'config.json',
        'summary.json',
        'phase1',
        'phase2',
        'eval-before-rl',
        'eval-after-rl',
        'sft',
      ]),
    );
    const metrics = (await readFile(join(runDir, 'phase2', 'metric.jsonl'), 'utf8')).trim().split('\n');
    expect(metrics).toHaveLength(2);
    const trajectories = (await readFile(join(runDir, 'phase1', 'trajectory.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(trajectories).toHaveLength(2 * 2 * 2);
    expect(JSON.parse(trajectories[0]!).data).toMatchObject({
      turns: expect.any(Array),
      retrievedBasenames: expect.any(Array),
      terminated: expect.any(String),
    });
    // Step 0: each phase first saves the policy it starts from (a restart before step 1's checkpoint continues from it).
    const written = (await readFile(join(runDir, 'phase2', 'checkpoint.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).data.key);
    expect(written).toEqual([
      'checkpoints/step-00000000',
      'checkpoints/step-00000001',
      'checkpoints/step-00000002',
    ]);
    // On disk: the last two (trainer.keepLast) and the best by reward, which may be step 0.
    const kept = await readdir(join(runDir, 'phase2', 'blobs', 'checkpoints'));
    expect(kept.filter((k) => k !== 'step-00000000')).toEqual(['step-00000001', 'step-00000002']);

    // Run again in the same folder: the warm start and the "before" figures are reused, the phases
    // are complete (resumed from their last checkpoints), the "after" evaluation replaces the old one.
    const again = await trainRun(
      config,
      cliRunOptions((line) => lines.push(line), stream),
    );
    expect(lines.join('')).toMatch(/SFT warm start: loaded sft\/checkpoints\/step-00000000/);
    expect(again.before).toEqual(result.before);
    expect(again.steps).toEqual([]);
    expect(
      (await readFile(join(runDir, 'eval-after-rl', 'trajectory.jsonl'), 'utf8')).trim().split('\n'),
    ).toHaveLength(6);
    await expect(
      trainRun(
        { ...config, policy: { ...config.policy!, width: 16 } },
        cliRunOptions(() => undefined, stream),
      ),
    ).rejects.toThrow(/config.policy/);

    // eval: the latest checkpoint (rebuilt with its saved vocabulary) on another split.
    const evaluated = await evalRun(
      runDir,
      { split: 'validation', limit: 4 },
      cliRunOptions((line) => lines.push(line), stream),
    );
    expect(evaluated).toMatchObject({ split: 'validation', questions: 4 });
    expect(JSON.parse(await readFile(join(runDir, 'eval-validation.json'), 'utf8'))).toMatchObject({
      checkpoint: 'phase2/checkpoints/step-00000002',
      questions: 4,
    });

    const report = await writeReport(runDir);
    const html = await readFile(report, 'utf8');
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    const { executablePath, args } = await findChromium();
    const browser = await chromium.launch({ executablePath, args });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`file://${report}`);
      expect(errors).toEqual([]);
      // Thirteen uPlot charts on one step axis (the episodes' figures, then the update's): a canvas
      // each, a band per phase with phase 2's boundary.
      const charts = [
        'reward',
        'success',
        'ndcg',
        'turns',
        'cropRate',
        'smallPrintSuccess',
        'loss',
        'kl',
        'entropy',
        'gradNorm',
        'clipFraction',
        'rolloutTokensPerSecond',
        'trainTokensPerSecond',
      ];
      expect(
        await page
          .locator('[data-chart]')
          .evaluateAll((boxes) => boxes.map((b) => b.getAttribute('data-chart'))),
      ).toEqual(charts);
      for (const key of charts.filter((k) => k !== 'success' && k !== 'smallPrintSuccess')) {
        expect(await page.locator(`[data-chart="${key}"] canvas`).count()).toBe(1);
        expect(
          await page
            .locator(`[data-chart="${key}"] .phase-band`)
            .evaluateAll((bands) => bands.map((b) => b.getAttribute('data-phase'))),
        ).toEqual(['phase1', 'phase2']);
        expect(await page.locator(`[data-chart="${key}"] .phase-band.boundary`).count()).toBe(1);
      }
      // The reward is a series per phase (raw dots and EMA), each labelled with the phase's weights.
      const rewardLegend = page.locator('[data-chart="reward"] .u-legend .u-series');
      expect(await rewardLegend.allInnerTexts()).toEqual([
        expect.stringMatching(/^step/),
        expect.stringMatching(/phase1: 0\.1 format \+ 0\.9 NDCG/),
        expect.stringMatching(/phase1 EMA/),
        expect.stringMatching(/phase2: 0\.8 judge \+ 0\.2 NDCG/),
        expect.stringMatching(/phase2 EMA/),
      ]);
      expect(await page.locator('#curves-caption').textContent()).toMatch(
        /phase1 = 0\.1 format \+ 0\.9 NDCG.*phase2 = 0\.8 judge \+ 0\.2 NDCG/,
      );
      // Hovering the last step shows its values (the cursor is synced: every chart's legend follows).
      const over = page.locator('[data-chart="ndcg"] .u-over');
      await over.scrollIntoViewIfNeeded();
      const plot = (await over.boundingBox())!;
      await page.mouse.move(plot.x + plot.width - 2, plot.y + plot.height / 2);
      await expect
        .poll(() => rewardLegend.nth(0).locator('.u-value').textContent())
        .toBe('4 (phase2 step 2)');
      expect(await rewardLegend.nth(3).locator('.u-value').textContent()).toMatch(/^\d\.\d{3}$/);
      expect(
        await page
          .locator('[data-chart="cropRate"] .u-legend .u-series')
          .nth(3)
          .locator('.u-value')
          .textContent(),
      ).toMatch(/^\d+\.\d%$/);
      // Buckets per training phase from (step, prompt) groups of n_agent rollouts, then the evaluations.
      expect(
        await page
          .locator('[data-buckets]')
          .evaluateAll((boxes) => boxes.map((b) => b.getAttribute('data-buckets'))),
      ).toEqual(['phase1', 'phase2', 'eval-before-rl', 'eval-after-rl']);
      expect(await page.locator('[data-buckets="phase1"] .bucket').count()).toBe(3);
      const phase1Groups = (
        await page.locator('[data-buckets="phase1"] .bucket-count').allTextContents()
      ).reduce((n, text) => n + Number.parseInt(text, 10), 0);
      expect(phase1Groups).toBe(2 * 2);
      expect(await page.locator('#episode .turn').count()).toBeGreaterThan(0);
      expect(await page.locator('#episode-select option').count()).toBe(6);
      await page.selectOption('#episode-select', '1');
      expect(await page.locator('#episode p').first().textContent()).toMatch(/^Question: /);
      const images = page.locator('#episode img');
      if ((await images.count()) > 0)
        expect(
          await images.first().evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
        ).toBeGreaterThan(0);
      await mkdir('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/report.png', fullPage: true });
    } finally {
      await browser.close();
    }
  }, 240_000);
});
