import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { encodeOnnxModel, ONNX_FLOAT, ONNX_INT64, withConstantInputs } from './proto';

describe('the ONNX ModelProto encoder', () => {
  it('writes a model ONNX Runtime runs: initializers, symbolic dimensions, negative and list attributes', async () => {
    const bytes = encodeOnnxModel(
      {
        name: 'probe',
        nodes: [
          { opType: 'Add', inputs: ['x', 'bias'], outputs: ['sum'] },
          { opType: 'Transpose', inputs: ['sum'], outputs: ['turned'], attributes: { perm: [1, 0] } },
          { opType: 'Gather', inputs: ['turned', 'index'], outputs: ['y'], attributes: { axis: -1 } },
          {
            opType: 'LayerNormalization',
            inputs: ['x', 'gain', 'bias'],
            outputs: ['normed'],
            attributes: { axis: -1, epsilon: { float: 0.5 } },
          },
        ],
        initializers: [
          { name: 'bias', type: ONNX_FLOAT, dims: [3], values: [1, 2, 3] },
          { name: 'gain', type: ONNX_FLOAT, dims: [3], values: [1, 1, 1] },
          { name: 'index', type: ONNX_INT64, dims: [1], values: [-1] },
        ],
        inputs: [{ name: 'x', type: ONNX_FLOAT, dims: ['rows', 3] }],
        outputs: [
          { name: 'y', type: ONNX_FLOAT, dims: [3, 1] },
          { name: 'normed', type: ONNX_FLOAT, dims: ['rows', 3] },
        ],
      },
      17,
    );
    const session = await ort.InferenceSession.create(bytes);
    const out = await session.run({
      x: new ort.Tensor('float32', Float32Array.of(0, 0, 0, 10, 20, 30), [2, 3]),
    });
    // sum = [[1, 2, 3], [11, 22, 33]]; transposed, the last column is the second row.
    expect(Array.from(out.y!.data as Float32Array)).toEqual([11, 22, 33]);
    // Row [10, 20, 30]: variance 200/3, so (x - 20) / sqrt(200/3 + 0.5) + bias.
    const scale = Math.sqrt(200 / 3 + 0.5);
    expect(Array.from((out.normed!.data as Float32Array).slice(3)).map((v, i) => v - [1, 2, 3][i]!)).toEqual(
      [-10 / scale, 0, 10 / scale].map((v) => expect.closeTo(v, 5)),
    );
    await session.release();
  });
});

describe('withConstantInputs', () => {
  const graph = {
    name: 'affine',
    nodes: [
      { opType: 'MatMul', inputs: ['x', 'weight'], outputs: ['product'] },
      { opType: 'Add', inputs: ['product', 'bias'], outputs: ['y'] },
    ],
    initializers: [],
    inputs: [
      { name: 'x', type: ONNX_FLOAT, dims: ['rows', 2] },
      { name: 'weight', type: ONNX_FLOAT, dims: [2, 2] },
      { name: 'bias', type: ONNX_FLOAT, dims: [2] },
    ],
    outputs: [{ name: 'y', type: ONNX_FLOAT, dims: ['rows', 2] }],
  } as const;

  it('runs with the named inputs as constants, written from Float32Arrays at an offset', async () => {
    // Views into one buffer at non-zero offsets: the encoder writes each view's own bytes.
    const store = Float32Array.of(9, 9, 1, 2, 3, 4, 10, 20);
    const baked = withConstantInputs(graph, { weight: store.subarray(2, 6), bias: store.subarray(6) });
    expect(baked.inputs.map((i) => i.name)).toEqual(['x']);
    const session = await ort.InferenceSession.create(encodeOnnxModel(baked, 17));
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.of(1, 1, 0, 2), [2, 2]) });
    // [1, 1] W = [4, 6]; [0, 2] W = [6, 8]; plus [10, 20].
    expect(Array.from(out.y!.data as Float32Array)).toEqual([14, 26, 16, 28]);
    await session.release();
  });

  it('refuses a name that is not a fixed-shape float input, and a length that does not fit', () => {
    expect(() => withConstantInputs(graph, { x: new Float32Array(4) })).toThrow(
      /'x' is not a float input of fixed shape/,
    );
    expect(() => withConstantInputs(graph, { nope: new Float32Array(1) })).toThrow(/'nope'/);
    expect(() => withConstantInputs(graph, { weight: new Float32Array(3) })).toThrow(
      /holds 3 values; its shape \[2, 2\] takes 4/,
    );
  });
});

describe('encodeOnnxModel on a large graph', () => {
  it('encodes a graph of 200,000 nodes (more chunks than a call can take as arguments)', () => {
    const count = 200_000;
    const nodes = Array.from({ length: count }, (_, i) => ({
      opType: 'Identity',
      inputs: [i === 0 ? 'x' : `v${i - 1}`],
      outputs: [i === count - 1 ? 'y' : `v${i}`],
    }));
    const bytes = encodeOnnxModel(
      {
        name: 'chain',
        nodes,
        initializers: [],
        inputs: [{ name: 'x', type: ONNX_FLOAT, dims: [1] }],
        outputs: [{ name: 'y', type: ONNX_FLOAT, dims: [1] }],
      },
      17,
    );
    expect(bytes.length).toBeGreaterThan(count * 10);
  });
});
