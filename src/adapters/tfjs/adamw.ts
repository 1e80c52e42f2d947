import * as tf from '@tensorflow/tfjs';

import { adamwStepTfjsOrder, type AdamWTfjsConstants } from '../engines/adamw-kernel';
import type { WasmBackend } from './wasm-matmul';
import { AdamWSchedule, type AdamWSettings, type AdamWStepOutcome } from '../engines/adamw-schedule';
import type { NamedParameter } from '../engines/transformer/transformer';

export type { NamedParameter, AdamWSettings };

type HeapBackend = Pick<WasmBackend, 'makeOutput' | 'typedArrayFromHeap'>;

/** The active backend when it is tfjs-backend-wasm (tensors in its heap), else null. */
function heapBackend(): HeapBackend | null {
  if (tf.getBackend() !== 'wasm') return null;
  const backend = tf.backend() as unknown as Partial<HeapBackend>;
  return typeof backend.makeOutput === 'function' && typeof backend.typedArrayFromHeap === 'function'
    ? (backend as HeapBackend)
    : null;
}

/**
 * AdamW with the update of torch.optim.AdamW: p *= 1 - lr*wd; m, v moments; p -= lr/bc1 * m /
 * (sqrt(v)/sqrt(bc2) + eps). Moments are variables created up front, so the number of live
 * tensors does not change from one step to the next.
 */
export class AdamW extends AdamWSchedule {
  private readonly parameters: NamedParameter[];
  readonly firstMoments: tf.Variable[];
  readonly secondMoments: tf.Variable[];

  /**
   * On the wasm backend each tensor's step is one pass of a WebAssembly kernel over the backend's
   * memory (engines/adamw-kernel.ts, `adamwStepTfjsOrder`), to the bit what the dozen tfjs
   * operations give, which cost about 5 ms a step on the 231k-parameter demo policy (11 s of its
   * 2,058 SFT steps). `fused: false` keeps the operations (for the test that compares them).
   */
  private readonly fused: boolean;

  constructor(parameters: NamedParameter[], settings: AdamWSettings, options: { fused?: boolean } = {}) {
    super(settings);
    this.fused = options.fused ?? true;
    this.parameters = parameters;
    this.firstMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
    this.secondMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
  }

  /**
   * Clips the gradients by their global norm and takes one step. A non-finite norm skips the step
   * (moments and weights untouched) and says so. Disposes nothing it was given.
   */
  apply(grads: readonly tf.Tensor[]): AdamWStepOutcome {
    const heap = this.fused ? heapBackend() : null;
    // The norm stays with tfjs's operations: a float32 loop in JavaScript gives the same bits
    // (each tensor's squares added in order) but took 2.0 ms where they take 0.5 (231k parameters).
    const gradNorm = tf.tidy(() => Math.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g)))).dataSync()[0]!));
    const start = this.beginStep(gradNorm);
    if (start.skipped) return start.skipped;
    const { learningRate, clip, biasCorrection1: bc1, biasCorrection2: bc2 } = start;
    const { beta1, beta2, epsilon, weightDecay } = this.settings;
    if (heap) {
      const constants = {
        clip,
        beta1,
        beta2,
        stepSize: learningRate / bc1,
        sqrtBc2: Math.sqrt(bc2),
        epsilon,
      };
      this.parameters.forEach((p, i) => {
        const decay = p.decay && weightDecay > 0 ? 1 - learningRate * weightDecay : 1;
        this.fusedStep(heap, i, grads[i]!, { ...constants, decay });
      });
      return { gradNorm, applied: true, learningRate };
    }
    tf.tidy(() => {
      this.parameters.forEach((p, i) => {
        const g = clip === 1 ? grads[i]! : tf.mul(grads[i]!, clip);
        const m = this.firstMoments[i]!;
        const v = this.secondMoments[i]!;
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const decayed =
          p.decay && weightDecay > 0 ? tf.mul(p.variable, 1 - learningRate * weightDecay) : p.variable;
        const denom = tf.add(tf.div(tf.sqrt(v), Math.sqrt(bc2)), epsilon);
        p.variable.assign(tf.sub(decayed, tf.mul(tf.div(m, denom), learningRate / bc1)));
      });
    });
    return { gradNorm, applied: true, learningRate };
  }

  /** Whether a step on the active backend runs the fused kernel (wasm, unless `fused: false`). */
  fusedOnBackend(): boolean {
    return this.fused && heapBackend() !== null;
  }

  /**
   * One tensor's step into new tensors of the wasm heap (the old ones may be shared: tfjs tensors
   * are immutable, and a clone shares its data), assigned to the parameter and its moments.
   */
  private fusedStep(heap: HeapBackend, i: number, g: tf.Tensor, constants: AdamWTfjsConstants): void {
    const targets = [this.parameters[i]!.variable, this.firstMoments[i]!, this.secondMoments[i]!];
    const outputs = targets.map((t) => heap.makeOutput([...t.shape], 'float32'));
    // Views after every allocation: an allocation may grow the heap, which detaches earlier views.
    const [p, m, v] = outputs.map((o, k) => {
      const view = heap.typedArrayFromHeap(o);
      view.set(heap.typedArrayFromHeap(targets[k]!));
      return view;
    });
    adamwStepTfjsOrder(p!, heap.typedArrayFromHeap(g), m!, v!, constants);
    outputs.forEach((info, k) => {
      const tensor = tf.engine().makeTensorFromTensorInfo(info);
      targets[k]!.assign(tensor);
      tensor.dispose();
    });
  }

  dispose(): void {
    for (const t of [...this.firstMoments, ...this.secondMoments]) t.dispose();
  }
}
