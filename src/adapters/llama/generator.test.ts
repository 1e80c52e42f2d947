import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigValidationError } from '../../core/errors';
import { writeTinyLlama } from './__fixtures__/tiny-llama';
import { answerLine, createLlamaGenerator } from './generator';

// SmolLM2 itself as the Generator is src/adapters/llama/smollm2.e2e.test.ts (npm run test:e2e).

describe('answerLine', () => {
  it('keeps the first line before any special token, without a closing period or quotes', () => {
    expect(answerLine(' Paris.<|im_end|>')).toBe('Paris');
    expect(answerLine('"Ada Lovelace"\nShe was a mathematician.')).toBe('Ada Lovelace');
    expect(answerLine('1,204 km</s>')).toBe('1,204 km');
    expect(answerLine('')).toBe('');
  });
});

describe('createLlamaGenerator', () => {
  let dir: string;
  const made: { dispose(): Promise<void> }[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tiny-llama-generator-'));
    await writeTinyLlama(dir);
  });
  afterAll(async () => {
    for (const g of made) await g.dispose();
  });

  it('answers greedily from the evidence in the chat template, the same answer each time, and reports its tokens', async () => {
    const generator = await createLlamaGenerator({ model: dir, maxNewTokens: 6, intraOpThreads: 1 });
    made.push(generator);
    const evidence = [
      { kind: 'page' as const, basename: 'a.png', text: 'Globex was founded by Hank Scorpio.' },
      { kind: 'crop' as const, basename: 'a.png' },
    ];
    const first = await generator.doAnswer('Who founded Globex?', evidence);
    const again = await generator.doAnswer('Who founded Globex?', evidence);
    expect(first.answer).toBe(again.answer);
    expect(first.usage!.outputTokens).toBeGreaterThan(0);
    expect(first.usage!.outputTokens).toBeLessThanOrEqual(6);
    // The evidence is in the prompt: a longer page makes a longer prompt.
    const longer = await generator.doAnswer('Who founded Globex?', [
      { ...evidence[0]!, text: `${evidence[0]!.text} It is based in Cypress Creek.` },
    ]);
    expect(longer.usage!.inputTokens).toBeGreaterThan(first.usage!.inputTokens);
  });

  it('cuts the evidence at maxEvidenceTokens', async () => {
    const generator = await createLlamaGenerator({ model: dir, maxNewTokens: 2, maxEvidenceTokens: 8 });
    made.push(generator);
    const page = { kind: 'page' as const, basename: 'a.png', text: 'word '.repeat(200) };
    const short = await generator.doAnswer('Q?', [page]);
    const none = await generator.doAnswer('Q?', []);
    expect(short.usage!.inputTokens - none.usage!.inputTokens).toBeLessThan(30);
  });

  it('refuses unknown settings, naming them', async () => {
    await expect(createLlamaGenerator({ model: dir, temperature: 1 } as never)).rejects.toSatisfy(
      (e) => ConfigValidationError.isInstance(e) || /temperature/.test(String(e)),
    );
  });
});
