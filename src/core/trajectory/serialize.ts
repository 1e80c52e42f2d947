import { DatasetValidationError } from '../errors';
import type { Trajectory } from './trajectory';

/**
 * Lossless JSON. JSON has no NaN, Infinity or -0, yet a log-prob can be -Infinity, a missing
 * value NaN-like and a coordinate -0. Such numbers are written as `{"$number": "NaN"}` (also
 * "Infinity", "-Infinity", "-0") anywhere in the tree and read back as numbers; an object with
 * the single key `$number` is reserved for this.
 */
export const NUMBER_TAG = '$number';
const SPECIAL_NUMBERS: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  '-Infinity': Number.NEGATIVE_INFINITY,
  '-0': -0,
};

/** A `JSON.stringify` replacer that tags the numbers JSON cannot hold. */
export function encodeSpecialNumbers(_key: string, value: unknown): unknown {
  if (typeof value !== 'number') return value;
  if (Number.isNaN(value)) return { [NUMBER_TAG]: 'NaN' };
  if (value === Number.POSITIVE_INFINITY) return { [NUMBER_TAG]: 'Infinity' };
  if (value === Number.NEGATIVE_INFINITY) return { [NUMBER_TAG]: '-Infinity' };
  if (Object.is(value, -0)) return { [NUMBER_TAG]: '-0' };
  return value;
}

/** A `JSON.parse` reviver that turns tagged numbers back into numbers. */
export function reviveSpecialNumbers(_key: string, value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const tag = (value as Record<string, unknown>)[NUMBER_TAG];
    if (keys.length === 1 && typeof tag === 'string' && tag in SPECIAL_NUMBERS) return SPECIAL_NUMBERS[tag];
  }
  return value;
}

/** Revives tagged numbers in an already parsed tree (e.g. a record read without the reviver). */
export function reviveTree(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reviveTree);
  if (typeof value === 'object' && value !== null) {
    const revived = reviveSpecialNumbers('', value);
    if (revived !== value) return revived;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, reviveTree(v)]));
  }
  return value;
}

export function trajectoryToJSON(trajectory: Trajectory): string {
  return JSON.stringify(trajectory, encodeSpecialNumbers);
}

type Path = string;

class Reader {
  constructor(private readonly row: number) {}

  fail(field: Path, message: string): never {
    throw new DatasetValidationError({ row: this.row, field, message });
  }

  object(value: unknown, field: Path): Record<string, unknown> {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      this.fail(field, `expected an object, got ${describe(value)}`);
    return value as Record<string, unknown>;
  }

  array(value: unknown, field: Path): unknown[] {
    if (!Array.isArray(value)) this.fail(field, `expected an array, got ${describe(value)}`);
    return value;
  }

  number(value: unknown, field: Path): number {
    if (typeof value === 'number') return value;
    return this.fail(field, `expected a number, got ${describe(value)}`);
  }

  integer(value: unknown, field: Path, min = 0): number {
    const n = this.number(value, field);
    if (!Number.isInteger(n) || n < min)
      this.fail(field, `expected an integer >= ${min}, got ${describe(value)}`);
    return n;
  }

  nullableNumber(value: unknown, field: Path): number | null {
    return value === null ? null : this.number(value, field);
  }

  string(value: unknown, field: Path): string {
    if (typeof value !== 'string') this.fail(field, `expected a string, got ${describe(value)}`);
    return value;
  }

  nullableString(value: unknown, field: Path): string | null {
    return value === null ? null : this.string(value, field);
  }

  /** Nested records (turns, reward detail) keep their shape (numbers were revived on parse). */
  plain(value: unknown): unknown {
    return structuredClone(value);
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `"${value.length > 40 ? `${value.slice(0, 40)}…` : value}"`;
  return typeof value === 'object' ? 'an object' : String(value);
}

const TERMINATIONS = new Set(['complete', 'answer', 'budget', 'context', 'error']);

/**
 * Reads a trajectory written by `trajectoryToJSON` (a string or the parsed object), checking
 * every field the trainer relies on. `row` is reported in errors (e.g. the line of a JSONL file).
 */
export function trajectoryFromJSON(input: string | unknown, row = -1): Trajectory {
  const reader = new Reader(row);
  let parsed: unknown;
  if (typeof input === 'string') {
    try {
      parsed = JSON.parse(input, reviveSpecialNumbers);
    } catch (error) {
      throw new DatasetValidationError({
        row,
        field: '(json)',
        message: `not valid JSON: ${(error as Error).message}`,
        cause: error,
      });
    }
  } else parsed = reviveTree(input);
  const o = reader.object(parsed, '(root)');
  if (o.formatVersion !== 1) reader.fail('formatVersion', `expected 1, got ${describe(o.formatVersion)}`);

  const fullInputIds = reader
    .array(o.fullInputIds, 'fullInputIds')
    .map((v, i) => reader.integer(v, `fullInputIds.${i}`));
  const lossMask = reader.array(o.lossMask, 'lossMask').map((v, i) => {
    const m = reader.number(v, `lossMask.${i}`);
    if (m !== 0 && m !== 1) reader.fail(`lossMask.${i}`, `expected 0 or 1, got ${m}`);
    return m;
  });
  if (lossMask.length !== fullInputIds.length)
    reader.fail('lossMask', `has ${lossMask.length} entries but fullInputIds has ${fullInputIds.length}`);
  const tokenSteps = reader.array(o.tokenSteps, 'tokenSteps').map((v, i) => {
    const s = reader.object(v, `tokenSteps.${i}`);
    const step = {
      tokenId: reader.integer(s.tokenId, `tokenSteps.${i}.tokenId`),
      tokenText: reader.string(s.tokenText, `tokenSteps.${i}.tokenText`),
      logProb: reader.number(s.logProb, `tokenSteps.${i}.logProb`),
      position: reader.integer(s.position, `tokenSteps.${i}.position`),
    };
    if (fullInputIds[step.position] !== step.tokenId) {
      reader.fail(
        `tokenSteps.${i}.position`,
        `fullInputIds[${step.position}] is ${fullInputIds[step.position]}, not the step's token ${step.tokenId}`,
      );
    }
    if (lossMask[step.position] !== 1)
      reader.fail(`tokenSteps.${i}.position`, `lossMask is 0 at policy token position ${step.position}`);
    return step;
  });
  const generatedPositions = reader
    .array(o.generatedPositions, 'generatedPositions')
    .map((v, i) => reader.integer(v, `generatedPositions.${i}`));
  const policyTokens = lossMask.reduce((sum, m) => sum + m, 0);
  if (policyTokens !== tokenSteps.length)
    reader.fail(
      'lossMask',
      `marks ${policyTokens} policy tokens but there are ${tokenSteps.length} tokenSteps`,
    );
  const terminated = reader.string(o.terminated, 'terminated');
  if (!TERMINATIONS.has(terminated))
    reader.fail('terminated', `expected one of ${[...TERMINATIONS].join(', ')}, got "${terminated}"`);

  return {
    formatVersion: 1,
    sampleId: reader.string(o.sampleId, 'sampleId'),
    groupId: reader.string(o.groupId, 'groupId'),
    promptUid: reader.string(o.promptUid, 'promptUid'),
    rolloutIndex: reader.integer(o.rolloutIndex, 'rolloutIndex'),
    query: reader.string(o.query, 'query'),
    reference: reader.nullableString(o.reference, 'reference'),
    ...(o.answers !== undefined && {
      answers: reader.array(o.answers, 'answers').map((v, i) => reader.string(v, `answers.${i}`)),
    }),
    goldenBasenames: reader
      .array(o.goldenBasenames, 'goldenBasenames')
      .map((v, i) => reader.string(v, `goldenBasenames.${i}`)),
    promptLength: reader.integer(o.promptLength, 'promptLength'),
    tokenSteps,
    generatedText: reader.string(o.generatedText, 'generatedText'),
    finalAnswer: reader.string(o.finalAnswer, 'finalAnswer'),
    fullInputIds,
    generatedPositions,
    lossMask,
    turns: reader.plain(reader.array(o.turns, 'turns')) as Trajectory['turns'],
    retrievedBasenames: reader
      .array(o.retrievedBasenames, 'retrievedBasenames')
      .map((v, i) => reader.string(v, `retrievedBasenames.${i}`)),
    evidence: reader.plain(reader.array(o.evidence, 'evidence')) as Trajectory['evidence'],
    terminated: terminated as Trajectory['terminated'],
    error: o.error === null ? null : (reader.plain(reader.object(o.error, 'error')) as Trajectory['error']),
    invalidActions: reader.integer(o.invalidActions, 'invalidActions'),
    generatorUsage:
      o.generatorUsage === null
        ? null
        : (reader.plain(reader.object(o.generatorUsage, 'generatorUsage')) as Trajectory['generatorUsage']),
    reward: reader.nullableNumber(o.reward, 'reward'),
    rewardDetail:
      o.rewardDetail === null
        ? null
        : (reader.plain(reader.object(o.rewardDetail, 'rewardDetail')) as Trajectory['rewardDetail']),
    advantage: reader.nullableNumber(o.advantage, 'advantage'),
  };
}
