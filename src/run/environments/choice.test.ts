import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../config';
import { ENVIRONMENTS, openServedEnvironment } from '../environment';

const kindOfRun = (input: unknown) => ENVIRONMENTS.find((e) => e.choosesRun(parseRunConfig(input)))?.kind;

describe('the environment registry', () => {
  it('chooses the same environment for a run and for the server: your data when named, else the slides', () => {
    expect(ENVIRONMENTS.map((e) => e.kind)).toEqual(['dataset', 'slides']);
    expect(kindOfRun({})).toBe('slides');
    expect(kindOfRun({ dataset: { path: 'questions.jsonl' } })).toBe('dataset');
    expect(ENVIRONMENTS.find((e) => e.choosesServed({ tasksFile: 'tasks.jsonl' }))?.kind).toBe('dataset');
    expect(ENVIRONMENTS.find((e) => e.choosesServed({}))?.kind).toBe('slides');
  });

  it("serves a task file's questions with no ports of its own (the configuration's are used)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-envs-'));
    try {
      const tasksFile = join(dir, 'tasks.jsonl');
      await writeFile(tasksFile, `${JSON.stringify({ uid: 'q1', question: 'Who?', reference: 'Ada' })}\n`);
      const source = await openServedEnvironment({ tasksFile });
      expect(source.adapters).toEqual({});
      expect(source.tasks.map((t) => [t.uid, t.question, t.reference])).toEqual([['q1', 'Who?', 'Ada']]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("serves the split asked for of a task file's split column, as a run splits it (train by default: no held-out row)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-envs-'));
    try {
      const row = (uid: string, split?: string) =>
        JSON.stringify({ uid, question: `${uid}?`, reference: 'x', ...(split && { split }) });
      const tasksFile = join(dir, 'tasks.jsonl');
      await writeFile(
        tasksFile,
        `${[row('a', 'train'), row('b'), row('c', 'test'), row('d', 'validation')].join('\n')}\n`,
      );
      const uids = async (tasksSplit?: 'train' | 'validation' | 'test') =>
        (await openServedEnvironment({ tasksFile, ...(tasksSplit && { tasksSplit }) })).tasks.map(
          (t) => t.uid,
        );
      expect(await uids()).toEqual(['a', 'b']);
      expect(await uids('train')).toEqual(['a', 'b']);
      expect(await uids('test')).toEqual(['c']);
      expect(await uids('validation')).toEqual(['d']);
      // A file of held-out rows only is the user's training set, as for a run.
      const heldOnly = join(dir, 'held.jsonl');
      await writeFile(heldOnly, `${[row('e', 'test'), row('f', 'test')].join('\n')}\n`);
      const served = await openServedEnvironment({ tasksFile: heldOnly });
      expect(served.tasks.map((t) => t.uid)).toEqual(['e', 'f']);
      await expect(openServedEnvironment({ tasksFile: heldOnly, tasksSplit: 'test' })).rejects.toThrow(
        /--split.*has no test rows \(train 2, validation 0, test 0\)/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
