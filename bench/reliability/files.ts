// Hostile files: tampered checkpoints (tfjs policy, ICD pointer selector, ONNX export), hostile data
// files through every reader, and attempts to game the rule judge. Each tampered checkpoint must be
// refused with a typed error naming the file; each hostile data file refused with a typed error
// naming the file and line, or accepted where it is only unusual (a BOM, CRLF, blank lines); each
// gaming answer scored below 1.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createMemoryStore } from '../../src/adapters/mock/memory-store';
import { createRuleJudge } from '../../src/adapters/rule-judge/index';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { importJsonlRuns } from '../../src/adapters/store/sqlite/import-jsonl';
import { SearcherError } from '../../src/core/errors';
import { parseIcdText } from '../../src/core/icd/parse';
import { checkAnswerCorrectness } from '../../src/core/reward/search-r1';
import { readConfigFile } from '../../src/run/config-file';
import { readPromptDataset } from '../../src/run/dataset';
import { buildServedEnvironment } from '../../src/server/served-environment';
import { outcome, tamperedCheckpoints } from './files-checkpoints';

interface DataReader {
  name: string;
  row(i: number): string;
  read(dir: string, bytes: Uint8Array): Promise<{ count: number; file: string }>;
}

const prompt = (i: number) => JSON.stringify({ uid: `u${i}`, question: `Question ${i}?`, reference: 'Café' });
const storeRow = (i: number) =>
  JSON.stringify({ kind: 'metric', runId: 'run', step: i, time: 0, data: { i } });
const atFile = async (dir: string, name: string, bytes: Uint8Array) => {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, name), bytes);
  return join(dir, name);
};

const READERS: DataReader[] = [
  {
    name: 'prompt dataset',
    row: prompt,
    read: async (dir, bytes) => {
      const file = await atFile(dir, 'data.jsonl', bytes);
      return { count: (await readPromptDataset(file)).length, file };
    },
  },
  {
    name: 'serve-env --tasks',
    row: prompt,
    read: async (dir, bytes) => {
      const file = await atFile(dir, 'tasks.jsonl', bytes);
      const { served, close } = await buildServedEnvironment({ tasksFile: file });
      await close();
      return { count: served.tasks.length, file };
    },
  },
  {
    name: 'JSONL store',
    row: storeRow,
    read: async (dir, bytes) => {
      const file = await atFile(join(dir, 'run'), 'metric.jsonl', bytes);
      return {
        count: (await createJsonlStore({ dir }).doQuery({ kind: 'metric', runId: 'run' })).length,
        file,
      };
    },
  },
  {
    name: 'curate import',
    row: storeRow,
    read: async (dir, bytes) => {
      const file = await atFile(join(dir, 'run'), 'metric.jsonl', bytes);
      const target = createMemoryStore();
      await importJsonlRuns(dir, target);
      return { count: target.records.length, file };
    },
  },
  {
    name: 'ICD records',
    row: (i) =>
      JSON.stringify({
        query_id: i,
        candidate_pool_indices: [1, 2, 3],
        pointer_candidates: [{ pointer: [0, 1], vqa_acc_score: 1, gen_method: 'beam' }],
      }),
    read: async (dir, bytes) => {
      const file = await atFile(dir, 'records.jsonl', bytes);
      return { count: parseIcdText(bytes, 'jsonl', { source: file }).length, file };
    },
  },
];

const utf8 = (s: string) => new TextEncoder().encode(s);
const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);
const HUGE = 16 * 1024 * 1024;

/** Hostile and unusual files: [name, bytes from the reader's rows, the line an error must name, or null: accept 2 rows]. */
const DATA_CASES: Array<[string, (row: (i: number) => string) => Uint8Array, number | null]> = [
  ['null row', (r) => utf8(`${r(1)}\nnull\n`), 2],
  ['number row', (r) => utf8(`${r(1)}\n${r(2)}\n42\n`), 3],
  ['string row', (r) => utf8(`"just text"\n${r(1)}\n`), 1],
  ['array row', (r) => utf8(`${r(1)}\n[${r(2)}]\n`), 2],
  ['not JSON', (r) => utf8(`${r(1)}\n{"uid": \n`), 2],
  [
    'Latin-1 text',
    (r) => Uint8Array.from([...utf8(`${r(1)}\n`), ...latin1(`${r(2).slice(0, -1)}, "note": "café"}\n`)]),
    2,
  ],
  [
    'UTF-16LE with its BOM',
    (r) => Uint8Array.from([0xff, 0xfe, ...[...`${r(1)}\n`].flatMap((c) => [c.charCodeAt(0), 0])]),
    1,
  ],
  [`a ${HUGE / 2 ** 20} MiB line that is not JSON`, (r) => utf8(`${r(1)}\n${'x'.repeat(HUGE)}\n`), 2],
  ['UTF-8 BOM (accepted)', (r) => Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8(`${r(1)}\n${r(2)}\n`)]), null],
  ['CRLF line ends (accepted)', (r) => utf8(`${r(1)}\r\n${r(2)}\r\n`), null],
  ['blank lines (accepted)', (r) => utf8(`\n${r(1)}\n   \n\n${r(2)}\n`), null],
];

async function dataFiles(root: string) {
  let tried = 0;
  let refusedNamingLine = 0;
  let acceptedAsExpected = 0;
  let longestMessage = 0;
  let peakRssMb = 0;
  const failures: string[] = [];
  let n = 0;
  for (const reader of READERS) {
    for (const [name, bytesOf, line] of DATA_CASES) {
      tried++;
      const dir = join(root, `data-${n++}`);
      let file = '';
      try {
        const result = await reader.read(dir, bytesOf(reader.row));
        file = result.file;
        if (line === null && result.count === 2) acceptedAsExpected++;
        else failures.push(`${reader.name} / ${name}: accepted (${result.count} rows)`);
      } catch (error) {
        const message = (error as Error)?.message ?? String(error);
        longestMessage = Math.max(longestMessage, message.length);
        if (line === null) failures.push(`${reader.name} / ${name}: refused: ${message.slice(0, 200)}`);
        else if (!SearcherError.isInstance(error))
          failures.push(`${reader.name} / ${name}: untyped: ${message.slice(0, 200)}`);
        else if (!message.includes(`line ${line}`) || !/\.jsonl/.test(message))
          failures.push(
            `${reader.name} / ${name}: does not name ${file || 'the file'} line ${line}: ${message.slice(0, 200)}`,
          );
        else refusedNamingLine++;
      }
      peakRssMb = Math.max(peakRssMb, process.memoryUsage().rss / 2 ** 20);
      await rm(dir, { recursive: true, force: true });
    }
  }
  // Config files: encoding only (their content is validated field by field elsewhere).
  const configs: Array<[string, Uint8Array, boolean]> = [
    ['config: Latin-1', latin1('seed: 3\nrunId: café\n'), false],
    [
      'config: BOM and CRLF (accepted)',
      Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8('seed: 3\r\nrunId: x\r\n')]),
      true,
    ],
  ];
  for (const [name, bytes, accept] of configs) {
    tried++;
    const path = await atFile(join(root, `config-${n++}`), 'run.yaml', bytes);
    const result = await outcome(() => readConfigFile(path), [path, 'line 2']);
    if (accept ? result === 'accepted' : result === 'named')
      accept ? acceptedAsExpected++ : refusedNamingLine++;
    else failures.push(`${name}: ${result}`);
  }
  return {
    readers: READERS.length + 1,
    cases: tried,
    refusedNamingFileAndLine: refusedNamingLine,
    acceptedAsExpected,
    failures,
    longestErrorMessageChars: longestMessage,
    peakRssMb: Math.round(peakRssMb),
  };
}

function gamingAttempts(n: number, format: (v: number) => string = String): string[] {
  const around = Array.from({ length: 60 }, (_, i) => n - 30 + i);
  return [
    around.map(format).join(', '),
    around.map(format).join(' '),
    `${format(n - 29)}-${format(n + 30)}`,
    `${format(n)} or ${format(n + 1)}`,
    `${format(n - 1)}, ${format(n)} or ${format(n + 1)}`,
    `${format(n)}/${format(n + 1)}`,
    `either ${format(n)} or ${format(n * 2)}`,
    `${format(n)} (maybe ${format(n + 10)})`,
  ];
}

async function ruleJudge() {
  const judge = createRuleJudge();
  const references: Array<[string, number, (v: number) => string]> = [
    ['1989', 1989, String],
    ['in 1989', 1989, String],
    ['1,200 employees', 1200, (v) => `${v.toLocaleString('en-US')} employees`],
    ['4.5 billion dollars', 4.5, (v) => `${v} billion dollars`],
    ['50%', 50, (v) => `${v}%`],
  ];
  let attempts = 0;
  let belowOne = 0;
  let maxScore = 0;
  let searchR1AtLeastOne = 0;
  let controls = 0;
  let controlsMatched = 0;
  for (const [reference, n, format] of references) {
    for (const answer of gamingAttempts(n, format)) {
      attempts++;
      const { score } = await judge.doScore('What is it?', answer, reference);
      if (score < 1) belowOne++;
      maxScore = Math.max(maxScore, score);
      if (checkAnswerCorrectness(answer, reference) >= 1) searchR1AtLeastOne++;
    }
    for (const answer of [reference, `It is ${reference}.`, `${reference}, I believe`]) {
      controls++;
      if ((await judge.doScore('What is it?', answer, reference)).score === 1) controlsMatched++;
    }
  }
  return {
    attempts,
    scoredBelowOne: belowOne,
    maxScore,
    correctAnswers: controls,
    correctScoredOne: controlsMatched,
    searchR1AnswerCheckAtLeastOne: searchR1AtLeastOne,
  };
}

export async function files(root: string): Promise<Record<string, unknown>> {
  await mkdir(root, { recursive: true });
  const started = Date.now();
  return {
    figure: 'files',
    checkpoints: await tamperedCheckpoints(join(root, 'checkpoints')),
    dataFiles: await dataFiles(join(root, 'data')),
    ruleJudge: await ruleJudge(),
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}
