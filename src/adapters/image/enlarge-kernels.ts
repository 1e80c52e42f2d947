import { assembleModule, type WasmFunction } from './wasm-assemble';

/**
 * The two passes of the bicubic enlargement (`libvips-enlarge.ts`) as WebAssembly SIMD kernels over
 * 4-byte pixels (RGBA, or RGB with a spare byte), in libvips' fixed point: weights scaled by 4096,
 * each sum rounded by adding 2048 and shifting right by 12 (arithmetic), as `unsigned_fixed_round`.
 */

/**
 * horizontal(src, columns, count, dst): for each of `count` output pixels x, with `columns[x]` =
 * (tap, weights) two i32: the four source pixels at `src + tap` (consecutive: the row is extended
 * at both ends) weighted by the 32 bytes at `weights` (i16 lanes [w0 x4, w1 x4] then [w2 x4,
 * w3 x4]) into four i32 lanes at `dst + 16x`.
 */
const horizontal: WasmFunction = {
  name: 'horizontal',
  params: ['i32', 'i32', 'i32', 'i32'], // 0 src, 1 columns, 2 count, 3 dst
  locals: ['i32', 'i32', 'v128', 'v128', 'v128', 'v128'], // 4 end, 5 weights, 6 pixels, 7 low, 8 high, 9 round
  body: `
    i32.const 2048  i32x4.splat  local.set 9
    local.get 3  local.get 2  i32.const 4  i32.shl  i32.add  local.set 4
    block
      loop
        local.get 3  local.get 4  i32.ge_u  br_if 1
        local.get 1  i32.load offset=4 align=4  local.set 5
        local.get 3                                 ;; where the pixel's four lanes go
        local.get 0  local.get 1  i32.load align=4  i32.add
        v128.load  local.tee 6                      ;; the four source pixels, 16 bytes
        i16x8.extend_low_i8x16_u  local.set 7       ;; pixels 0 and 1 as i16 lanes
        local.get 6  i16x8.extend_high_i8x16_u  local.set 8
        local.get 7  local.get 5  v128.load align=16  i32x4.extmul_low_i16x8_s
        local.get 7  local.get 5  v128.load align=16  i32x4.extmul_high_i16x8_s  i32x4.add
        local.get 8  local.get 5  v128.load offset=16 align=16  i32x4.extmul_low_i16x8_s  i32x4.add
        local.get 8  local.get 5  v128.load offset=16 align=16  i32x4.extmul_high_i16x8_s  i32x4.add
        local.get 9  i32x4.add  i32.const 12  i32x4.shr_s
        v128.store align=16
        local.get 1  i32.const 8  i32.add  local.set 1
        local.get 3  i32.const 16  i32.add  local.set 3
        br 0
      end
    end`,
};

/** One i32x4 group of the vertical pass: the four rows' lanes at byte offset `offset`, weighted and rounded. */
const verticalGroup = (offset: number) => `
        local.get 0  v128.load offset=${offset} align=16  local.get 10  i32x4.mul
        local.get 1  v128.load offset=${offset} align=16  local.get 11  i32x4.mul  i32x4.add
        local.get 2  v128.load offset=${offset} align=16  local.get 12  i32x4.mul  i32x4.add
        local.get 3  v128.load offset=${offset} align=16  local.get 13  i32x4.mul  i32x4.add
        local.get 14  i32x4.add  i32.const 12  i32x4.shr_s`;

/**
 * vertical(r0, r1, r2, r3, w0, w1, w2, w3, bytes, dst): for each i32 lane of four rows of the
 * horizontal pass (`bytes` of each, a multiple of 64), sum(w_k * r_k[lane]) rounded, clipped to
 * 0..255 (the saturating narrowings: VIPS_CLIP) and stored as bytes from `dst`.
 */
const vertical: WasmFunction = {
  name: 'vertical',
  // 0-3 row pointers, 4-7 weights, 8 bytes, 9 dst
  params: ['i32', 'i32', 'i32', 'i32', 'i32', 'i32', 'i32', 'i32', 'i32', 'i32'],
  locals: ['v128', 'v128', 'v128', 'v128', 'v128', 'i32'], // 10-13 weights splatted, 14 round, 15 end
  body: `
    local.get 4  i32x4.splat  local.set 10
    local.get 5  i32x4.splat  local.set 11
    local.get 6  i32x4.splat  local.set 12
    local.get 7  i32x4.splat  local.set 13
    i32.const 2048  i32x4.splat  local.set 14
    local.get 0  local.get 8  i32.add  local.set 15
    block
      loop
        local.get 0  local.get 15  i32.ge_u  br_if 1
        local.get 9                                 ;; where the 16 bytes go
        ${verticalGroup(0)}
        ${verticalGroup(16)}
        i16x8.narrow_i32x4_s
        ${verticalGroup(32)}
        ${verticalGroup(48)}
        i16x8.narrow_i32x4_s
        i8x16.narrow_i16x8_u
        v128.store
        local.get 0  i32.const 64  i32.add  local.set 0
        local.get 1  i32.const 64  i32.add  local.set 1
        local.get 2  i32.const 64  i32.add  local.set 2
        local.get 3  i32.const 64  i32.add  local.set 3
        local.get 9  i32.const 16  i32.add  local.set 9
        br 0
      end
    end`,
};

/** The parts of the WebAssembly runtime used here (the project's TypeScript libs have no DOM types). */
interface WasmRuntime {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}

export interface EnlargeKernels {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  horizontal(src: number, columns: number, count: number, dst: number): void;
  vertical(
    r0: number,
    r1: number,
    r2: number,
    r3: number,
    w0: number,
    w1: number,
    w2: number,
    w3: number,
    bytes: number,
    dst: number,
  ): void;
}

let kernels: EnlargeKernels | null | undefined;

/** The kernels, compiled once; null where this runtime has no WebAssembly SIMD (the caller uses sharp). */
export function enlargeKernels(): EnlargeKernels | null {
  if (kernels !== undefined) return kernels;
  const wasm = (globalThis as { WebAssembly?: WasmRuntime }).WebAssembly;
  try {
    if (!wasm) throw new Error('no WebAssembly');
    const module = new wasm.Module(assembleModule([horizontal, vertical], 64));
    kernels = new wasm.Instance(module).exports as EnlargeKernels;
  } catch {
    kernels = null;
  }
  return kernels;
}
