import { describe, expect, it } from 'vitest';
import { createRandom } from '../random';
import { copiedNames, copiedWords, freshNames, NAME_SHARE } from './fresh-names';
import { runSft, type SftExample } from './policy-update';
import type { PolicyBackend } from '../../ports/policy-backend';

// Token ids: 1-9 the shared instructions and separators, 100+ words. A demonstration: instructions,
// a question naming an attribute (word 130) and a country (word 120), the query copying both
// (trained), an observation naming the country again (not the attribute: the question's wording)
// and a region (word 140), and a trained action writing that region's name (from the page alone,
// as a crop names a region).
const INSTRUCTIONS = [1, 2, 3, 4];
const example = (country: number, attribute: number, answer: number): SftExample => ({
  inputIds: [...INSTRUCTIONS, 5, attribute, 6, country, 7, country, attribute, 8, country, answer, 9, answer],
  // the query (country, attribute) and the answer
  positions: [9, 10, 15],
});
const WORDS = [1, 2, 3, 100, 110, 120, 121, 122, 130, 131, 140, 141, 150, 151, 152, 153];

describe('copiedWords', () => {
  it('lists the words the actions copy from the prompt, in the order written, not those taken from a page alone', () => {
    const e = example(120, 130, 140);
    expect(copiedWords(e, (id) => id >= 100)).toEqual([120, 130]);
  });

  it('names only the copied words that a page read afterwards shows again (copiedNames)', () => {
    const e = example(120, 130, 140);
    expect(copiedNames(e, (id) => id >= 100)).toEqual([120]);
  });

  it('does not count a word written before it was read, nor one that only stands untrained', () => {
    // 150 is trained before any untrained 150; 151 is only ever read.
    const e: SftExample = { inputIds: [1, 150, 151, 150, 151], positions: [1] };
    expect(copiedWords(e, (id) => id >= 100)).toEqual([]);
  });
});

describe('freshNames', () => {
  const examples = [example(120, 130, 140), example(121, 131, 141), example(122, 130, 140)];

  it('never draws nor renames the prefix every demonstration shares (the instructions)', () => {
    const renamer = freshNames(examples, WORDS, 1);
    expect(renamer.pool).not.toContain(1);
    expect(renamer.pool).not.toContain(3);
    expect(renamer.pool).toContain(153);
  });

  it('renames each copied name everywhere in the demonstration, consistently, to a word not already in it, and not the wording no page shows', () => {
    const renamer = freshNames(examples, WORDS, 1);
    const random = createRandom(7);
    for (let trial = 0; trial < 50; trial++) {
      const original = examples[trial % 3]!;
      const renamed = renamer.apply(original, random);
      expect(renamed.positions).toBe(original.positions);
      expect(renamed.inputIds.slice(0, 4)).toEqual(INSTRUCTIONS);
      const mapping = new Map<number, number>();
      original.inputIds.forEach((id, p) => {
        const now = renamed.inputIds[p]!;
        if (mapping.has(id)) expect(now).toBe(mapping.get(id));
        mapping.set(id, now);
      });
      // The question's wording (the attribute, which no page shows) stays as it is.
      expect(mapping.get(original.inputIds[5]!)).toBe(original.inputIds[5]);
      // Distinct words stay distinct, and every copied name moved to a word of the pool.
      const copied = copiedNames(original, (id) => id >= 100);
      const drawn = copied.map((id) => mapping.get(id)!);
      expect(new Set(drawn).size).toBe(copied.length);
      for (const id of drawn) {
        expect(renamer.pool).toContain(id);
        expect(original.inputIds).not.toContain(id);
      }
      // Untrained words that nothing copies (the separators) and a name taken from the page alone stay as they are.
      for (const id of [5, 6, 7, 8, 9, original.inputIds[13]!]) expect(mapping.get(id)).toBe(id);
    }
  });

  it('draws different names in different epochs, and the same ones from the same seed', () => {
    const renamer = freshNames(examples, WORDS, 1);
    const draw = (seed: number) => {
      const random = createRandom(seed);
      return [0, 1, 2, 3].map(() => renamer.apply(examples[0]!, random).inputIds.join(','));
    };
    expect(draw(3)).toEqual(draw(3));
    expect(new Set(draw(3)).size).toBeGreaterThan(1);
  });

  it('renames only names: a word copied in more than NAME_SHARE of the demonstrations is neither renamed nor drawn', () => {
    // 30 demonstrations of three attributes (each copied in a third) and 30 countries (each in one).
    const many = Array.from({ length: 30 }, (_, i) => example(200 + i, 130 + (i % 3), 140));
    const words = [...WORDS, ...many.map((_, i) => 200 + i)];
    const renamer = freshNames(many, words);
    expect(NAME_SHARE).toBe(0.1);
    for (const attribute of [130, 131, 132]) expect(renamer.pool).not.toContain(attribute);
    const random = createRandom(5);
    for (const original of many) {
      const renamed = renamer.apply(original, random);
      // The attribute (position 5) stays; the country (position 7) and its copies change together.
      expect(renamed.inputIds[5]).toBe(original.inputIds[5]);
      expect(renamed.inputIds[7]).not.toBe(original.inputIds[7]);
      expect(renamed.inputIds[9]).toBe(renamed.inputIds[7]);
    }
  });

  it('leaves a demonstration that copies nothing as it is', () => {
    const renamer = freshNames(examples, WORDS, 1);
    const plain: SftExample = { inputIds: [1, 2, 3, 4, 150, 9], positions: [5] };
    expect(renamer.apply(plain, createRandom(1))).toBe(plain);
  });

  it('runSft trains each epoch on renamed demonstrations and never changes the ones it was given', async () => {
    const seen: number[][][] = [];
    const policy = {
      update: async (batch: { inputIds: number[][] }) => {
        seen.push(batch.inputIds.map((row) => [...row]));
        return { value: 1, applied: true, metrics: {} };
      },
    } as unknown as PolicyBackend;
    // Distinct answers: a renamed country never makes one demonstration into another.
    const distinct = [example(120, 130, 140), example(121, 131, 141), example(122, 130, 150)];
    const given = distinct.map((e) => ({ inputIds: [...e.inputIds], positions: [...e.positions] }));
    await runSft(
      policy,
      given,
      { epochs: 3, batchSize: 3 },
      {
        random: createRandom(1),
        rename: freshNames(given, WORDS, 1),
      },
    );
    expect(given).toEqual(distinct);
    expect(seen).toHaveLength(3);
    const originals = new Set(distinct.map((e) => e.inputIds.join(',')));
    expect(seen.flat().filter((row) => originals.has(row.join(',')))).toHaveLength(0);
  });
});
