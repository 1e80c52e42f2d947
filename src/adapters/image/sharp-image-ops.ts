import sharp from 'sharp';
import type { z } from 'zod';
import { AbortedError, InvalidArgumentError, ProviderCallError } from '../../core/errors';
import { alignToPixels, insideImage, RAW_RGBA_MIME } from '../../core/episode/image-frame';
import type { CropOptions, ImageOps } from '../../ports/image-ops';
import type { BoundingBox, PageImage } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { createDecodedPages } from './decoded-pages';
import { enlargeLikeLibvips } from './libvips-enlarge';
import { encodePngScanlines } from './png-encode';
import { sharpImageOpsSettingsSchema } from './settings';

/** The kernels libvips enlarges with its bicubic interpolator (`vips_resize_interpolate`). */
const BICUBIC_KERNELS = new Set(['cubic', 'mitchell', 'lanczos2', 'lanczos3']);

/** Settings of `createSharpImageOps` (`sharpImageOpsSettingsSchema`). */
export type SharpImageOpsSettings = z.input<typeof sharpImageOpsSettingsSchema>;

export interface SharpImageOps extends ImageOps {
  readonly provider: 'sharp';
}

const MIME: Record<'png' | 'jpeg' | 'webp', string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
};

/**
 * Buffers for enlarged pixels on their way to the encoder, lent per crop and reused (allocating
 * 1.3 MB a crop costs more than copying into it); at most `keep` are kept.
 */
function createBufferPool(keep: number) {
  const free: Uint8Array[] = [];
  return {
    take(bytes: number): Uint8Array {
      const index = free.findIndex((buffer) => buffer.length >= bytes);
      return index >= 0 ? free.splice(index, 1)[0]! : new Uint8Array(bytes);
    },
    give(buffer: Uint8Array) {
      if (free.length < keep) free.push(buffer);
    },
  };
}

const verifiedKernels = new Map<string, Promise<boolean>>();

/**
 * Whether this process's sharp enlarges as `enlargeLikeLibvips` does: checked once per kernel, on
 * a small opaque noise image scaled by different factors across and down, before the first crop
 * that would use it. Another libvips that resampled otherwise keeps every crop on sharp's pipeline.
 */
function enlargementVerified(kernel: string): Promise<boolean> {
  let verified = verifiedKernels.get(kernel);
  if (!verified) {
    verified = (async () => {
      const raw = { width: 23, height: 17, channels: 4 as const };
      const data = new Uint8Array(raw.width * raw.height * 4);
      for (let i = 0, state = 29; i < data.length; i++) {
        state = (state * 1103515245 + 12345) >>> 0;
        data[i] = i % 4 === 3 ? 255 : state >>> 24;
      }
      const region = { left: 3, top: 2, width: 13, height: 11 };
      const mine = enlargeLikeLibvips({ data, ...raw }, region, 41, 37);
      const reference = await sharp(data, { raw })
        .extract(region)
        .resize({ width: 41, height: 37, kernel: kernel as keyof sharp.KernelEnum, fit: 'fill' })
        .raw()
        .toBuffer();
      return mine !== null && Buffer.from(mine.data).equals(reference);
    })().catch(() => false);
    verifiedKernels.set(kernel, verified);
  }
  return verified;
}

/**
 * Crops with sharp (libvips): the box is in the image's pixel space, checked against the image
 * (finite, x2 > x1, y2 > y1, inside up to float error), widened to whole pixels and clamped to the
 * image (`alignToPixels`, as the core stores it), and the crop is enlarged so that its
 * longer side reaches `minOutputSide` (small print becomes legible), capped at `maxOutputSide`.
 *
 * Enlargements of 8-bit pages are computed from each page's decoded pixels (decoded once, kept
 * within `decodedCacheBytes`) by a bit-exact copy of libvips' bicubic enlargement
 * (`libvips-enlarge.ts`), then encoded (PNG here, from Up-filtered scanlines through node:zlib; JPEG
 * and WebP by sharp): the same pixels as sharp's own pipeline at a
 * fraction of its cost (checked against this process's sharp before its first use). Every other
 * crop runs through sharp's pipeline.
 */
export function createSharpImageOps(settings: SharpImageOpsSettings = {}): SharpImageOps {
  const { format, compressionLevel, kernel, maxOutputSide, decodedCacheBytes } = parseSettings(
    'createSharpImageOps',
    sharpImageOpsSettingsSchema,
    settings,
  );
  const decodedPages = createDecodedPages(decodedCacheBytes);
  const buffers = createBufferPool(8);
  const encoding = format === 'png' ? { compressionLevel } : {};
  const enlarges = BICUBIC_KERNELS.has(kernel);
  return {
    specificationVersion: 'v1',
    provider: 'sharp',
    async doCrop(image: PageImage, bbox: BoundingBox, options: CropOptions = {}): Promise<PageImage> {
      if (options.signal?.aborted)
        throw new AbortedError({ what: 'sharp crop', cause: options.signal.reason });
      if (
        !image ||
        !(image.bytes instanceof Uint8Array) ||
        !(Number.isInteger(image.width) && image.width > 0) ||
        !(Number.isInteger(image.height) && image.height > 0)
      ) {
        throw new InvalidArgumentError({
          argument: 'image',
          message: 'expected {mimeType, width, height, bytes: Uint8Array} with positive integer sizes',
        });
      }
      if (!Array.isArray(bbox) || bbox.length !== 4 || !bbox.every((v) => Number.isFinite(v)))
        throw new InvalidArgumentError({
          argument: 'bbox',
          message: 'must be four finite numbers [x1, y1, x2, y2]',
        });
      const [x1, y1, x2, y2] = bbox;
      if (!insideImage(bbox, image.width, image.height)) {
        throw new InvalidArgumentError({
          argument: 'bbox',
          message: `[${bbox.join(', ')}] is outside the ${image.width}x${image.height} image`,
        });
      }
      if (!(x2 > x1 && y2 > y1))
        throw new InvalidArgumentError({
          argument: 'bbox',
          message: `needs x2 > x1 and y2 > y1, got [${bbox.join(', ')}]`,
        });
      const minOutputSide = options.minOutputSide ?? 0;
      if (!(Number.isFinite(minOutputSide) && minOutputSide >= 0))
        throw new InvalidArgumentError({
          argument: 'minOutputSide',
          message: `must be >= 0, got ${minOutputSide}`,
        });
      const [left, top, right, bottom] = alignToPixels(bbox, image.width, image.height);
      const width = right - left;
      const height = bottom - top;
      const scale = Math.min(
        Math.max(1, minOutputSide / Math.max(width, height)),
        maxOutputSide / Math.max(width, height),
      );
      const outWidth = Math.round(width * scale);
      const outHeight = Math.round(height * scale);
      // The encoded crop, unless the caller gave up while it was being made.
      const cropped = (bytes: Uint8Array, outW: number, outH: number): PageImage => {
        if (options.signal?.aborted)
          throw new AbortedError({ what: 'sharp crop', cause: options.signal.reason });
        return {
          mimeType: MIME[format],
          width: outW,
          height: outH,
          bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        };
      };
      try {
        const decoded =
          enlarges && scale > 1 && (await enlargementVerified(kernel)) ? await decodedPages.get(image) : null;
        const lent: { buffer: Uint8Array | null } = { buffer: null };
        // PNG crops are written here from PNG scanlines (zlib on the thread pool); others by sharp.
        const enlarged =
          decoded &&
          enlargeLikeLibvips(
            decoded,
            { left, top, width, height },
            outWidth,
            outHeight,
            (bytes) => {
              lent.buffer = buffers.take(bytes);
              return lent.buffer;
            },
            format === 'png' ? 'png-scanlines' : 'pixels',
          );
        if (enlarged) {
          const raw = {
            width: enlarged.width,
            height: enlarged.height,
            channels: enlarged.channels as 3 | 4,
          };
          const bytes = await (format === 'png'
            ? encodePngScanlines(raw, enlarged.data, compressionLevel)
            : sharp(enlarged.data, { raw }).toFormat(format, encoding).toBuffer()
          ).finally(() => buffers.give(lent.buffer!));
          return cropped(bytes, enlarged.width, enlarged.height);
        }
        const input =
          image.mimeType === RAW_RGBA_MIME
            ? sharp(image.bytes, { raw: { width: image.width, height: image.height, channels: 4 } })
            : sharp(image.bytes);
        let pipeline = input.extract({ left, top, width, height });
        if (scale > 1)
          pipeline = pipeline.resize({
            width: outWidth,
            height: outHeight,
            kernel,
            fit: 'fill',
          });
        const { data, info } = await pipeline
          .toFormat(format, encoding)
          .toBuffer({ resolveWithObject: true });
        return cropped(data, info.width, info.height);
      } catch (error) {
        if (AbortedError.isInstance(error)) throw error;
        throw new ProviderCallError({
          port: 'imageOps',
          provider: 'sharp',
          message: `could not crop a ${image.mimeType} image: ${error instanceof Error ? error.message : String(error)}`,
          isRetryable: false,
          cause: error,
        });
      }
    },
  };
}
