import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { openSession } from '../../test/support/ws-test-client';
import { buildSlideEnvironment } from '../env/slides/build';
import { createEnvServer } from './env-server';
import { buildServedEnvironment } from './served-environment';

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

const bytesOf = (dataUri: string) => {
  const match = /^data:image\/png;base64,(.+)$/.exec(dataUri);
  expect(match).not.toBeNull();
  return Buffer.from(match![1]!, 'base64');
};

describe('the images serve-env sends (slide environment)', () => {
  it("are the page's own file, and crops of the same pixels as sharp's crop of that page", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'served-images-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const corpus = { cacheDir: join(dir, 'corpus'), seed: 5, decks: 2, minSlides: 4, maxSlides: 4 };
    const { slidesDir } = await buildSlideEnvironment(corpus.cacheDir, corpus);
    const { served, close } = await buildServedEnvironment({ slides: corpus });
    const server = createEnvServer(served, { maxSessions: 2 });
    cleanup.push(close, () => server.close());
    const session = await openSession(`ws://127.0.0.1:${await server.listen(0)}/ws`);
    cleanup.push(async () => session.close());

    let crops = 0;
    // Boxes of several shapes and places in the 640x360 page the policy is shown (no resizing).
    const boxes: Array<[number, number, number, number]> = [
      [0, 0, 320, 180],
      [17, 203, 301, 359],
      [455, 12, 640, 360],
      [100, 100, 133, 121],
    ];
    for (const [i, task] of served.tasks.slice(0, boxes.length).entries()) {
      await session.request({ type: 'reset', data: { task: task.uid } });
      const search = await session.request({
        type: 'step',
        data: { text: `<think>find</think>\n<search>${task.question}</search>` },
      });
      const shown = search.data.observation as { text: string; images: string[] };
      const basename = /([\w-]+_\d+\.png)/.exec(shown.text)![1]!;
      const file = await readFile(join(slidesDir, basename));
      const page = bytesOf(shown.images[0]!);
      expect(page.equals(file)).toBe(true);

      const bbox = boxes[i]!;
      const crop = await session.request({
        type: 'step',
        data: { text: `<think>zoom</think>\n<bbox>${JSON.stringify(bbox)}</bbox>` },
      });
      const cropped = bytesOf((crop.data.observation as { images: string[] }).images[0]!);
      const region = { left: bbox[0], top: bbox[1], width: bbox[2] - bbox[0], height: bbox[3] - bbox[1] };
      // The episode's default: the longer side enlarged to 768 pixels (cropMinOutputSide), lanczos3.
      const scale = 768 / Math.max(region.width, region.height);
      const reference = await sharp(file)
        .extract(region)
        .resize({
          width: Math.round(region.width * scale),
          height: Math.round(region.height * scale),
          kernel: 'lanczos3',
          fit: 'fill',
        })
        .raw()
        .toBuffer({ resolveWithObject: true });
      const servedCrop = await sharp(cropped).raw().toBuffer({ resolveWithObject: true });
      expect(servedCrop.info).toMatchObject({
        width: reference.info.width,
        height: reference.info.height,
        channels: reference.info.channels,
      });
      expect(servedCrop.data.equals(reference.data)).toBe(true);
      crops++;
    }
    expect(crops).toBe(boxes.length);
  }, 60_000);
});
