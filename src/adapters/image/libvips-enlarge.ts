import { type EnlargeKernels, enlargeKernels } from './enlarge-kernels';

/**
 * libvips' enlargement of 8-bit pixels, as sharp runs it for `resize({width, height, fit: 'fill'})`
 * with any kernel but `nearest` when both sides grow (or one grows and the other stays): libvips
 * 8.17 `vips_resize` upsizes with `vips_affine` and its `bicubic` (Catmull-Rom) interpolator, input
 * displacement 0.5, the edges extended by copying, in fixed point for 8-bit bands
 * (`libvips/resample/{resize,affine,transform}.c`, `bicubic.cpp`, `templates.h`). Reproduced here
 * to the bit and computed separably (each 4x4 stencil's row sums are rounded before the column
 * sum in libvips too, so rows can be shared), which costs a fraction of libvips' per-pixel affine.
 * `libvips-enlarge.test.ts` compares it with sharp on random crops; the sharp adapter checks it
 * against the sharp it runs with before using it.
 */

const TRANSFORM_SCALE = 64; // VIPS_TRANSFORM_SCALE
const INTERPOLATE_SHIFT = 12; // VIPS_INTERPOLATE_SHIFT
const ROUND_BY = 1 << (INTERPOLATE_SHIFT - 1);

/** `vips_bicubic_matrixi`: Catmull-Rom weights at 65 sub-pixel phases, in fixed point (truncated, as C's cast). */
const WEIGHTS: Int32Array = (() => {
  const out = new Int32Array((TRANSFORM_SCALE + 1) * 4);
  for (let phase = 0; phase <= TRANSFORM_SCALE; phase++) {
    // calculate_coefficients_catmull, operation for operation (every value here is exact).
    const x = phase / TRANSFORM_SCALE;
    const cr1 = 1 - x;
    const cr2 = -0.5 * x;
    const cr3 = cr1 * cr2;
    const cone = cr1 * cr3;
    const cfou = x * cr3;
    const cr4 = cfou - cone;
    const ctwo = cr1 - cone + cr4;
    const cthr = x - cfou - cr4;
    const weights = [cone, ctwo, cthr, cfou];
    for (let k = 0; k < 4; k++) out[phase * 4 + k] = Math.trunc(weights[k]! * (1 << INTERPOLATE_SHIFT));
  }
  return out;
})();

/**
 * Whether every phase's weights map a constant region to itself: then an alpha of 255 stays 255
 * and unpremultiplying (after sharp's premultiply) changes nothing, which the RGBA path relies on.
 */
const CONSTANTS_KEPT: boolean = (() => {
  for (let phase = 0; phase <= TRANSFORM_SCALE; phase++) {
    const sum =
      WEIGHTS[phase * 4]! + WEIGHTS[phase * 4 + 1]! + WEIGHTS[phase * 4 + 2]! + WEIGHTS[phase * 4 + 3]!;
    for (let v = 0; v <= 255; v++) if ((v * sum + ROUND_BY) >> INTERPOLATE_SHIFT !== v) return false;
  }
  return true;
})();

export interface RawImage {
  /** Interleaved 8-bit samples, row after row. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
  /** Where the first row starts in `data` (default 0) and how far apart rows are (default width x channels). */
  offset?: number;
  stride?: number;
}

export interface PixelRegion {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The output size libvips gives for sharp's resize of `region` to `width` x `height`, or null when it is not an enlargement. */
export function enlargementOf(
  region: Pick<PixelRegion, 'width' | 'height'>,
  width: number,
  height: number,
): { hscale: number; vscale: number; width: number; height: number } | null {
  // sharp's ResolveShrink (fit 'fill': IGNORE_ASPECT), then vips_resize's scale.
  const hscale = 1 / Math.min(region.width / width, region.width);
  const vscale = 1 / Math.min(region.height / height, region.height);
  if (!(hscale >= 1 && vscale >= 1 && (hscale > 1 || vscale > 1))) return null;
  // vips__transform_set_area: the input rectangle's corners forward, round-to-nearest (VIPS_ROUND_INT).
  return {
    hscale,
    vscale,
    width: Math.trunc(hscale * region.width + 0.5),
    height: Math.trunc(vscale * region.height + 0.5),
  };
}

/** Per output column (or row): the stencil's first source index (clamped later) and its phase. */
function stencil(
  scale: number,
  other: number,
  count: number,
  accumulate: boolean,
): { start: Int32Array; phase: Int32Array } {
  // vips__transform_calc_inverse for the diagonal matrix [scale, 0, 0, other].
  const inverse = (1 / (scale * other - 0 * 0)) * other;
  const start = new Int32Array(count);
  const phase = new Int32Array(count);
  // vips_affine_gen: ix = ia*ox + ib*oy - idx + window_offset with idx = 0.5 - 1 (the one-pixel
  // border), window_offset 1; along a row ix grows by ia from the row's first pixel (the strip
  // starts at x = 0), down the columns each row's iy is computed afresh.
  let position = 0 * inverse + 0.5 + 1;
  for (let i = 0; i < count; i++) {
    if (!accumulate) position = inverse * i + 0.5 + 1;
    const sub = Math.trunc(position * TRANSFORM_SCALE * 2) & (TRANSFORM_SCALE * 2 - 1);
    phase[i] = (sub + 1) >> 1;
    // In the embedded image (2 pixels of border), the stencil starts one left of trunc(position).
    start[i] = Math.trunc(position) - 1 - 2;
    if (accumulate) position += inverse;
  }
  return { start, phase };
}

/** Output pixels above this go to sharp (the kernels' memory grows with the output and stays grown). */
export const MAX_ENLARGED_PIXELS = 1 << 21;

const align = (n: number, to: number) => Math.ceil(n / to) * to;

/**
 * At the start of the kernels' memory: per phase, its weights as the kernels read them (32 bytes:
 * i16 lanes [w0, w1] x 4, then [w2, w3] x 4).
 */
const WEIGHT_TABLE_BYTES = (TRANSFORM_SCALE + 1) * 32;

/** The kernels, with the weight table written into their memory (once). */
function kernelsWithWeights(): EnlargeKernels | null {
  const kernels = enlargeKernels();
  if (kernels && !weightsWritten.has(kernels)) {
    const table = new Int16Array(kernels.memory.buffer, 0, WEIGHT_TABLE_BYTES / 2);
    for (let phase = 0; phase <= TRANSFORM_SCALE; phase++)
      for (let lane = 0; lane < 4; lane++)
        for (let k = 0; k < 4; k++)
          table[phase * 16 + (k >> 1) * 8 + lane * 2 + (k & 1)] = WEIGHTS[phase * 4 + k]!;
    weightsWritten.add(kernels);
  }
  return kernels;
}
const weightsWritten = new WeakSet<EnlargeKernels>();

/**
 * The enlarged pixels of `region` of `image` (8-bit, 3 or 4 channels), as sharp's
 * `extract(region).resize({width, height, fit: 'fill', kernel})` computes them. Returns null where
 * libvips would not enlarge (a reduction, or no change), where the region has alpha below 255
 * (sharp premultiplies), where the output is larger than MAX_ENLARGED_PIXELS, or without
 * WebAssembly SIMD: the caller lets sharp do those.
 */
export function enlargeLikeLibvips(
  image: RawImage,
  region: PixelRegion,
  width: number,
  height: number,
  /** Where the output goes (at least `bytes` long; default: a new array). */
  output: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
  /**
   * `pixels`: rows of pixels; `png-scanlines`: the rows as PNG scanlines (a filter byte, then the
   * row with the Up filter; the first row's "above" is zeros), ready for a PNG's zlib stream.
   */
  form: 'pixels' | 'png-scanlines' = 'pixels',
): RawImage | null {
  const size = enlargementOf(region, width, height);
  const kernels = kernelsWithWeights();
  const { channels } = image;
  if (
    !size ||
    !kernels ||
    !CONSTANTS_KEPT ||
    (channels !== 3 && channels !== 4) ||
    size.width * size.height > MAX_ENLARGED_PIXELS
  )
    return null;
  const outWidth = size.width;
  const outHeight = size.height;
  const columns = stencil(size.hscale, size.vscale, outWidth, true);
  const rows = stencil(size.vscale, size.hscale, outHeight, false);
  const lastRow = region.height - 1;
  const firstRow = Math.max(0, rows.start[0]!);
  const endRow = Math.min(lastRow, rows.start[outHeight - 1]! + 3);
  const rowCount = endRow - firstRow + 1;

  // Memory: the region's rows as 4-byte pixels, extended by 2 pixels left and 3 right (the
  // embedding libvips reads the stencil from); per output column its tap offset and weights; the
  // horizontal pass (4 i16 lanes a pixel, rows padded to 4 pixels); its rows paired for the
  // vertical pass (pair p: rows p and p+1, clamped to the region, lane by lane); the output (+16
  // bytes: the last 16-byte store may run past it).
  const extendedStride = (region.width + 5) * 4;
  const paddedWidth = align(outWidth, 4);
  const laneStride = paddedWidth * 8;
  const firstPair = rows.start[0]!;
  const pairCount = rows.start[outHeight - 1]! + 2 - firstPair + 1;
  const layout = { extended: WEIGHT_TABLE_BYTES, columns: 0, lanes: 0, pairs: 0, out: 0, end: 0 };
  layout.columns = align(layout.extended + rowCount * extendedStride, 16);
  layout.lanes = align(layout.columns + paddedWidth * 8, 16);
  layout.pairs = layout.lanes + rowCount * laneStride;
  // The output rows, a zero row before them (the Up filter's row above the first); 3-channel rows
  // packed from them, likewise; the scanlines. Each area has 16 bytes of slack for the kernels.
  const rowBytes = outWidth * channels;
  const zero4 = layout.pairs + pairCount * laneStride * 2;
  layout.out = zero4 + outWidth * 4;
  const zero3 = layout.out + outWidth * outHeight * 4 + 16;
  const packed = zero3 + outWidth * 3;
  const scan = packed + outWidth * outHeight * 3 + 16;
  layout.end = scan + outHeight * (rowBytes + 1) + 16;
  const memory = kernels.memory;
  if (memory.buffer.byteLength < layout.end)
    memory.grow(Math.ceil((layout.end - memory.buffer.byteLength) / 65536));
  const bytes = new Uint8Array(memory.buffer);

  const src = image.data;
  const srcStride = image.stride ?? image.width * channels;
  const srcOffset = image.offset ?? 0;
  for (let r = 0; r < rowCount; r++) {
    const from = srcOffset + (region.top + firstRow + r) * srcStride + region.left * channels;
    const to = layout.extended + r * extendedStride;
    if (channels === 4) bytes.set(src.subarray(from, from + region.width * 4), to + 8);
    else
      for (let x = 0; x < region.width; x++) {
        const p = from + x * 3;
        const q = to + 8 + x * 4;
        bytes[q] = src[p]!;
        bytes[q + 1] = src[p + 1]!;
        bytes[q + 2] = src[p + 2]!;
        bytes[q + 3] = 255;
      }
    // Copy-extend the ends (vips_embed, VIPS_EXTEND_COPY).
    bytes.copyWithin(to, to + 8, to + 12);
    bytes.copyWithin(to + 4, to + 8, to + 12);
    const last = to + 8 + (region.width - 1) * 4;
    for (let k = 1; k <= 3; k++) bytes.copyWithin(last + k * 4, last, last + 4);
  }
  // Alpha below 255 anywhere in the region: sharp premultiplies it, which this does not copy.
  const extendedBytes = align(rowCount * extendedStride, 16);
  bytes.fill(255, layout.extended + rowCount * extendedStride, layout.extended + extendedBytes);
  if (channels === 4 && !kernels.opaque(layout.extended, extendedBytes)) return null;
  const ints = new Int32Array(memory.buffer, layout.columns, paddedWidth * 2);
  for (let x = 0; x < paddedWidth; x++) {
    // The stencil starts at column start (region coordinates), so at start + 2 in the extended row.
    // Padding columns repeat the last one (computed, never shown).
    const column = Math.min(x, outWidth - 1);
    ints[x * 2] = (columns.start[column]! + 2) * 4;
    ints[x * 2 + 1] = columns.phase[column]! * 32;
  }
  for (let r = 0; r < rowCount; r++)
    kernels.horizontal(
      layout.extended + r * extendedStride,
      layout.columns,
      paddedWidth,
      layout.lanes + r * laneStride,
    );
  const rowAt = (row: number) => layout.lanes + (Math.min(lastRow, Math.max(0, row)) - firstRow) * laneStride;
  for (let p = 0; p < pairCount; p++)
    kernels.interleave(
      rowAt(firstPair + p),
      rowAt(firstPair + p + 1),
      layout.pairs + p * laneStride * 2,
      laneStride,
    );
  const pairAt = (row: number) => layout.pairs + (row - firstPair) * laneStride * 2;
  for (let y = 0; y < outHeight; y++) {
    const start = rows.start[y]!;
    kernels.vertical(
      pairAt(start),
      pairAt(start + 2),
      rows.phase[y]! * 32,
      laneStride * 2,
      layout.out + y * outWidth * 4,
    );
  }
  let rowsAt = layout.out;
  if (channels === 3) {
    kernels.pack3(layout.out, packed, outWidth * outHeight);
    rowsAt = packed;
  }
  let data: Uint8Array;
  if (form === 'pixels') {
    data = output(rowBytes * outHeight).subarray(0, rowBytes * outHeight);
    data.set(bytes.subarray(rowsAt, rowsAt + rowBytes * outHeight));
  } else {
    bytes.fill(0, rowsAt - rowBytes, rowsAt);
    kernels.filterUp(rowsAt, scan, rowBytes, outHeight);
    const length = outHeight * (rowBytes + 1);
    data = output(length).subarray(0, length);
    data.set(bytes.subarray(scan, scan + length));
  }
  return { data, width: outWidth, height: outHeight, channels };
}
