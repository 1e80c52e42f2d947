import { PortOutputError, type PortName } from '../errors';
import type { GeneratorAnswer } from '../../ports/generator';
import type { JudgeVerdict } from '../../ports/judge';
import type { RolloutSession, TurnOutput } from '../../ports/policy-backend';
import type { PageImage, SearchHit } from '../../ports/types';

/**
 * What the core accepts from each port. An answer it cannot use (a judge score outside [0, 1], a
 * hit without a basename) is a PortOutputError: a failed call, never a silent default.
 */

export function checkImage(image: unknown, port: PortName, provider: string, field: string): PageImage {
  const i = image as PageImage;
  if (
    typeof i !== 'object' ||
    i === null ||
    typeof i.mimeType !== 'string' ||
    !(Number.isInteger(i.width) && i.width > 0) ||
    !(Number.isInteger(i.height) && i.height > 0) ||
    !(i.bytes instanceof Uint8Array)
  ) {
    throw new PortOutputError({
      port,
      provider,
      field,
      message: 'expected {mimeType, width > 0, height > 0 (integers), bytes: Uint8Array}',
    });
  }
  return i;
}

export function checkHits(hits: unknown, provider: string): SearchHit[] {
  if (!Array.isArray(hits))
    throw new PortOutputError({
      port: 'searchEngine',
      provider,
      field: 'hits',
      message: 'expected an array of hits',
    });
  hits.forEach((hit: SearchHit | undefined, i) => {
    if (typeof hit?.basename !== 'string' || hit.basename.length === 0) {
      throw new PortOutputError({
        port: 'searchEngine',
        provider,
        field: `hits[${i}].basename`,
        message: 'every hit needs a non-empty basename',
      });
    }
    if (hit.image !== undefined) checkImage(hit.image, 'searchEngine', provider, `hits[${i}].image`);
  });
  return hits as SearchHit[];
}

export function checkAnswer(result: unknown, provider: string): GeneratorAnswer {
  if (typeof (result as GeneratorAnswer | undefined)?.answer !== 'string') {
    throw new PortOutputError({ port: 'generator', provider, field: 'answer', message: 'expected a string' });
  }
  return result as GeneratorAnswer;
}

/** A judge answer that is not a number in [0, 1] is a failed call, never a score. */
export function checkVerdict(verdict: unknown, provider: string): JudgeVerdict {
  const score = (verdict as JudgeVerdict | undefined)?.score;
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1) {
    throw new PortOutputError({
      port: 'judge',
      provider,
      field: 'score',
      message: `expected a number in [0, 1], got ${String(score)}`,
    });
  }
  return verdict as JudgeVerdict;
}

export function checkEmbeddings(
  vectors: unknown,
  count: number,
  dimensions: number,
  provider: string,
): number[][] {
  const bad = (field: string, message: string) =>
    new PortOutputError({ port: 'embedder', provider, field, message });
  if (!Array.isArray(vectors) || vectors.length !== count)
    throw bad(
      'embeddings',
      `expected ${count} vectors, got ${Array.isArray(vectors) ? vectors.length : typeof vectors}`,
    );
  vectors.forEach((v: unknown, i) => {
    if (!Array.isArray(v) || v.length !== dimensions)
      throw bad(`embeddings[${i}]`, `expected ${dimensions} numbers`);
    v.forEach((x: unknown, k) => {
      if (typeof x !== 'number' || !Number.isFinite(x))
        throw bad(`embeddings[${i}][${k}]`, 'expected a finite number');
    });
  });
  return vectors as number[][];
}

export function checkSession(session: unknown, size: number, provider: string): RolloutSession {
  const s = session as RolloutSession | undefined;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.generateTurn !== 'function' ||
    typeof s.append !== 'function' ||
    typeof s.end !== 'function'
  ) {
    throw new PortOutputError({
      port: 'policy',
      provider,
      field: 'session',
      message: 'begin() must return a session with generateTurn, append and end',
    });
  }
  if (s.size !== size)
    throw new PortOutputError({
      port: 'policy',
      provider,
      field: 'session.size',
      message: `expected ${size} rollouts, got ${String(s.size)}`,
    });
  return s;
}

/** One rollout's turn: its output, or why it cannot be used (only that rollout fails). */
export type TurnResult =
  | { rolloutId: number; output: TurnOutput; error?: undefined }
  | { rolloutId: number; output?: undefined; error: PortOutputError };

/** Matches a generateTurn answer to the rollouts asked for, checking each output on its own. */
export function checkTurnOutputs(
  outputs: unknown,
  rolloutIds: readonly number[],
  provider: string,
): TurnResult[] {
  const byId = new Map<number, unknown>();
  if (Array.isArray(outputs))
    for (const output of outputs) byId.set((output as TurnOutput)?.rolloutId, output);
  return rolloutIds.map((rolloutId) => {
    try {
      return { rolloutId, output: checkTurnOutput(byId.get(rolloutId), rolloutId, provider) };
    } catch (error) {
      return { rolloutId, error: error as PortOutputError };
    }
  });
}

function checkTurnOutput(output: unknown, id: number, provider: string): TurnOutput {
  const bad = (field: string, message: string) =>
    new PortOutputError({ port: 'policy', provider, field: `generateTurn[${id}].${field}`, message });
  if (typeof output !== 'object' || output === null)
    throw bad('(output)', `no output for active rollout ${id}`);
  const o = output as TurnOutput;
  if (!Array.isArray(o.steps)) throw bad('steps', 'expected an array of TokenSteps');
  o.steps.forEach((step, k) => {
    if (typeof step !== 'object' || step === null) throw bad(`steps[${k}]`, 'expected a TokenStep object');
  });
  if (o.finishReason !== 'stop' && o.finishReason !== 'length' && o.finishReason !== 'eos')
    throw bad('finishReason', `expected 'stop', 'length' or 'eos', got ${String(o.finishReason)}`);
  return o;
}
