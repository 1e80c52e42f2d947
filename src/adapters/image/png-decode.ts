import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import type { RawImage } from './libvips-enlarge';
import { crc32, SIGNATURE } from './png-encode';

const inflate = promisify(zlib.inflate);

/**
 * The pixels of an 8-bit RGB or RGBA PNG, not interlaced (what page renderers and screenshots
 * write), decoded here: zlib on the thread pool and the row filters, at about a quarter of sharp's
 * CPU for a page. The samples are the file's, as sharp reads them: PNG decoding is exact, and
 * libvips applies neither gAMA nor cHRM. null for anything else (another depth or colour type,
 * interlacing, an ICC profile or a transparency key, which sharp would apply, a bad checksum, an
 * unknown critical chunk): the caller lets sharp decode those.
 */
export async function decodePng(bytes: Uint8Array): Promise<RawImage | null> {
  if (bytes.length < 8 || SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Uint8Array[] = [];
  let ended = false;
  for (let at = 8; at + 12 <= bytes.length && !ended; ) {
    const length = view.getUint32(at);
    if (at + 12 + length > bytes.length) return null;
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (crc32(bytes.subarray(at + 4, at + 8 + length)) !== view.getUint32(at + 8 + length)) return null;
    if (type === 'IHDR') {
      if (length !== 13) return null;
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      const [depth, colourType, compression, filter, interlace] = body.subarray(8, 13);
      if (depth !== 8 || compression !== 0 || filter !== 0 || interlace !== 0) return null;
      if (colourType === 2) channels = 3;
      else if (colourType === 6) channels = 4;
      else return null;
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') ended = true;
    else if (type === 'iCCP' || type === 'tRNS') return null;
    // Other critical chunks (upper-case first letter) but PLTE, a suggested palette here: unknown.
    else if (type !== 'PLTE' && type.charCodeAt(0) < 97) return null;
    at += 12 + length;
  }
  if (!ended || channels === 0 || width === 0 || height === 0 || data.length === 0) return null;
  const rowBytes = width * channels;
  const expected = height * (rowBytes + 1);
  let rows: Uint8Array;
  try {
    // One output buffer of the exact size (not 16 KiB pieces joined): a page is about a megabyte.
    rows = await inflate(data.length === 1 ? data[0]! : Buffer.concat(data), { chunkSize: expected + 1 });
  } catch {
    return null;
  }
  if (rows.length !== expected) return null;
  // Unfiltered in place: each row's filter byte stays in front of it (the image's stride is
  // rowBytes + 1), and a filter reads only bytes already unfiltered (left, above, above-left).
  for (let y = 0; y < height; y++) {
    const row = y * (rowBytes + 1) + 1;
    const above = row - rowBytes - 1; // read only when y > 0
    const filter = rows[row - 1]!;
    if (filter === 0 || (filter === 2 && y === 0)) continue;
    if (filter === 1)
      for (let i = channels; i < rowBytes; i++)
        rows[row + i] = (rows[row + i]! + rows[row + i - channels]!) & 0xff;
    else if (filter === 2)
      for (let i = 0; i < rowBytes; i++) rows[row + i] = (rows[row + i]! + rows[above + i]!) & 0xff;
    else if (filter === 3)
      for (let i = 0; i < rowBytes; i++) {
        const left = i >= channels ? rows[row + i - channels]! : 0;
        const up = y > 0 ? rows[above + i]! : 0;
        rows[row + i] = (rows[row + i]! + ((left + up) >> 1)) & 0xff;
      }
    else if (filter === 4)
      for (let i = 0; i < rowBytes; i++) {
        const left = i >= channels ? rows[row + i - channels]! : 0;
        const up = y > 0 ? rows[above + i]! : 0;
        const upLeft = y > 0 && i >= channels ? rows[above + i - channels]! : 0;
        const p = left + up - upLeft;
        const pa = Math.abs(p - left);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - upLeft);
        rows[row + i] = (rows[row + i]! + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft)) & 0xff;
      }
    else return null;
  }
  return { data: rows, width, height, channels, offset: 1, stride: rowBytes + 1 };
}
