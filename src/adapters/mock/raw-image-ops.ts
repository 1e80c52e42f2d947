import { InvalidArgumentError, ProviderCallError } from '../../core/errors';
import { alignToPixels, insideImage, RAW_RGBA_MIME } from '../../core/episode/image-frame';
import type { CropOptions, ImageOps } from '../../ports/image-ops';
import type { BoundingBox, PageImage } from '../../ports/types';

export { RAW_RGBA_MIME };

/**
 * A raw RGBA page image (`RAW_RGBA_MIME`) of `width` x `height`, each pixel from `pixel` (default
 * white).
 */
export function createRawImage(
  width: number,
  height: number,
  pixel: (x: number, y: number) => [number, number, number, number] = () => [255, 255, 255, 255],
): PageImage {
  if (!(Number.isInteger(width) && width > 0))
    throw new InvalidArgumentError({
      argument: 'width',
      message: `must be a positive integer, got ${width}`,
    });
  if (!(Number.isInteger(height) && height > 0))
    throw new InvalidArgumentError({
      argument: 'height',
      message: `must be a positive integer, got ${height}`,
    });
  const bytes = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) bytes.set(pixel(x, y), (y * width + x) * 4);
  }
  return { mimeType: RAW_RGBA_MIME, width, height, bytes };
}

export interface RawImageOps extends ImageOps {
  readonly calls: Array<{ basename?: string; width: number; height: number; bbox: BoundingBox }>;
}

/**
 * Crops raw RGBA images exactly (the region is rounded outwards to whole pixels and clamped to
 * the image, `alignToPixels` as in the core and the sharp adapter) and enlarges
 * the crop by nearest neighbour to `minOutputSide`. Other formats need a codec: use
 * the sharp adapter.
 */
export function createRawImageOps(): RawImageOps {
  const calls: RawImageOps['calls'] = [];
  return {
    specificationVersion: 'v1',
    provider: 'raw-rgba',
    calls,
    async doCrop(image: PageImage, bbox: BoundingBox, options?: CropOptions): Promise<PageImage> {
      options?.signal?.throwIfAborted();
      calls.push({ width: image.width, height: image.height, bbox });
      if (image.mimeType !== RAW_RGBA_MIME) {
        throw new ProviderCallError({
          port: 'imageOps',
          provider: 'raw-rgba',
          message: `cannot decode ${image.mimeType}; only ${RAW_RGBA_MIME}`,
          isRetryable: false,
        });
      }
      if (!insideImage(bbox, image.width, image.height))
        throw new InvalidArgumentError({
          argument: 'bbox',
          message: `[${bbox.join(', ')}] is outside the ${image.width}x${image.height} image`,
        });
      const [x1, y1, x2, y2] = alignToPixels(bbox, image.width, image.height);
      const w = x2 - x1;
      const h = y2 - y1;
      const scale = Math.max(1, (options?.minOutputSide ?? 0) / Math.max(w, h));
      const outW = Math.round(w * scale);
      const outH = Math.round(h * scale);
      const bytes = new Uint8Array(outW * outH * 4);
      for (let y = 0; y < outH; y++) {
        const sy = Math.min(image.height - 1, y1 + Math.floor(y / scale));
        for (let x = 0; x < outW; x++) {
          const sx = Math.min(image.width - 1, x1 + Math.floor(x / scale));
          const from = (sy * image.width + sx) * 4;
          bytes.set(image.bytes.subarray(from, from + 4), (y * outW + x) * 4);
        }
      }
      return { mimeType: RAW_RGBA_MIME, width: outW, height: outH, bytes };
    },
  };
}
