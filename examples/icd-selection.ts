// In-context demonstration selection on the embedded demo (docs/method.md#icd-selection): raw RL
// data with pools of varying size is normalised to K = 64, global positives are mined with the
// frozen model and injected into the training pools, trajectories are kept by commit-on-improve
// and quota, then a pointer selector (tfjs) is warmed up on the beam labels and trained with GRPO.
// Prints oracle@K before/after injection and the held-out mean accuracy of random choice, the beam
// labels, the warm-up and GRPO. test/icd-example.test.ts runs a smaller copy of this flow.
// Run: npx tsx examples/icd-selection.ts   (about a minute on 2 cores with the wasm backend)
import { DEFAULT_ICD_FLOW_OPTIONS, runIcdFlow } from '../src/run/icd/flow';

const started = Date.now();
const result = await runIcdFlow({
  ...DEFAULT_ICD_FLOW_OPTIONS,
  log: (line) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`),
});
const { figures, heldOutIds } = result.data;
const { random, beam, warmUp, grpo } = result.heldOut;
console.log(
  `oracle@64 on the training queries: ${figures.oracleBefore.toFixed(3)} before injection -> ${figures.oracleAfter.toFixed(3)} after`,
);
console.log(`held-out mean VQA accuracy (${heldOutIds.length} queries, each from its own pool):`);
console.log(
  `  random ${random.toFixed(3)} | beam labels ${beam.toFixed(3)} | warm-up ${warmUp.toFixed(3)} | GRPO ${grpo.toFixed(3)}`,
);
