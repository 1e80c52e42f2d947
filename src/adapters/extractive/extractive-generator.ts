import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Evidence } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { extractiveGeneratorSettingsSchema } from './settings';

/** Settings of `createExtractiveGenerator`. */
export interface ExtractiveGeneratorSettings {
  /** Words of the answer span at most (default 8). */
  maxAnswerWords?: number;
  /** The answer when no retrieved text shares a word with the question (default "unknown"). */
  fallback?: string;
}

// English function words: they neither make a sentence relevant nor start an answer span.
const STOPWORDS = new Set(
  (
    'a an the of to in on at by for from with without about as into onto over under up down out off ' +
    'across after before since until than then and or but nor is are was were be been being am do does ' +
    'did done has have had having will would shall should can could may might must it its this that ' +
    'these those there here their they them he she his her him we our you your i me my what which who ' +
    'whom whose when where why how many much long old year years per via also only just not no'
  ).split(' '),
);
/** Whether a word (any case) is an English function word: the extractive reader's, shared with the run's demonstrator. */
export const isStopword = (word: string) => STOPWORDS.has(word.toLowerCase());

/** Words that join the parts of one answer ("hammocks and doomsday devices", "Bank of America"). */
const JOINERS = new Set(['and', 'or', 'of', '&']);
const TOKEN = /[\p{L}\p{N}]+(?:[.,'’-][\p{L}\p{N}]+)*|&/gu;

interface Token {
  text: string;
  start: number;
  end: number;
  lower: string;
}

const tokensOf = (text: string): Token[] =>
  [...text.matchAll(TOKEN)].map((m) => ({
    text: m[0],
    start: m.index,
    end: m.index + m[0].length,
    lower: m[0].toLowerCase(),
  }));

/** A crude stem: no plural or tense ending, then the first five letters ("sells" meets "sell", "headquarters" "headquartered"). */
const stemOf = (lower: string) => {
  const bare = lower.replace(/(ing|ed|es|s)$/, '');
  return (bare.length >= 3 ? bare : lower).slice(0, 5);
};

type Expected = 'number' | 'name' | null;

/** What kind of span the question asks for, from its question words. */
function expectedKind(question: string): Expected {
  const q = question.toLowerCase();
  if (/\b(when|what year|which year|how (many|much|old|long|far|tall|big|large))\b/.test(q)) return 'number';
  if (/\b(who|whom|whose|where)\b/.test(q)) return 'name';
  return null;
}

/** Whether the text between two tokens ends a span: a clause mark, or a comma not followed by a capitalised word ("Austin, Texas"). */
function isBoundary(gap: string, next: Token): boolean {
  if (/[:;!?()[\]{}"“”|\n]|\s[-–—]\s/.test(gap)) return true;
  if (/[.]/.test(gap)) return true;
  if (/,/.test(gap)) return !/^\p{Lu}/u.test(next.text);
  return false;
}

/** The sentences of a text: its lines, cut again after a full stop followed by a capital or a digit. */
const sentencesOf = (text: string) =>
  text
    .split(/\n+|(?<=[.!?])\s+(?=[\p{Lu}\p{N}"“])/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

interface Span {
  start: number;
  end: number;
  score: number;
}

/** The answer spans of one sentence: runs of words the question does not have, scored by kind and nearness to the question's words. */
function spansOf(sentence: string, questionStems: Set<string>, expected: Expected, maxWords: number): Span[] {
  const tokens = tokensOf(sentence);
  const role = tokens.map((t) =>
    questionStems.has(stemOf(t.lower))
      ? 'question'
      : JOINERS.has(t.lower)
        ? 'joiner'
        : STOPWORDS.has(t.lower)
          ? 'stop'
          : 'answer',
  );
  const boundaryBefore = tokens.map(
    (t, i) => i > 0 && isBoundary(sentence.slice(tokens[i - 1]!.end, t.start), t),
  );
  const spans: Span[] = [];
  let i = 0;
  while (i < tokens.length) {
    if (role[i] !== 'answer') {
      i++;
      continue;
    }
    const first = i;
    let last = i;
    let j = i + 1;
    while (j < tokens.length && !boundaryBefore[j] && (role[j] === 'answer' || role[j] === 'joiner')) {
      if (role[j] === 'answer') last = j;
      j++;
    }
    const words = tokens.slice(first, last + 1).slice(0, maxWords);
    while (JOINERS.has(words[words.length - 1]!.lower)) words.pop();
    const end = words[words.length - 1]!;
    // Next to the question's words: one of them within two tokens before the span ("revenue 2019: 4.5 billion").
    const near = role.slice(Math.max(0, first - 2), first).includes('question');
    const capitals = words.filter((w) => /^\p{Lu}/u.test(w.text)).length;
    const kind =
      expected === 'number'
        ? words.some((w) => /\p{N}/u.test(w.text))
          ? 2
          : 0
        : expected === 'name'
          ? (capitals > 0 ? 1 : 0) + (capitals > 1 ? 1 : 0)
          : 0;
    // After the last of the question's words ("Zorvia main export copper": the value follows its name).
    const after = !role.slice(j).includes('question');
    spans.push({
      start: tokens[first]!.start,
      end: end.end,
      score: kind + (near ? 1 : 0) + (after ? 0.5 : 0),
    });
    i = j;
  }
  return spans;
}

/**
 * The extractive reading of a question over page texts: the sentence sharing the most of the
 * question's content words (the earlier page first on a tie), and in it the span of words the
 * question does not have that best fits the question (a number for when / how many, a capitalised
 * name for who / where, next to the question's words). `null` when no sentence shares a word.
 */
export function extractAnswer(question: string, texts: readonly string[], maxWords = 8): string | null {
  const questionStems = new Set(
    tokensOf(question)
      .filter((t) => !STOPWORDS.has(t.lower))
      .map((t) => stemOf(t.lower)),
  );
  if (questionStems.size === 0) return null;
  const expected = expectedKind(question);
  const candidates: Array<{ sentences: string[]; at: number; overlap: number; order: number }> = [];
  for (const text of texts) {
    const sentences = sentencesOf(text);
    sentences.forEach((sentence, at) => {
      const stems = new Set(tokensOf(sentence).map((t) => stemOf(t.lower)));
      const overlap = [...questionStems].filter((s) => stems.has(s)).length;
      if (overlap > 0) candidates.push({ sentences, at, overlap, order: candidates.length });
    });
  }
  candidates.sort((a, b) => b.overlap - a.overlap || a.order - b.order);
  for (const { sentences, at } of candidates) {
    // A sentence that only names the subject ("The Zorbel bridge.") is answered by the next one.
    for (const sentence of sentences.slice(at, at + 2)) {
      const spans = spansOf(sentence, questionStems, expected, maxWords);
      if (spans.length === 0) continue;
      const best = spans.reduce((a, b) => (b.score > a.score ? b : a));
      return sentence.slice(best.start, best.end);
    }
  }
  return null;
}

/**
 * An offline Generator for text pages that needs no hand-written facts: it reads the answer out of
 * the retrieved text (`extractAnswer`), the pages in the order they were collected. A stand-in
 * for a real reader (OpenAI, Gemini) that lets a run on your own pages learn offline: the answer
 * is right when the search found the page that says it.
 */
export function createExtractiveGenerator(settings: ExtractiveGeneratorSettings = {}): Generator {
  const { maxAnswerWords, fallback } = parseSettings(
    'createExtractiveGenerator',
    extractiveGeneratorSettingsSchema,
    settings,
  );
  return {
    specificationVersion: 'v1',
    provider: 'extractive',
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      options?: CallOptions,
    ): Promise<GeneratorAnswer> {
      options?.signal?.throwIfAborted();
      const texts = evidence.flatMap((e) => (e.text === undefined ? [] : [e.text]));
      const answer = extractAnswer(question, texts, maxAnswerWords) ?? fallback;
      const inputTokens = Math.ceil((question.length + texts.reduce((n, t) => n + t.length, 0)) / 4);
      return { answer, usage: { inputTokens, outputTokens: Math.ceil(answer.length / 4) } };
    },
  };
}
