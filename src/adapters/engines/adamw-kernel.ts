// AdamW's per-element update on float32 arrays in WebAssembly SIMD, four lanes at a time, every
// operation in float32 as torch's CPU kernel computes it. A plain JavaScript loop computes in
// float64 one element at a time and took about 10 ns an element (1.35 s of a 5.2 s full training
// step of SmolLM2-135M, measured 2026-11-29); this kernel streams each tensor through a small block
// of WebAssembly memory (copied in and out with TypedArray.set, in cache), so the update is
// memory-bound. The module is a few hundred bytes written here, not a file shipped or downloaded.
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

/** Unsigned LEB128, as the binary format writes indices, sizes and opcodes after a prefix. */
function leb(value: number): number[] {
  const bytes: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (value !== 0);
  return bytes;
}

/** A section: its id, then its length-prefixed contents. */
const section = (id: number, contents: number[]) => [id, ...leb(contents.length), ...contents];
/** A vector: its count, then its items. */
const vector = (items: number[][]) => [...leb(items.length), ...items.flat()];
const name = (text: string) => [...leb(text.length), ...[...text].map((c) => c.charCodeAt(0))];

const I32 = 0x7f;
const F32 = 0x7d;
const V128 = 0x7b;
// Core opcodes.
const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const I32_CONST = 0x41;
const I32_ADD = 0x6a;
const I32_LT_U = 0x49;
const I32_EQZ = 0x45;
const BR_IF = 0x0d;
const BLOCK_OP = 0x02;
const LOOP = 0x03;
const END = 0x0b;
const EMPTY = 0x40;
// SIMD opcodes (after the 0xfd prefix).
const simd = (op: number) => [0xfd, ...leb(op)];
const V128_LOAD = 0x00;
const V128_STORE = 0x0b;
const F32X4_SPLAT = 0x13;
const F32X4_SQRT = 0xe3;
const F32X4_ADD = 0xe4;
const F32X4_SUB = 0xe5;
const F32X4_MUL = 0xe6;
const F32X4_DIV = 0xe7;
/** A 16-byte-aligned load or store at the address on the stack plus `offset`. */
const memory = (op: number, offset: number) => [...simd(op), 4, ...leb(offset)];

/**
 * The module's bytes: memory (exported as `memory`, 4 pages) and `adamw(bytes: i32, clip, beta1,
 * 1 - beta1, beta2, 1 - beta2, decay, stepSize, inverseBc2, epsilon: f32)` over the first `bytes`
 * (a multiple of 16) of each block.
 */
function adamwModule(): Uint8Array {
  // Parameters: 0 bytes, 1 clip, 2 beta1, 3 c1, 4 beta2, 5 c2, 6 decay, 7 stepSize, 8 inverseBc2, 9 epsilon.
  // Locals: 10 the byte offset i; 11-19 the nine constants splatted; 20 g', 21 m, 22 v.
  const [I, CLIP, B1, C1, B2, C2, DECAY, STEP, IBC2, EPS, G, M, V] = [
    10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
  ];
  const get = (local: number) => [LOCAL_GET, local];
  const splats = [CLIP, B1, C1, B2, C2, DECAY, STEP, IBC2, EPS].flatMap((local, k) => [
    ...get(k + 1),
    ...simd(F32X4_SPLAT),
    LOCAL_SET,
    local,
  ]);
  const body = [
    ...splats,
    BLOCK_OP,
    EMPTY,
    ...get(0),
    I32_EQZ,
    BR_IF,
    0,
    LOOP,
    EMPTY,
    // g' = g * clip
    ...get(I),
    ...memory(V128_LOAD, OFFSET.g),
    ...get(CLIP),
    ...simd(F32X4_MUL),
    LOCAL_SET,
    G,
    // m = beta1 * m + c1 * g'
    ...get(I),
    ...get(B1),
    ...get(I),
    ...memory(V128_LOAD, OFFSET.m),
    ...simd(F32X4_MUL),
    ...get(C1),
    ...get(G),
    ...simd(F32X4_MUL),
    ...simd(F32X4_ADD),
    LOCAL_TEE,
    M,
    ...memory(V128_STORE, OFFSET.m),
    // v = beta2 * v + (c2 * g') * g'
    ...get(I),
    ...get(B2),
    ...get(I),
    ...memory(V128_LOAD, OFFSET.v),
    ...simd(F32X4_MUL),
    ...get(C2),
    ...get(G),
    ...simd(F32X4_MUL),
    ...get(G),
    ...simd(F32X4_MUL),
    ...simd(F32X4_ADD),
    LOCAL_TEE,
    V,
    ...memory(V128_STORE, OFFSET.v),
    // p = p * decay - (stepSize * m) / (sqrt(v) * inverseBc2 + epsilon)
    ...get(I),
    ...get(I),
    ...memory(V128_LOAD, OFFSET.p),
    ...get(DECAY),
    ...simd(F32X4_MUL),
    ...get(STEP),
    ...get(M),
    ...simd(F32X4_MUL),
    ...get(V),
    ...simd(F32X4_SQRT),
    ...get(IBC2),
    ...simd(F32X4_MUL),
    ...get(EPS),
    ...simd(F32X4_ADD),
    ...simd(F32X4_DIV),
    ...simd(F32X4_SUB),
    ...memory(V128_STORE, OFFSET.p),
    // i += 16; loop while i < bytes
    ...get(I),
    I32_CONST,
    16,
    I32_ADD,
    LOCAL_TEE,
    I,
    ...get(0),
    I32_LT_U,
    BR_IF,
    0,
    END,
    END,
    END,
  ];
  const locals = vector([
    [1, I32],
    [12, V128],
  ]);
  const code = [...locals, ...body];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vector([[0x60, ...vector([[I32], ...Array.from({ length: 9 }, () => [F32])]), 0]])),
    ...section(3, vector([[0]])),
    ...section(5, vector([[0x00, 4]])),
    ...section(
      7,
      vector([
        [...name('memory'), 0x02, 0],
        [...name('adamw'), 0x00, 0],
      ]),
    ),
    ...section(10, vector([[...leb(code.length), ...code]])),
  ]);
}

type AdamWKernel = (bytes: number, ...constants: number[]) => void;

/** The part of the WebAssembly global this file uses (the project's libraries do not declare it). */
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: {
    Module: new (bytes: Uint8Array) => object;
    Instance: new (module: object) => { exports: { memory: { buffer: ArrayBuffer }; adamw: AdamWKernel } };
  };
};

let kernel: { run: AdamWKernel; p: Float32Array; g: Float32Array; m: Float32Array; v: Float32Array } | null =
  null;

function loadKernel(): NonNullable<typeof kernel> {
  if (kernel) return kernel;
  const instance = new wasm.Instance(new wasm.Module(adamwModule()));
  const { buffer } = instance.exports.memory;
  kernel = {
    run: instance.exports.adamw,
    p: new Float32Array(buffer, OFFSET.p, BLOCK),
    g: new Float32Array(buffer, OFFSET.g, BLOCK),
    m: new Float32Array(buffer, OFFSET.m, BLOCK),
    v: new Float32Array(buffer, OFFSET.v, BLOCK),
  };
  return kernel;
}

/**
 * One AdamW step of one tensor: `p`, `m` and `v` updated in place from the gradient `g` (all the
 * same length), in float32 (see the file's head).
 */
export function adamwStep(
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  k: AdamWElementConstants,
): void {
  const block = loadKernel();
  const constants = [
    k.clip,
    k.beta1,
    1 - k.beta1,
    k.beta2,
    1 - k.beta2,
    k.decay,
    k.stepSize,
    k.inverseBc2,
    k.epsilon,
  ];
  for (let start = 0; start < p.length; start += BLOCK) {
    const end = Math.min(start + BLOCK, p.length);
    const length = end - start;
    block.p.set(p.subarray(start, end));
    block.g.set(g.subarray(start, end));
    block.m.set(m.subarray(start, end));
    block.v.set(v.subarray(start, end));
    // A block's last vector may run past `length` over stale values; only `length` elements go back.
    block.run(Math.ceil(length / 4) * 16, ...constants);
    p.set(block.p.subarray(0, length), start);
    m.set(block.m.subarray(0, length), start);
    v.set(block.v.subarray(0, length), start);
  }
}

/** `adamwStep` in JavaScript, each operation rounded to float32: the kernel's reference. */
export function adamwStepReference(
  p: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  k: AdamWElementConstants,
): void {
  const f = Math.fround;
  const [clip, beta1, c1, beta2, c2, decay, stepSize, inverseBc2, epsilon] = [
    k.clip,
    k.beta1,
    1 - k.beta1,
    k.beta2,
    1 - k.beta2,
    k.decay,
    k.stepSize,
    k.inverseBc2,
    k.epsilon,
  ].map(f) as [number, number, number, number, number, number, number, number, number];
  for (let i = 0; i < p.length; i++) {
    const gi = f(g[i]! * clip);
    const mi = f(f(beta1 * m[i]!) + f(c1 * gi));
    const vi = f(f(beta2 * v[i]!) + f(f(c2 * gi) * gi));
    m[i] = mi;
    v[i] = vi;
    p[i] = f(f(p[i]! * decay) - f(f(stepSize * mi) / f(f(f(Math.sqrt(vi)) * inverseBc2) + epsilon)));
  }
}
