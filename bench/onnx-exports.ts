// Runs each export scripts/check-optimum-exports.py made (a tiny random model of each causal-LM
// family Optimum exports) through the ONNX policy and compares it with transformers: greedy tokens
// from two prompts, their log-probs (largest difference), and the numeric contract
// (cached decoding against logProbs over the full sequence). Prints one JSON line per family and a
// summary; exits 1 when a family that exported decodes differently.
//   npx tsx bench/onnx-exports.ts [.cache/optimum-exports]
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createOnnxPolicy } from '../src/adapters/onnx/policy';
import { incrementalLogProbError } from '../src/testing/policy-contract';

const dir = process.argv[2] ?? join(import.meta.dirname, '..', '.cache', 'optimum-exports');
const LOG_PROB_TOLERANCE = 1e-4;
const CONTRACT_TOLERANCE = 1e-5;

interface Reference {
  family: string;
  modelType: string;
  referenceDtype: string;
  eosTokenId: number;
  prompts: Array<{ promptIds: number[]; greedy: Array<{ tokenId: number; logProb: number }> }>;
}

const families = (await readdir(dir, { withFileTypes: true }))
  .filter((e) => e.isDirectory())
  .map((e) => e.name);
let decoded = 0;
let agreeing = 0;
let exportFailed = 0;
for (const family of families.sort()) {
  const modelDir = join(dir, family);
  if (existsSync(join(modelDir, 'export-error.txt'))) {
    exportFailed++;
    const error = (await readFile(join(modelDir, 'export-error.txt'), 'utf8')).trim();
    console.log(JSON.stringify({ figure: 'optimum-export', family, exported: false, error }));
    continue;
  }
  const reference = JSON.parse(await readFile(join(modelDir, 'reference.json'), 'utf8')) as Reference;
  decoded++;
  try {
    // 128 caps the context of every family and gives it to those that name none (BLOOM).
    const policy = await createOnnxPolicy({ modelDir, intraOpThreads: 1, contextLength: 128 });
    let tokens = 0;
    let sameTokens = 0;
    let maxLogProbDiff = 0;
    for (const p of reference.prompts) {
      const eos = p.greedy.findIndex((s) => s.tokenId === reference.eosTokenId);
      const expected = eos >= 0 ? p.greedy.slice(0, eos + 1) : p.greedy;
      const session = await policy.begin([p.promptIds]);
      const [out] = await session.generateTurn([0], {
        stopAfter: [],
        maxTokens: p.greedy.length,
        temperature: 0,
        topP: 1,
      });
      await session.end();
      tokens += Math.max(expected.length, out!.steps.length);
      out!.steps.forEach((step, k) => {
        if (step.tokenId !== expected[k]?.tokenId) return;
        sameTokens++;
        maxLogProbDiff = Math.max(maxLogProbDiff, Math.abs(step.logProb - expected[k]!.logProb));
      });
    }
    const contract = await incrementalLogProbError(policy, { temperature: 1, topP: 1 });
    const ok =
      sameTokens === tokens &&
      maxLogProbDiff < LOG_PROB_TOLERANCE &&
      contract.positionsHold &&
      contract.maxError < CONTRACT_TOLERANCE;
    if (ok) agreeing++;
    const { heads, headWidth, hasPositionIds } = policy.modelConfig;
    console.log(
      JSON.stringify({
        figure: 'optimum-export',
        family,
        modelType: reference.modelType,
        hasPositionIds,
        keyValueHeads: heads,
        headWidth,
        referenceDtype: reference.referenceDtype,
        greedyTokens: tokens,
        sameTokens,
        maxLogProbDiff,
        contractMaxError: contract.maxError,
        ok,
      }),
    );
    await policy.dispose();
  } catch (error) {
    console.log(
      JSON.stringify({ figure: 'optimum-export', family, exported: true, ok: false, error: String(error) }),
    );
  }
}
console.log(
  JSON.stringify({
    figure: 'optimum-exports-summary',
    families: families.length,
    exported: decoded,
    exportFailed,
    agreeWithTransformers: agreeing,
    logProbTolerance: LOG_PROB_TOLERANCE,
    contractTolerance: CONTRACT_TOLERANCE,
  }),
);
if (agreeing < decoded) process.exitCode = 1;
