import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Evidence } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { extractiveGeneratorSettingsSchema } from './settings';
import { structureOf } from './structure';

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
 * The extractive reading of a question over page texts: the sentence, or the fact of a
 * `label: value` line or a table cell (`structureOf`), sharing the most of the question's content
 * words (a fact's words are its label, its subject and its value; the earlier page first on a
 * tie, then within a page the fact whose value best fits the question), and in it the span of
 * words the question does not have that best fits the question (a number for when / how many, a
 * capitalised name for who / where, next to the question's words). `null` when nothing shares a word.
 */
export function extractAnswer(question: string, texts: readonly string[], maxWords = 8): string | null {
  const questionStems = new Set(
    tokensOf(question)
      .filter((t) => !STOPWORDS.has(t.lower))
      .map((t) => stemOf(t.lower)),
  );
  if (questionStems.size === 0) return null;
  const expected = expectedKind(question);
  const overlapOf = (...parts: string[]) => {
    const stems = new Set(parts.flatMap((part) => tokensOf(part).map((t) => stemOf(t.lower))));
    return [...questionStems].filter((s) => stems.has(s)).length;
  };
  const bestSpan = (text: string) => {
    const spans = spansOf(text, questionStems, expected, maxWords);
    return spans.length === 0 ? null : spans.reduce((a, b) => (b.score > a.score ? b : a));
  };
  interface Candidate {
    overlap: number;
    page: number;
    fit: number;
    position: number;
    read: () => string | null;
  }
  const candidates: Candidate[] = [];
  for (const [page, text] of texts.entries()) {
    const { facts, prose } = structureOf(text);
    const sentences = prose.flatMap(({ text: line, position }) =>
      sentencesOf(line).map((sentence, k) => ({ sentence, position: position * 1000 + k })),
    );
    sentences.forEach(({ sentence, position }, at) => {
      const overlap = overlapOf(sentence);
      if (overlap === 0) return;
      const read = () => {
        // A sentence that only names the subject ("The Zorbel bridge.") is answered by the next one.
        for (const { sentence: next } of sentences.slice(at, at + 2)) {
          const span = bestSpan(next);
          if (span !== null) return next.slice(span.start, span.end);
        }
        return null;
      };
      candidates.push({ overlap, page, fit: 0, position, read });
    });
    for (const fact of facts) {
      const overlap = overlapOf(fact.label, fact.subject, fact.value);
      const span = overlap === 0 ? null : bestSpan(fact.value);
      if (span === null) continue;
      const answer = fact.value.slice(span.start, span.end);
      candidates.push({ overlap, page, fit: span.score, position: fact.position * 1000, read: () => answer });
    }
  }
  candidates.sort(
    (a, b) => b.overlap - a.overlap || a.page - b.page || b.fit - a.fit || a.position - b.position,
  );
  for (const candidate of candidates) {
    const answer = candidate.read();
    if (answer !== null) return answer;
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
