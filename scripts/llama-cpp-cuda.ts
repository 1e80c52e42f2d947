// SmolLM2-135M-Instruct rollouts on CUDA with node-llama-cpp (the prebuilt
// @node-llama-cpp/linux-x64-cuda binary that ships in npm: nothing is built or downloaded), the
// same rollout workload as bench/llama.ts (the model's chat template around one prompt, every row
// sampling exactly NEW_TOKENS at temperature 1, top-p 1; an early end of turn goes on in another
// turn), printing one JSON line per figure: tokens/s for each row count, and the CPU's at the same
// sizes for the ratio.
//
//   npm install --no-save node-llama-cpp@3.21.1   # an optional peer dependency
//   npm run fetch-models                          # .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
//   npx tsx scripts/llama-cpp-cuda.ts             # GPU=vulkan, ROWS=1,16,64, NEW_TOKENS=64, CPU_THREADS=2
//
// A machine without CUDA (or without the binary's CUDA runtime) prints one `error` line from
// node-llama-cpp's load and exits 1.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHfTokenizer } from '../src/provider-utils/hf-tokenizer';
import { readGguf } from '../src/adapters/llama/gguf';
import { ggufTokenizerFiles } from '../src/adapters/llama/gguf-tokenizer';
import { createLlamaCppRollouts, type LlamaCppGpu } from '../src/adapters/llama/llama-cpp-rollouts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL = join(
  process.env.SEARCHER_RL_MODELS ?? join(ROOT, '.cache', 'models'),
  'SmolLM2-135M-Instruct.Q4_1.gguf',
);
const GPU = (process.env.GPU ?? 'cuda') as Exclude<LlamaCppGpu, false>;
const ROWS = (process.env.ROWS ?? '1,16,64').split(',').map(Number);
const NEW_TOKENS = Number(process.env.NEW_TOKENS ?? 64);
const CPU_THREADS = Number(process.env.CPU_THREADS ?? 2);
const REPEATS = 3;
const PROMPT =
  "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle on a stormy night. Describe the sea, the storm and the keeper's thoughts.";

const print = (line: Record<string, unknown>) =>
  console.log(JSON.stringify({ script: 'llama-cpp-cuda', ...line }));

if (!existsSync(MODEL)) {
  print({ error: `no model at ${MODEL}: run npm run fetch-models` });
  process.exit(1);
}
const gguf = readGguf(readFileSync(MODEL), MODEL);
const files = ggufTokenizerFiles(gguf);
const tokenizer = createHfTokenizer(files.tokenizerJson, files.tokenizerConfig, {
  vocabSize: (gguf.metadata.get('tokenizer.ggml.tokens') as unknown[]).length,
  eosTokenId: Number(gguf.metadata.get('tokenizer.ggml.eos_token_id')),
});
const prompt = tokenizer.encode(
  `<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n${PROMPT}<|im_end|>\n<|im_start|>assistant\n`,
);

/** Tokens/s of `rows` rollouts of NEW_TOKENS each (median of REPEATS after one warm-up), prefill included. */
async function measure(
  gpu: LlamaCppGpu,
  rows: number,
): Promise<{ tokensPerSecond: number; seconds: number[]; device: string }> {
  const rollouts = await createLlamaCppRollouts({
    model: MODEL,
    tokenizer,
    contextLength: prompt.length + NEW_TOKENS + 1,
    sequencesPerContext: rows,
    gpu,
    ...(gpu === false && { threads: CPU_THREADS }),
    seed: 0,
  });
  const seconds: number[] = [];
  try {
    for (let repeat = 0; repeat <= REPEATS; repeat++) {
      const t0 = performance.now();
      const session = await rollouts.begin(Array.from({ length: rows }, () => prompt));
      const remaining = new Array<number>(rows).fill(NEW_TOKENS);
      while (remaining.some((n) => n > 0)) {
        const ids = remaining.flatMap((n, i) => (n > 0 ? [i] : []));
        const outputs = await session.generateTurn(ids, {
          stopAfter: [],
          maxTokens: ids.map((i) => remaining[i]!),
          temperature: 1,
          topP: 1,
        });
        for (const o of outputs) remaining[o.rolloutId]! -= o.steps.length;
      }
      await session.end();
      if (repeat > 0) seconds.push((performance.now() - t0) / 1000);
    }
  } finally {
    await rollouts.dispose();
  }
  const median = [...seconds].sort((a, b) => a - b)[Math.floor(seconds.length / 2)]!;
  return { tokensPerSecond: (rows * NEW_TOKENS) / median, seconds, device: rollouts.device };
}

let failed = false;
for (const rows of ROWS) {
  for (const gpu of [GPU, false] as const) {
    try {
      const result = await measure(gpu, rows);
      print({
        figure: 'llama_cpp_rollout_tokens_per_s',
        device: result.device,
        rows,
        newTokens: NEW_TOKENS,
        value: Number(result.tokensPerSecond.toPrecision(4)),
        seconds: result.seconds.map((s) => Number(s.toPrecision(4))),
        ...(gpu === false && { threads: CPU_THREADS }),
      });
    } catch (error) {
      failed = true;
      print({
        figure: 'llama_cpp_rollout_tokens_per_s',
        gpu,
        rows,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
process.exit(failed ? 1 : 0);
