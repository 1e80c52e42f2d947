import * as tf from '@tensorflow/tfjs';
import { BackendUnavailableError } from '../../core/errors';
import { TFJS_BACKENDS, type TfjsBackendName } from './settings';
import { registerWasmMatmul } from './wasm-matmul';

export { TFJS_BACKENDS, type TfjsBackendName };

interface BackendEntry {
  name: TfjsBackendName;
  /** The name tfjs registers the backend under. */
  tfName: string;
  /** The package that provides it. */
  packageName: string;
  priority: number;
  hint: string;
}

const ENTRIES: readonly BackendEntry[] = [
  {
    name: 'tensorflow-gpu',
    tfName: 'tensorflow',
    packageName: '@tensorflow/tfjs-node-gpu',
    priority: 400,
    hint: 'npm install @tensorflow/tfjs-node-gpu (needs CUDA and cuDNN; its install downloads libtensorflow)',
  },
  {
    name: 'tensorflow',
    tfName: 'tensorflow',
    packageName: '@tensorflow/tfjs-node',
    priority: 300,
    hint: 'npm install @tensorflow/tfjs-node (its install downloads libtensorflow)',
  },
  {
    name: 'wasm',
    tfName: 'wasm',
    packageName: '@tensorflow/tfjs-backend-wasm',
    priority: 200,
    hint: 'npm install @tensorflow/tfjs-backend-wasm',
  },
  {
    name: 'cpu',
    tfName: 'cpu',
    packageName: '@tensorflow/tfjs',
    priority: 100,
    hint: 'part of @tensorflow/tfjs',
  },
];

/** Loads a backend's package (registering it with tfjs). Injectable for tests. */
export type BackendModuleLoader = (packageName: string) => Promise<unknown>;

const defaultLoader: BackendModuleLoader = (packageName) => import(packageName);

/** The backend `selectTfjsBackend` made active, and the ones it passed over with why. */
export interface SelectedBackend {
  name: TfjsBackendName;
  /** tfjs's own name for it (`tf.getBackend()`). */
  tfName: string;
  /** Higher-priority backends that were tried and why they were passed over (for `auto`). */
  skipped: Array<{ name: TfjsBackendName; reason: string }>;
}

async function tryBackend(entry: BackendEntry, load: BackendModuleLoader): Promise<string | null> {
  if (entry.name !== 'cpu') {
    try {
      await load(entry.packageName);
    } catch (error) {
      return `${entry.packageName} is not installed or failed to load (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); ${entry.hint}`;
    }
  }
  // A package that resolved its own copy of @tensorflow/tfjs registers with that copy, not ours.
  if (!tf.findBackendFactory(entry.tfName)) {
    return `${entry.packageName} loaded but registered no '${entry.tfName}' backend with this @tensorflow/tfjs (${tf.version_core}); install versions that match`;
  }
  // The kernel that sends batched and transposed matMuls to XNNPACK (wasm-matmul.ts): registered here, where wasm is chosen, not at import.
  if (entry.name === 'wasm') registerWasmMatmul();
  try {
    const ok = await tf.setBackend(entry.tfName);
    if (!ok) return `tfjs could not initialise the '${entry.tfName}' backend`;
    await tf.ready();
    return null;
  } catch (error) {
    return `initialising '${entry.tfName}' failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * Makes a TensorFlow.js backend the active one. `auto` tries tensorflow-gpu (tfjs-node-gpu),
 * tensorflow (tfjs-node), wasm, cpu in that order and keeps the first that initialises; a named
 * backend that cannot be used is a BackendUnavailableError saying what to install, and an unknown
 * name lists the known ones. tfjs has one active backend per process. Choosing `wasm` registers
 * the BatchMatMul kernel of wasm-matmul.ts (`registerWasmMatmul`) before the backend initialises.
 */
export async function selectTfjsBackend(
  requested: 'auto' | TfjsBackendName = 'auto',
  load: BackendModuleLoader = defaultLoader,
): Promise<SelectedBackend> {
  if (requested !== 'auto' && !TFJS_BACKENDS.includes(requested)) {
    throw new BackendUnavailableError({
      backend: String(requested),
      known: TFJS_BACKENDS,
      message: `unknown backend; use 'auto' or one of ${TFJS_BACKENDS.join(', ')}`,
    });
  }
  const candidates =
    requested === 'auto'
      ? [...ENTRIES].sort((a, b) => b.priority - a.priority)
      : ENTRIES.filter((e) => e.name === requested);
  const skipped: SelectedBackend['skipped'] = [];
  for (const entry of candidates) {
    const reason = await tryBackend(entry, load);
    if (reason === null) return { name: entry.name, tfName: entry.tfName, skipped };
    if (requested !== 'auto')
      throw new BackendUnavailableError({ backend: entry.name, known: TFJS_BACKENDS, message: reason });
    skipped.push({ name: entry.name, reason });
  }
  throw new BackendUnavailableError({
    backend: 'auto',
    known: TFJS_BACKENDS,
    message: `no TensorFlow.js backend could be initialised: ${skipped.map((s) => `${s.name}: ${s.reason}`).join('; ')}`,
  });
}

/** Switches back to a backend chosen earlier (another policy in the process may have switched away). */
export async function activateTfjsBackend(tfName: string): Promise<void> {
  if (tf.getBackend() === tfName) return;
  if (!(await tf.setBackend(tfName)))
    throw new BackendUnavailableError({
      backend: tfName,
      known: TFJS_BACKENDS,
      message: 'tfjs could not switch back to it',
    });
}
