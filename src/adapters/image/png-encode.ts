import * as zlib from 'node:zlib';

/**
 * zlib deflate streams kept for reuse, a few per level: each crop's stream used to allocate and
 * set up about 256 KiB of zlib state (memory V8 counts towards its next garbage collection).
 * One stream compresses one input at a time: written, finished (Z_FINISH), then reset.
 */
const idleStreams = new Map<number, zlib.Deflate[]>();

function deflate(input: Uint8Array, level: number): Promise<Buffer> {
  const stream = idleStreams.get(level)?.pop() ?? zlib.createDeflate({ level });
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onData = (chunk: Buffer) => chunks.push(chunk);
    const onError = (error: Error) => {
      stream.off('data', onData);
      stream.destroy();
      reject(error);
    };
    stream.on('data', onData);
    stream.once('error', onError);
    stream.write(input);
    stream.flush(zlib.constants.Z_FINISH, () => {
      stream.off('data', onData);
      stream.off('error', onError);
      if (stream.destroyed) return;
      stream.reset();
      const idle = idleStreams.get(level) ?? [];
      if (idle.length < 4) idle.push(stream);
      else stream.close();
      idleStreams.set(level, idle);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
  });
}

export const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** CRC-32 of PNG chunks: zlib's where Node has it (20.15 and later), else this table's. */
const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();
export const crc32: (data: Uint8Array, value?: number) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === 'function'
    ? (zlib as unknown as { crc32: (data: Uint8Array, value?: number) => number }).crc32
    : (data, value = 0) => {
        let c = ~value >>> 0;
        for (let i = 0; i < data.length; i++) c = crcTable[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
        return ~c >>> 0;
      };

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/**
 * An 8-bit RGB or RGBA PNG (not interlaced) from its scanlines (each row's filter byte, then the
 * filtered row), compressed at zlib `level` on the libuv thread pool. `scanlines` must not change
 * until the promise settles.
 */
export async function encodePngScanlines(
  size: { width: number; height: number; channels: 3 | 4 },
  scanlines: Uint8Array,
  level: number,
): Promise<Uint8Array> {
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, size.width);
  view.setUint32(4, size.height);
  header[8] = 8; // bit depth
  header[9] = size.channels === 4 ? 6 : 2; // colour type: RGBA or RGB
  // compression 0 (deflate), filter method 0 (the five filters), interlace 0: the zeros after.
  const compressed = await deflate(scanlines, level);
  const parts = [
    new Uint8Array(SIGNATURE),
    chunk('IHDR', header),
    chunk('IDAT', compressed),
    chunk('IEND', new Uint8Array(0)),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
