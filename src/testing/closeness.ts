/** Relative closeness used against the PyTorch float64 reference values (1e-9 relative). */
export function relativeError(actual: number, expected: number): number {
  if (actual === expected) return 0;
  const scale = Math.max(Math.abs(expected), 1e-12);
  return Math.abs(actual - expected) / scale;
}

/** Largest error over a matrix, relative to the largest reference magnitude in that matrix. */
export function maxMatrixError(actual: number[][], expected: number[][]): number {
  let scale = 1e-12;
  for (const row of expected) for (const v of row) scale = Math.max(scale, Math.abs(v));
  let worst = 0;
  expected.forEach((row, i) =>
    row.forEach((v, t) => {
      worst = Math.max(worst, Math.abs((actual[i]?.[t] ?? Number.NaN) - v) / scale);
    }),
  );
  return Number.isNaN(worst) ? Number.POSITIVE_INFINITY : worst;
}
