import * as tf from '@tensorflow/tfjs';

/**
 * tfjs-backend-wasm (4.x, batch_mat_mul_impl.cc) hands a BatchMatMul to XNNPACK only when it is
 * one untransposed 2-D product (batch 1 on both sides, no transposeA/transposeB); everything else,
 * attention's [rows, heads, T, T] products and tfjs's own gradient of every matMul (which uses the
 * transpose flags), runs a plain scalar loop at about 1 GFLOP/s, ten to twenty times slower. This
 * kernel keeps the XNNPACK case and rewrites the others into it: operands are transposed on the
 * host while they are copied out, and a batch becomes one 2-D product per batch entry (or a single
 * product when the right side is shared). Only the summation order changes, as between any two
 * matmul kernels.
 */

/** The parts of tfjs-backend-wasm's BackendWasm this kernel (and AdamW's fused step, adamw.ts) uses. */
export interface WasmBackend {
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array;
  disposeData(dataId: tf.DataId): boolean;
}

interface MatMulAttrs {
  transposeA: boolean;
  transposeB: boolean;
}

type KernelArgs = {
  inputs: { a: tf.TensorInfo; b: tf.TensorInfo };
  backend: WasmBackend;
  attrs: MatMulAttrs;
};
type KernelFunc = (args: KernelArgs) => tf.TensorInfo;

/** Multiply-adds per product under which a batch stays with the original loop (measured crossover ~8-16k). */
const MIN_BATCHED_PRODUCT = 16384;

const INSTALLED = Symbol.for('searcher-rl.tfjs.wasmBatchMatMul');

const sizeOf = (shape: readonly number[]) => shape.reduce((n, d) => n * d, 1);

/**
 * Registers this BatchMatMul kernel for tfjs's wasm backend in place of the backend's own (which
 * it keeps for the XNNPACK case). An explicit step, never done at import: it changes tfjs's global
 * kernel registry. `selectTfjsBackend` calls it when it picks `wasm`; call it yourself after
 * loading '@tensorflow/tfjs-backend-wasm' when you choose the backend with `tf.setBackend`.
 * Idempotent: once registered, later calls change nothing. Returns whether the kernel is in place
 * (false: the wasm backend's kernels are not registered, i.e. its package is not loaded).
 */
export function registerWasmMatmul(): boolean {
  const original = tf.getKernel('BatchMatMul', 'wasm');
  if (!original) return false;
  if ((original as unknown as Record<symbol, boolean>)[INSTALLED]) return true;
  const xnnpack = original.kernelFunc as unknown as KernelFunc;
  const config = {
    kernelName: 'BatchMatMul',
    backendName: 'wasm',
    setupFunc: original.setupFunc,
    kernelFunc: ((args: KernelArgs) => batchMatMul(args, xnnpack)) as unknown as tf.KernelFunc,
    [INSTALLED]: true,
  };
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel(config);
  return true;
}

function batchMatMul(args: KernelArgs, xnnpack: KernelFunc): tf.TensorInfo {
  const { inputs, backend, attrs } = args;
  const { a, b } = inputs;
  const { transposeA, transposeB } = attrs;
  const rankA = a.shape.length;
  const rankB = b.shape.length;
  const outerA = a.shape.slice(0, -2);
  const outerB = b.shape.slice(0, -2);
  const batchA = sizeOf(outerA);
  const batchB = sizeOf(outerB);
  const m = transposeA ? a.shape[rankA - 1]! : a.shape[rankA - 2]!;
  const k = transposeA ? a.shape[rankA - 2]! : a.shape[rankA - 1]!;
  const n = transposeB ? b.shape[rankB - 2]! : b.shape[rankB - 1]!;
  const kB = transposeB ? b.shape[rankB - 1]! : b.shape[rankB - 2]!;
  const sameOuter = outerA.length === outerB.length && outerA.every((d, i) => d === outerB[i]);
  const plainXnnpack = !transposeA && !transposeB && batchA === 1 && batchB === 1;
  // Below a few thousand multiply-adds per product (decoding's one-query attention: 1 x 32 x keys) the
  // per-product copies and XNNPACK operator set-up cost more than the scalar loop.
  const tinyBatched = Math.max(batchA, batchB) > 1 && m * n * k < MIN_BATCHED_PRODUCT;
  // Broadcasting across several outer dimensions, other dtypes, empty products and shape errors stay with the original.
  const supported =
    a.dtype === 'float32' &&
    b.dtype === 'float32' &&
    k === kB &&
    (sameOuter || batchA === 1 || batchB === 1) &&
    m * n * k > 0;
  if (plainXnnpack || tinyBatched || !supported) return xnnpack(args);
  const outOuter = batchA >= batchB ? outerA : outerB;
  const outShape = [...outOuter, m, n];
  const temporaries: tf.TensorInfo[] = [];
  const multiply = (left: tf.TensorInfo, right: tf.TensorInfo) =>
    xnnpack({ inputs: { a: left, b: right }, backend, attrs: { transposeA: false, transposeB: false } });
  try {
    if (batchB === 1 && !transposeA) {
      // A shared right side: the batch folds into the rows of one product.
      const right = transposeB ? copyMatrix(backend, b, 0, n, k, true, temporaries) : view(b, [1, k, n]);
      const out = multiply(view(a, [1, batchA * m, k]), right);
      return { ...out, shape: outShape };
    }
    const batch = Math.max(batchA, batchB);
    const out = backend.makeOutput([batch, m, n], 'float32');
    // Host transposes cost more than copies, so when op(A) op(B) needs a large transposed operand
    // (attention's gradients: P^T dO, dS^T Q over T x T scores) it is computed as (op(B)^T op(A)^T)^T.
    const directCost = (transposeA ? m * k : 0) + (transposeB ? k * n : 0);
    const swappedCost = (transposeB ? 0 : k * n) + (transposeA ? 0 : m * k) + m * n;
    const swapped = swappedCost < directCost;
    const left = swapped
      ? { x: b, batch: batchB, rows: n, cols: k, transpose: !transposeB }
      : { x: a, batch: batchA, rows: m, cols: k, transpose: transposeA };
    const right = swapped
      ? { x: a, batch: batchA, rows: k, cols: m, transpose: !transposeA }
      : { x: b, batch: batchB, rows: k, cols: n, transpose: transposeB };
    // A broadcast left side is copied (and transposed) once; XNNPACK caches packed weights by the right
    // side's tensor id, so every right side it sees is a fresh tensor.
    const sharedLeft =
      left.batch === 1
        ? left.transpose
          ? copyMatrix(backend, left.x, 0, left.cols, left.rows, true, temporaries)
          : view(left.x, [1, left.rows, left.cols])
        : null;
    for (let i = 0; i < batch; i++) {
      const perBatch: tf.TensorInfo[] = [];
      const leftMatrix =
        sharedLeft ??
        copyMatrix(
          backend,
          left.x,
          i,
          left.transpose ? left.cols : left.rows,
          left.transpose ? left.rows : left.cols,
          left.transpose,
          perBatch,
        );
      const rightMatrix = copyMatrix(
        backend,
        right.x,
        right.batch === 1 ? 0 : i,
        right.transpose ? right.cols : right.rows,
        right.transpose ? right.rows : right.cols,
        right.transpose,
        perBatch,
      );
      const product = multiply(leftMatrix, rightMatrix);
      const target = backend.typedArrayFromHeap(out).subarray(i * m * n, (i + 1) * m * n);
      if (swapped) transposeInto(backend.typedArrayFromHeap(product), target, n, m);
      else target.set(backend.typedArrayFromHeap(product));
      backend.disposeData(product.dataId);
      for (const t of perBatch) backend.disposeData(t.dataId);
    }
    return { ...out, shape: outShape };
  } finally {
    for (const t of temporaries) backend.disposeData(t.dataId);
  }
}

/** The same data seen as another shape (no copy; the kernel reshapes by data id). */
function view(x: tf.TensorInfo, shape: number[]): tf.TensorInfo {
  return { dataId: x.dataId, shape, dtype: x.dtype };
}

/**
 * Matrix `index` of `x` (stored [.., rows, cols]) as a new [1, rows, cols] tensor, or as
 * [1, cols, rows] when `transpose`; recorded in `owned` for the caller to dispose.
 */
function copyMatrix(
  backend: WasmBackend,
  x: tf.TensorInfo,
  index: number,
  rows: number,
  cols: number,
  transpose: boolean,
  owned: tf.TensorInfo[],
): tf.TensorInfo {
  const copy = backend.makeOutput(transpose ? [1, cols, rows] : [1, rows, cols], 'float32');
  owned.push(copy);
  // Views are taken after the allocation: growing the wasm heap detaches earlier ones.
  const source = backend.typedArrayFromHeap(x).subarray(index * rows * cols, (index + 1) * rows * cols);
  const target = backend.typedArrayFromHeap(copy);
  if (!transpose) {
    target.set(source);
    return copy;
  }
  transposeInto(source, target, rows, cols);
  return copy;
}

/** target (cols x rows) = source (rows x cols) transposed. */
function transposeInto(source: Float32Array, target: Float32Array, rows: number, cols: number): void {
  for (let r = 0; r < rows; r++) {
    const from = r * cols;
    for (let c = 0; c < cols; c++) target[c * rows + r] = source[from + c]!;
  }
}
