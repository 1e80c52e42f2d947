import sharp from 'sharp';
import type { z } from 'zod';
import { AbortedError, InvalidArgumentError, ProviderCallError } from '../../core/errors';
import { alignToPixels, insideImage } from '../../core/episode/image-frame';
import type { CropOptions, ImageOps } from '../../ports/image-ops';
import type { BoundingBox, PageImage } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { sharpImageOpsSettingsSchema } from './settings';

/** Raw RGBA pixels (as made by `createRawImage` in searcher-rl/mock) are read too. */
const RAW_RGBA_MIME = 'image/x-raw-rgba';

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
 * Crops with sharp (libvips): the box is in the image's pixel space, checked against the image
 * (finite, x2 > x1, y2 > y1, inside up to float error), widened to whole pixels and clamped to the
 * image (`alignToPixels`, as the core stores it), and the crop is enlarged so that its
 * longer side reaches `minOutputSide` (small print becomes legible), capped at `maxOutputSide`.
 */
export function createSharpImageOps(settings: SharpImageOpsSettings = {}): SharpImageOps {
  const { format, kernel, maxOutputSide } = parseSettings(
    'createSharpImageOps',
    sharpImageOpsSettingsSchema,
    settings,
  );
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
      try {
        const input =
          image.mimeType === RAW_RGBA_MIME
            ? sharp(image.bytes, { raw: { width: image.width, height: image.height, channels: 4 } })
            : sharp(image.bytes);
        let pipeline = input.extract({ left, top, width, height });
        if (scale > 1)
          pipeline = pipeline.resize({
            width: Math.round(width * scale),
            height: Math.round(height * scale),
            kernel,
            fit: 'fill',
          });
        const { data, info } = await pipeline.toFormat(format).toBuffer({ resolveWithObject: true });
        if (options.signal?.aborted)
          throw new AbortedError({ what: 'sharp crop', cause: options.signal.reason });
        return {
          mimeType: MIME[format],
          width: info.width,
          height: info.height,
          bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        };
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
