// Bad input: configurations and datasets with every field wrong, huge strings, traversal in names
// and basenames, non-UTF-8 bytes. Each must end as a typed error naming the row or field, and
// nothing may be written outside the run folder.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { loadRunConfig, parseRunConfig } from '../../src/run/config';
import { trainRun } from '../../src/run/run';
import { SearcherError } from '../../src/core/errors';
import { parseIcdText } from '../../src/core/icd/parse';
import { checkPromptRecords } from '../../src/core/prompt-records';
import type { PromptRecord } from '../../src/core/types';

interface Case {
  name: string;
  /** What the error must name (a field or a row). */
  names: RegExp;
  run: () => unknown;
}

const huge = 'x'.repeat(5_000_000);

async function listAll(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    out.push(`${prefix}${entry.name}`);
    if (entry.isDirectory()) out.push(...(await listAll(join(dir, entry.name), `${prefix}${entry.name}/`)));
  }
  return out;
}

export async function badInput(root: string): Promise<Record<string, unknown>> {
  const sandbox = join(root, 'sandbox');
  const runsDir = join(sandbox, 'runs');
  await mkdir(runsDir, { recursive: true });
  const file = async (name: string, bytes: string | Uint8Array) => {
    const path = join(root, name);
    await writeFile(path, bytes);
    return path;
  };
  const everyFieldWrong = {
    runsDir: 3,
    runId: '../escape',
    seed: 'one',
    corpus: { decks: -1 },
    policy: { layers: 0, backend: 'gpu9' },
    sft: { epochs: 'x' },
    phases: [{ name: 'sft', steps: -2, weights: 'nope' }],
    trainer: { batchSize: 0 },
    searcher: { rl: { nAgent: 0 } },
    evaluation: { split: 'dev' },
    extra: true,
  };
  const prompts = (over: Record<string, unknown>) =>
    [
      { uid: 'a', question: 'q', reference: 'r' },
      { uid: 'b', question: 'q', reference: 'r', ...over },
    ] as unknown as PromptRecord[];
  const store = createJsonlStore({ dir: runsDir });
  const cases: Case[] = [
    {
      name: 'config: every field wrong',
      names:
        /runsDir[\s\S]*runId[\s\S]*seed[\s\S]*corpus\.decks[\s\S]*policy\.layers[\s\S]*policy\.backend[\s\S]*sft\.epochs[\s\S]*phases\.0\.steps[\s\S]*trainer\.batchSize[\s\S]*searcher\.rl\.nAgent[\s\S]*evaluation\.split[\s\S]*extra/,
      run: () => parseRunConfig(everyFieldWrong),
    },
    {
      name: 'config file: every field wrong (JSON)',
      names: /bad\.json: runsDir/,
      run: async () => loadRunConfig(await file('bad.json', JSON.stringify(everyFieldWrong))),
    },
    { name: 'config: huge runId', names: /runId/, run: () => parseRunConfig({ runId: huge }) },
    {
      name: 'config: traversal in runId',
      names: /runId/,
      run: () => parseRunConfig({ runsDir, runId: '../../outside' }),
    },
    {
      name: 'config: traversal in a phase name',
      names: /phases/,
      run: () => parseRunConfig({ phases: [{ name: '../x', steps: 1, weights: 'phase1' }] }),
    },
    {
      name: 'config file: non-UTF-8 bytes',
      names: /latin1\.yaml[\s\S]*UTF-8/,
      run: async () =>
        loadRunConfig(
          await file(
            'latin1.yaml',
            new Uint8Array([0x72, 0x75, 0x6e, 0x49, 0x64, 0x3a, 0x20, 0xe9, 0xff, 0xfe, 0x0a]),
          ),
        ),
    },
    {
      name: 'config file: not YAML',
      names: /broken\.yaml/,
      run: async () => loadRunConfig(await file('broken.yaml', 'seed: [1, 2\ntrainer: {')),
    },
    {
      name: 'config file: empty',
      names: /--config/,
      run: async () => loadRunConfig(await file('empty.yaml', '# nothing\n')),
    },
    {
      name: 'config file: a list, not a mapping',
      names: /list\.json: \(root\)/,
      run: async () => loadRunConfig(await file('list.json', '[1,2]')),
    },
    {
      name: 'config file: wrong extension',
      names: /--config/,
      run: async () => loadRunConfig(await file('config.txt', 'seed: 1')),
    },
    {
      name: 'dataset: uid missing',
      names: /row 1[\s\S]*uid|uid[\s\S]*row 1/,
      run: () => checkPromptRecords(prompts({ uid: undefined }), { needsReference: true }),
    },
    {
      name: 'dataset: empty question',
      names: /question/,
      run: () => checkPromptRecords(prompts({ question: ' ' }), { needsReference: true }),
    },
    {
      name: 'dataset: reference a number',
      names: /reference/,
      run: () => checkPromptRecords(prompts({ reference: 4 }), { needsReference: true }),
    },
    {
      name: 'dataset: reference missing where the judge needs it',
      names: /reference/,
      run: () => checkPromptRecords(prompts({ reference: undefined }), { needsReference: true }),
    },
    {
      name: 'dataset: goldenBasenames not an array',
      names: /goldenBasenames/,
      run: () => checkPromptRecords(prompts({ goldenBasenames: 'a.png' }), { needsReference: true }),
    },
    {
      name: 'dataset: empty basename',
      names: /goldenBasenames\.0/,
      run: () => checkPromptRecords(prompts({ goldenBasenames: [''] }), { needsReference: true }),
    },
    {
      name: 'dataset: a record that is not an object',
      names: /row 1|\(record\)/,
      run: () =>
        checkPromptRecords(
          [{ uid: 'a', question: 'q', reference: 'r' }, 'oops'] as unknown as PromptRecord[],
          { needsReference: true },
        ),
    },
    {
      name: 'ICD dataset: a line that is not JSON (non-UTF-8 bytes)',
      names: /line 2/,
      run: () => parseIcdText(`{"a":1}\n${Buffer.from([0xff, 0xfe, 0x7b]).toString('utf8')}\n`, 'jsonl'),
    },
    {
      name: 'ICD dataset: not JSON',
      names: /\(file\)|not valid JSON/,
      run: () => parseIcdText(`{${huge}`, 'json'),
    },
    {
      name: 'store: traversal in a run id',
      names: /runId/,
      run: () => store.doAppend([{ kind: 'event', runId: '..', step: 0, time: 0, data: {} }]),
    },
    {
      name: 'store: traversal in a blob key',
      names: /key/,
      run: () => store.doPutBlob('run', '../../outside.bin', new Uint8Array([1])),
    },
    {
      name: 'store: absolute blob key',
      names: /key/,
      run: () => store.doPutBlob('run', '/tmp/outside.bin', new Uint8Array([1])),
    },
    {
      name: 'train: traversal in runId (CLI job)',
      names: /runId/,
      run: () => trainRun(parseRunConfig({ runsDir, runId: '../outside' })),
    },
  ];
  const before = new Set(await listAll(root));
  const failures: string[] = [];
  let typed = 0;
  for (const c of cases) {
    let error: unknown = null;
    try {
      await c.run();
    } catch (e) {
      error = e;
    }
    if (error === null) failures.push(`${c.name}: accepted`);
    else if (!SearcherError.isInstance(error))
      failures.push(
        `${c.name}: untyped ${(error as Error)?.name}: ${String((error as Error)?.message).slice(0, 160)}`,
      );
    else if (!c.names.test((error as Error).message))
      failures.push(
        `${c.name}: the message does not name ${c.names}: ${(error as Error).message.slice(0, 300)}`,
      );
    else typed++;
  }
  // The files this script wrote itself (the bad config files) are expected; nothing else may appear.
  const own = new Set(['bad.json', 'latin1.yaml', 'broken.yaml', 'empty.yaml', 'list.json', 'config.txt']);
  const written = (await listAll(root)).filter(
    (p) => !before.has(p) && !own.has(p) && !p.startsWith('sandbox/runs'),
  );
  return {
    figure: 'bad-input',
    cases: cases.length,
    typedErrorsNamingTheField: typed,
    failures,
    writtenOutsideRunsDir: written,
  };
}
