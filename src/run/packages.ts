import { ADAPTER_REGISTRY } from '../registry/adapters';
import type { RunConfig } from './config';

// The optional peer dependencies a command will load, listed from its configuration before it
// starts, so that one MissingDependencyError names them all (requireOptionalPackages). Types only
// here: this module is read before any of the packages it names is loaded.

/** What the run library's own modules import: the slide environment and the report (sharp), SQLite (libsql). */
export const RUN_LIBRARY_PACKAGES = ['sharp', 'libsql'] as const;

type Adapters = RunConfig['searcher']['adapters'];

/** The packages of the adapters a `searcher.adapters` section names (each definition's `packages`, from the adapter registry). */
export function adapterPackages(adapters: Partial<Adapters>): string[] {
  return ADAPTER_REGISTRY.packages(adapters);
}

/** The backends' packages (`auto` needs none of them: it takes the first that loads, down to cpu). */
const BACKEND_PACKAGES: Record<string, string[]> = {
  auto: [],
  cpu: [],
  wasm: ['@tensorflow/tfjs-backend-wasm'],
  tensorflow: ['@tensorflow/tfjs-node'],
  'tensorflow-gpu': ['@tensorflow/tfjs-node-gpu'],
};

/**
 * Every optional package a run of `config` loads: the run library's, the run's own tfjs policy
 * (its backend, ONNX Runtime for `onnx` rollouts or training), and the adapters it names.
 */
export function runPackages(config: RunConfig): string[] {
  const names: string[] = [...RUN_LIBRARY_PACKAGES];
  const policy = config.policy;
  if (policy && !config.searcher.adapters.policy) {
    names.push('@tensorflow/tfjs', ...(BACKEND_PACKAGES[policy.backend] ?? []));
    if (policy.rollouts === 'onnx' || policy.training === 'onnx') names.push('onnxruntime-node');
  }
  names.push(...adapterPackages(config.searcher.adapters));
  return [...new Set(names)];
}

/**
 * The packages of a curation command over a run folder run with `config`: the run library's,
 * the run's Generator and Judge (verify, distill --rewrite), SQLite (import), the run's policy
 * (loop).
 */
export function curationPackages(
  command: string,
  config: RunConfig,
  values: { rewrite?: unknown },
): string[] {
  const names: string[] = [...RUN_LIBRARY_PACKAGES];
  const { generator, judge, searchEngine, imageOps } = config.searcher.adapters;
  if (command === 'verify' || (command === 'distill' && values.rewrite === true) || command === 'loop')
    names.push(...adapterPackages({ generator, judge, searchEngine, imageOps }));
  if (command === 'loop') names.push(...runPackages(config));
  return [...new Set(names)];
}
