import { Worker } from 'node:worker_threads';
import type * as Ort from 'onnxruntime-node';
import { onnxRuntimeEntry } from './session';

// A second (third, ...) ONNX Runtime on a worker thread, for data-parallel training: onnxruntime-node
// runs a session on the calling thread (its `run` is synchronous inside a setImmediate), so two runs
// in one thread take turns; a worker's sessions run beside the main thread's. The worker holds its
// own sessions of the same graphs, the weights (sent again only when they change), and the
// activations a forward keeps for its backward, under a key, so they never cross the thread
// boundary. Its code is plain CommonJS evaluated in the worker (no build step, no loader), and it
// loads onnxruntime-node from the path this module resolves.

/** A tensor as it crosses the thread boundary. */
interface WireTensor {
  type: Ort.Tensor.Type;
  data: Ort.Tensor.DataType;
  dims: readonly number[];
}

/** One run on a lane's session. */
export interface LaneRun {
  session: string;
  feeds: Record<string, Ort.Tensor>;
  fetches: string[];
  /** Outputs kept in the worker under this key (not sent back), for a later run's `useKept`. */
  keep?: { key: string; names: readonly string[] };
  /** Feeds taken from (and then dropped from) what a run kept under this key. */
  useKept?: string;
}

/** What a lane's run sends back: the fetched outputs it did not keep, and the kept bytes. */
export interface LaneResult {
  outputs: Record<string, { data: Ort.Tensor.DataType; dims: readonly number[] }>;
  keptBytes: number;
}

export interface WorkerLane {
  /** Feeds every run gets where its session has such an input (the weights); sent once per change. */
  setStatic(feeds: Record<string, Ort.Tensor>): void;
  run(request: LaneRun): Promise<LaneResult>;
  /** Drops what a run kept under `key` (nothing when there is none). */
  drop(key: string): void;
  /** Drops everything runs kept (after an update that failed between a forward and its backward). */
  clear(): void;
  /** How many runs' kept outputs the worker holds. */
  held(): Promise<number>;
  dispose(): Promise<void>;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortEntry);
const sessions = {};
const kept = new Map();
let statics = {};
// A failed 'static' (the weights) fails every run after it: a run must never see old weights.
let staticError = null;
const tensor = (t) => new ort.Tensor(t.type, t.data, t.dims);
const post = (message, buffers) => {
  try { parentPort.postMessage(message, buffers); } catch { parentPort.postMessage(message); }
};
async function handle(m) {
  if (m.op === 'init') {
    for (const [name, bytes] of Object.entries(m.models))
      sessions[name] = await ort.InferenceSession.create(bytes, m.options);
    return {};
  }
  if (m.op === 'static') {
    try {
      statics = Object.fromEntries(Object.entries(m.feeds).map(([k, t]) => [k, tensor(t)]));
      staticError = null;
    } catch (error) {
      staticError = error;
    }
    return null;
  }
  if (m.op === 'drop') {
    kept.delete(m.key);
    return null;
  }
  if (m.op === 'clear') {
    kept.clear();
    return null;
  }
  if (m.op === 'held') return { held: kept.size };
  if (m.op === 'run') {
    if (staticError) throw new Error('the last weights sent could not be read: ' + (staticError.message || staticError));
    const session = sessions[m.session];
    const inputs = {};
    const given = Object.fromEntries(Object.entries(m.feeds).map(([k, t]) => [k, tensor(t)]));
    const old = m.useKept !== undefined ? kept.get(m.useKept) : undefined;
    if (m.useKept !== undefined) kept.delete(m.useKept);
    for (const name of session.inputNames) {
      const t = given[name] ?? (old && old[name]) ?? statics[name];
      if (t === undefined) throw new Error('no feed for input ' + name);
      inputs[name] = t;
    }
    const results = await session.run(inputs, m.fetches);
    let keptBytes = 0;
    const keepNames = new Set(m.keep ? m.keep.names : []);
    if (m.keep) {
      const held = {};
      for (const name of keepNames) {
        held[name] = results[name];
        keptBytes += results[name].data.byteLength;
      }
      kept.set(m.keep.key, held);
    }
    const outputs = {};
    const buffers = [];
    for (const name of m.fetches) {
      if (keepNames.has(name)) continue;
      const data = results[name].data;
      outputs[name] = { data, dims: results[name].dims };
      if (data.buffer && !buffers.includes(data.buffer)) buffers.push(data.buffer);
    }
    return { reply: { outputs, keptBytes }, buffers };
  }
  if (m.op === 'close') {
    for (const s of Object.values(sessions)) await s.release();
    kept.clear();
    return {};
  }
  throw new Error('unknown operation ' + m.op);
}
// One message at a time, in the order sent: a close never releases the sessions under a run.
let chain = Promise.resolve();
parentPort.on('message', (m) => {
  chain = chain.then(async () => {
    try {
      const done = await handle(m);
      if (m.id === undefined) return;
      if (done && done.reply) post({ id: m.id, ok: true, ...done.reply }, done.buffers);
      else post({ id: m.id, ok: true, ...(done || {}) });
    } catch (error) {
      if (m.id !== undefined)
        post({ id: m.id, ok: false, message: error && error.message ? error.message : String(error) });
    }
  });
});
`;

const wire = (t: Ort.Tensor): WireTensor => ({ type: t.type, data: t.data, dims: t.dims });
const wireAll = (feeds: Record<string, Ort.Tensor>) =>
  Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, wire(t)]));

/**
 * A worker thread with its own sessions of `models` (name -> ONNX bytes), made with
 * `sessionOptions` (plain data: see `onnxSessionOptions`). A failed run rejects with the worker's
 * message; a worker that dies rejects every pending run.
 */
export async function createWorkerLane(
  models: Record<string, Uint8Array>,
  sessionOptions: Ort.InferenceSession.SessionOptions,
  ortEntry: string = onnxRuntimeEntry(),
): Promise<WorkerLane> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ortEntry } });
  let nextId = 0;
  let dead: Error | null = null;
  const pending = new Map<
    number,
    { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }
  >();
  const failAll = (error: Error) => {
    dead ??= error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  // The worker holds the process open only while a call waits for it: an idle lane (a policy
  // never disposed) lets the process exit, a pending run keeps it alive until it answers.
  const holdWhilePending = () => (pending.size > 0 ? worker.ref() : worker.unref());
  worker.on('message', (m: { id: number; ok: boolean; message?: string }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    holdWhilePending();
    if (m.ok) p.resolve(m as unknown as Record<string, unknown>);
    else p.reject(new Error(`ONNX Runtime worker: ${m.message}`));
  });
  worker.on('error', (error) => failAll(error instanceof Error ? error : new Error(String(error))));
  worker.on('exit', (code) => failAll(new Error(`ONNX Runtime worker exited (code ${code})`)));
  const call = (message: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (dead) return Promise.reject(dead);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      holdWhilePending();
      worker.postMessage({ ...message, id });
    });
  };
  try {
    await call({ op: 'init', models, options: sessionOptions });
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return {
    setStatic(feeds) {
      if (!dead) worker.postMessage({ op: 'static', feeds: wireAll(feeds) });
    },
    async run(request) {
      const reply = await call({
        op: 'run',
        session: request.session,
        feeds: wireAll(request.feeds),
        fetches: request.fetches,
        ...(request.keep && { keep: request.keep }),
        ...(request.useKept !== undefined && { useKept: request.useKept }),
      });
      return { outputs: reply.outputs as LaneResult['outputs'], keptBytes: reply.keptBytes as number };
    },
    drop(key) {
      if (!dead) worker.postMessage({ op: 'drop', key });
    },
    clear() {
      if (!dead) worker.postMessage({ op: 'clear' });
    },
    async held() {
      return (await call({ op: 'held' })).held as number;
    },
    async dispose() {
      if (!dead) await call({ op: 'close' }).catch(() => undefined);
      dead ??= new Error('ONNX Runtime worker disposed');
      await worker.terminate();
    },
  };
}
