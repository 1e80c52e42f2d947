import { InvalidArgumentError } from '../errors';

export function assertMatrix(name: string, value: unknown): asserts value is number[][] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError({
      argument: name,
      message: 'expected an array of sequences (number[][])',
    });
  value.forEach((row, i) => {
    if (!Array.isArray(row))
      throw new InvalidArgumentError({ argument: `${name}[${i}]`, message: 'expected an array of numbers' });
  });
}

/** Checks that `other` has exactly the shape of `reference` (batch x tokens). */
export function assertSameShape(
  referenceName: string,
  reference: number[][],
  name: string,
  other: number[][],
): void {
  if (other.length !== reference.length) {
    throw new InvalidArgumentError({
      argument: name,
      message: `has ${other.length} sequences but '${referenceName}' has ${reference.length}`,
    });
  }
  for (let i = 0; i < reference.length; i++) {
    const a = reference[i]!;
    const b = other[i]!;
    if (a.length !== b.length) {
      throw new InvalidArgumentError({
        argument: `${name}[${i}]`,
        message: `has ${b.length} tokens but '${referenceName}[${i}]' has ${a.length}`,
      });
    }
  }
}

export function assertFiniteMasked(name: string, values: number[][], mask: number[][]): void {
  for (let i = 0; i < values.length; i++) {
    const row = values[i]!;
    for (let t = 0; t < row.length; t++) {
      if (mask[i]![t] !== 0 && !Number.isFinite(row[t])) {
        throw new InvalidArgumentError({
          argument: `${name}[${i}][${t}]`,
          message: `must be a finite number on a masked-in token, got ${row[t]}`,
        });
      }
    }
  }
}

export function assertMask(mask: number[][]): void {
  for (let i = 0; i < mask.length; i++) {
    const row = mask[i]!;
    for (let t = 0; t < row.length; t++) {
      const m = row[t]!;
      if (!(Number.isFinite(m) && m >= 0)) {
        throw new InvalidArgumentError({
          argument: `mask[${i}][${t}]`,
          message: `must be a non-negative weight (1 on policy tokens, 0 elsewhere), got ${m}`,
        });
      }
    }
  }
}

/**
 * The token inputs of a loss or a penalty on log-probs (the policy loss, the KL penalty): old and
 * new log-probs and the mask, each a matrix, all of one shape, the mask non-negative weights, the
 * log-probs finite on every masked-in token.
 */
export function assertLogProbInputs(
  oldLogProbs: number[][],
  newLogProbs: number[][],
  mask: number[][],
): void {
  assertMatrix('oldLogProbs', oldLogProbs);
  assertMatrix('newLogProbs', newLogProbs);
  assertMatrix('mask', mask);
  assertSameShape('oldLogProbs', oldLogProbs, 'newLogProbs', newLogProbs);
  assertSameShape('oldLogProbs', oldLogProbs, 'mask', mask);
  assertMask(mask);
  assertFiniteMasked('oldLogProbs', oldLogProbs, mask);
  assertFiniteMasked('newLogProbs', newLogProbs, mask);
}

/** A clip range or a coefficient that must be a finite number >= 0. */
export function assertNonNegative(name: string, value: number): void {
  if (!(Number.isFinite(value) && value >= 0))
    throw new InvalidArgumentError({ argument: name, message: `must be a finite number >= 0, got ${value}` });
}
