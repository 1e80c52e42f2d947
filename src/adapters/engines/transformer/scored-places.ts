import * as tf from '@tensorflow/tfjs';

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

/**
 * Right-padded ids, the scored places (`scoredPlaces`) and a one-hot [places, vocabulary] of their
 * tokens. Only these places get logits (`forwardFull`'s `scoredRows`).
 */
export function denseBatch(rows: number[][], positions: number[][], vocabSize: number) {
  const rowCount = rows.length;
  const { length, places, targets } = scoredPlaces(rows, positions);
  const ids = new Int32Array(rowCount * length);
  rows.forEach((r, i) => ids.set(r, i * length));
  // The one-hot is made on the device, not shipped.
  return {
    ids: tf.tensor2d(ids, [rowCount, length], 'int32'),
    idValues: ids,
    places,
    pick: tf.oneHot(tf.tensor1d(targets, 'int32'), vocabSize) as tf.Tensor2D,
    length,
  };
}

/** Log-probs at a temperature and, per place, the one of the picked token (0 where nothing is picked). */
export function scoredLogProbs(logits: tf.Tensor2D, pick: tf.Tensor2D, temperature: number) {
  const logp = tf.logSoftmax(temperature !== 1 ? tf.div(logits, temperature) : logits);
  return { logp, token: tf.sum(tf.mul(logp, pick), 1) };
}
