import * as tf from '@tensorflow/tfjs';
import { InvalidArgumentError } from '../../core/errors';
import { firstNonFinite, float32Values } from '../../core/finite-values';
import { createRandom, RANDOM_STREAMS, type Random } from '../../core/random';
import { parseSettings } from '../../provider-utils/index';
// The selector is a tfjs model: it trains with the tfjs family's AdamW on the backend that family
// selects (the two edges between families test/layering.test.ts allows for this file).
import { AdamW, type NamedParameter } from '../tfjs/adamw';
import { selectTfjsBackend, type TfjsBackendName } from '../tfjs/backends';
import {
  POINTER_SELECTOR_FORMAT,
  pointerSelectorSettingsSchema,
  type PointerSelector,
  type PointerSelectorSettings,
  type SelectorBatch,
} from './pointer-selector-settings';
import { checkCheckpointFormat } from '../../provider-utils/checkpoint-format';

function seededMatrix(rows: number, cols: number, random: Random, scale: number): tf.Tensor2D {
  const data = new Float32Array(rows * cols);
  for (let i = 0; i < data.length; i++) data[i] = random.nextNormal() * scale;
  return tf.tensor2d(data, [rows, cols]);
}

/**
 * The pointer-network selector (docs/method.md#pointer-selector): query and candidates projected
 * (d -> h) and L2-normalised, scores q·c / τ over the query's own pool, chosen candidates masked,
 * and between shots the query moved towards the chosen candidate by a learned gate,
 * q' = norm(σ(g) ⊙ q + (1 - σ(g)) ⊙ c_chosen). Trained with AdamW.
 */
export async function createPointerSelector(settings: PointerSelectorSettings): Promise<PointerSelector> {
  const s = parseSettings('createPointerSelector', pointerSelectorSettingsSchema, settings);
  const selected = await selectTfjsBackend(s.backend as 'auto' | TfjsBackendName);
  const init = createRandom(s.seed, RANDOM_STREAMS.icdSelectorWeights);
  const scale = 1 / Math.sqrt(s.inputDimensions);
  const parameters: NamedParameter[] = [
    {
      name: 'queryProjection',
      variable: tf.variable(seededMatrix(s.inputDimensions, s.hiddenDimensions, init, scale), true),
      decay: true,
    },
    {
      name: 'candidateProjection',
      variable: tf.variable(seededMatrix(s.inputDimensions, s.hiddenDimensions, init, scale), true),
      decay: true,
    },
    { name: 'gate', variable: tf.variable(tf.zeros([s.hiddenDimensions]), true), decay: false },
  ];
  const [wq, wc, gate] = parameters.map((p) => p.variable) as [tf.Variable, tf.Variable, tf.Variable];
  const optimizer = new AdamW(parameters, {
    learningRate: s.learningRate,
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
    weightDecay: s.weightDecay,
    maxGradNorm: s.maxGradNorm,
    warmupSteps: 0,
  });

  const check = (batch: SelectorBatch) => {
    const d = s.inputDimensions;
    if (
      batch.queries.length !== batch.size * d ||
      batch.candidates.length !== batch.size * batch.poolSize * d
    ) {
      throw new InvalidArgumentError({
        argument: 'batch',
        message: `expected ${batch.size} x ${d} queries and ${batch.size} x ${batch.poolSize} x ${d} candidates`,
      });
    }
    if (batch.poolSize < s.shots)
      throw new InvalidArgumentError({
        argument: 'batch.poolSize',
        message: `a pool of ${batch.poolSize} cannot give ${s.shots} distinct shots`,
      });
  };
  const normalise = (x: tf.Tensor) => tf.div(x, tf.add(tf.norm(x, 'euclidean', -1, true), 1e-6));
  /** Projected, normalised query [B,h] and candidates [B,K,h]. */
  const encode = (batch: SelectorBatch) => {
    const q = normalise(
      tf.matMul(tf.tensor2d(batch.queries, [batch.size, s.inputDimensions]), wq),
    ) as tf.Tensor2D;
    const c = tf.reshape(
      normalise(
        tf.matMul(tf.tensor2d(batch.candidates, [batch.size * batch.poolSize, s.inputDimensions]), wc),
      ),
      [batch.size, batch.poolSize, s.hiddenDimensions],
    ) as tf.Tensor3D;
    return { q, c };
  };
  /** log-softmax of q·c/τ with `masked` [B,K] (1 = already chosen) excluded: [B,K]. */
  const shotLogits = (q: tf.Tensor2D, c: tf.Tensor3D, masked: tf.Tensor2D) => {
    const scores = tf.div(tf.squeeze(tf.matMul(c, tf.expandDims(q, 2)), [2]), s.temperature);
    return tf.logSoftmax(tf.add(scores, tf.mul(masked, -1e9)));
  };
  const advance = (q: tf.Tensor2D, c: tf.Tensor3D, chosen: tf.Tensor1D) => {
    const picked = tf.squeeze(
      tf.matMul(tf.expandDims(tf.oneHot(chosen, c.shape[1]).toFloat(), 1), c),
      [1],
    ) as tf.Tensor2D;
    const g = tf.sigmoid(gate);
    return normalise(tf.add(tf.mul(q, g), tf.mul(picked, tf.sub(1, g)))) as tf.Tensor2D;
  };
  /** Sum over shots of weights * logp, and the per-shot logp. */
  const sequenceLogProbs = (batch: SelectorBatch, actions: readonly (readonly number[])[]) => {
    let { q, c } = encode(batch);
    let masked = tf.zeros([batch.size, batch.poolSize]) as tf.Tensor2D;
    const perShot: tf.Tensor1D[] = [];
    for (let shot = 0; shot < s.shots; shot++) {
      const chosen = tf.tensor1d(
        actions.map((a) => a[shot]!),
        'int32',
      );
      const logits = shotLogits(q, c, masked);
      const onehot = tf.oneHot(chosen, batch.poolSize).toFloat() as tf.Tensor2D;
      perShot.push(tf.sum(tf.mul(logits, onehot), 1) as tf.Tensor1D);
      masked = tf.add(masked, onehot) as tf.Tensor2D;
      q = advance(q, c, chosen);
    }
    return tf.stack(perShot, 1) as tf.Tensor2D;
  };
  const checkActions = (batch: SelectorBatch, actions: readonly (readonly number[])[]) => {
    if (actions.length !== batch.size)
      throw new InvalidArgumentError({
        argument: 'actions',
        message: `expected ${batch.size} rows, got ${actions.length}`,
      });
    actions.forEach((a, i) => {
      if (
        a.length !== s.shots ||
        a.some((x) => !Number.isInteger(x) || x < 0 || x >= batch.poolSize) ||
        new Set(a).size !== a.length
      ) {
        throw new InvalidArgumentError({
          argument: `actions[${i}]`,
          message: `expected ${s.shots} distinct local indices in [0, ${batch.poolSize - 1}], got [${a.join(', ')}]`,
        });
      }
    });
  };

  return {
    settings: s,
    backend: selected.name,
    parameterCount: parameters.reduce((n, p) => n + p.variable.size, 0),
    select(batch, random) {
      check(batch);
      return tf.tidy(() => {
        let { q, c } = encode(batch);
        const maskData = new Float32Array(batch.size * batch.poolSize);
        const actions: number[][] = Array.from({ length: batch.size }, () => []);
        const logProbs: number[][] = Array.from({ length: batch.size }, () => []);
        for (let shot = 0; shot < s.shots; shot++) {
          const logits = shotLogits(q, c, tf.tensor2d(maskData, [batch.size, batch.poolSize])).dataSync();
          for (let b = 0; b < batch.size; b++) {
            const row = logits.subarray(b * batch.poolSize, (b + 1) * batch.poolSize);
            let pick = 0;
            if (random) {
              let u = random.nextFloat();
              pick = -1;
              for (let k = 0; k < row.length; k++) {
                if (maskData[b * batch.poolSize + k]) continue;
                u -= Math.exp(row[k]!);
                pick = k;
                if (u < 0) break;
              }
            } else {
              for (let k = 1; k < row.length; k++)
                if (
                  !maskData[b * batch.poolSize + k] &&
                  (maskData[b * batch.poolSize + pick] || row[k]! > row[pick]!)
                )
                  pick = k;
            }
            actions[b]!.push(pick);
            logProbs[b]!.push(row[pick]!);
            maskData[b * batch.poolSize + pick] = 1;
          }
          q = advance(
            q,
            c,
            tf.tensor1d(
              actions.map((a) => a[shot]!),
              'int32',
            ),
          );
        }
        return { actions, logProbs };
      });
    },
    logProbs(batch, actions) {
      check(batch);
      checkActions(batch, actions);
      return tf.tidy(() => sequenceLogProbs(batch, actions).arraySync());
    },
    step(batch, actions, weights) {
      check(batch);
      checkActions(batch, actions);
      const w = tf.tensor2d(
        weights.map((row) => [...row]),
        [batch.size, s.shots],
      );
      const { grads } = tf.variableGrads(
        () => tf.sum(tf.mul(sequenceLogProbs(batch, actions), w)) as tf.Scalar,
        parameters.map((p) => p.variable),
      );
      const ordered = parameters.map((p) => grads[p.variable.name]!);
      const outcome = optimizer.apply(ordered);
      tf.dispose([w, ...ordered]);
      return { gradNorm: outcome.gradNorm, applied: outcome.applied };
    },
    save() {
      const blobs: Record<string, Uint8Array> = {};
      parameters.forEach((p, i) => {
        blobs[`${p.name}.f32`] = new Uint8Array(Float32Array.from(p.variable.dataSync()).buffer);
        blobs[`${p.name}.m.f32`] = new Uint8Array(
          Float32Array.from(optimizer.firstMoments[i]!.dataSync()).buffer,
        );
        blobs[`${p.name}.v.f32`] = new Uint8Array(
          Float32Array.from(optimizer.secondMoments[i]!.dataSync()).buffer,
        );
      });
      const { backend: _backend, ...portable } = s;
      return {
        format: POINTER_SELECTOR_FORMAT,
        metadata: { settings: portable, optimizerStep: optimizer.step },
        blobs,
      };
    },
    load(checkpoint) {
      checkCheckpointFormat(checkpoint, POINTER_SELECTOR_FORMAT);
      // Every blob is checked before any is assigned: a refused checkpoint leaves the selector as it was.
      const read = (name: string, size: number, secondMoments = false) => {
        const bytes = checkpoint.blobs[name];
        const file = checkpoint.source?.blobs[name] ? ` (in ${checkpoint.source.blobs[name]})` : '';
        const refuse = (message: string) =>
          new InvalidArgumentError({ argument: `checkpoint.blobs.${name}`, message: `${message}${file}` });
        if (!bytes || bytes.byteLength !== size * 4)
          throw refuse(`expected ${size} float32 values (same inputDimensions and hiddenDimensions)`);
        const values = float32Values(bytes);
        const bad = firstNonFinite(values);
        if (bad)
          throw refuse(`holds ${bad.value} at element ${bad.index}: a checkpoint's values must be finite`);
        const negative = secondMoments ? values.findIndex((v) => v < 0) : -1;
        if (negative >= 0)
          throw refuse(`holds a negative second moment (${values[negative]}) at element ${negative}`);
        return values;
      };
      const step = (checkpoint.metadata as { optimizerStep?: unknown }).optimizerStep ?? 0;
      if (!(Number.isInteger(step) && (step as number) >= 0))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.optimizerStep',
          message: `must be a non-negative integer, got ${String(step)}`,
        });
      const values = parameters.map((p) => ({
        weights: read(`${p.name}.f32`, p.variable.size),
        first: read(`${p.name}.m.f32`, p.variable.size),
        second: read(`${p.name}.v.f32`, p.variable.size, true),
      }));
      tf.tidy(() =>
        parameters.forEach((p, i) => {
          const { weights, first, second } = values[i]!;
          p.variable.assign(tf.tensor(weights, p.variable.shape));
          optimizer.firstMoments[i]!.assign(tf.tensor(first, p.variable.shape));
          optimizer.secondMoments[i]!.assign(tf.tensor(second, p.variable.shape));
        }),
      );
      optimizer.step = step as number;
    },
    dispose() {
      optimizer.dispose();
      for (const p of parameters) p.variable.dispose();
    },
  };
}
