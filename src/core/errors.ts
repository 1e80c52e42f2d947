/**
 * The error family of searcher-rl. Every error carries a `Symbol.for` brand so that
 * `isInstance` works across duplicated copies of the package (as in the openai SDK), and the
 * fields a caller needs to decide what to do: which argument, row or field was wrong, which
 * provider failed and whether a retry can help.
 */

import { redactCause, redactSecretsIn } from './secrets';

const BRAND = Symbol.for('searcher-rl.error');

/** The `code` of each error class: a stable string to branch on without `instanceof`. */
export type ErrorCode =
  | 'invalid_argument'
  | 'dataset_validation'
  | 'config_validation'
  | 'provider_call'
  | 'port_output'
  | 'backend_unavailable'
  | 'adapter_error'
  | 'missing_dependency'
  | 'rewards_missing'
  | 'model_layout'
  | 'not_trainable'
  | 'unsupported_port_version'
  | 'aborted';

/** The base of every error the SDK throws: `code` names the kind, subclasses carry what to act on. */
export class SearcherError extends Error {
  readonly [BRAND] = true;
  readonly code: ErrorCode;

  // No configured secret (src/core/secrets.ts) reaches a message, whatever it was built from (a
  // provider's error body, a judge's reply), nor the messages of the causes it keeps.
  constructor(args: { code: ErrorCode; message: string; cause?: unknown }) {
    super(
      redactSecretsIn(args.message),
      args.cause === undefined ? undefined : { cause: redactCause(args.cause) },
    );
    this.name = 'SearcherError';
    this.code = args.code;
  }

  /** True for any searcher-rl error from any copy of the package (by its `Symbol.for` brand). */
  static isInstance(error: unknown): error is SearcherError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** A function argument that cannot be used; `argument` names it (dotted path for nested fields). */
export class InvalidArgumentError extends SearcherError {
  readonly argument: string;

  constructor(args: { argument: string; message: string; cause?: unknown }) {
    super({
      code: 'invalid_argument',
      message: `Invalid argument '${args.argument}': ${args.message}`,
      cause: args.cause,
    });
    this.name = 'InvalidArgumentError';
    this.argument = args.argument;
  }

  /** True for an `InvalidArgumentError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is InvalidArgumentError {
    return SearcherError.isInstance(error) && error.code === 'invalid_argument';
  }
}

/** A data record (a prompt, a stored trajectory) that does not have the expected shape. */
export class DatasetValidationError extends SearcherError {
  /** Zero-based row (record) index, or -1 when the input is a single record. */
  readonly row: number;
  /** Dotted path of the offending field, e.g. `tokenSteps.3.logProb`. */
  readonly field: string;

  constructor(args: { row: number; field: string; message: string; cause?: unknown }) {
    const where = args.row >= 0 ? `row ${args.row}, field '${args.field}'` : `field '${args.field}'`;
    super({
      code: 'dataset_validation',
      message: `Invalid record at ${where}: ${args.message}`,
      cause: args.cause,
    });
    this.name = 'DatasetValidationError';
    this.row = args.row;
    this.field = args.field;
  }

  /** True for a `DatasetValidationError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is DatasetValidationError {
    return SearcherError.isInstance(error) && error.code === 'dataset_validation';
  }
}

/** A configuration that failed validation; `field` is the dotted path of the first problem. */
export class ConfigValidationError extends SearcherError {
  readonly field: string;
  readonly issues: ReadonlyArray<{ field: string; message: string }>;

  constructor({ issues }: { issues: ReadonlyArray<{ field: string; message: string }> }) {
    const first = issues[0] ?? { field: '(root)', message: 'invalid configuration' };
    // Every problem is listed: a typo'd key must not hide behind "and 1 more".
    const rest =
      issues.length > 1
        ? `; also:${issues
            .slice(1)
            .map((i) => `\n  '${i.field}': ${i.message}`)
            .join('')}`
        : '';
    super({
      code: 'config_validation',
      message: `Invalid configuration at '${first.field}': ${first.message}${rest}`,
    });
    this.name = 'ConfigValidationError';
    this.field = first.field;
    this.issues = issues;
  }

  /** True for a `ConfigValidationError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is ConfigValidationError {
    return SearcherError.isInstance(error) && error.code === 'config_validation';
  }
}

/** The ports a `ProviderCallError` or `PortOutputError` can name. */
export type PortName =
  | 'searchEngine'
  | 'generator'
  | 'judge'
  | 'policy'
  | 'store'
  | 'imageOps'
  | 'embedder'
  | 'icdScorer'
  | 'tracker';

/**
 * A call to a port's implementation failed (a remote provider, a local index, a file).
 * `isRetryable` follows the openai-node rules (408/409/429/5xx and connection errors).
 */
export class ProviderCallError extends SearcherError {
  readonly port: PortName;
  readonly provider: string;
  readonly status: number | undefined;
  readonly isRetryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(args: {
    port: PortName;
    provider: string;
    message: string;
    status?: number | undefined;
    isRetryable?: boolean | undefined;
    retryAfterMs?: number | undefined;
    cause?: unknown;
  }) {
    const status = args.status === undefined ? '' : ` (status ${args.status})`;
    super({
      code: 'provider_call',
      message: `${args.port} '${args.provider}' failed${status}: ${args.message}`,
      cause: args.cause,
    });
    this.name = 'ProviderCallError';
    this.port = args.port;
    this.provider = args.provider;
    this.status = args.status;
    this.isRetryable = args.isRetryable ?? isRetryableStatus(args.status);
    this.retryAfterMs = args.retryAfterMs;
  }

  /** True for a `ProviderCallError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is ProviderCallError {
    return SearcherError.isInstance(error) && error.code === 'provider_call';
  }
}

/**
 * A port answered, but with something the core cannot use (a judge score outside [0,1], a
 * search hit without a basename). Such an answer is a failed call, never a silent default.
 */
export class PortOutputError extends SearcherError {
  readonly port: PortName;
  readonly provider: string;
  readonly field: string;

  constructor(args: { port: PortName; provider: string; field: string; message: string; cause?: unknown }) {
    super({
      code: 'port_output',
      message: `${args.port} '${args.provider}' returned an unusable '${args.field}': ${args.message}`,
      cause: args.cause,
    });
    this.name = 'PortOutputError';
    this.port = args.port;
    this.provider = args.provider;
    this.field = args.field;
  }

  /** True for a `PortOutputError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is PortOutputError {
    return SearcherError.isInstance(error) && error.code === 'port_output';
  }
}

/**
 * An adapter threw an exception of its own (a TypeError in a user-written judge, a bug): a fault
 * in the adapter's code, not a provider's failure, so it is never retried. `errorName` is the
 * original error's class (`TypeError`); `cause` is the error itself.
 */
export class AdapterError extends SearcherError {
  readonly port: PortName;
  readonly provider: string;
  readonly errorName: string;
  /** Never: the same code would fail the same way again. */
  readonly isRetryable = false;

  constructor(args: { port: PortName; provider: string; error: unknown }) {
    const errorName = args.error instanceof Error ? args.error.name : typeof args.error;
    const message = args.error instanceof Error ? args.error.message : String(args.error);
    super({
      code: 'adapter_error',
      message: `${args.port} '${args.provider}' threw ${errorName}: ${message} (an error in the adapter's own code, not a provider failure)`,
      cause: args.error,
    });
    this.name = 'AdapterError';
    this.port = args.port;
    this.provider = args.provider;
    this.errorName = errorName;
  }

  /** True for an `AdapterError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is AdapterError {
    return SearcherError.isInstance(error) && error.code === 'adapter_error';
  }
}

/**
 * Too many of a training step's rewards could not be computed (by default: all of them), so the
 * trainer stopped instead of training on nothing; `causes` counts them by `stage:kind`.
 */
export class RewardsMissingError extends SearcherError {
  readonly step: number;
  readonly missing: number;
  readonly total: number;
  readonly causes: Readonly<Record<string, number>>;

  constructor(args: {
    step: number;
    missing: number;
    total: number;
    causes: Record<string, number>;
    examples: readonly string[];
  }) {
    const causes = Object.entries(args.causes)
      .sort((a, b) => b[1] - a[1])
      .map(([cause, n]) => `${cause} x${n}`)
      .join(', ');
    const first = args.examples.length > 0 ? `; first: ${args.examples.join(' | ')}` : '';
    super({
      code: 'rewards_missing',
      message: `step ${args.step}: ${args.missing} of ${args.total} rewards could not be computed (${causes})${first}. The step was not trained on; fix the cause and resume from the last checkpoint.`,
    });
    this.name = 'RewardsMissingError';
    this.step = args.step;
    this.missing = args.missing;
    this.total = args.total;
    this.causes = args.causes;
  }

  /** True for a `RewardsMissingError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is RewardsMissingError {
    return SearcherError.isInstance(error) && error.code === 'rewards_missing';
  }
}

/**
 * A subpath's optional peer dependencies are not installed (`searcher-rl/image` without `sharp`):
 * `packageNames` lists every one missing (`packageName` is the first), and the message gives the
 * one command that installs them all.
 */
export class MissingDependencyError extends SearcherError {
  readonly subpath: string;
  readonly packageName: string;
  readonly packageNames: readonly string[];

  constructor(
    args: { subpath: string; install: string; cause?: unknown } & (
      | { packageName: string }
      | { packageNames: readonly string[] }
    ),
  ) {
    const names = 'packageNames' in args ? [...args.packageNames] : [args.packageName];
    super({
      code: 'missing_dependency',
      message:
        names.length === 1
          ? `${args.subpath} needs the '${names[0]}' package, which is not installed: ${args.install}`
          : `${args.subpath} needs the packages ${names.map((n) => `'${n}'`).join(', ')}, which are not installed: ${args.install}`,
      cause: args.cause,
    });
    this.name = 'MissingDependencyError';
    this.subpath = args.subpath;
    this.packageName = names[0] ?? '';
    this.packageNames = names;
  }

  /** True for a `MissingDependencyError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is MissingDependencyError {
    return SearcherError.isInstance(error) && error.code === 'missing_dependency';
  }
}

/** The caller's AbortSignal fired. */
export class AbortedError extends SearcherError {
  constructor(args: { what: string; cause?: unknown }) {
    super({ code: 'aborted', message: `${args.what} was aborted`, cause: args.cause });
    this.name = 'AbortedError';
  }

  /** True for an `AbortedError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is AbortedError {
    return SearcherError.isInstance(error) && error.code === 'aborted';
  }
}

/**
 * A compute backend (tfjs-node-gpu, tfjs-node, wasm, cpu, an ONNX execution provider) that was
 * named but cannot be used here: `backend` names it, `known` lists every backend name the adapter
 * knows, and the message says what to install.
 */
export class BackendUnavailableError extends SearcherError {
  readonly backend: string;
  readonly known: readonly string[];

  constructor(args: { backend: string; known: readonly string[]; message: string; cause?: unknown }) {
    super({
      code: 'backend_unavailable',
      message: `Backend '${args.backend}' is unavailable: ${args.message}`,
      cause: args.cause,
    });
    this.name = 'BackendUnavailableError';
    this.backend = args.backend;
    this.known = args.known;
  }

  /** True for a `BackendUnavailableError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is BackendUnavailableError {
    return SearcherError.isInstance(error) && error.code === 'backend_unavailable';
  }
}

/**
 * A model file whose graph does not have the layout an adapter reads (an ONNX export whose inputs
 * or outputs differ from Hugging Face Optimum's causal-LM layout): `mismatches` lists each
 * difference (a missing or unexpected input, a wrong rank or element type).
 */
export class ModelLayoutError extends SearcherError {
  readonly model: string;
  readonly mismatches: readonly string[];

  constructor(args: { model: string; mismatches: readonly string[]; hint: string; cause?: unknown }) {
    const { model, mismatches, hint } = args;
    super({
      code: 'model_layout',
      message: `'${model}' does not have the expected layout (${mismatches.length} mismatch${mismatches.length === 1 ? '' : 'es'}):\n${mismatches.map((m) => `  - ${m}`).join('\n')}\n${hint}`,
      cause: args.cause,
    });
    this.name = 'ModelLayoutError';
    this.model = model;
    this.mismatches = mismatches;
  }

  /** True for a `ModelLayoutError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is ModelLayoutError {
    return SearcherError.isInstance(error) && error.code === 'model_layout';
  }
}

/** A rollouts-only policy backend (ONNX Runtime, a remote server) was asked to train: `operation` names the call. */
export class NotTrainableError extends SearcherError {
  readonly provider: string;
  readonly operation: string;

  constructor(args: { provider: string; operation: string; message: string }) {
    super({
      code: 'not_trainable',
      message: `The '${args.provider}' policy does not train (${args.operation}): ${args.message}`,
    });
    this.name = 'NotTrainableError';
    this.provider = args.provider;
    this.operation = args.operation;
  }

  /** True for a `NotTrainableError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is NotTrainableError {
    return SearcherError.isInstance(error) && error.code === 'not_trainable';
  }
}

/**
 * An adapter implements a version of its port's specification that this core does not support
 * (as vercel/ai's UnsupportedModelVersionError): `version` is what it declares
 * (`specificationVersion`, 'undefined' when it declares none), `supported` the versions the core
 * calls. Refused when the port is given to the SDK, before any call.
 */
export class UnsupportedPortVersionError extends SearcherError {
  readonly port: PortName;
  readonly provider: string;
  readonly version: string;
  readonly supported: readonly string[];

  constructor(args: { port: PortName; provider: string; version: string; supported: readonly string[] }) {
    const supported = args.supported.map((v) => `'${v}'`).join(', ');
    super({
      code: 'unsupported_port_version',
      message: `${args.port} '${args.provider}' implements specification version '${args.version}', which this searcher-rl does not support (supported: ${supported}). Use an adapter written for ${supported}, or a searcher-rl release that supports '${args.version}'.`,
    });
    this.name = 'UnsupportedPortVersionError';
    this.port = args.port;
    this.provider = args.provider;
    this.version = args.version;
    this.supported = args.supported;
  }

  /** True for a `UnsupportedPortVersionError` from any copy of the package (by brand and code). */
  static override isInstance(error: unknown): error is UnsupportedPortVersionError {
    return SearcherError.isInstance(error) && error.code === 'unsupported_port_version';
  }
}

/** 408, 409, 429 and 5xx are worth retrying; so is a connection failure (no status). */
export function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new AbortedError({ what, cause: signal.reason });
}
