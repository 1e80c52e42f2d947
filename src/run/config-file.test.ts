import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveInputPaths } from './config-file';

const base = '/configs/run';
const config = join(base, 'run.yaml');
// Every path beside the config exists; nothing exists from the working directory.
const exists = (path: string) => path.startsWith(base);

/** The resolved configuration's fields these tests read. */
interface Resolved {
  dataset: { path: string; evalPath?: string };
  policy: { initFrom: string };
  searcher: {
    adapters: Record<
      'policy' | 'generator' | 'judge' | 'searchEngine',
      Record<string, string | Record<string, string>>
    >;
  };
}

describe('resolveInputPaths', () => {
  it("resolves what each named adapter declares it reads, from the file's folder, and leaves a remote model's name", () => {
    const out = resolveInputPaths(
      {
        dataset: { path: 'q.jsonl', evalPath: 'v.jsonl' },
        policy: { initFrom: 'runs/x/sft' },
        searcher: {
          adapters: {
            policy: { type: 'llama', model: 'm.gguf', lora: { adapter: 'adapter' } },
            generator: { type: 'llama', model: '../models/g.gguf' },
            judge: { type: 'openai', model: 'gpt-4o-mini' },
            searchEngine: { type: 'sqlite-fts', corpusPath: 'c.jsonl', dbPath: 'index.sqlite' },
          },
        },
      },
      config,
      exists,
    ) as unknown as Resolved;
    expect(out.dataset).toEqual({ path: join(base, 'q.jsonl'), evalPath: join(base, 'v.jsonl') });
    expect(out.policy.initFrom).toBe(join(base, 'runs/x/sft'));
    const { adapters } = out.searcher;
    expect(adapters.policy.model).toBe(join(base, 'm.gguf'));
    expect((adapters.policy.lora as Record<string, string>).adapter).toBe(join(base, 'adapter'));
    expect(adapters.generator.model).toBe('/configs/models/g.gguf');
    // An API's model is a name, not a file.
    expect(adapters.judge.model).toBe('gpt-4o-mini');
    // The index is written from the corpus: the working directory's, as every output.
    expect(adapters.searchEngine).toEqual({
      type: 'sqlite-fts',
      corpusPath: join(base, 'c.jsonl'),
      dbPath: 'index.sqlite',
    });
  });

  it('reads an index named alone from beside the file, and asks a custom registry for its adapters', () => {
    const alone = resolveInputPaths(
      { searcher: { adapters: { searchEngine: { type: 'sqlite-fts', dbPath: 'index.sqlite' } } } },
      config,
      exists,
    ) as unknown as Resolved;
    expect(alone.searcher.adapters.searchEngine.dbPath).toBe(join(base, 'index.sqlite'));
    const out = resolveInputPaths(
      { searcher: { adapters: { generator: { type: 'mine', weights: 'w.bin', name: 'w.bin' } } } },
      config,
      exists,
      (port, type) => (port === 'generator' && type === 'mine' ? ['weights'] : []),
    ) as unknown as Resolved;
    expect(out.searcher.adapters.generator).toEqual({
      type: 'mine',
      weights: join(base, 'w.bin'),
      name: 'w.bin',
    });
  });

  it('keeps a path that exists only from the working directory, and absolute paths as they are', () => {
    const out = resolveInputPaths(
      {
        dataset: { path: 'here.jsonl' },
        searcher: { adapters: { generator: { type: 'llama', model: '/abs/m.gguf' } } },
      },
      config,
      (path) => path === 'here.jsonl',
    ) as unknown as Resolved;
    expect(out.dataset.path).toBe(join(process.cwd(), 'here.jsonl'));
    expect(out.searcher.adapters.generator.model).toBe('/abs/m.gguf');
  });
});
