import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type * as Ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { encodeOnnxModel, floatValueInfo } from './proto';
import { onnxRuntimeEntry, onnxSessionOptions } from './session';
import { createWorkerLane } from './worker-lane';

// y = (x + w) * x, with w a static feed (as the weights are) and y's input s kept for a second run.
const model = (
  nodes: { opType: string; inputs: string[]; outputs: string[] }[],
  inputs: string[],
  outputs: string[],
) =>
  encodeOnnxModel(
    {
      name: 'lane-test',
      nodes,
      initializers: [],
      inputs: inputs.map((n) => floatValueInfo(n, ['n'])),
      outputs: outputs.map((n) => floatValueInfo(n, ['n'])),
    },
    17,
  );
const run = promisify(execFile);
const first = model([{ opType: 'Add', inputs: ['x', 'w'], outputs: ['s'] }], ['x', 'w'], ['s']);
const second = model([{ opType: 'Mul', inputs: ['s', 'x'], outputs: ['y'] }], ['s', 'x'], ['y']);

async function tensors() {
  const real = (await import('onnxruntime-node')) as unknown as typeof Ort & { default?: typeof Ort };
  const ort = real.Tensor ? real : real.default!;
  return (values: number[]) => new ort.Tensor('float32', Float32Array.from(values), [values.length]);
}

describe('a worker lane (ONNX Runtime on a worker thread)', () => {
  it('runs with static feeds, keeps an output in the worker for a later run, and takes new statics', async () => {
    const tensor = await tensors();
    const lane = await createWorkerLane({ first, second }, onnxSessionOptions({ intraOpThreads: 1 }));
    try {
      lane.setStatic({ w: tensor([10, 20]) });
      const kept = await lane.run({
        session: 'first',
        feeds: { x: tensor([1, 2]) },
        fetches: ['s'],
        keep: { key: 'a', names: ['s'] },
      });
      expect(kept.outputs).toEqual({});
      expect(kept.keptBytes).toBe(8);
      expect(await lane.held()).toBe(1);
      const y = await lane.run({
        session: 'second',
        feeds: { x: tensor([3, 4]) },
        fetches: ['y'],
        useKept: 'a',
      });
      expect(Array.from(y.outputs.y!.data as Float32Array)).toEqual([33, 88]);
      // Used once: the kept value is gone.
      expect(await lane.held()).toBe(0);
      await expect(
        lane.run({ session: 'second', feeds: { x: tensor([3, 4]) }, fetches: ['y'], useKept: 'a' }),
      ).rejects.toThrow(/no feed for input s/);
      lane.setStatic({ w: tensor([0, 0]) });
      const s = await lane.run({ session: 'first', feeds: { x: tensor([5, 6]) }, fetches: ['s'] });
      expect(Array.from(s.outputs.s!.data as Float32Array)).toEqual([5, 6]);
    } finally {
      await lane.dispose();
    }
  });

  it('rejects a run ONNX Runtime refuses with its message, and every run after dispose', async () => {
    const tensor = await tensors();
    const lane = await createWorkerLane({ first }, onnxSessionOptions());
    lane.setStatic({ w: tensor([1, 2, 3]) });
    await expect(
      lane.run({ session: 'first', feeds: { x: tensor([1, 2]) }, fetches: ['s'] }),
    ).rejects.toThrow(/ONNX Runtime worker: .+/);
    // The lane survives a failed run.
    lane.setStatic({ w: tensor([1, 2]) });
    const s = await lane.run({ session: 'first', feeds: { x: tensor([1, 2]) }, fetches: ['s'] });
    expect(Array.from(s.outputs.s!.data as Float32Array)).toEqual([2, 4]);
    await lane.dispose();
    await expect(
      lane.run({ session: 'first', feeds: { x: tensor([1, 2]) }, fetches: ['s'] }),
    ).rejects.toThrow(/disposed|exited/);
  });

  it('drops what runs kept by key, or all of it', async () => {
    const tensor = await tensors();
    const lane = await createWorkerLane({ first }, onnxSessionOptions());
    try {
      lane.setStatic({ w: tensor([1]) });
      for (const key of ['a', 'b', 'c'])
        await lane.run({
          session: 'first',
          feeds: { x: tensor([1]) },
          fetches: ['s'],
          keep: { key, names: ['s'] },
        });
      expect(await lane.held()).toBe(3);
      lane.drop('b');
      expect(await lane.held()).toBe(2);
      lane.clear();
      expect(await lane.held()).toBe(0);
    } finally {
      await lane.dispose();
    }
  });

  it('lets the process exit when a lane was never disposed, and keeps it alive while a run is pending', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-lane-'));
    try {
      const script = join(dir, 'undisposed.mts');
      await writeFile(
        script,
        [
          `import { createWorkerLane } from ${JSON.stringify(join(import.meta.dirname, 'worker-lane.ts'))};`,
          `import { encodeOnnxModel, floatValueInfo } from ${JSON.stringify(join(import.meta.dirname, 'proto.ts'))};`,
          `import ort from ${JSON.stringify(onnxRuntimeEntry())};`,
          "const model = encodeOnnxModel({ name: 'm', nodes: [{ opType: 'Add', inputs: ['x', 'w'], outputs: ['s'] }], initializers: [], inputs: [floatValueInfo('x', ['n']), floatValueInfo('w', ['n'])], outputs: [floatValueInfo('s', ['n'])] }, 17);",
          'const lane = await createWorkerLane({ m: model }, {});',
          "lane.setStatic({ w: new ort.Tensor('float32', Float32Array.of(2), [1]) });",
          // Not awaited: the pending run alone must keep the process alive until it answers.
          "lane.run({ session: 'm', feeds: { x: new ort.Tensor('float32', Float32Array.of(40), [1]) }, fetches: ['s'] }).then((r) => console.log('answer', r.outputs.s.data[0]));",
        ].join('\n'),
      );
      const { stdout } = await run(process.execPath, ['--import', 'tsx', script], {
        cwd: join(import.meta.dirname, '../../../..'),
        timeout: 60_000,
      });
      expect(stdout.trim()).toBe('answer 42');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('refuses a model the worker cannot load', async () => {
    await expect(
      createWorkerLane({ broken: new Uint8Array([1, 2, 3]) }, onnxSessionOptions()),
    ).rejects.toThrow(/ONNX Runtime worker/);
  });
});
