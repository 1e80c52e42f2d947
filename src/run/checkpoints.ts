import { InvalidArgumentError, PortOutputError } from '../core/errors';
import type { PolicyCheckpoint } from '../ports/policy-backend';
import type { Store } from '../ports/store';

/**
 * Checkpoints in a run folder: each store run (a trainer phase, the SFT warm start) keeps its own
 * under `checkpoints/step-NNNNNNNN/` (`policy/` blobs and `state.json`), committed by a
 * `checkpoint` record with SHA-256 checksums. The one module that reads and writes them.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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
        data: { key, policyFormat: checkpoint.format, stateSha256: await sha256(stateBytes) },
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
  const key = (last.data as { key?: unknown }).key;
  if (typeof key !== 'string')
    throw new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: 'checkpoint.data.key',
      message: 'the latest checkpoint record has no key',
    });
  return key;
}

/** Reads what `writePolicyCheckpoint` wrote: the saved state and the policy checkpoint. */
export async function readPolicyCheckpoint(
  store: Store,
  runId: string,
  key: string,
): Promise<{ state: Record<string, unknown>; checkpoint: PolicyCheckpoint }> {
  const raw = await store.doGetBlob(runId, `${key}/state.json`);
  if (!raw)
    throw new InvalidArgumentError({
      argument: 'settings.resumeMode',
      message: `no checkpoint at '${runId}/${key}' (no state.json)`,
    });
  const committed = (await store.doQuery({ kind: 'checkpoint', runId }))
    .filter((r) => (r.data as { key?: unknown }).key === key)
    .pop();
  const expectedState = (committed?.data as { stateSha256?: unknown } | undefined)?.stateSha256;
  const corrupt = (what: string) =>
    new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: `${runId}/${key}/${what}`,
      message:
        'does not match the checksum written with the checkpoint (a torn or altered file); resume from an earlier checkpoint',
    });
  // Checkpoints written before checksums existed carry none, and load unchecked.
  if (typeof expectedState === 'string' && (await sha256(raw)) !== expectedState) throw corrupt('state.json');
  let state: Record<string, unknown> & {
    policy?: { format?: unknown; metadata?: unknown; blobs?: unknown; sha256?: Record<string, unknown> };
  };
  try {
    state = JSON.parse(decoder.decode(raw)) as typeof state;
  } catch (error) {
    throw new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: `${key}/state.json`,
      message: 'is not valid JSON',
      cause: error,
    });
  }
  const policy = state.policy;
  if (!policy || typeof policy.format !== 'string' || !Array.isArray(policy.blobs)) {
    throw new PortOutputError({
      port: 'store',
      provider: store.provider,
      field: `${key}/state.json`,
      message: 'has no policy checkpoint (format, metadata, blobs)',
    });
  }
  const blobs: PolicyCheckpoint['blobs'] = {};
  for (const name of policy.blobs as string[]) {
    const bytes = await store.doGetBlob(runId, `${key}/policy/${name}`);
    if (!bytes)
      throw new InvalidArgumentError({
        argument: 'settings.resumeMode',
        message: `checkpoint '${runId}/${key}' lacks the policy blob '${name}'`,
      });
    const expected = policy.sha256?.[name];
    if (typeof expected === 'string' && (await sha256(bytes)) !== expected) throw corrupt(`policy/${name}`);
    blobs[name] = bytes;
  }
  return {
    state,
    checkpoint: {
      format: policy.format,
      metadata: (policy.metadata ?? {}) as Record<string, unknown>,
      blobs,
    },
  };
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
