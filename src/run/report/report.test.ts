import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { findChromium } from '../../../test/support/chromium';
import {
  createMockGenerator,
  createMockSearchEngine,
  createRawImage,
  createRawImageOps,
} from '../../adapters/mock/index';
import { createRuleJudge } from '../../adapters/rule-judge/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { createSearcher } from '../../searcher';
import { runStore, writeJsonAtomic } from '../folder';
import { UPDATE_METRICS } from './curves';
import { spread } from './episodes';
import { writeReport } from './report';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A page whose pixel (x, y) is (x, y, 7): a crop's pixels say where on the page they came from. */
const pixel = (x: number, y: number): [number, number, number, number] => [x, y, 7, 255];
const pages = [
  { basename: 'acme_1.png', text: 'Acme revenue 2019 small print' },
  { basename: 'globex_1.png', text: 'Globex revenue 2019' },
];

/**
 * A run folder with real trajectories: a scripted policy that searches, crops [20, 10, 120, 60]
 * and completes (rollout 0) or searches until its turns run out (rollout 1: ended by the budget),
 * over mock pages that are also PNG files in the slides folder.
 */
async function runFolder(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'report-'));
  dirs.push(root);
  const runDir = join(root, 'run');
  const slidesDir = join(root, 'slides');
  await mkdir(slidesDir, { recursive: true });
  const raw = createRawImage(200, 100, pixel);
  for (const page of pages)
    await sharp(Buffer.from(raw.bytes), { raw: { width: 200, height: 100, channels: 4 } })
      .png()
      .toFile(join(slidesDir, page.basename));
  const store = runStore(runDir);
  const searcher = createSearcher(
    {
      policy: createScriptedPolicy({
        script: [
          [
            '<search>acme revenue</search>',
            '<bbox>[20, 10, 120, 60]</bbox>',
            '<search_complete>true</search_complete>',
          ],
          ['<search>acme revenue</search>', '<search>globex</search>', '<search>acme</search>'],
        ],
      }),
      searchEngine: createMockSearchEngine({ pages: pages.map((p) => ({ ...p, image: raw })) }),
      generator: createMockGenerator({ facts: { 'acme_1.png': '4.5 billion' } }),
      judge: createRuleJudge(),
      imageOps: createRawImageOps(),
      store,
    },
    { rl: { nAgent: 2 }, episode: { maxTurns: 3 } },
  );
  const prompts = [
    {
      uid: 'acme',
      question: 'What was Acme revenue in 2019?',
      reference: '4.5 billion',
      goldenBasenames: ['acme_1.png'],
    },
  ];
  for (const step of [1, 2]) await searcher.collect(prompts, { step, runId: 'phase1' });
  await searcher.collect(prompts, { step: 0, runId: 'eval-after-rl', nAgent: 1 });
  const metric = (step: number) => ({
    step,
    rewardMean: 0.5,
    successRate: 0.5,
    ndcgMean: 0.5,
    turnsMean: 2.5,
    loss: -0.25 * step,
    kl: 0.01,
    entropy: 1.2,
    gradNorm: 0.8,
    clipFraction: 0.1,
    rolloutTokensPerSecond: 900,
    trainTokensPerSecond: 400,
  });
  await store.doAppend(
    [1, 2].map((step) => ({ kind: 'metric', runId: 'phase1', step, time: step, data: metric(step) })),
  );
  const evaluation = {
    split: 'test',
    questions: 1,
    judgeSuccess: 1,
    ndcg: 1,
    completion: 1,
    smallPrintSuccess: null,
    cropRate: 1,
    smallPrintCropRate: null,
  };
  await writeJsonAtomic(join(runDir, 'summary.json'), {
    runId: 'run',
    // Written before crops were classified: no right/wrong/needless fields.
    before: evaluation,
    after: { ...evaluation, rightRegionRate: 0.875, wrongRegionRate: 0.125, needlessCropRate: 0.05 },
    corpus: { slidesDir },
  });
  await writeJsonAtomic(join(runDir, 'config.json'), {
    phases: [{ name: 'phase1', steps: 2, weights: 'phase1' }],
  });
  return runDir;
}

describe('report.html', () => {
  it('charts the update figures; the episode browser filters by phase, step, reward and ending, says where each came from and draws a crop on its page', async () => {
    const runDir = await runFolder();
    const report = await writeReport(runDir);
    const html = await readFile(report, 'utf8');
    const { executablePath, args } = await findChromium();
    const browser = await chromium.launch({ executablePath, args });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`file://${report}`);
      expect(errors).toEqual([]);
      const charts = await page
        .locator('[data-chart]')
        .evaluateAll((b) => b.map((x) => x.getAttribute('data-chart')));
      expect(charts).toEqual(expect.arrayContaining([...UPDATE_METRICS]));
      for (const key of UPDATE_METRICS)
        expect(await page.locator(`[data-chart="${key}"] canvas`).count(), key).toBe(1);
      // The loss is negative: its axis spans it.
      const lossLegend = page.locator('[data-chart="loss"] .u-legend .u-series').nth(1).locator('.u-value');
      const over = page.locator('[data-chart="loss"] .u-over');
      await over.scrollIntoViewIfNeeded();
      const box = (await over.boundingBox())!;
      await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
      await expect.poll(() => lossLegend.textContent()).toBe('-0.500');

      // By default the evaluation, as before: one episode; then phase 1's four (2 steps x 2 rollouts).
      // The crops' figures after RL, and '-' for an evaluation that has none.
      expect(await page.locator('#summary [data-figure="right-region"]').allTextContents()).toEqual([
        'right region -',
        'right region 87.5%',
      ]);
      expect(await page.locator('#summary [data-figure="wrong-region"]').nth(1).textContent()).toBe(
        'wrong region 12.5%',
      );
      expect(await page.locator('#summary [data-figure="needless-crops"]').nth(1).textContent()).toBe(
        'needless crops 5.0%',
      );
      const options = () => page.locator('#episode-select option').count();
      expect(await options()).toBe(1);
      expect(await page.locator('#episode .origin').textContent()).toMatch(
        /^From: eval-after-rl \(evaluation\), prompt acme, rollout 0/,
      );
      await page.selectOption('#filter-phase', 'phase1');
      expect(await options()).toBe(4);
      expect(await page.locator('#filter-step option').allTextContents()).toEqual(['all', '1', '2']);
      await page.selectOption('#filter-step', '2');
      expect(await options()).toBe(2);
      expect(await page.locator('#episode .origin').textContent()).toMatch(
        /^From: phase1 step 2 \(run step 2\), prompt acme, rollout 0 \(s2-b0-acme#0\)$/,
      );
      // The crop: its region drawn on the page (shown 480 px wide: 2.4 x), and the crop at full size.
      const region = page.locator('#episode .crop-region');
      expect(await region.getAttribute('data-region')).toBe('20,10,120,60');
      expect(
        await region.evaluate((r) => [r.style.left, r.style.top, r.style.width, r.style.height]),
      ).toEqual(['48px', '24px', '240px', '120px']);
      const crop = page.locator('#episode img.crop-full');
      expect(
        await crop.evaluate((img) => {
          const image = img as unknown as { naturalWidth: number; naturalHeight: number };
          return [image.naturalWidth, image.naturalHeight];
        }),
      ).toEqual([100, 50]);
      // Its pixels are the page's at the region: (20, 10) top left, (119, 59) bottom right.
      expect(
        await crop.evaluate((img) => {
          type Context = {
            drawImage(image: unknown, x: number, y: number): void;
            getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
          };
          const { document } = globalThis as unknown as {
            document: {
              createElement(tag: 'canvas'): {
                width: number;
                height: number;
                getContext(kind: '2d'): Context;
              };
            };
          };
          const canvas = document.createElement('canvas');
          canvas.width = 100;
          canvas.height = 50;
          const context = canvas.getContext('2d');
          context.drawImage(img, 0, 0);
          return [
            Array.from(context.getImageData(0, 0, 1, 1).data),
            Array.from(context.getImageData(99, 49, 1, 1).data),
          ];
        }),
      ).toEqual([
        [20, 10, 7, 255],
        [119, 59, 7, 255],
      ]);
      expect(await page.locator('#episode figcaption').allTextContents()).toContain(
        'the crop at full size (100 x 50 px)',
      );

      // Reward and ending: rollout 0 completes with the answer, rollout 1 runs out of turns (reward 0).
      await page.selectOption('#filter-step', 'all');
      const rewards = (await page.evaluate(
        `JSON.parse(document.getElementById('data').textContent).episodes.filter((e) => e.origin.storeRun === 'phase1').map((e) => [e.reward, e.terminated])`,
      )) as Array<[number | null, string]>;
      const high = rewards.filter(([r]) => (r as number) >= 0.5).length;
      expect([high, rewards.length]).toEqual([2, 4]);
      await page.fill('#filter-reward-min', '0.5');
      expect(await options()).toBe(high);
      await page.fill('#filter-reward-min', '');
      const endings = (await page.locator('#filter-ending option').allTextContents()).filter(
        (t) => t !== 'all',
      );
      expect(endings).toEqual(['budget', 'complete']);
      for (const ending of endings) {
        await page.selectOption('#filter-ending', ending);
        expect(await options(), ending).toBe(rewards.filter(([, t]) => t === ending).length);
      }
      await page.fill('#filter-reward-max', '-1');
      expect(await options()).toBe(0);
      expect(await page.locator('#episode p').textContent()).toBe('No episode matches the filters.');
      expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    } finally {
      await browser.close();
    }
  }, 120_000);
});

describe('spread', () => {
  it('keeps all when few, else the first, the last and evenly spaced ones between', () => {
    expect(spread([1, 2, 3], 5)).toEqual([1, 2, 3]);
    expect(spread([0, 1, 2, 3, 4, 5, 6, 7, 8], 3)).toEqual([0, 4, 8]);
    expect(spread([0, 1, 2], 1)).toEqual([0]);
  });
});
