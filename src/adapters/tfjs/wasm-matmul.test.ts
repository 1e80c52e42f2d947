import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { createRandom } from '../../core/random';
import { selectTfjsBackend } from './backends';
import { registerWasmMatmul } from './wasm-matmul';

/** [shape of op(A), shape of op(B)] before the transpose flags are applied. */
const SHAPES: Array<[number[], number[]]> = [
  [
    [3, 5],
    [5, 4],
  ],
  [
    [2, 3, 5],
    [2, 5, 4],
  ],
  [
    [2, 3, 3, 5],
    [2, 3, 5, 4],
  ],
  [
    [2, 3, 5],
    [5, 4],
  ],
  [
    [3, 5],
    [2, 5, 4],
  ],
  [
    [1, 3, 5],
    [4, 5, 4],
  ],
  [
    [4, 3, 5],
    [1, 5, 4],
  ],
  // Large enough per product to leave the scalar loop, both ways round (the swapped form included).
  [
    [2, 2, 40, 40],
    [2, 2, 40, 12],
  ],
  [
    [2, 2, 12, 40],
    [2, 2, 40, 40],
  ],
  [
    [2, 2, 40, 12],
    [2, 2, 12, 40],
  ],
  [
    [96, 40],
    [40, 24],
  ],
];

function transposedShape(shape: number[], transpose: boolean): number[] {
  if (!transpose) return shape;
  const out = [...shape];
  [out[out.length - 1], out[out.length - 2]] = [shape[shape.length - 2]!, shape[shape.length - 1]!];
  return out;
}

describe('wasm BatchMatMul through XNNPACK', () => {
  it('equals the cpu backend for batched, broadcast and transposed products', async () => {
    await selectTfjsBackend('wasm');
    const random = createRandom(11);
    const draw = (shape: number[]) =>
      Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => random.nextFloat() - 0.5);
    for (const [opA, opB] of SHAPES) {
      for (const transposeA of [false, true]) {
        for (const transposeB of [false, true]) {
          const shapeA = transposedShape(opA, transposeA);
          const shapeB = transposedShape(opB, transposeB);
          const a = draw(shapeA);
          const b = draw(shapeB);
          const product = async (backend: string) => {
            await tf.setBackend(backend);
            return tf.tidy(() => {
              const y = tf.matMul(tf.tensor(a, shapeA), tf.tensor(b, shapeB), transposeA, transposeB);
              return { shape: y.shape, values: Array.from(y.dataSync()) };
            });
          };
          const wasm = await product('wasm');
          const cpu = await product('cpu');
          expect(wasm.shape).toEqual(cpu.shape);
          wasm.values.forEach((v, i) => expect(Math.abs(v - cpu.values[i]!)).toBeLessThan(1e-5));
        }
      }
    }
    await tf.setBackend('wasm');
  });

  it('is registered by selecting wasm, once: registering again changes nothing', async () => {
    await selectTfjsBackend('wasm');
    const registered = tf.getKernel('BatchMatMul', 'wasm');
    expect(registerWasmMatmul()).toBe(true);
    expect(registerWasmMatmul()).toBe(true);
    expect(tf.getKernel('BatchMatMul', 'wasm')).toBe(registered);
  });

  it('still rejects products whose inner sizes differ', async () => {
    await selectTfjsBackend('wasm');
    expect(() => tf.matMul(tf.zeros([2, 2, 40, 12]), tf.zeros([2, 2, 40, 40]))).toThrow(/inner shapes/);
  });
});
