/**
 * Right-padded rows' scored places: the row-major index (into rows * length) of the position whose
 * logits predict each scored token (the one before it), in the order of `positions`, and that
 * token. Only these places get logits, on tfjs (training.ts) and in ONNX Runtime (onnx-training.ts).
 */
export function scoredPlaces(
  rows: readonly number[][],
  positions: readonly number[][],
): { length: number; places: Int32Array; targets: Int32Array } {
  const length = Math.max(...rows.map((r) => r.length));
  const count = positions.reduce((n, row) => n + row.length, 0);
  const places = new Int32Array(count);
  const targets = new Int32Array(count);
  let k = 0;
  positions.forEach((row, i) =>
    row.forEach((p) => {
      places[k] = i * length + p - 1;
      targets[k++] = rows[i]![p]!;
    }),
  );
  return { length, places, targets };
}
