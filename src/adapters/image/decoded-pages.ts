import sharp from 'sharp';
import { RAW_RGBA_MIME } from '../../core/episode/image-frame';
import type { PageImage } from '../../ports/types';
import type { RawImage } from './libvips-enlarge';
import { decodePng } from './png-decode';

/**
 * The decoded pixels of the pages being cropped, so that a page is decoded once, not once a crop:
 * an episode crops the page its search just showed, and the rollouts of a group crop the same
 * pages. Keyed by the page's bytes (the search engines hand out the same bytes for the same page;
 * they are never changed in place), least recently used first out, within a byte budget. A page
 * qualifies when its pixels are what sharp's crop pipeline would resample: 8-bit sRGB, 3 or 4
 * channels, one page, no ICC profile (sharp would convert through it), the size the page says; any
 * other page is `null` and cropped by sharp from its bytes as before.
 */
export interface DecodedPages {
  get(image: PageImage): Promise<RawImage | null>;
}

export function createDecodedPages(budgetBytes: number): DecodedPages {
  const entries = new Map<Uint8Array, { decoded: Promise<RawImage | null>; bytes: number }>();
  let held = 0;
  const evict = () => {
    for (const [key, entry] of entries) {
      if (held <= budgetBytes) break;
      entries.delete(key);
      held -= entry.bytes;
    }
  };
  return {
    get(image) {
      if (budgetBytes <= 0) return decode(image);
      const hit = entries.get(image.bytes);
      if (hit) {
        entries.delete(image.bytes);
        entries.set(image.bytes, hit);
        return hit.decoded;
      }
      // Counted at its decoded size from the start, so concurrent misses cannot overrun the budget.
      const bytes = image.width * image.height * 4;
      if (bytes > budgetBytes) return decode(image);
      const entry = { decoded: decode(image), bytes };
      entries.set(image.bytes, entry);
      held += bytes;
      evict();
      return entry.decoded;
    },
  };
}

async function decode(image: PageImage): Promise<RawImage | null> {
  try {
    const raw =
      image.mimeType === RAW_RGBA_MIME
        ? image.bytes.length === image.width * image.height * 4
          ? { data: image.bytes, width: image.width, height: image.height, channels: 4 }
          : null
        : ((await decodePng(image.bytes)) ?? (await decodeWithSharp(image.bytes)));
    return raw && raw.width === image.width && raw.height === image.height ? raw : null;
  } catch {
    // Undecodable here: sharp's own pipeline reports it, as before.
    return null;
  }
}

/** Any other image sharp reads, when its pixels are what the crop pipeline would resample. */
async function decodeWithSharp(bytes: Uint8Array): Promise<RawImage | null> {
  const input = sharp(bytes);
  const meta = await input.metadata();
  if (
    meta.hasProfile ||
    meta.depth !== 'uchar' ||
    meta.space !== 'srgb' ||
    (meta.channels !== 3 && meta.channels !== 4) ||
    (meta.pages ?? 1) > 1
  )
    return null;
  const { data, info } = await input.raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== meta.channels) return null;
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: info.channels,
  };
}
