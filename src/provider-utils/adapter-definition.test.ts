import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Judge } from '../ports/judge';
import { adaptersFromEntry } from './adapter-definition';

describe('adaptersFromEntry', () => {
  const settings = z.object({ score: z.number() }).strict();
  const judgeOf = (score: number, field: string) => ({ score, field }) as unknown as Judge;

  it('loads the entry at create only, once a create, and builds with its factory, the settings and the context', async () => {
    let loads = 0;
    const fromEntry = adaptersFromEntry({
      packages: ['some-sdk'],
      load: async () => {
        loads += 1;
        return { createEchoJudge: (s: { score: number }, field: string) => judgeOf(s.score, field) };
      },
    });
    const echo = fromEntry({
      port: 'judge',
      type: 'echo',
      settings,
      create: (entry, validated, context) => entry.createEchoJudge(validated, context.field),
    });
    expect(loads).toBe(0);
    expect(echo).toMatchObject({ port: 'judge', type: 'echo', settings, packages: ['some-sdk'] });
    expect(await echo.create({ score: 0.5 }, { field: 'adapters.judge' })).toEqual({
      score: 0.5,
      field: 'adapters.judge',
    });
    expect(loads).toBe(1);
  });

  it('gives every adapter of the family the same packages and passes a failed load through', async () => {
    const missing = new Error('Cannot find package some-sdk');
    const fromEntry = adaptersFromEntry<{ createJudge(): Judge }>({
      packages: ['some-sdk', 'other'],
      load: () => Promise.reject(missing),
    });
    const first = fromEntry({ port: 'judge', type: 'a', settings, create: (entry) => entry.createJudge() });
    const second = fromEntry({ port: 'judge', type: 'b', settings, create: (entry) => entry.createJudge() });
    expect(first.packages).toEqual(['some-sdk', 'other']);
    expect(second.packages).toEqual(first.packages);
    await expect(second.create({ score: 1 }, { field: 'adapters.judge' })).rejects.toBe(missing);
  });
});
