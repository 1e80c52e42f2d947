import { assembleModule } from '../../provider-utils/wasm-assemble';

// AdamW's per-element update on float32 arrays in WebAssembly SIMD, four lanes at a time, every
// operation in float32 (torch's CPU update is float32 too; its lerp_ and addcmul_ order the
// operations differently, so the last bit can differ). A plain JavaScript loop computes in
// float64 one element at a time and took about 10 ns an element (1.35 s of a 5.2 s full training
// step of SmolLM2-135M, measured 2026-11-29); this kernel streams each tensor through a small block
// of WebAssembly memory (copied in and out with TypedArray.set, in cache), so the update is
// memory-bound. The module is a few hundred bytes assembled here (provider-utils/wasm-assemble.ts),
// not a file shipped or downloaded.
//
// The arithmetic, per element (clip, the betas' complements, decay, stepSize and 1/sqrt(bc2) are
// float32 constants of the step):
//   g' = g * clip;  m = beta1 * m + (1 - beta1) * g';  v = beta2 * v + ((1 - beta2) * g') * g'
//   p = p * decay - (stepSize * m) / (sqrt(v) * inverseBc2 + epsilon)
// `adamwStepReference` is the same in JavaScript with Math.fround after every operation: IEEE
// float32 results are correctly rounded, so the two agree to the bit (tested).

/** One step's constants (JavaScript numbers; the kernel rounds them to float32). */
export interface AdamWElementConstants {
  clip: number;
  beta1: number;
  beta2: number;
  /** 1 - learningRate * weightDecay, or 1 where the tensor takes no decay. */
  decay: number;
  /** learningRate / (1 - beta1^t). */
  stepSize: number;
  /** 1 / sqrt(1 - beta2^t). */
  inverseBc2: number;
  epsilon: number;
}

/** Elements of each array a kernel call works on (4 arrays x 64 KiB: 4 WebAssembly pages, L2-resident). */
const BLOCK = 16384;
const BLOCK_BYTES = BLOCK * 4;
const OFFSET = { p: 0, g: BLOCK_BYTES, m: 2 * BLOCK_BYTES, v: 3 * BLOCK_BYTES };

/**
 * The module (provider-utils/wasm-assemble.ts): memory (exported as `memory`, 4 pages) and two
 * functions over the first `bytes` (a multiple of 16) of each block, with the same parameters
 * `(bytes: i32, clip, beta1, 1 - beta1, beta2, 1 - beta2, decay, stepSize, bc2, epsilon: f32)`:
 * `adamw` (torch's order; bc2 is 1/sqrt(1 - beta2^t), multiplied) and `adamw_tfjs` (the order of
 * tfjs's AdamW operations, adapters/tfjs/adamw.ts; bc2 is sqrt(1 - beta2^t), divided).
 */
function adamwModule(): Uint8Array {
  // Parameters: 0 bytes, 1-9 the constants. Locals: 10 the byte offset i; 11-19 the nine constants
  // splatted to four lanes (clip, beta1, c1, beta2, c2, decay, stepSize, bc2, epsilon);
  // 20 g', 21 m, 22 v.
  const splats = Array.from({ length: 9 }, (_, k) => `local.get ${k + 1} f32x4.splat local.set ${k + 11}`);
  /** The loop over the blocks, given the two parts the orders differ in (m's products commute). */
  const body = (vTerm: string, pUpdate: string) => `
    ${splats.join('\n')}
    block
      local.get 0 i32.eqz br_if 0
      loop
        ;; g' = g * clip
        local.get 10 v128.load offset=${OFFSET.g} align=16 local.get 11 f32x4.mul local.set 20
        ;; m = beta1 * m + c1 * g'
        local.get 10
        local.get 12 local.get 10 v128.load offset=${OFFSET.m} align=16 f32x4.mul
        local.get 13 local.get 20 f32x4.mul f32x4.add
        local.tee 21 v128.store offset=${OFFSET.m} align=16
        ;; v = beta2 * v + vTerm
        local.get 10
        local.get 14 local.get 10 v128.load offset=${OFFSET.v} align=16 f32x4.mul
        ${vTerm} f32x4.add
        local.tee 22 v128.store offset=${OFFSET.v} align=16
        ;; p = p * decay - pUpdate
        local.get 10
        local.get 10 v128.load offset=${OFFSET.p} align=16 local.get 16 f32x4.mul
        ${pUpdate}
        f32x4.sub
        v128.store offset=${OFFSET.p} align=16
        ;; i += 16, again while i < bytes
        local.get 10 i32.const 16 i32.add local.tee 10 local.get 0 i32.lt_u br_if 0
      end
    end`;
  const signature = () => ({
    params: ['i32' as const, ...Array.from({ length: 9 }, () => 'f32' as const)],
    locals: ['i32' as const, ...Array.from({ length: 12 }, () => 'v128' as const)],
  });
  return assembleModule(
    [
      {
        name: 'adamw',
        ...signature(),
        // (c2 * g') * g'; (stepSize * m) / (sqrt(v) * bc2 + epsilon)
        body: body(
          'local.get 15 local.get 20 f32x4.mul local.get 20 f32x4.mul',
          'local.get 17 local.get 21 f32x4.mul local.get 22 f32x4.sqrt local.get 18 f32x4.mul local.get 19 f32x4.add f32x4.div',
        ),
      },
      {
        name: 'adamw_tfjs',
        ...signature(),
        // (g' * g') * c2; (m / (sqrt(v) / bc2 + epsilon)) * stepSize
        body: body(
          'local.get 20 local.get 20 f32x4.mul local.get 15 f32x4.mul',
          'local.get 21 local.get 22 f32x4.sqrt local.get 18 f32x4.div local.get 19 f32x4.add f32x4.div local.get 17 f32x4.mul',
        ),
      },
    ],
    4,
  );
}

type AdamWKernel = (bytes: number, ...constants: number[]) => void;

/** The part of the WebAssembly global this file uses (the project's libraries do not declare it). */
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: {
    Module: new (bytes: Uint8Array) => object;
    Instance: new (
      module: object,
    ) => {
      exports: { memory: { buffer: ArrayBuffer }; adamw: AdamWKernel; adamw_tfjs: AdamWKernel };
    };
  };
};

let kernel: {
  run: AdamWKernel;
  runTfjs: AdamWKernel;
  p: Float32Array;
  g: Float32Array;
  m: Float32Array;
  v: Float32Array;
} | null = null;

function loadKernel(): NonNullable<typeof kernel> {
  if (kernel) return kernel;
  const instance = new wasm.Instance(new wasm.Module(adamwModule()));
  const { buffer } = instance.exports.memory;
  kernel = {
    run: instance.exports.adamw,
    runTfjs: instance.exports.adamw_tfjs,
    p: new Float32Array(buffer, OFFSET.p, BLOCK),
    g: new Float32Array(buffer, OFFSET.g, BLOCK),
    m: new Float32Array(buffer, OFFSET.m, BLOCK),
    v: new Float32Array(buffer, OFFSET.v, BLOCK),
  };
  return kernel;
}

/** One tensor's step: `p`, `m` and `v` updated in place from the gradient `g` (all the same length). */
export type AdamWElementStep = (
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  k: AdamWElementConstants,
) => void;

/** The kernel's nine constants, in its parameters' order (`bc2` as the order takes it). */
const kernelConstants = (k: Omit<AdamWElementConstants, 'inverseBc2'>, bc2: number) => [
  k.clip,
  k.beta1,
  1 - k.beta1,
  k.beta2,
  1 - k.beta2,
  k.decay,
  k.stepSize,
  bc2,
  k.epsilon,
];

/**
 * One AdamW step of one tensor: `p`, `m` and `v` updated in place from the gradient `g` (all the
 * same length), in float32 (see the file's head).
 */
export const adamwStep: AdamWElementStep = (p, g, m, v, k) => {
  const block = loadKernel();
  runBlocks(block.run, p, g, m, v, kernelConstants(k, k.inverseBc2));
};

/** Streams the four arrays through the kernel's blocks. */
function runBlocks(
  run: AdamWKernel,
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  constants: number[],
): void {
  const block = loadKernel();
  for (let start = 0; start < p.length; start += BLOCK) {
    const end = Math.min(start + BLOCK, p.length);
    const length = end - start;
    block.p.set(p.subarray(start, end));
    block.g.set(g.subarray(start, end));
    block.m.set(m.subarray(start, end));
    block.v.set(v.subarray(start, end));
    // A block's last vector may run past `length` over stale values; only `length` elements go back.
    run(Math.ceil(length / 4) * 16, ...constants);
    p.set(block.p.subarray(0, length), start);
    m.set(block.m.subarray(0, length), start);
    v.set(block.v.subarray(0, length), start);
  }
}

/**
 * A step in JavaScript, each operation rounded to float32: the kernels' reference, in torch's order
 * or tfjs's (the same float32 products in m; v and p differ, see adamwModule).
 */
function referenceStep(
  order: 'torch' | 'tfjs',
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  constants: number[],
): void {
  const f = Math.fround;
  const [clip, beta1, c1, beta2, c2, decay, stepSize, bc2, epsilon] = constants.map(f) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  for (let i = 0; i < p.length; i++) {
    const gi = f(g[i]! * clip);
    const mi = f(f(beta1 * m[i]!) + f(c1 * gi));
    const vi = f(f(beta2 * v[i]!) + (order === 'torch' ? f(f(c2 * gi) * gi) : f(f(gi * gi) * c2)));
    m[i] = mi;
    v[i] = vi;
    const root = f(Math.sqrt(vi));
    const update =
      order === 'torch'
        ? f(f(stepSize * mi) / f(f(root * bc2) + epsilon))
        : f(f(mi / f(f(root / bc2) + epsilon)) * stepSize);
    p[i] = f(f(p[i]! * decay) - update);
  }
}

/** `adamwStep` in JavaScript, each operation rounded to float32: the kernel's reference. */
export const adamwStepReference: AdamWElementStep = (p, g, m, v, k) =>
  referenceStep('torch', p, g, m, v, kernelConstants(k, k.inverseBc2));

/** The constants of a step in tfjs's order: sqrt(1 - beta2^t) divides, as tfjs's AdamW does. */
export interface AdamWTfjsConstants extends Omit<AdamWElementConstants, 'inverseBc2'> {
  /** sqrt(1 - beta2^t). */
  sqrtBc2: number;
}

/**
 * One AdamW step of one tensor in the order of tfjs's operations (adapters/tfjs/adamw.ts), each
 * rounded to float32 as a tfjs backend's op is: the same bits as those operations, in one pass
 * instead of a dozen kernel calls a tensor.
 */
export function adamwStepTfjsOrder(
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  k: AdamWTfjsConstants,
): void {
  runBlocks(loadKernel().runTfjs, p, g, m, v, kernelConstants(k, k.sqrtBc2));
}

/** `adamwStepTfjsOrder` in JavaScript, each operation rounded to float32: its reference. */
export function adamwStepTfjsOrderReference(
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  k: AdamWTfjsConstants,
): void {
  referenceStep('tfjs', p, g, m, v, kernelConstants(k, k.sqrtBc2));
}
