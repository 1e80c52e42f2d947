import { InvalidArgumentError } from './errors';

/** The state of a {@link Random}: four unsigned 32-bit words, JSON-serialisable. */
export type RandomState = readonly [number, number, number, number];

/**
 * A seeded pseudo-random generator (sfc32, Chris Doty-Humphrey's Small Fast Counter) whose state
 * can be saved and restored, so that a resumed run draws exactly the numbers the uninterrupted run
 * would have. `Math.random` cannot be checkpointed; every random choice in training goes through this.
 */
export interface Random {
  /** Uniform in [0, 1) with 32 bits of resolution. */
  nextFloat(): number;
  /** Uniform integer in [0, n). */
  nextInt(n: number): number;
  /** Standard normal (Box-Muller). */
  nextNormal(): number;
  /** The generator's state, to save with a checkpoint. */
  state(): RandomState;
  /** Continues from a saved state: the numbers drawn next are those drawn after it was saved. */
  restore(state: RandomState): void;
}

/** Mixes a seed and optional stream keys into a 32-bit value (splitmix-style), for derived streams. */
export function mixSeed(seed: number, ...keys: readonly number[]): number {
  let h = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
  for (const key of [Math.trunc(seed / 2 ** 32), ...keys]) {
    h = Math.imul(h ^ (Math.trunc(key) >>> 0), 0x85ebca6b) >>> 0;
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
  }
  return h;
}

/**
 * A seeded generator; `streamKeys` derive independent streams from the same seed (one per rollout).
 */
export function createRandom(seed: number, ...streamKeys: readonly number[]): Random {
  if (!Number.isFinite(seed))
    throw new InvalidArgumentError({
      argument: 'seed',
      message: `must be a finite number, got ${String(seed)}`,
    });
  const mixed = mixSeed(seed, ...streamKeys);
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = mixed;
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = (b ^ (b >>> 9)) >>> 0;
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  // Warm up so that nearby seeds give unrelated streams.
  for (let i = 0; i < 15; i++) next();
  return {
    nextFloat: () => next() / 2 ** 32,
    nextInt(n) {
      if (!(Number.isInteger(n) && n > 0))
        throw new InvalidArgumentError({
          argument: 'n',
          message: `must be a positive integer, got ${String(n)}`,
        });
      return Math.floor((next() / 2 ** 32) * n);
    },
    nextNormal() {
      // One normal per two uniforms (no cached spare), so that state() captures everything.
      let u = 0;
      while (u === 0) u = next() / 2 ** 32;
      const v = next() / 2 ** 32;
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
    state: () => [a, b, c, d],
    restore(state) {
      if (
        !Array.isArray(state) ||
        state.length !== 4 ||
        !state.every((w) => Number.isInteger(w) && w >= 0 && w < 2 ** 32)
      ) {
        throw new InvalidArgumentError({
          argument: 'state',
          message: 'must be four unsigned 32-bit integers (from Random.state())',
        });
      }
      [a, b, c, d] = state as [number, number, number, number];
    },
  };
}

/** Fisher-Yates shuffle of 0..n-1 with the given generator. */
export function permutation(n: number, random: Random): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = random.nextInt(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** FNV-1a over a string's UTF-16 code units: a stable 32-bit hash for seeded choices keyed by text. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * The stream keys of `createRandom(seed, stream, ...)`: each kind of random choice draws from its
 * own stream, so that adding draws to one never shifts another. The numbers are part of what a
 * seed means (saved runs replay with them): never renumber one.
 */
export const RANDOM_STREAMS = Object.freeze({
  /** A policy's initial weights. */
  modelWeights: 1,
  /** Token sampling, per rollout session and row. */
  sampling: 2,
  /** The trainer's minibatch order. */
  trainerUpdates: 3,
  /** The order of the prompts in each epoch. */
  epochOrder: 4,
  /** A Searcher's minibatch order when the caller gives none. */
  searcherUpdates: 5,
  /** The generated slide corpus. */
  slideCorpus: 7,
  /** The SFT warm start's minibatch order. */
  sftOrder: 11,
  /** The embedded ICD demo's tasks, demonstrations and queries. */
  icdDemo: 13,
  /** ICD data generation: sampled and random trajectories, mined pairs. */
  icdData: 17,
  /** The pointer selector's initial weights. */
  icdSelectorWeights: 19,
  /** The pointer selector's shot sampling and minibatch order. */
  icdSelectorSampling: 23,
  /** Which training questions the SFT warm start demonstrates. */
  sftQuestions: 29,
  /** A Llama policy's LoRA dropout masks. */
  dropout: 31,
} as const);
