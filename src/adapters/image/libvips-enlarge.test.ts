import fc from 'fast-check';
import sharp from 'sharp';
import { describe, expect, it, vi } from 'vitest';
import { createRawImage } from '../mock/raw-image-ops';
import type { PageImage } from '../../ports/types';
import { enlargeLikeLibvips, enlargementOf } from './libvips-enlarge';
import { createSharpImageOps } from './sharp-image-ops';

// A pass-through spy: the adapter tests below check which path a crop took.
vi.mock('./libvips-enlarge', async (importOriginal) => {
  const actual = await importOriginal<typeof import('./libvips-enlarge')>();
  return { ...actual, enlargeLikeLibvips: vi.fn(actual.enlargeLikeLibvips) };
});
/** Crops enlarged by enlargeLikeLibvips so far (not counting the adapter's check of it, on a 23x17 image). */
const enlargedCrops = () => {
  const { calls, results } = vi.mocked(enlargeLikeLibvips).mock;
  return results.filter((r, i) => r.type === 'return' && r.value !== null && calls[i]![0].width !== 23)
    .length;
};

type Kernel = 'cubic' | 'mitchell' | 'lanczos2' | 'lanczos3';

/** A slide-like page: a title band, text of several sizes, a coloured block, on white (RGBA, opaque). */
async function textPage(width = 320, height = 180): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="${width}" height="${height}" fill="white"/><rect width="${width}" height="30" fill="#1f3a5f"/><text x="8" y="22" font-family="DejaVu Sans" font-size="16" fill="white">Quarterly results</text><text x="8" y="60" font-family="DejaVu Sans" font-size="12">Revenue 2019: 4.5 billion</text><text x="8" y="${height - 8}" font-family="DejaVu Sans" font-size="6" fill="#444">Source: annual report, page 12</text><rect x="${width - 60}" y="70" width="40" height="25" fill="#e03c31"/></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** Noise, which leaves no flat region to hide an off-by-one in (3 channels, or 4 with alpha 255). */
async function noisePage(width: number, height: number, channels: 3 | 4, seed: number): Promise<Buffer> {
  const data = Buffer.alloc(width * height * channels);
  let state = seed;
  for (let i = 0; i < data.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    data[i] = channels === 4 && i % 4 === 3 ? 255 : state >>> 24;
  }
  return sharp(data, { raw: { width, height, channels } }).png().toBuffer();
}

async function decoded(png: Buffer) {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels: info.channels };
}

/** What sharp's own pipeline makes of the crop: the reference every path must equal. */
async function sharpCrop(
  input: Buffer | PageImage,
  region: { left: number; top: number; width: number; height: number },
  size: { width: number; height: number } | null,
  kernel: Kernel | 'nearest' | 'linear' = 'lanczos3',
) {
  let pipeline = Buffer.isBuffer(input)
    ? sharp(input)
    : sharp(input.bytes, { raw: { width: input.width, height: input.height, channels: 4 } });
  pipeline = pipeline.extract(region);
  if (size) pipeline = pipeline.resize({ ...size, kernel, fit: 'fill' });
  return pipeline.raw().toBuffer({ resolveWithObject: true });
}

/** The crop's output size as the adapter computes it (longer side to `minSide`, at most 4096). */
function outputSize(width: number, height: number, minSide: number) {
  const scale = Math.min(Math.max(1, minSide / Math.max(width, height)), 4096 / Math.max(width, height));
  return { width: Math.round(width * scale), height: Math.round(height * scale), scale };
}

describe('enlargeLikeLibvips', () => {
  it("equals sharp's enlargement to the bit: crops of text and of noise, RGB and opaque RGBA, every bicubic kernel", async () => {
    const pages = [
      await textPage(),
      await textPage(97, 61),
      await noisePage(150, 90, 3, 1),
      await noisePage(73, 131, 4, 2),
    ];
    const images = await Promise.all(pages.map(decoded));
    const kernels: Kernel[] = ['lanczos3', 'cubic', 'mitchell', 'lanczos2'];
    await fc.assert(
      fc.asyncProperty(
        fc.nat(pages.length - 1),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(768, 200, 1000, 33),
        fc.constantFrom(...kernels),
        async (which, a, b, c, d, minSide, kernel) => {
          const image = images[which]!;
          const width = 1 + Math.floor(a * image.width * 0.999);
          const height = 1 + Math.floor(b * image.height * 0.999);
          const left = Math.floor(c * (image.width - width + 1) * 0.999);
          const top = Math.floor(d * (image.height - height + 1) * 0.999);
          const region = { left, top, width, height };
          const size = outputSize(width, height, minSide);
          const mine = enlargeLikeLibvips(image, region, size.width, size.height);
          if (!enlargementOf(region, size.width, size.height)) {
            expect(mine).toBeNull();
            return;
          }
          expect(mine).not.toBeNull();
          const reference = await sharpCrop(pages[which]!, region, size, kernel);
          expect([mine!.width, mine!.height, mine!.channels]).toEqual([
            reference.info.width,
            reference.info.height,
            reference.info.channels,
          ]);
          expect(Buffer.from(mine!.data).equals(reference.data)).toBe(true);
        },
      ),
      { numRuns: 120, seed: 29 },
    );
  });

  it('leaves reductions and unchanged sizes to sharp', async () => {
    const image = await decoded(await textPage());
    const region = { left: 0, top: 0, width: 100, height: 50 };
    expect(enlargeLikeLibvips(image, region, 50, 25)).toBeNull();
    expect(enlargeLikeLibvips(image, region, 100, 50)).toBeNull();
    expect(enlargeLikeLibvips(image, region, 200, 40)).toBeNull();
    expect(enlargeLikeLibvips(image, region, 200, 50)).not.toBeNull();
  });
});

describe("createSharpImageOps' crops are sharp's pixels on every path", () => {
  /** Crop through the adapter, then decode its output. */
  async function adapterCrop(
    image: PageImage,
    bbox: [number, number, number, number],
    minSide: number,
    kernel?: Kernel | 'nearest' | 'linear',
  ) {
    const crop = await createSharpImageOps(kernel ? { kernel } : {}).doCrop(image, bbox, {
      minOutputSide: minSide,
    });
    const { data, info } = await sharp(crop.bytes).raw().toBuffer({ resolveWithObject: true });
    expect([crop.width, crop.height]).toEqual([info.width, info.height]);
    return { data, info };
  }

  const asPage = async (png: Buffer): Promise<PageImage> => {
    const meta = await sharp(png).metadata();
    return { mimeType: 'image/png', width: meta.width!, height: meta.height!, bytes: new Uint8Array(png) };
  };

  it('enlarged from the decoded page (opaque PNG), and again from the cache', async () => {
    const png = await textPage(640, 360);
    const page = await asPage(png);
    const before = enlargedCrops();
    for (const [x1, y1, x2, y2] of [
      [0, 0, 320, 180],
      [13, 250, 301, 357],
      [600, 3, 640, 360],
      [0, 0, 320, 180],
    ] as const) {
      const region = { left: x1, top: y1, width: x2 - x1, height: y2 - y1 };
      const size = outputSize(region.width, region.height, 768);
      const reference = await sharpCrop(png, region, size);
      const mine = await adapterCrop(page, [x1, y1, x2, y2], 768);
      expect(mine.data.equals(reference.data)).toBe(true);
    }
    expect(enlargedCrops() - before).toBe(4);
  });

  it('writes RGB pages as RGB PNGs and JPEG or WebP through sharp, each of the same pixels as sharp', async () => {
    const png = await noisePage(120, 80, 3, 7);
    const page = await asPage(png);
    const region = { left: 7, top: 9, width: 50, height: 31 };
    const size = outputSize(50, 31, 300);
    const before = enlargedCrops();
    const rgb = await adapterCrop(page, [7, 9, 57, 40], 300);
    expect(rgb.info.channels).toBe(3);
    expect(rgb.data.equals((await sharpCrop(png, region, size)).data)).toBe(true);
    for (const format of ['jpeg', 'webp'] as const) {
      const crop = await createSharpImageOps({ format }).doCrop(page, [7, 9, 57, 40], { minOutputSide: 300 });
      const reference = await sharp(png)
        .extract(region)
        .resize({ ...size, kernel: 'lanczos3', fit: 'fill' })
        .toFormat(format)
        .toBuffer();
      // The same pixels into the same encoder: the same bytes.
      expect(Buffer.from(crop.bytes).equals(reference)).toBe(true);
    }
    expect(enlargedCrops() - before).toBe(3);
  });

  it('enlarges an opaque region of a page with transparency elsewhere; a region with transparency goes to sharp', async () => {
    const png = await sharp(await textPage(200, 120))
      .composite([
        {
          input: {
            create: { width: 40, height: 30, channels: 4, background: { r: 0, g: 120, b: 0, alpha: 0.4 } },
          },
          left: 150,
          top: 80,
          blend: 'dest-out',
        },
      ])
      .png()
      .toBuffer();
    expect((await sharp(png).stats()).isOpaque).toBe(false);
    const page = await asPage(png);
    const before = enlargedCrops();
    for (const [x1, y1, x2, y2] of [
      [0, 0, 100, 60],
      [120, 60, 200, 120],
    ] as const) {
      const region = { left: x1, top: y1, width: x2 - x1, height: y2 - y1 };
      const reference = await sharpCrop(png, region, outputSize(region.width, region.height, 400));
      expect((await adapterCrop(page, [x1, y1, x2, y2], 400)).data.equals(reference.data)).toBe(true);
    }
    expect(enlargedCrops() - before).toBe(1);
  });

  it('through sharp for what the fast path leaves: transparency, raw RGBA, nearest and linear kernels, no enlargement', async () => {
    const transparent = await sharp({
      create: { width: 60, height: 40, channels: 4, background: { r: 200, g: 10, b: 10, alpha: 0.5 } },
    })
      .png()
      .toBuffer();
    const region = { left: 5, top: 5, width: 30, height: 20 };
    const size = outputSize(30, 20, 300);
    const before = enlargedCrops();
    const half = await adapterCrop(await asPage(transparent), [5, 5, 35, 25], 300);
    expect(half.data.equals((await sharpCrop(transparent, region, size)).data)).toBe(true);

    const raw = createRawImage(50, 30, (x, y) => [x * 5, y * 8, (x * y) % 256, 255]);
    const fromRaw = await adapterCrop(raw, [5, 5, 35, 25], 300);
    expect(fromRaw.data.equals((await sharpCrop(raw, region, size)).data)).toBe(true);
    // Raw RGBA (opaque) is enlarged from its pixels; the transparent PNG went through sharp.
    expect(enlargedCrops() - before).toBe(1);

    const png = await textPage();
    for (const kernel of ['nearest', 'linear'] as const) {
      const mine = await adapterCrop(await asPage(png), [5, 5, 35, 25], 300, kernel);
      expect(mine.data.equals((await sharpCrop(png, region, size, kernel)).data)).toBe(true);
    }
    // A region longer than maxOutputSide is not enlarged (nor reduced): its pixels as they are.
    const kept = await createSharpImageOps({ maxOutputSide: 64 }).doCrop(
      await asPage(png),
      [0, 0, 320, 180],
      {
        minOutputSide: 768,
      },
    );
    const keptPixels = await sharp(kept.bytes).raw().toBuffer();
    const reference = await sharpCrop(png, { left: 0, top: 0, width: 320, height: 180 }, null);
    expect(keptPixels.equals(reference.data)).toBe(true);
  });
});
