// The TypeScript side of python/tests/test_hf_checkpoints.py (run with `npx tsx`):
//
//   export OUT   a tiny slide run (SFT warm start and RL steps) in OUT/runs; writes OUT/export.json:
//                its latest checkpoint's Hugging Face folder, the slide environment's prompts and
//                episodes (their text, the TS tokenizer's ids) and the TS logits on each.
//   tokenizer OUT N
//                the vocabulary tokenizer of the hard words (src/adapters/tfjs/__fixtures__) as
//                OUT/tokenizer.json, and N seeded random texts with the TS ids in OUT/texts.json.
//   forward DIR TEXTS OUT
//                a tfjs policy made from the Hugging Face folder DIR (initFrom); for each text of
//                the JSON array TEXTS, its ids and logits, written to OUT with the added tags' ids.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { HARD_WORDS, textArbitrary } from '../../src/adapters/tfjs/__fixtures__/tokenizer-texts';
import { tokenizerJsonOf } from '../../src/adapters/tfjs/hf/tokenizer-json';
import { createTfjsPolicy, type TfjsPolicy } from '../../src/adapters/tfjs/index';
import { createVocabularyTokenizer } from '../../src/core/protocol/tokenizer';
import { buildPrompt } from '../../src/core/episode/prompt';
import type { Trajectory } from '../../src/core/trajectory/trajectory';
import { readLatestCheckpoint } from '../../src/run/checkpoints';
import { parseRunConfig } from '../../src/run/config';
import { runStore } from '../../src/run/folder';
import { trainRun } from '../../src/run/run';
import { openRun } from '../../src/run/session';

const round = (row: Float32Array) => Array.from(row);

async function exportRun(out: string): Promise<void> {
  const config = parseRunConfig({
    runsDir: join(out, 'runs'),
    runId: 'tiny',
    corpus: { decks: 3, minSlides: 4, maxSlides: 4, smallPrintRate: 0.5, cacheDir: join(out, 'corpus') },
    policy: { layers: 2, width: 32, heads: 4, contextLength: 640, backend: 'wasm' },
    sft: { demonstrations: 6, epochs: 1, batchSize: 6 },
    phases: [{ name: 'phase1', steps: 2, weights: 'default' }],
    trainer: { batchSize: 2, saveFreq: 1 },
    searcher: { rl: { nAgent: 2 } },
    evaluation: { limit: 2 },
  });
  const started = performance.now();
  await trainRun(config, {});
  const trainSeconds = (performance.now() - started) / 1000;
  const runDir = join(out, 'runs', 'tiny');
  const store = runStore(runDir);
  const latest = await readLatestCheckpoint(store, 'phase1');
  if (!latest) throw new Error('the run wrote no checkpoint');
  const folder = join(runDir, 'phase1', 'blobs', latest.key, 'policy');
  const session = await openRun(
    config,
    { kind: 'latest', storeRuns: ['phase1'] },
    {},
    { runId: 'tiny', runDir },
  );
  try {
    const policy = session.policy as TfjsPolicy;
    const tokenizer = policy.tokenizer;
    const instructions = config.searcher.episode.instructions;
    const prompts = session.env
      .evaluation('test')
      .prompts.slice(0, 4)
      .map((p) => buildPrompt(p.question, 'searcher', instructions));
    // Whole episodes as the policy saw them: prompt, turns, observations (ids token-in/token-out).
    const episodes = (await store.doQuery({ kind: 'trajectory', runId: 'phase1' }))
      .slice(0, 4)
      .map((r) => (r.data as Trajectory).fullInputIds.slice(0, policy.contextLength));
    const cases = [
      ...prompts.map((text) => ({ kind: 'prompt', text, ids: tokenizer.encode(text) })),
      ...episodes.map((ids) => ({ kind: 'episode', text: tokenizer.decode(ids), ids })),
    ];
    const rows = [];
    for (const c of cases)
      rows.push({ ...c, textIds: tokenizer.encode(c.text), logits: (await policy.logits(c.ids)).map(round) });
    // The folder read back through initFrom gives the run's own numbers.
    const reread = await createTfjsPolicy({ initFrom: folder, backend: 'wasm' });
    let rereadMaxDiff = 0;
    for (const c of rows.slice(0, 2)) {
      const again = await reread.logits(c.ids);
      again.forEach((row, t) =>
        row.forEach((v, k) => {
          rereadMaxDiff = Math.max(rereadMaxDiff, Math.abs(v - c.logits[t]![k]!));
        }),
      );
    }
    reread.dispose();
    await writeFile(
      join(out, 'export.json'),
      JSON.stringify({ folder, trainSeconds, vocabSize: tokenizer.vocabSize, rereadMaxDiff, cases: rows }),
    );
  } finally {
    await session.close();
  }
}

async function forward(dir: string, textsPath: string, out: string): Promise<void> {
  const texts = JSON.parse(await readFile(textsPath, 'utf8')) as string[];
  const policy = await createTfjsPolicy({ initFrom: dir, backend: 'wasm' });
  const rows = [];
  for (const text of texts) {
    const ids = policy.tokenizer.encode(text);
    rows.push({ text, ids, logits: (await policy.logits(ids)).map(round) });
  }
  const tags = Object.fromEntries(policy.addedTags.map((t) => [t, policy.tokenizer.specialTokenId(t)]));
  await writeFile(
    out,
    JSON.stringify({ vocabSize: policy.tokenizer.vocabSize, eos: policy.tokenizer.eosTokenId, tags, rows }),
  );
  policy.dispose();
}

async function tokenizerCases(out: string, count: number): Promise<void> {
  const tokenizer = createVocabularyTokenizer(HARD_WORDS);
  await writeFile(join(out, 'tokenizer.json'), JSON.stringify(tokenizerJsonOf(tokenizer)));
  // Python's tokenizers takes well-formed Unicode only (a lone surrogate is not a Rust string).
  const wellFormed = textArbitrary.filter((t) => !/[\uD800-\uDFFF]/u.test(t));
  const texts = fc.sample(wellFormed, { numRuns: count, seed: 26 });
  await writeFile(
    join(out, 'texts.json'),
    JSON.stringify(texts.map((text) => ({ text, ids: tokenizer.encode(text) }))),
  );
}

const [command, ...args] = process.argv.slice(2);
if (command === 'export' && args.length === 1) await exportRun(args[0]!);
else if (command === 'tokenizer' && args.length === 2) await tokenizerCases(args[0]!, Number(args[1]));
else if (command === 'forward' && args.length === 3) await forward(args[0]!, args[1]!, args[2]!);
else {
  process.stderr.write(
    'usage: hf-roundtrip.ts export OUT | tokenizer OUT N | forward DIR TEXTS.json OUT.json\n',
  );
  process.exit(2);
}
