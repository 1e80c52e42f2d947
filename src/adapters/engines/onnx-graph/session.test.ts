import { describe, expect, it } from 'vitest';
import { createOnnxSession, type OnnxRuntime } from './session';

/** An onnxruntime-node stand-in that records the session options it was given. */
function recordingRuntime(): { ort: OnnxRuntime; seen: Record<string, unknown>[] } {
  const seen: Record<string, unknown>[] = [];
  const ort = {
    listSupportedBackends: () => [{ name: 'cpu' }],
    InferenceSession: {
      create: async (_model: unknown, options: Record<string, unknown>) => {
        seen.push(options);
        return {};
      },
    },
  } as unknown as OnnxRuntime;
  return { ort, seen };
}

describe('createOnnxSession', () => {
  it('asks ONNX Runtime to let idle intra-op and inter-op threads sleep with spinning: false, and leaves its default otherwise', async () => {
    const { ort, seen } = recordingRuntime();
    await createOnnxSession(ort, new Uint8Array(1), { intraOpThreads: 2, sequential: true, spinning: false });
    await createOnnxSession(ort, new Uint8Array(1), { intraOpThreads: 2, sequential: true });
    expect(seen[0]).toMatchObject({
      intraOpNumThreads: 2,
      extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    });
    expect(seen[1]).toMatchObject({ intraOpNumThreads: 2, executionMode: 'sequential' });
    expect(seen[1]).not.toHaveProperty('extra');
  });

  it('turns the memory arena off with memoryArena: false, and leaves its default otherwise', async () => {
    const { ort, seen } = recordingRuntime();
    await createOnnxSession(ort, new Uint8Array(1), { memoryArena: false });
    await createOnnxSession(ort, new Uint8Array(1), { memoryArena: true });
    await createOnnxSession(ort, new Uint8Array(1));
    expect(seen[0]).toMatchObject({ enableCpuMemArena: false });
    expect(seen[1]).not.toHaveProperty('enableCpuMemArena');
    expect(seen[2]).not.toHaveProperty('enableCpuMemArena');
  });
});
