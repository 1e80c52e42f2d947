import { InvalidArgumentError, PortOutputError } from '../core/errors';
import { firstNonFinite, float32Values, parameterAt } from '../core/finite-values';
import type { PolicyCheckpoint } from '../ports/policy-backend';
import type { Store } from '../ports/store';
import { decodeSafetensors, float32Of } from '../provider-utils/safetensors';

/**
 * Checkpoints in a run folder: each store run (a trainer phase, the SFT warm start) keeps its own
 * under `checkpoints/step-NNNNNNNN/` (`policy/` blobs and `state.json`), committed by a
 * `checkpoint` record with SHA-256 checksums. The one module that reads and writes them.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function checkpointKey(step: number): string {
  return `checkpoints/step-${String(step).padStart(8, '0')}`;
}

/**
 * Writes a policy checkpoint into a Store run: the policy's blobs under `{key}/policy/`, then
 * `{key}/state.json` (the caller's state plus the policy's format and metadata), then the
 * `checkpoint` record that commits it (a crash before the record leaves the previous one latest).
 */
export async function writePolicyCheckpoint(
  store: Store,
  runId: string,
  step: number,
  checkpoint: PolicyCheckpoint,
  state: Record<string, unknown> = {},
  signal?: AbortSignal,
): Promise<string> {
  const key = checkpointKey(step);
  const options = signal ? { signal } : {};
  const blobNames = Object.keys(checkpoint.blobs);
  const checksums: Record<string, string> = {};
  for (const name of blobNames) {
    checksums[name] = await sha256(checkpoint.blobs[name]!);
    await store.doPutBlob(runId, `${key}/policy/${name}`, checkpoint.blobs[name]!, options);
  }
  const stateBytes = encoder.encode(
    JSON.stringify({
      ...state,
      policy: {
        format: checkpoint.format,
        metadata: checkpoint.metadata,
        blobs: blobNames,
        sha256: checksums,
      },
    }),
  );
  await store.doPutBlob(runId, `${key}/state.json`, stateBytes, options);
  await store.doAppend(
    [
      {
        kind: 'checkpoint',
        runId,
        step,
        time: Date.now(),
        data: {
          key,
          policyFormat: checkpoint.format,
          stateSha256: await sha256(stateBytes),
          // What the checkpoint's files take (retention reports what it keeps).
          bytes: stateBytes.byteLength + blobNames.reduce((n, b) => n + checkpoint.blobs[b]!.byteLength, 0),
        },
      },
    ],
    options,
  );
  return key;
}

/** Hex SHA-256 through Web Crypto (global in Node 20 and browsers): checkpoints are verified on load. */
async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await globalThis.crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>),
  );
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The key of a Store run's latest committed checkpoint, or null. */
export async function latestCheckpointKey(store: Store, runId: string): Promise<string | null> {
  const records = await store.doQuery({ kind: 'checkpoint', runId });
  const last = records[records.length - 1];
  if (!last) return null;
  const key = (last.data as { key?: unknown } | null)?.key;
  if (typeof key !== 'string')
    throw new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: 'checkpoint.data.key',
      message: 'the latest checkpoint record has no key',
    });
  return key;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Reads what `writePolicyCheckpoint` wrote: the saved state and the policy checkpoint, verified.
 * The checkpoint record must carry the SHA-256 of `state.json`, and `state.json` one for every
 * blob: a deleted checksum is refused, not a reason to skip the check (checkpoints have carried
 * them since they were first written to run folders). Blobs named `*.f32` (little-endian float32,
 * every policy's weights and optimizer moments) must be whole float32 values, all finite: a
 * checksum only says the bytes are those written, and NaN or Infinity may have been written, or
 * the checksums recomputed. Each refusal is a typed error naming the file (`store.blobLocation`).
 */
export async function readPolicyCheckpoint(
  store: Store,
  runId: string,
  key: string,
): Promise<{ state: Record<string, unknown>; checkpoint: PolicyCheckpoint }> {
  const fileOf = (name: string) =>
    store.blobLocation?.(runId, `${key}/${name}`) ??
    `store '${store.provider}' blob '${runId}/${key}/${name}'`;
  const unusable = (name: string, message: string, cause?: unknown) =>
    new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: `${runId}/${key}/${name}`,
      message: `${fileOf(name)} ${message}`,
      cause,
    });
  const raw = await store.doGetBlob(runId, `${key}/state.json`);
  if (!raw)
    throw new InvalidArgumentError({
      argument: 'settings.resumeMode',
      message: `no checkpoint at '${runId}/${key}' (no ${fileOf('state.json')})`,
    });
  const committed = (await store.doQuery({ kind: 'checkpoint', runId }))
    .filter((r) => (r.data as { key?: unknown } | null)?.key === key)
    .pop();
  if (!committed)
    throw unusable(
      'state.json',
      'is not committed by a checkpoint record (a write cut off before its record, or a copied folder); resume from a committed checkpoint',
    );
  const expectedState = (committed.data as { stateSha256?: unknown }).stateSha256;
  const rejected =
    'it cannot be verified, so it is not loaded; resume from an earlier checkpoint or start the phase again';
  if (typeof expectedState !== 'string' || !SHA256_HEX.test(expectedState))
    throw unusable(
      'state.json',
      `has no checksum in its checkpoint record (stateSha256 deleted or altered): ${rejected}`,
    );
  const corrupt = (name: string) =>
    unusable(
      name,
      'does not match the checksum written with the checkpoint (a torn or altered file); resume from an earlier checkpoint',
    );
  if ((await sha256(raw)) !== expectedState) throw corrupt('state.json');
  let state: Record<string, unknown> & {
    policy?: { format?: unknown; metadata?: unknown; blobs?: unknown; sha256?: unknown };
  };
  try {
    state = JSON.parse(decoder.decode(raw)) as typeof state;
  } catch (error) {
    throw unusable('state.json', 'is not valid JSON', error);
  }
  const policy = typeof state === 'object' && state !== null ? state.policy : undefined;
  if (
    !policy ||
    typeof policy.format !== 'string' ||
    !Array.isArray(policy.blobs) ||
    !policy.blobs.every((name) => typeof name === 'string')
  ) {
    throw unusable('state.json', 'has no policy checkpoint (format, metadata, blobs)');
  }
  const names = policy.blobs as string[];
  const checksums = (
    typeof policy.sha256 === 'object' && policy.sha256 !== null ? policy.sha256 : {}
  ) as Record<string, unknown>;
  const metadata = (policy.metadata ?? {}) as Record<string, unknown>;
  const blobs: PolicyCheckpoint['blobs'] = {};
  const sources: Record<string, string> = {};
  for (const name of names) {
    const expected = checksums[name];
    if (typeof expected !== 'string' || !SHA256_HEX.test(expected))
      throw unusable(`policy/${name}`, `has no checksum in state.json (deleted or altered): ${rejected}`);
    const bytes = await store.doGetBlob(runId, `${key}/policy/${name}`);
    if (!bytes)
      throw new InvalidArgumentError({
        argument: 'settings.resumeMode',
        message: `checkpoint '${runId}/${key}' lacks the policy blob '${name}' (${fileOf(`policy/${name}`)})`,
      });
    if ((await sha256(bytes)) !== expected) throw corrupt(`policy/${name}`);
    const problem = name.endsWith('.f32')
      ? float32Problem(bytes, metadata)
      : name.endsWith('.safetensors')
        ? safetensorsProblem(bytes)
        : null;
    if (problem) throw unusable(`policy/${name}`, `${problem}; resume from an earlier checkpoint`);
    blobs[name] = bytes;
    sources[name] = fileOf(`policy/${name}`);
  }
  return {
    state,
    checkpoint: {
      format: policy.format,
      metadata,
      blobs,
      source: { state: fileOf('state.json'), blobs: sources },
    },
  };
}

/**
 * What is wrong with a float32 blob, or null: a length that is not whole values, or a value that is
 * NaN or infinite (named by parameter where the metadata lists them end to end, as the tfjs policy's does).
 */
function float32Problem(bytes: Uint8Array, metadata: Record<string, unknown>): string | null {
  if (bytes.byteLength % 4 !== 0)
    return `is ${bytes.byteLength} bytes, not a whole number of float32 values (cut short?)`;
  const bad = firstNonFinite(float32Values(bytes));
  if (!bad) return null;
  const listed = metadata.parameters;
  const parameters = Array.isArray(listed)
    ? listed.flatMap((p: { name?: unknown; shape?: unknown }) =>
        typeof p?.name === 'string' && Array.isArray(p.shape)
          ? [{ name: p.name, size: (p.shape as number[]).reduce((n, d) => n * d, 1) }]
          : [],
      )
    : [];
  const at = parameterAt(parameters, bad.index);
  return `holds ${bad.value} at float32 value ${bad.index}${at ? ` (parameter '${at.name}', element ${at.element})` : ''}: a checkpoint's weights and moments must be finite`;
}

/**
 * What is wrong with a safetensors blob (a Hugging Face checkpoint's weights, the optimizer's
 * moments), or null: a header or layout the format does not allow, or a floating-point tensor
 * holding NaN or an infinity (named by tensor and element).
 */
function safetensorsProblem(bytes: Uint8Array): string | null {
  let file: ReturnType<typeof decodeSafetensors>;
  try {
    file = decodeSafetensors(bytes, { argument: 'checkpoint' });
  } catch (error) {
    return (error as Error).message;
  }
  for (const [name, tensor] of file.tensors) {
    const values = float32Of(tensor);
    const bad = values && firstNonFinite(values);
    if (bad)
      return `holds ${bad.value} at tensor '${name}', element ${bad.index}: a checkpoint's weights and moments must be finite`;
  }
  return null;
}

/** The store run that holds the SFT warm start's checkpoint. */
export const SFT_RUN = 'sft';

/** The latest checkpoint of a store run (a trainer phase or the SFT warm start), or null. */
export async function readLatestCheckpoint(
  store: Store,
  runId: string,
): Promise<{ key: string; checkpoint: PolicyCheckpoint } | null> {
  const key = await latestCheckpointKey(store, runId);
  return key === null
    ? null
    : { key, checkpoint: (await readPolicyCheckpoint(store, runId, key)).checkpoint };
}

/** The latest checkpoint among store runs tried in order (the last phase first, then the warm start), or null. */
export async function readFirstCheckpoint(
  store: Store,
  runIds: readonly string[],
): Promise<{ runId: string; key: string; checkpoint: PolicyCheckpoint } | null> {
  for (const runId of runIds) {
    const found = await readLatestCheckpoint(store, runId);
    if (found) return { runId, ...found };
  }
  return null;
}

/** The vocabulary a tfjs checkpoint's tokenizer was built from (`null`: the protocol byte tokenizer). */
export function checkpointVocabulary(checkpoint: PolicyCheckpoint): string[] | null {
  const vocabulary = (checkpoint.metadata as { tokenizer?: { vocabulary?: unknown } }).tokenizer?.vocabulary;
  if (vocabulary === undefined) return null;
  if (!Array.isArray(vocabulary) || !vocabulary.every((w) => typeof w === 'string'))
    throw new InvalidArgumentError({
      argument: 'checkpoint.metadata.tokenizer.vocabulary',
      message: 'must be an array of words',
    });
  return vocabulary as string[];
}
