import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectPageIndex, indexCorpusFile } from '../adapters/sqlite-fts/index';
import { readRlDataset } from '../adapters/store/parquet/index';
import { DatasetValidationError, InvalidArgumentError } from '../core/errors';
import { loadRunConfig } from './config';
import { readPromptDataset, splitOf } from './dataset';
import {
  baseTitle,
  buildRealTextDataset,
  generateDescriptionQuestions,
  isExactMatchAny,
  leadId,
  matchQuestionsToLeads,
  normaliseForMatch,
  readWikiLeads,
  readWikiLeadsFile,
  splitOfPage,
  type WikiLead,
  writeRealTextDataset,
} from './real-text';

// The leads of the fixture are invented (written for this test), in the package's layout.
const FIXTURE = join(import.meta.dirname, '__fixtures__', 'wiki-leads.json');
const REAL_LEADS = join(
  process.env.SEARCHER_RL_DATA ?? join(import.meta.dirname, '..', '..', '.cache', 'data'),
  'wiki-leads',
  'summaries_en-us.json',
);
const NQ = join(
  import.meta.dirname,
  '..',
  'adapters',
  'store',
  'parquet',
  '__fixtures__',
  'nq_search_test.parquet',
);

let leads: WikiLead[];
let dir: string;
beforeAll(async () => {
  leads = await readWikiLeadsFile(FIXTURE);
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-real-text-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readWikiLeads', () => {
  it("reads the package's layout, each lead named by its title in URL form", () => {
    expect(leads.map((l) => l.id)).toEqual([
      'Varnholm',
      'Ilsa_Brandt',
      'Grey_Sea',
      'Salt_works_(Edria)',
      'Amber',
      'Amber_Road',
      'Edria%2FMoravel_border',
      'Moravel',
    ]);
    expect(leads[1]).toMatchObject({ title: 'Ilsa Brandt', description: 'Edrian merchant (1601–1670)' });
    expect(leadId('HIV/AIDS')).toBe('HIV%2FAIDS');
    expect(leadId('a\\b  c')).toBe('a%5Cb_c');
  });

  it('refuses a lead without a title or a text, naming the entry and the field', () => {
    const bad = (value: unknown) => {
      try {
        readWikiLeads(value);
      } catch (error) {
        return error;
      }
      throw new Error('accepted');
    };
    const noText = bad({ A: { title: 'A', extract: 'a' }, B: { title: 'B', extract: '  ' } });
    expect(DatasetValidationError.isInstance(noText) && noText.row === 1 && noText.field === 'extract').toBe(
      true,
    );
    const noTitle = bad({ A: { extract: 'a' } });
    expect(DatasetValidationError.isInstance(noTitle) && noTitle.field === 'title').toBe(true);
    const twice = bad({ A: { title: 'A b', extract: 'a' }, B: { title: 'A  b', extract: 'b' } });
    expect((twice as Error).message).toMatch(/appears twice/);
    expect(DatasetValidationError.isInstance(bad([]))).toBe(true);
    expect(DatasetValidationError.isInstance(bad({}))).toBe(true);
  });

  it('says how to fetch the leads when the file is missing', async () => {
    const error = await readWikiLeadsFile(join(dir, 'absent.json')).catch((e: unknown) => e);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/scripts\/fetch-data\.sh/);
  });
});

describe('baseTitle', () => {
  it('drops a closing disambiguation only, in linear time', () => {
    expect(baseTitle('Casablanca (film)')).toBe('Casablanca');
    expect(baseTitle('Psycho (1960 film) ')).toBe('Psycho');
    expect(baseTitle('(film)')).toBe('(film)');
    expect(baseTitle('A (b) c')).toBe('A (b) c');
    expect(baseTitle('x (a)b)')).toBe('x (a)b)');
    const long = `a${' '.repeat(200_000)}b)`;
    expect(baseTitle(long)).toBe(long);
  });
});

describe('normaliseForMatch and isExactMatchAny', () => {
  it('normalises as SQuAD (case, punctuation, articles), folding accents', () => {
    expect(normaliseForMatch('The  Röntgen-ray, an X!')).toBe('rontgen ray x');
    expect(isExactMatchAny('Wilhelm Röntgen.', ['wilhelm rontgen', 'x'])).toBe(true);
    expect(isExactMatchAny('Röntgen', ['Wilhelm Röntgen'])).toBe(false);
    expect(isExactMatchAny('the', ['The'])).toBe(false);
  });
});

describe('matchQuestionsToLeads', () => {
  const q = (uid: string, question: string, answers: string[]) => ({ uid, question, answers });
  it('keeps a question whose subject is a title and whose answer is in that lead', () => {
    const kept = matchQuestionsToLeads(
      [
        q('founder', 'who founded the town of varnholm?', ['I. Brandt', 'Ilsa Brandt']),
        q('longest', 'where did the amber road end?', ['Varnholm']),
        q('tie', 'which town on the grey sea did ilsa brandt found?', ['Varnholm']),
        q('disambiguated', 'how do salt works make salt?', ['by evaporation']),
        q('slash', 'how long is the edria/moravel border?', ['212 kilometres']),
        q('answer-in-question', 'is varnholm on the grey sea?', ['Varnholm']),
        q('no-subject', 'who founded the coastal town?', ['Ilsa Brandt']),
        q('not-in-lead', 'what is the capital of moravel?', ['Edria City']),
      ],
      leads,
    );
    expect(kept.map((k) => [k.uid, k.golden, k.reference])).toEqual([
      ['founder', 'Varnholm', 'Ilsa Brandt'],
      // The most specific title: "Amber Road" over "Amber" (both leads name Varnholm).
      ['longest', 'Amber_Road', 'Varnholm'],
      // Two titles of two words: the first id.
      ['tie', 'Grey_Sea', 'Varnholm'],
      ['disambiguated', 'Salt_works_(Edria)', 'by evaporation'],
      ['slash', 'Edria%2FMoravel_border', '212 kilometres'],
    ]);
    expect(kept[0]!.answers).toEqual(['I. Brandt', 'Ilsa Brandt']);
  });
});

describe('generateDescriptionQuestions', () => {
  it('asks for the subject of each unique, specific description that leaves the title out', () => {
    const generated = generateDescriptionQuestions(leads, 10);
    expect(new Map(generated.map((g) => [g.golden, [g.question, g.reference]]))).toEqual(
      new Map([
        ['Varnholm', ['What is the coastal town in Edria province?', 'Varnholm']],
        // A lifespan: a person; "Edrian" is capitalised mid-sentence in the leads, so it stays.
        ['Ilsa_Brandt', ['Who was the Edrian merchant (1601–1670)?', 'Ilsa Brandt']],
        ['Grey_Sea', ['What is the inland sea between two invented countries?', 'Grey Sea']],
        ['Edria%2FMoravel_border', ['What is the border between Edria and Moravel?', 'Edria/Moravel border']],
      ]),
    );
    // Not "Industry" (one word), not the two leads sharing a description, not Moravel's (it names the title).
    expect(generateDescriptionQuestions(leads, 2)).toEqual(generated.slice(0, 2));
    expect(generateDescriptionQuestions(leads, 0)).toEqual([]);
  });
});

describe('buildRealTextDataset', () => {
  it('holds out whole pages: no golden page of a held-out question is a training one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 60 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        (titles, validation, test) => {
          const pages = [...new Set(titles.map(leadId))];
          const splits = pages.map((id) => splitOfPage(id, { validation, test }));
          // The same page, the same split; a share of 0 holds nothing out.
          expect(pages.map((id) => splitOfPage(id, { validation, test }))).toEqual(splits);
          if (test === 0) expect(splits).not.toContain('test');
          if (validation === 0) expect(splits).not.toContain('validation');
        },
      ),
    );
    const nq = [
      { uid: 'a', question: 'who founded the town of varnholm?', answers: ['Ilsa Brandt'] },
      { uid: 'b', question: 'when was varnholm founded?', answers: ['1642'] },
      { uid: 'c', question: 'where did the amber road end?', answers: ['Varnholm'] },
    ];
    const dataset = buildRealTextDataset(leads, nq, {
      generated: 10,
      shares: { validation: 0.3, test: 0.3 },
    });
    expect(dataset.counts).toMatchObject({ leads: 8, nqQuestions: 3, nqKept: 3, generated: 4 });
    const pagesOf = (split: string) =>
      new Set(dataset.questions.filter((x) => x.split === split).map((x) => x.golden[0]));
    const train = pagesOf('train');
    for (const held of ['validation', 'test'])
      for (const page of pagesOf(held)) expect(train.has(page)).toBe(false);
    // Both Varnholm questions (and its generated one) share one split.
    expect(
      new Set(dataset.questions.filter((x) => x.golden[0] === 'Varnholm').map((x) => x.split)).size,
    ).toBe(1);
    expect(dataset.questions.filter((x) => x.source === 'generated:description')).toHaveLength(4);
    expect(() => buildRealTextDataset(leads, nq, { generated: -1 })).toThrow(/generated/);
  });

  it('writes files the dataset reader, the FTS5 index and the run config read unchanged', async () => {
    const nq = [{ uid: 'a', question: 'who founded the town of varnholm?', answers: ['Ilsa Brandt'] }];
    const dataset = buildRealTextDataset(leads, nq, { generated: 10 });
    const out = join(dir, 'dataset');
    await writeRealTextDataset(out, dataset);
    const prompts = await readPromptDataset(join(out, 'questions.jsonl'), 'auto', { needsReference: true });
    expect(prompts.map((p) => [p.uid, p.reference, p.goldenBasenames, splitOf(p)])).toEqual(
      dataset.questions.map((x) => [x.uid, x.reference, x.golden, x.split]),
    );
    const dbPath = join(out, 'index.sqlite');
    await indexCorpusFile(dbPath, join(out, 'corpus.jsonl'));
    const inspected = await inspectPageIndex(
      dbPath,
      prompts.flatMap((p) => p.goldenBasenames ?? []),
    );
    expect(inspected).toMatchObject({ pages: 8, missing: [] });
    const config = await loadRunConfig(join(out, 'config.yaml'));
    expect(config.dataset?.path).toBe(join(out, 'questions.jsonl'));
    expect(config.searcher.adapters.searchEngine).toMatchObject({
      type: 'sqlite-fts',
      corpusPath: join(out, 'corpus.jsonl'),
    });
    expect(JSON.parse(await readFile(join(out, 'counts.json'), 'utf8'))).toEqual(dataset.counts);
  });
});

describe.skipIf(!existsSync(REAL_LEADS))(
  'the real leads (bash scripts/fetch-data.sh; skipped without them)',
  () => {
    it('keeps the Natural Questions a lead answers, split by page', async () => {
      const real = await readWikiLeadsFile(REAL_LEADS);
      expect(real).toHaveLength(10_033);
      const nq = (await readRlDataset(NQ)).map((p) => ({
        uid: p.uid,
        question: p.question,
        answers: p.answers ?? [p.reference!],
      }));
      const dataset = buildRealTextDataset(real, nq, { generated: 300 });
      // 134 of 3,610 on the sample as fetched (docs/benchmarks.md); the rule, not the count, is the contract.
      expect(dataset.counts.nqKept).toBeGreaterThan(100);
      expect(dataset.counts.generated).toBe(300);
      const byId = new Map(real.map((l) => [l.id, l]));
      for (const q of dataset.questions) {
        const lead = byId.get(q.golden[0])!;
        expect(normaliseForMatch(`${lead.title} ${lead.text}`)).toContain(normaliseForMatch(q.reference));
      }
    });
  },
);
