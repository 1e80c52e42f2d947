import { extractAnswer, isStopword } from '../adapters/extractive/index';
import { createScriptedPolicy, type ScriptContext } from '../adapters/scripted-policy/index';
import type { SearcherConfig } from '../config';
import { parseRegionMarks, regionMarkBody } from '../core/protocol/location';
import { neutraliseTags, pageRead } from '../core/protocol/observation';
import { acceptedAnswers } from '../core/reward/exact-match';
import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import type { ChatFormat } from '../ports/policy-backend';
import type { Tokenizer } from '../ports/types';
import { createSearcher, type SearcherPorts } from '../searcher';
import { progressOf, type RunOptions } from './progress';
import { lineAfter, tagSpans } from '../core/protocol/tag-spans';

/**
 * Searches tried per question at most: each a different query (the question's own words, then its
 * golden page's name). Four (the question's words; a different crop each where the page marks
 * regions), five where some question's golden page name adds a query (`demonstrationQueries`).
 */
export const DEMONSTRATION_ATTEMPTS = 5;

/**
 * Searches a demonstration makes at most: the first, and the same search again (its next result)
 * where the page read is not one of the question's golden pages, within the turn budget.
 */
export const DEMONSTRATION_SEARCHES = 3;

/** The attempts for a set of questions: four, or five where a golden page's name adds a fifth query to one. */
function attemptsFor(prompts: readonly PromptRecord[]): number {
  const longest = Math.max(0, ...prompts.map((p) => queriesOf(p).length));
  return Math.min(DEMONSTRATION_ATTEMPTS, Math.max(DEMONSTRATION_ATTEMPTS - 1, longest));
}

const WORDS = /[\p{L}\p{N}]+(?:[.,'’-][\p{L}\p{N}]+)*/gu;

/**
 * The queries the demonstrator tries for a question. First the question's own words (so that a
 * small policy learns to copy them): the whole question, its content words, the first half and
 * the second half of its content words. The whole question comes first: copied word for word, each
 * next word is the one after the last one copied (what a small transformer learns to copy, names
 * it never saw included), where skipping the stop words asks it to find which words to skip. On
 * the slide demo's validation split (seed 1) the warm start copied the question's names and
 * numbers into 95.6% of its first queries against 72% with the content words first, and judge
 * success rose from 42.0% to 60.4% (docs/method.md#searching-again-and-copying-the-whole-question);
 * BM25 finds the same pages either way (naive RAG, content words, 62.6% both). Then, where the
 * dataset names the question's golden pages, the words of the first one's name (`zorvel_export.txt`: zorvel, export), each written as the
 * question writes it where the question has it: a question worded unlike its page ("Which goods
 * does Zorvel sell abroad?") is demonstrated with the page's word ("Zorvel export"), which the
 * question's words alone do not find; a name with none of the question's words is added to its
 * content words (`goldenQuery`). Repeats removed.
 */
export function demonstrationQueries(
  question: string,
  golden: readonly string[] = [],
  reference?: string,
): string[] {
  const words = question.match(WORDS) ?? [];
  const content = contentWords(words);
  const half = Math.ceil(content.length / 2);
  const queries = [
    words.join(' '),
    content.join(' '),
    content.length > 1 ? content.slice(0, half).join(' ') : '',
    content.length > 1 ? content.slice(half).join(' ') : '',
    goldenQuery(words, golden[0], reference),
  ];
  return [...new Set(queries.filter((q) => q.length > 0))];
}

/** A dataset row's demonstration queries (`demonstrationQueries` of its question, golden pages and reference). */
const queriesOf = (p: PromptRecord) => demonstrationQueries(p.question, p.goldenBasenames ?? [], p.reference);

/** The question's content words (its words less the stop words): naive RAG's query. */
export function contentQuery(question: string): string {
  return contentWords(question.match(WORDS) ?? []).join(' ');
}

const contentWords = (words: readonly string[]) => words.filter((w) => !isStopword(w));

/**
 * The words of a golden page's name (its extension left out), with the question's words:
 * - where the name shares words with the question, those as the question writes them and in its
 *   order, then the name's others (`zorvel_export.txt` for "Which goods does Zorvel sell
 *   abroad?": "Zorvel export");
 * - where it shares none, the question's content words, then the name's words (`population.txt`,
 *   a table of every country's population, for "How many inhabitants does Zorvel have?":
 *   "inhabitants Zorvel population"), only words of letters alone and none of the reference's:
 *   a name like `deck12_3.png` is an id, not a description, and a page named after the answer
 *   ("Pyotr Tchaikovsky") is not a word a searcher could know before reading it.
 * '' where the name adds no word but numbers (`acme_3.png` for a question about Acme: a page
 * number the question cannot give).
 */
function goldenQuery(questionWords: readonly string[], basename: string | undefined, reference = ''): string {
  if (basename === undefined) return '';
  const stem = basename.replace(/\.[^.]*$/, '');
  const byLower = new Map(questionWords.map((w) => [w.toLowerCase(), w] as const));
  const named = (stem.match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !isStopword(w));
  const shared = new Set(named.map((w) => w.toLowerCase()).filter((w) => byLower.has(w)));
  if (shared.size === 0) {
    const answer = new Set((reference.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()));
    const words = named.filter((w) => /^\p{L}+$/u.test(w) && !answer.has(w.toLowerCase()));
    const content = contentWords(questionWords);
    return words.length === 0 || content.length === 0 ? '' : [...new Set([...content, ...words])].join(' ');
  }
  // Words the question lacks, numbers left out (a page number is an id the question cannot give).
  const others = named.filter((w) => !shared.has(w.toLowerCase()) && /\p{L}/u.test(w));
  if (others.length === 0) return '';
  // The question's words first, in its order, then the name's others.
  const fromQuestion = [...new Set(questionWords.filter((w) => shared.has(w.toLowerCase())))];
  return [...new Set([...fromQuestion, ...others])].join(' ');
}

/**
 * The line of a page that shares the most words with the question (case aside, words compared by
 * their first 11 letters so that "headquartered" meets "Headquarters"; ties: the later line, a
 * heading being less specific than what follows it), marks and the page's header left out; null
 * when no line shares a word. What the demonstrator
 * thinks before a crop (`sft.thinkBeforeCrop`): on a slide, the pointer line of the asked fact
 * (`Employees 2015: see footnote`), so the crop copies the region's name from the line just written.
 */
export function questionLine(question: string, page: string): string | null {
  const words = (text: string) =>
    new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.slice(0, 11)));
  const asked = words(question);
  let best: { line: string; shared: number } | null = null;
  for (const raw of page.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('[')) continue;
    let shared = 0;
    for (const w of words(line)) if (asked.has(w)) shared++;
    if (shared > 0 && (best === null || shared >= best.shared)) best = { line, shared };
  }
  return best?.line ?? null;
}

/**
 * The region a demonstration attempt crops, or null: where the page it read marks regions
 * (small print it shows by role and place, not its text) and the reference is not legible on it,
 * attempt `rolloutId` tries the marked regions in turn (rejection sampling keeps the one the judge
 * scores right). It uses what a dataset holds (the reference), not where the fact was drawn.
 */
export function cropAttempt(
  page: string,
  reference: string | undefined,
  rolloutId: number,
  cropBy: 'region' | 'location' = 'region',
): string | null {
  if (reference !== undefined && reference.trim() !== '' && page.includes(reference.trim())) return null;
  const marks = parseRegionMarks(page);
  if (marks.length === 0) return null;
  const mark = marks[rolloutId % marks.length]!;
  return cropBy === 'region' ? mark.label : regionMarkBody(mark.label, mark.bins);
}

export interface HarvestResult {
  /** The successful episodes kept, at most `keepPerQuestion` a question. */
  trajectories: Trajectory[];
  /** Questions tried, and how many had at least one success. */
  questions: number;
  solved: number;
  /** Episodes run. */
  episodes: number;
  /** What made an episode a success: the judge, a golden page, or both. */
  criterion: string;
  /** Searches tried a question at most (`DEMONSTRATION_ATTEMPTS`: four, or five with golden page names). */
  attempts: number;
}

/** Whether a demonstration episode is worth imitating: a golden page retrieved (where the question names one) and the answer right (where it has a reference). */
function succeeded(t: Trajectory, reward: SearcherConfig['reward'], judged: boolean): boolean {
  const detail = t.rewardDetail;
  // An episode ends by its own action: search_complete, or (answer mode) its answer.
  const ended = t.terminated === 'complete' || t.terminated === 'answer';
  if (!ended || detail?.status !== 'ok' || !detail.components.formatPassed) return false;
  if (t.goldenBasenames.length > 0 && detail.components.ndcg <= 0) return false;
  if (t.reference !== null && judged) {
    // As rare-success distillation keeps them: a judge score of 1 (in answer mode the reward's
    // answer check: the format-and-answer reward's, similar or exact; Search-R1's exact match).
    // Under 'search-r1' the reward has checked the answer already, against every accepted answer:
    // exact match pays 1; the format-and-answer reward pays 0.5 for the format passed here plus
    // 1 or 2 for a similar or exact answer.
    const right =
      reward.scheme !== 'search-r1'
        ? (detail.components.judgeScore ?? 0) >= 1
        : (t.reward ?? 0) >= (reward.searchR1Reward === 'exact-match' ? 1 : 1.5);
    if (!right) return false;
  }
  return t.goldenBasenames.length > 0 || (t.reference !== null && judged);
}

/** A question's accepted answers, its reference first where it is one of them. */
function referenceFirst(prompt: PromptRecord): readonly string[] {
  const accepted = acceptedAnswers(prompt);
  const reference = prompt.reference;
  return reference !== undefined && accepted.includes(reference)
    ? [reference, ...accepted.filter((a) => a !== reference)]
    : accepted;
}

/** The first of `answers` that the texts read write, as they write it (`referenceAsRead`), or null. */
function firstAsRead(answers: readonly string[], read: readonly string[]): string | null {
  for (const answer of answers) {
    const found = referenceAsRead(answer, read);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The reference as the evidence writes it, or null where no text read contains it: compared case
 * aside and on runs of whitespace, the evidence's own spelling returned (`the Nutcracker` for the
 * reference `The Nutcracker` where the page writes that). What the answer-mode demonstrator
 * answers: a reader that copies the answer from the page where the page holds it. A reference
 * of no letter or digit is never found.
 */
export function referenceAsRead(reference: string, read: readonly string[]): string | null {
  const words = reference
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '');
  if (!words.some((w) => /[\p{L}\p{N}]/u.test(w))) return null;
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  // Whole words: `Paris` is not read in `Parisian`.
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])${escaped.join('\\s+')}(?![\\p{L}\\p{N}])`, 'iu');
  for (const text of read) {
    const found = pattern.exec(text);
    if (found) return found[0].replace(/\s+/g, ' ');
  }
  return null;
}

/**
 * The warm start on your own data (docs/method.md#warm-start-on-your-own-data): rejection sampling
 * over your own search engine, successes only, as rare-success distillation keeps them. For each question a scripted Searcher tries
 * `DEMONSTRATION_ATTEMPTS` searches with queries made of the question's words
 * (`demonstrationQueries`). In searcher mode, where the page read is not one of the question's
 * golden pages, it makes the same search again (the next result, up to `DEMONSTRATION_SEARCHES`);
 * where the page read marks regions and the reference is not legible on it, it crops one of them
 * (`cropAttempt`, a different one each attempt); then it stops (the run's Generator answers). In
 * answer mode it searches again the same way, then answers with the reference as the pages read
 * write it (`referenceAsRead`), or where none holds it the extractive reading of what it read. Each episode is scored
 * by the run's own ports; the episodes that retrieved a golden page and whose answer was right
 * are kept, at most `keepPerQuestion` a question, the shortest searches first.
 */
export async function harvestDemonstrations(args: {
  prompts: readonly PromptRecord[];
  ports: Omit<SearcherPorts, 'policy'>;
  tokenizer: Tokenizer;
  /** The chat format of the policy the demonstrations train (its episodes are wrapped in it). */
  chatFormat?: ChatFormat | undefined;
  searcher: Omit<SearcherConfig, 'adapters'>;
  keepPerQuestion: number;
  /**
   * Stop at a question's first success: the attempts run in rounds, each on the questions not yet
   * solved (about half the episodes where the first query mostly works; one kept a question).
   */
  firstSuccess?: boolean;
  /**
   * How a crop names its region: by the name the page marks it with (`footnote`), or by that
   * name and the box the page gives it in location tokens (`footnote at <x1_3><y1_24><x2_13><y2_29>`:
   * the episode crops the box, not the name).
   */
  cropBy?: 'region' | 'location';
  /** Before a crop, think the page's line that shares the most words with the question (`questionLine`). */
  thinkBeforeCrop?: boolean;
  options?: RunOptions;
}): Promise<HarvestResult> {
  const { prompts, searcher, keepPerQuestion } = args;
  const options = args.options ?? {};
  const answerMode = searcher.episode.mode === 'answer';
  // The judge is asked only where every question has a reference (a judge needs one for each).
  const judged =
    prompts.every((p) => p.reference !== undefined) && (answerMode || args.ports.judge !== undefined);
  const byQuestion = new Map(prompts.map((p) => [neutraliseTags(p.question), p]));
  const maxTurns = searcher.episode.maxTurns;
  const firstSuccess = args.firstSuccess ?? false;
  const attempts = attemptsFor(prompts);
  let round = 0;
  const script = ({ turn, context, rolloutId: rollout }: ScriptContext): string => {
    const rolloutId = firstSuccess ? round : rollout;
    const asked = lineAfter(context, 'Question: ') ?? '';
    const prompt = byQuestion.get(asked);
    const queries = prompt ? queriesOf(prompt) : [];
    if (turn === 0 && queries.length > 0)
      return `<search>${queries[(rolloutId % attempts) % queries.length]}</search>`;
    const read = tagSpans(context, '<information>', '</information>').map((s) => s.body);
    const last = read[read.length - 1] ?? '';
    // The page read is not one the dataset names for the question: the same search again shows
    // the next result (a search shows no page twice), where a search and the last action fit.
    const page = pageRead(last);
    const golden = prompt?.goldenBasenames ?? [];
    // The episode's own searches: those after the question (the instructions may show the tag).
    const searches = tagSpans(context.slice(context.indexOf('Question: ')), '<search>', '</search>');
    const first = searches[0]?.body;
    if (
      page !== null &&
      golden.length > 0 &&
      !golden.includes(page) &&
      first &&
      searches.length < DEMONSTRATION_SEARCHES &&
      turn + 2 <= maxTurns
    )
      return `<search>${first}</search>`;
    if (!answerMode) {
      const crop = cropAttempt(last, prompt?.reference, rolloutId, args.cropBy);
      if (crop === null || context.includes('<bbox>') || turn + 2 > maxTurns)
        return '<search_complete>true</search_complete>';
      const thought = args.thinkBeforeCrop ? questionLine(prompt?.question ?? asked, last) : null;
      return `${thought === null ? '' : `<think>${neutraliseTags(thought)}</think>`}<bbox>${crop}</bbox>`;
    }
    // The reference as the pages read write it, else the first other accepted answer they write
    // (Natural Questions lists several for many questions).
    const copied = prompt === undefined ? null : firstAsRead(referenceFirst(prompt), read);
    return `<answer>${neutraliseTags(copied ?? extractAnswer(prompt?.question ?? asked, read) ?? 'unknown')}</answer>`;
  };
  const demonstrator = createSearcher(
    {
      ...args.ports,
      policy: createScriptedPolicy({
        tokenizer: args.tokenizer,
        ...(args.chatFormat && { chatFormat: args.chatFormat }),
        script,
      }),
    },
    {
      ...searcher,
      reward: {
        ...searcher.reward,
        weights: judged && !answerMode ? { judge: 1, ndcg: 0, format: 0 } : 'phase1',
      },
      rl: {
        ...searcher.rl,
        nAgent: firstSuccess ? 1 : attempts,
        loss: { ...searcher.rl.loss, klReference: 'rollout' },
      },
    },
  );
  const kept: Trajectory[] = [];
  let solved = 0;
  let episodes = 0;
  const chunk = 32;
  const progress = progressOf(options, 'demonstrations', prompts.length);
  const solvedUids = new Set<string>();
  const rounds = firstSuccess ? attempts : 1;
  for (round = 0; round < rounds; round++) {
    const pending = firstSuccess ? prompts.filter((p) => !solvedUids.has(p.uid)) : prompts;
    for (let start = 0; start < pending.length; start += chunk) {
      const batch = await demonstrator.collect(pending.slice(start, start + chunk), {
        ...(options.signal && { signal: options.signal }),
      });
      episodes += batch.episodes.length;
      const successes = new Map<string, Trajectory[]>();
      for (const { trajectory: t } of batch.episodes) {
        if (!succeeded(t, searcher.reward, judged)) continue;
        const list = successes.get(t.promptUid) ?? [];
        // One episode per query: the same search twice teaches nothing more.
        if (!list.some((other) => other.turns[0]?.search?.query === t.turns[0]?.search?.query)) list.push(t);
        successes.set(t.promptUid, list);
      }
      for (const [uid, list] of successes) {
        solved++;
        solvedUids.add(uid);
        // The shortest searches that worked first: a concise demonstration is the easiest to imitate.
        const words = (t: Trajectory) => t.turns[0]?.search?.query.split(' ').length ?? 0;
        kept.push(...[...list].sort((a, b) => words(a) - words(b)).slice(0, keepPerQuestion));
      }
      progress.update(
        firstSuccess ? solvedUids.size : Math.min(prompts.length, start + chunk),
        `${kept.length} kept${firstSuccess ? `, attempt ${round + 1}` : ''}`,
      );
    }
  }
  progress.done(`${kept.length} kept from ${solved} of ${prompts.length} questions`);
  const criterion = [
    prompts.some((p) => (p.goldenBasenames?.length ?? 0) > 0) ? 'a golden page retrieved' : null,
    judged ? (answerMode ? 'the answer right (Search-R1 check)' : 'judge score 1') : null,
  ]
    .filter((c) => c !== null)
    .join(' and ');
  return {
    trajectories: kept,
    questions: prompts.length,
    solved,
    episodes,
    criterion: criterion || 'none',
    attempts,
  };
}
