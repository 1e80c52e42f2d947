// In-context demonstration selection on the embedded demo (docs/method.md#icd-selection): raw RL
// data with pools of varying size (its beam trajectories from a beam search scored by the frozen
// model, as Lever-LM makes them) is normalised to K = 64, global positives are mined with the
// frozen model and injected into the training pools, trajectories are kept by commit-on-improve
// and quota, then a pointer selector (tfjs) is warmed up on the beam labels and trained with GRPO.
// Prints oracle@K over every ordered pair before/after injection and the held-out mean accuracy of
// random choice, cosine top-2, the beam search, the warm-up and GRPO. The whole comparison (every
// warm-up, GRPO with and without one, two seeds) is `npm run bench:icd`.
// test/icd-example.e2e.test.ts runs a smaller copy of this flow.
// Run: npx tsx examples/icd-selection.ts   (about half a minute on 2 cores with the wasm backend)
import { DEFAULT_ICD_FLOW_OPTIONS, runIcdFlow } from '../src/run/icd/flow';

const started = Date.now();
const result = await runIcdFlow({
  ...DEFAULT_ICD_FLOW_OPTIONS,
  log: (line) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`),
});
const { figures, heldOutIds } = result.data;
const { random, cosineTopK, beamSearch, warmUp, grpo } = result.heldOut;
const { before, after } = figures.oracle;
console.log(
  `oracle@64 over all 4,032 ordered pairs, training queries: mean best ${before.meanBest.toFixed(3)} before injection -> ${after.meanBest.toFixed(3)} after; a pair of accuracy 1 in ${before.shareFull.toFixed(3)} -> ${after.shareFull.toFixed(3)} of the pools`,
);
console.log(`held-out mean VQA accuracy (${heldOutIds.length} queries, each from its own pool):`);
console.log(
  `  random ${random.toFixed(3)} | cosine top-2 ${cosineTopK.toFixed(3)} | beam search ${beamSearch.toFixed(3)} (reads the answers) | warm-up on beam labels ${warmUp?.toFixed(3)} | GRPO ${grpo.toFixed(3)}`,
);
