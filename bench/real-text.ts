// The real-text task's baselines (issue 39 items 2 and 4): Wikipedia leads (scripts/fetch-data.sh)
// indexed with SQLite FTS5, Natural Questions a lead answers and questions generated from the
// leads' descriptions (src/run/real-text.ts), split by page. On the test split, for each reader
// (the extractive reader; the Llama generator when SmolLM2's GGUF is in .cache/models): the
// reader's ceiling (the golden lead alone), the direct answer (no evidence) and naive RAG (one
// FTS5 search with the question's words, the top hit read), each with exact match and the judge's
// full score, through the run's own ports (openRun on the dataset's config, as `searcher-rl train`
// builds them). One JSON line per figure. Nothing here is random (greedy decoding, BM25, the split
// by the page's hash), so a second seed would print the same figures.
//
//   bash scripts/fetch-data.sh && npm run bench:real-text
//   npm run bench:real-text -- --split validation --generated 300 --limit 20 --readers extractive
//
// The Searcher's rows (SFT, GRPO) are not measured here: `npm run bench:search-r1` trains SmolLM2
// on the same data (examples/smollm2/real-text.yaml) and prints them beside these.
import { figurePrinter } from './figures';
import { access, appendFile, mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import { readRlDataset } from '../src/adapters/store/parquet/index';
import { acceptedAnswers } from '../src/core/reward/exact-match';
import { resolvePorts } from '../src/container';
import { createPortGateway } from '../src/core/calls/gateway';
import { isJudgeSuccess } from '../src/core/reward/success';
import type { PromptRecord } from '../src/core/types';
import type { Evidence } from '../src/ports/types';
import { naiveRagScript } from '../src/run/baseline-scripts';
import { loadRunConfig } from '../src/run/config';
import { goldenEvidenceFrom } from '../src/run/curate/data';
import { measureReaderCeiling } from '../src/run/reader-ceiling';
import {
  buildRealTextDataset,
  isExactMatchAny,
  readWikiLeadsFile,
  type RealTextQuestion,
  writeRealTextDataset,
} from '../src/run/real-text';
import { openRun, type RunSession } from '../src/run/session';
import { createSearcher } from '../src/searcher';

const { values: args } = parseArgs({
  options: {
    split: { type: 'string', default: 'test' },
    generated: { type: 'string', default: '300' },
    limit: { type: 'string' },
    dir: { type: 'string', default: join('.cache', 'real-text') },
    readers: { type: 'string', default: 'extractive,llama' },
    baselines: { type: 'string', default: 'reader_ceiling,direct_answer,naive_rag' },
  },
});
const split = args.split as 'train' | 'validation' | 'test';
const dataDir = resolve(args.dir!);
const root = resolve(import.meta.dirname, '..');
const leadsPath = join(
  process.env.SEARCHER_RL_DATA ?? join(root, '.cache', 'data'),
  'wiki-leads',
  'summaries_en-us.json',
);
const nqPath = join(root, 'src/adapters/store/parquet/__fixtures__/nq_search_test.parquet');
const modelPath = join(
  process.env.SEARCHER_RL_MODELS ?? join(root, '.cache', 'models'),
  'SmolLM2-135M-Instruct.Q4_1.gguf',
);

const print = figurePrinter('real-text');

// The dataset, made from the fetched leads and the repository's NQ sample (rewritten each time: cheap).
const leads = await readWikiLeadsFile(leadsPath);
const nq = (await readRlDataset(nqPath)).map((p) => ({
  uid: p.uid,
  question: p.question,
  answers: [...acceptedAnswers(p)],
}));
const dataset = buildRealTextDataset(leads, nq, { generated: Number(args.generated) });
await writeRealTextDataset(dataDir, dataset);
print('dataset', dataset.questions.length, { dir: dataDir, ...dataset.counts });

const asked = dataset.questions.filter((q) => q.split === split);
const limit = args.limit === undefined ? asked.length : Number(args.limit);
const bySource = (source: RealTextQuestion['source']) =>
  asked.filter((q) => q.source === source).slice(0, limit);
const evaluated = [...bySource('nq'), ...bySource('generated:description')];
const row = new Map(evaluated.map((q) => [q.uid, q]));

interface Outcome {
  uid: string;
  answer: string;
  judgeFull: boolean;
  /** A failed generator or judge call (not counted as right; counted, not hidden). */
  failed: boolean;
}

const answersDir = join(root, '.cache', 'bench-real-text');

/**
 * One figure a source: exact match (any reference answer, SQuAD normalisation) and the judge's
 * full score; every answer is kept in .cache/bench-real-text/answers-READER.jsonl for review.
 */
async function report(reader: string, baseline: string, outcomes: readonly Outcome[], seconds: number) {
  await mkdir(answersDir, { recursive: true });
  await appendFile(
    join(answersDir, `answers-${reader}.jsonl`),
    outcomes
      .map((o) => {
        const q = row.get(o.uid)!;
        const { uid, source, question, reference, answers } = q;
        const exactMatch = isExactMatchAny(o.answer, answers);
        const { answer, judgeFull, failed } = o;
        return `${JSON.stringify({ baseline, uid, source, question, reference, answer, exactMatch, judgeFull, failed })}\n`;
      })
      .join(''),
  );
  for (const source of ['nq', 'generated:description', 'all'] as const) {
    const mine = outcomes.filter((o) => source === 'all' || row.get(o.uid)!.source === source);
    if (mine.length === 0) continue;
    const em = mine.filter((o) => isExactMatchAny(o.answer, row.get(o.uid)!.answers)).length;
    const judge = mine.filter((o) => o.judgeFull).length;
    print(`${baseline}_judge_full`, judge / mine.length, { reader, split, source, questions: mine.length });
    print(`${baseline}_exact_match`, em / mine.length, { reader, split, source, questions: mine.length });
  }
  print(`${baseline}_seconds`, seconds, { reader, split, questions: outcomes.length });
  print(`${baseline}_failed_calls`, outcomes.filter((o) => o.failed).length, { reader, split });
}

const prompts: PromptRecord[] = evaluated.map((q) => ({
  uid: q.uid,
  question: q.question,
  reference: q.reference,
  goldenBasenames: [...q.golden],
}));

async function measure(reader: string, session: RunSession): Promise<void> {
  const ports = await resolvePorts(session.container);
  const gateway = createPortGateway(
    { generator: ports.generator, judge: ports.judge },
    session.config.searcher.calls,
  );
  const answerAndScore = async (q: RealTextQuestion, evidence: Evidence[]): Promise<Outcome> => {
    try {
      const { answer } = await gateway.answer(q.question, evidence);
      const verdict = await gateway.score(q.question, answer, q.reference);
      return { uid: q.uid, answer, judgeFull: isJudgeSuccess(verdict.score), failed: false };
    } catch {
      return { uid: q.uid, answer: '', judgeFull: false, failed: true };
    }
  };

  // The reader ceiling: the golden lead alone (as src/run/reader-ceiling.ts gives it).
  if (baselines.has('reader_ceiling')) {
    const started = performance.now();
    const golden = await goldenEvidenceFrom(session.env.dbPath);
    const ceiling: Outcome[] = [];
    try {
      for (const q of evaluated)
        ceiling.push(
          await answerAndScore(q, await golden.lookup({ episode: { goldenBasenames: q.golden } })),
        );
    } finally {
      golden.close();
    }
    await report(reader, 'reader_ceiling', ceiling, (performance.now() - started) / 1000);
  }

  // Direct answer: the generator with no evidence.
  if (baselines.has('direct_answer')) {
    const started = performance.now();
    const direct: Outcome[] = [];
    for (const q of evaluated) direct.push(await answerAndScore(q, []));
    await report(reader, 'direct_answer', direct, (performance.now() - started) / 1000);
  }

  if (baselines.has('naive_rag')) await measureNaiveRag(reader, session, ports);
}

/**
 * Naive RAG: the run's baseline script (one search with the question's words, the top hit read).
 * Episodes go in groups of `RAG_BATCH`: a local model answers one at a time, and 64 episodes
 * queued on it would pass the pipeline's reward deadline (90 s), which leaves their answers empty.
 */
const RAG_BATCH = 8;
async function measureNaiveRag(
  reader: string,
  session: RunSession,
  ports: Awaited<ReturnType<typeof resolvePorts>>,
): Promise<void> {
  const started = performance.now();
  const { adapters: _adapters, ...sections } = session.config.searcher;
  const searcher = createSearcher(
    {
      ...ports,
      policy: createScriptedPolicy({ tokenizer: session.policy.tokenizer, script: naiveRagScript() }),
    },
    {
      ...sections,
      episode: { ...sections.episode, temperature: 0 },
      rl: { ...sections.rl, nAgent: 1 },
      reward: { ...sections.reward, weights: 'default' },
    },
  );
  const rag: Outcome[] = [];
  let goldenTopHit = 0;
  for (let start = 0; start < prompts.length; start += RAG_BATCH) {
    const batch = await searcher.collect(prompts.slice(start, start + RAG_BATCH), { nAgent: 1 });
    for (const { trajectory: t } of batch.episodes) {
      rag.push({
        uid: t.promptUid,
        answer: t.finalAnswer,
        judgeFull: isJudgeSuccess(t.rewardDetail?.components.judgeScore),
        // An error, or no reward (a pipeline deadline cut the episode's answer or its judging).
        failed: t.error !== null || t.reward === null,
      });
      if (t.retrievedBasenames.some((b) => t.goldenBasenames.includes(b))) goldenTopHit++;
    }
  }
  await report(reader, 'naive_rag', rag, (performance.now() - started) / 1000);
  print('naive_rag_golden_top_hit', goldenTopHit / prompts.length, {
    reader,
    split,
    questions: prompts.length,
  });
}

const readers = args.readers!.split(',');
const baselines = new Set(args.baselines!.split(','));
const hasModel = await access(modelPath).then(
  () => true,
  () => false,
);
for (const reader of readers) {
  await rm(join(answersDir, `answers-${reader}.jsonl`), { force: true });
  if (reader === 'llama' && !hasModel) {
    print('skipped', null, { reader, reason: `no ${modelPath} (bash scripts/fetch-models.sh)` });
    continue;
  }
  const config = await loadRunConfig(join(dataDir, 'config.yaml'), {
    overrides: [
      `runsDir=${join(root, '.cache', 'bench-real-text')}`,
      `runId=${reader}-${Date.now()}`,
      // One local model answers one question at a time: the episodes' calls wait their turn
      // (maxConcurrent 1) with no timeout, instead of 64 at once timing out at the default 60 s.
      ...(reader === 'llama'
        ? [
            `searcher.adapters.generator=${JSON.stringify({ type: 'llama', model: modelPath })}`,
            'searcher.calls.generator={maxConcurrent: 1, timeoutMs: null}',
            'searcher.pipeline.deadlines={rewardTimeoutMs: 3600000, totalTimeoutMs: 3600000}',
          ]
        : []),
    ],
  });
  const session = await openRun(config, { kind: 'fresh' });
  try {
    await measure(reader, session);
    // The run's own reader-ceiling measure on its evaluation split (the dataset's test rows), as
    // `searcher-rl train` prints it before training: the same figure as reader_ceiling_judge_full
    // (all), checked for the extractive reader only (the Llama generator's calls are the bench's time).
    if (
      reader === 'extractive' &&
      split === 'test' &&
      args.limit === undefined &&
      baselines.has('reader_ceiling')
    ) {
      const c = await measureReaderCeiling(session);
      if (c)
        print('run_reader_ceiling', c.ceiling, {
          reader,
          split: c.split,
          questions: c.questions,
          answered: c.answered,
        });
    }
  } finally {
    await session.close();
  }
}
// The Searcher's rows (SFT warm start, GRPO from the instruct model and from SFT): `npm run
// bench:search-r1`, which runs this bench first for its baselines.
print('searcher_rows', null, { note: 'SFT and GRPO rows: npm run bench:search-r1' });
