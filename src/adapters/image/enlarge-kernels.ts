import { assembleModule, type WasmFunction } from '../../provider-utils/wasm-assemble';

/**
 * The passes of the bicubic enlargement (`libvips-enlarge.ts`) as WebAssembly SIMD kernels, in
 * libvips' fixed point: weights scaled by 4096, each 4-tap sum rounded by adding 2048 and
 * shifting right by 12 (arithmetic), as `unsigned_fixed_round`. Sums of products are formed two
 * taps at a time by `i32x4.dot_i16x8_s` (pmaddwd), exact in 32 bits: samples fit in 16 bits (bytes,
 * then row sums between about -300 and 560), weights too (at most 4096).
 *
 * A phase's weights are 32 bytes: i16 lanes [w0, w1] x 4, then [w2, w3] x 4.
 */

/** WAT: `body` again and again while local `cursor` is below local `end` (each kernel's loop). */
const whileBelow = (cursor: number, end: number, body: string) => `
    block
      loop
        local.get ${cursor}  local.get ${end}  i32.ge_u  br_if 1${body}
        br 0
      end
    end`;

/** WAT: local `pointer` moved on by `bytes`. */
const advance = (pointer: number, bytes: number) =>
  `local.get ${pointer}  i32.const ${bytes}  i32.add  local.set ${pointer}`;

/** Swizzle masks taking source pixels (0, 1) and (2, 3) of 16 bytes to i16 lanes [a.c, b.c] per channel c. */
const PAIRS_01 = '0 16 4 16 1 16 5 16 2 16 6 16 3 16 7 16';
const PAIRS_23 = '8 16 12 16 9 16 13 16 10 16 14 16 11 16 15 16';

/** One output pixel of the horizontal pass: four i32 lanes from the column entry at local 1 + `entry`. */
const horizontalPixel = (entry: number) => `
        local.get 1  i32.load offset=${entry + 4} align=4  local.set 5      ;; the phase's weights
        local.get 0  local.get 1  i32.load offset=${entry} align=4  i32.add
        v128.load  local.set 6                      ;; source pixels 0-3 of the stencil, 16 bytes
        local.get 6  local.get 7  i8x16.swizzle  local.get 5  v128.load align=16  i32x4.dot_i16x8_s
        local.get 6  local.get 8  i8x16.swizzle  local.get 5  v128.load offset=16 align=16  i32x4.dot_i16x8_s
        i32x4.add  local.get 9  i32x4.add  i32.const 12  i32x4.shr_s`;

/**
 * horizontal(src, columns, count, dst): for each of `count` (even) output pixels x, with
 * `columns[x]` = (tap, weights) two i32: the four source pixels at `src + tap` (consecutive: the row
 * is extended at both ends) weighted by the phase's weights at `weights`, into four i16 lanes at
 * `dst + 8x`.
 */
const horizontal: WasmFunction = {
  name: 'horizontal',
  params: ['i32', 'i32', 'i32', 'i32'], // 0 src, 1 columns, 2 count, 3 dst
  // 4 end, 5 weights, 6 pixels, 7 and 8 the swizzle masks, 9 round
  locals: ['i32', 'i32', 'v128', 'v128', 'v128', 'v128'],
  body: `
    v128.const ${PAIRS_01}  local.set 7
    v128.const ${PAIRS_23}  local.set 8
    i32.const 2048  i32x4.splat  local.set 9
    local.get 3  local.get 2  i32.const 3  i32.shl  i32.add  local.set 4
    ${whileBelow(
      3,
      4,
      `
        local.get 3                                 ;; where the two pixels' eight lanes go
        ${horizontalPixel(0)}
        ${horizontalPixel(8)}
        i16x8.narrow_i32x4_s
        v128.store align=16
        ${advance(1, 16)}
        ${advance(3, 16)}`,
    )}`,
};

/**
 * interleave(a, b, dst, bytes): two rows of the horizontal pass (i16 lanes, `bytes` of each, a
 * multiple of 16) as one row of lane pairs [a[i], b[i]], the layout the vertical pass's dot reads.
 */
const interleave: WasmFunction = {
  name: 'interleave',
  params: ['i32', 'i32', 'i32', 'i32'], // 0 a, 1 b, 2 dst, 3 bytes
  locals: ['i32'], // 4 end
  body: `
    local.get 0  local.get 3  i32.add  local.set 4
    ${whileBelow(
      0,
      4,
      `
        local.get 2
        local.get 0  v128.load  local.get 1  v128.load
        i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23
        v128.store align=16
        local.get 2
        local.get 0  v128.load  local.get 1  v128.load
        i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31
        v128.store offset=16 align=16
        ${advance(0, 16)}
        ${advance(1, 16)}
        ${advance(2, 32)}`,
    )}`,
};

/** Four output lanes of the vertical pass, from the pair rows' lanes at byte offset `offset`. */
const verticalGroup = (offset: number) => `
        local.get 0  v128.load offset=${offset} align=16  local.get 5  i32x4.dot_i16x8_s
        local.get 1  v128.load offset=${offset} align=16  local.get 6  i32x4.dot_i16x8_s
        i32x4.add  local.get 7  i32x4.add  i32.const 12  i32x4.shr_s`;

/**
 * vertical(p01, p23, weights, bytes, dst): with p01 the pair row of rows (s, s+1) and p23 that of
 * (s+2, s+3) (`bytes` of each, a multiple of 64), each lane's w0*r0 + w1*r1 + w2*r2 + w3*r3
 * rounded, clipped to 0..255 (the saturating narrowings: VIPS_CLIP) and stored as bytes from `dst`.
 */
const vertical: WasmFunction = {
  name: 'vertical',
  params: ['i32', 'i32', 'i32', 'i32', 'i32'], // 0 p01, 1 p23, 2 weights, 3 bytes, 4 dst
  locals: ['v128', 'v128', 'v128', 'i32'], // 5 w01, 6 w23, 7 round, 8 end
  body: `
    local.get 2  v128.load align=16  local.set 5
    local.get 2  v128.load offset=16 align=16  local.set 6
    i32.const 2048  i32x4.splat  local.set 7
    local.get 0  local.get 3  i32.add  local.set 8
    ${whileBelow(
      0,
      8,
      `
        local.get 4                                 ;; where the 16 bytes go
        ${verticalGroup(0)}
        ${verticalGroup(16)}
        i16x8.narrow_i32x4_s
        ${verticalGroup(32)}
        ${verticalGroup(48)}
        i16x8.narrow_i32x4_s
        i8x16.narrow_i16x8_u
        v128.store
        ${advance(0, 64)}
        ${advance(1, 64)}
        ${advance(4, 16)}`,
    )}`,
};

/** opaque(ptr, bytes): 1 when every 4-byte pixel of `bytes` (a multiple of 16) has 255 in its fourth byte. */
const opaque: WasmFunction = {
  name: 'opaque',
  params: ['i32', 'i32'], // 0 ptr, 1 bytes
  results: ['i32'],
  locals: ['i32', 'v128', 'v128'], // 2 end, 3 and of all, 4 the alpha bytes' mask
  body: `
    local.get 0  local.get 1  i32.add  local.set 2
    v128.const 255 255 255 255 255 255 255 255 255 255 255 255 255 255 255 255  local.set 3
    v128.const 0 0 0 255 0 0 0 255 0 0 0 255 0 0 0 255  local.set 4
    ${whileBelow(
      0,
      2,
      `
        local.get 3  local.get 0  v128.load  v128.and  local.set 3
        ${advance(0, 16)}`,
    )}
    local.get 3  local.get 4  v128.and  local.get 4  i32x4.eq  i32x4.all_true`,
};

/**
 * pack3(src, dst, pixels): 4-byte pixels to 3-byte ones (RGBX to RGB), four at a time; up to 4
 * bytes past the last pixel are written (scratch).
 */
const pack3: WasmFunction = {
  name: 'pack3',
  params: ['i32', 'i32', 'i32'], // 0 src, 1 dst, 2 pixels
  locals: ['i32'], // 3 end
  body: `
    local.get 0  local.get 2  i32.const 2  i32.shl  i32.add  local.set 3
    ${whileBelow(
      0,
      3,
      `
        local.get 1
        local.get 0  v128.load  local.get 0  v128.load
        i8x16.shuffle 0 1 2 4 5 6 8 9 10 12 13 14 15 15 15 15
        v128.store
        ${advance(0, 16)}
        ${advance(1, 12)}`,
    )}`,
};

/**
 * filterUp(src, dst, rowBytes, rows): PNG scanlines with the Up filter (type 2: each byte minus
 * the byte above it, modulo 256) of `rows` rows of `rowBytes` from `src`, the row above the first
 * at `src - rowBytes`, each row its filter byte and then its bytes at `dst`; up to 15 bytes past
 * the last row are written (scratch), and read past the source's.
 */
const filterUp: WasmFunction = {
  name: 'filterUp',
  params: ['i32', 'i32', 'i32', 'i32'], // 0 src, 1 dst, 2 rowBytes, 3 rows
  locals: ['i32', 'i32'], // 4 offset in the row, 5 rows done
  body: `
    ${whileBelow(
      5,
      3,
      `
        local.get 1  i32.const 2  i32.store8
        ${advance(1, 1)}
        i32.const 0  local.set 4
        ${whileBelow(
          4,
          2,
          `
            local.get 1  local.get 4  i32.add
            local.get 0  local.get 4  i32.add  v128.load
            local.get 0  local.get 4  i32.add  local.get 2  i32.sub  v128.load
            i8x16.sub
            v128.store
            ${advance(4, 16)}`,
        )}
        local.get 0  local.get 2  i32.add  local.set 0
        local.get 1  local.get 2  i32.add  local.set 1
        ${advance(5, 1)}`,
    )}`,
};

/** The parts of the WebAssembly runtime used here (the project's TypeScript libs have no DOM types). */
interface WasmRuntime {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}

export interface EnlargeKernels {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  horizontal(src: number, columns: number, count: number, dst: number): void;
  interleave(a: number, b: number, dst: number, bytes: number): void;
  vertical(p01: number, p23: number, weights: number, bytes: number, dst: number): void;
  opaque(ptr: number, bytes: number): number;
  pack3(src: number, dst: number, pixels: number): void;
  filterUp(src: number, dst: number, rowBytes: number, rows: number): void;
}

let kernels: EnlargeKernels | null | undefined;

/** The kernels, compiled once; null where this runtime has no WebAssembly SIMD (the caller uses sharp). */
export function enlargeKernels(): EnlargeKernels | null {
  if (kernels !== undefined) return kernels;
  const wasm = (globalThis as { WebAssembly?: WasmRuntime }).WebAssembly;
  try {
    if (!wasm) throw new Error('no WebAssembly');
    const module = new wasm.Module(
      assembleModule([horizontal, interleave, vertical, opaque, pack3, filterUp], 64),
    );
    kernels = new wasm.Instance(module).exports as EnlargeKernels;
  } catch {
    kernels = null;
  }
  return kernels;
}
