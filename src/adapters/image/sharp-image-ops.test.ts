import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, ProviderCallError } from '../../core/errors';
import { createRawImage, createRawImageOps } from '../mock/raw-image-ops';
import { createSharpImageOps } from './sharp-image-ops';
import type { PageImage } from '../../ports/types';

/** A 200x100 white PNG with a red 20x10 block at (150, 80) and a line of small text. */
async function page(): Promise<PageImage> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200" height="100" fill="white"/><rect x="150" y="80" width="20" height="10" fill="#ff0000"/><text x="4" y="20" font-family="DejaVu Sans" font-size="8">Revenue 2019: 4.5 billion</text></svg>`;
  const { data, info } = await sharp(Buffer.from(svg)).png().toBuffer({ resolveWithObject: true });
  return { mimeType: 'image/png', width: info.width, height: info.height, bytes: new Uint8Array(data) };
}

async function pixels(image: PageImage) {
  const { data, info } = await sharp(image.bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    data,
    width: info.width,
    at: (x: number, y: number) => [...data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 3)],
  };
}

describe('createSharpImageOps', () => {
  it('crops the box in the image pixel space and enlarges it to the minimum side', async () => {
    const ops = createSharpImageOps();
    const crop = await ops.doCrop(await page(), [150, 80, 170, 90], { minOutputSide: 200 });
    expect(crop).toMatchObject({ mimeType: 'image/png', width: 200, height: 100 });
    const p = await pixels(crop);
    expect(p.at(100, 50)).toEqual([255, 0, 0]);
    expect(p.at(5, 5)).toEqual([255, 0, 0]);
  });

  it('widens fractional boxes to whole pixels and leaves large crops at their size', async () => {
    const ops = createSharpImageOps();
    const crop = await ops.doCrop(await page(), [0.5, 0.5, 99.2, 49.9]);
    expect([crop.width, crop.height]).toEqual([100, 50]);
    const capped = await createSharpImageOps({ maxOutputSide: 64 }).doCrop(await page(), [150, 80, 170, 90], {
      minOutputSide: 1000,
    });
    expect([capped.width, capped.height]).toEqual([64, 32]);
  });

  it('takes a box a hair past the edge (float error of the mapping) as the edge, like the raw adapter', async () => {
    const raw = createRawImage(10, 30);
    const crop = await createSharpImageOps().doCrop(raw, [0, 0, 10, 30.0000000000005]);
    expect([crop.width, crop.height]).toEqual([10, 30]);
    const rawCrop = await createRawImageOps().doCrop(raw, [0, 0, 10, 30.0000000000005]);
    expect([rawCrop.width, rawCrop.height]).toEqual([10, 30]);
    await expect(createSharpImageOps().doCrop(raw, [0, 0, 10, 30.01])).rejects.toThrow(InvalidArgumentError);
    await expect(createRawImageOps().doCrop(raw, [0, 0, 10, 30.01])).rejects.toThrow(InvalidArgumentError);
  });

  it('makes small print larger and still readable as pixels', async () => {
    const ops = createSharpImageOps();
    const crop = await ops.doCrop(await page(), [0, 10, 120, 24], { minOutputSide: 768 });
    expect(crop.width).toBe(768);
    const p = await pixels(crop);
    // The text is dark on white: the enlarged crop has both.
    let dark = 0;
    for (let i = 0; i < p.data.length; i += 4) if (p.data[i]! < 100) dark++;
    expect(dark).toBeGreaterThan(500);
  });

  it('reads raw RGBA images and writes JPEG or WebP when asked', async () => {
    const raw = createRawImage(40, 20, (x) => (x < 20 ? [0, 0, 255, 255] : [0, 255, 0, 255]));
    const crop = await createSharpImageOps({ format: 'webp' }).doCrop(raw, [0, 0, 10, 10]);
    expect(crop).toMatchObject({ mimeType: 'image/webp', width: 10, height: 10 });
    const p = await pixels(crop);
    const [r, g, b] = p.at(5, 5);
    expect(b).toBeGreaterThan(200);
    expect(r! + g!).toBeLessThan(40);
  });

  it('refuses boxes outside the image or inverted, naming the argument, and types decoder failures', async () => {
    const ops = createSharpImageOps();
    const image = await page();
    await expect(ops.doCrop(image, [0, 0, 201, 10])).rejects.toThrow(InvalidArgumentError);
    await expect(ops.doCrop(image, [10, 10, 5, 20])).rejects.toThrow(/x2 > x1/);
    await expect(ops.doCrop(image, [0, 0, NaN, 10] as never)).rejects.toThrow(/bbox/);
    const broken = ops.doCrop({ ...image, bytes: new Uint8Array([1, 2, 3]) }, [0, 0, 10, 10]);
    await expect(broken).rejects.toSatisfy(
      (e: unknown) => ProviderCallError.isInstance(e) && e.port === 'imageOps' && !e.isRetryable,
    );
    const controller = new AbortController();
    controller.abort();
    await expect(ops.doCrop(image, [0, 0, 10, 10], { signal: controller.signal })).rejects.toThrow(
      /aborted/i,
    );
    expect(() => createSharpImageOps({ format: 'gif' } as never)).toThrow(/createSharpImageOps.format/);
  });
});
