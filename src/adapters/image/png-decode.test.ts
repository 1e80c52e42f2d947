import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodePng } from './png-decode';
import { crc32, encodePngScanlines } from './png-encode';
import type { RawImage } from './libvips-enlarge';

async function noise(width: number, height: number, channels: 3 | 4, seed: number): Promise<Buffer> {
  const data = Buffer.alloc(width * height * channels);
  let state = seed;
  for (let i = 0; i < data.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    // Smooth ramps with some noise: every filter type wins somewhere under adaptive filtering.
    data[i] = ((i % (width * channels)) + (state >>> 29)) & 0xff;
  }
  return sharp(data, { raw: { width, height, channels } }).png({ adaptiveFiltering: true }).toBuffer();
}

/** `png` with a chunk inserted after IHDR (IHDR is always the first chunk, 25 bytes with the signature). */
function withChunk(png: Buffer, type: string, body: number[]): Buffer {
  const chunk = Buffer.alloc(12 + body.length);
  chunk.writeUInt32BE(body.length, 0);
  chunk.write(type, 4, 'ascii');
  Buffer.from(body).copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + body.length)), 8 + body.length);
  return Buffer.concat([png.subarray(0, 33), chunk, png.subarray(33)]);
}

/** The rows of a decoded image without their gaps (decodePng keeps each row's filter byte in front of it). */
function packed(image: RawImage) {
  const rowBytes = image.width * image.channels;
  const stride = image.stride ?? rowBytes;
  const out = Buffer.alloc(rowBytes * image.height);
  for (let y = 0; y < image.height; y++) {
    const from = (image.offset ?? 0) + y * stride;
    out.set(image.data.subarray(from, from + rowBytes), y * rowBytes);
  }
  return out;
}

async function sharpPixels(png: Buffer) {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

describe('decodePng', () => {
  it("gives sharp's pixels for 8-bit RGB and RGBA, every row filter, several IDAT chunks, gAMA and sRGB chunks", async () => {
    const pngs = [
      await noise(97, 41, 3, 1),
      await noise(64, 33, 4, 2),
      await sharp(await noise(400, 300, 4, 3))
        .png({ compressionLevel: 0 })
        .toBuffer(),
    ];
    pngs.push(withChunk(pngs[0]!, 'gAMA', [0, 0, 0xb1, 0x8f]), withChunk(pngs[1]!, 'sRGB', [0]));
    for (const png of pngs) {
      const mine = await decodePng(new Uint8Array(png));
      const reference = await sharpPixels(png);
      expect(mine).not.toBeNull();
      expect([mine!.width, mine!.height, mine!.channels]).toEqual([
        reference.width,
        reference.height,
        reference.channels,
      ]);
      expect(packed(mine!).equals(reference.data)).toBe(true);
    }
  });

  it('reads back what encodePngScanlines writes, its zlib streams reused across many at once', async () => {
    const image = (seed: number) => {
      const pixels = new Uint8Array(5 * 3 * 4).map((_, i) => (i * 37 + seed * 11) & 0xff);
      const scanlines = new Uint8Array(3 * 21);
      for (let y = 0; y < 3; y++) scanlines.set(pixels.subarray(y * 20, y * 20 + 20), y * 21 + 1);
      return { pixels, scanlines };
    };
    for (let round = 0; round < 3; round++) {
      const images = Array.from({ length: 12 }, (_, i) => image(round * 12 + i));
      const pngs = await Promise.all(
        images.map((im) => encodePngScanlines({ width: 5, height: 3, channels: 4 }, im.scanlines, 6)),
      );
      for (const [i, png] of pngs.entries()) {
        expect(packed((await decodePng(png))!).equals(Buffer.from(images[i]!.pixels))).toBe(true);
        expect((await sharpPixels(Buffer.from(png))).data.equals(Buffer.from(images[i]!.pixels))).toBe(true);
      }
    }
  });

  it('leaves to sharp what sharp would read otherwise or refuse', async () => {
    const rgb = await noise(20, 10, 3, 4);
    const refused = [
      await sharp(rgb).png({ palette: true }).toBuffer(),
      await sharp(rgb).toColourspace('b-w').png().toBuffer(),
      await sharp(rgb).toColourspace('rgb16').png().toBuffer(),
      await sharp(rgb).png({ progressive: true }).toBuffer(),
      await sharp(rgb).withIccProfile('p3').png().toBuffer(),
      withChunk(rgb, 'tRNS', [0, 1, 0, 2, 0, 3]),
      withChunk(rgb, 'XYZW', [1]),
      Buffer.concat([rgb.subarray(0, rgb.length - 20), Buffer.from([1]), rgb.subarray(rgb.length - 19)]),
      rgb.subarray(0, rgb.length - 12),
      Buffer.from('not a png at all'),
    ];
    for (const png of refused) expect(await decodePng(new Uint8Array(png))).toBeNull();
  });
});
