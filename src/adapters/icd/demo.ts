import { InvalidArgumentError } from '../../core/errors';
import { vqaSoftAccuracy } from '../../core/icd/vqa-accuracy';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type { IcdDemonstration, IcdQuery, IcdScore, IcdScorer } from '../../ports/icd-scorer';
import { words } from './hashed-embedder';

/**
 * The embedded ICD demo (docs/method.md#icd-selection): arithmetic tasks asked in the words of a
 * topic. A query names its task with one word ("sum"), a demonstration with another ("add"), so
 * that bag-of-words similarity sees the topic and not the task: the candidates most similar to the
 * query (cosine top-2) seldom help, and a selector has to learn which demonstrations do.
 */
const QUERY_CUES = ['sum', 'twice', 'square', 'minus', 'half', 'triple', 'modulo', 'next'];
const DEMO_CUES = ['add', 'double', 'power', 'subtract', 'halve', 'thrice', 'remainder', 'successor'];
const TOPICS = [
  ['river', 'boat', 'fish'],
  ['cloud', 'rain', 'storm'],
  ['stone', 'cliff', 'cave'],
  ['apple', 'orchard', 'tree'],
  ['train', 'station', 'track'],
  ['market', 'coin', 'trader'],
];
/** How an answer is written: the demonstrations show one, the model copies it. */
const STYLES = [(n: number) => `${n}`, (n: number) => `${n} units`, (n: number) => `about ${n}`];
const STYLE_WORDS = ['', 'units', 'about'];

function apply(task: number, x: number, y: number): number {
  switch (task) {
    case 0:
      return x + y;
    case 1:
      return 2 * x;
    case 2:
      return x * x;
    case 3:
      return x - y;
    case 4:
      return Math.floor(x / 2);
    case 5:
      return 3 * x;
    case 6:
      return x % (y + 1);
    default:
      return x + 1;
  }
}

/** The embedded ICD demo: its demonstrations and queries, and the latent task of each query. */
export interface IcdDemo {
  demonstrations: IcdDemonstration[];
  queries: IcdQuery[];
  /** The latent task of each query (for reports; the selector never sees it). */
  queryTasks: number[];
  taskCount: number;
}

/**
 * A seeded demo: `demonstrationsPerCell` demonstrations for every (task, topic, style), and
 * `queries` queries, each with ten human answers: 4 in its task's preferred style, 2 in the next,
 * 1 in the third, 3 unrelated, so that the VQAv2 soft accuracy is 1.0, 0.6, 0.3 or 0.
 */
export function createIcdDemo(
  options: { seed?: number; queries?: number; demonstrationsPerCell?: number; tasks?: number } = {},
): IcdDemo {
  const random = createRandom(options.seed ?? 0, RANDOM_STREAMS.icdDemo);
  const tasks = options.tasks ?? QUERY_CUES.length;
  if (!(Number.isInteger(tasks) && tasks >= 2 && tasks <= QUERY_CUES.length))
    throw new InvalidArgumentError({
      argument: 'tasks',
      message: `must be an integer in [2, ${QUERY_CUES.length}]`,
    });
  const perCell = options.demonstrationsPerCell ?? 4;
  const demonstrations: IcdDemonstration[] = [];
  for (let t = 0; t < tasks; t++) {
    for (let p = 0; p < TOPICS.length; p++) {
      for (let s = 0; s < STYLES.length; s++) {
        for (let r = 0; r < perCell; r++) {
          const x = 2 + random.nextInt(20);
          const y = 1 + random.nextInt(9);
          const topic = TOPICS[p]!;
          demonstrations.push({
            index: demonstrations.length,
            question: `${topic[random.nextInt(3)]} ${topic[random.nextInt(3)]} ${DEMO_CUES[t]} ${x} and ${y}`,
            answer: STYLES[s]!(apply(t, x, y)),
            source: { kind: 'dataset' },
          });
        }
      }
    }
  }
  const queries: IcdQuery[] = [];
  const queryTasks: number[] = [];
  for (let q = 0; q < (options.queries ?? 300); q++) {
    const t = random.nextInt(tasks);
    const topic = TOPICS[random.nextInt(TOPICS.length)]!;
    const x = 2 + random.nextInt(20);
    const y = 1 + random.nextInt(9);
    const value = apply(t, x, y);
    const preferred = t % STYLES.length;
    const style = (k: number) => STYLES[(preferred + k) % STYLES.length]!(value);
    const answers = [
      style(0),
      style(0),
      style(0),
      style(0),
      style(1),
      style(1),
      style(2),
      'no idea',
      `${value + 7}`,
      'maybe',
    ];
    queries.push({
      id: q,
      question: `${topic[random.nextInt(3)]} ${topic[random.nextInt(3)]} ${topic[random.nextInt(3)]} ${QUERY_CUES[t]} ${x} and ${y}`,
      answers,
    });
    queryTasks.push(t);
  }
  return { demonstrations, queries, queryTasks, taskCount: tasks };
}

/** What the offline model makes of a text: its task cue (query or demonstration words), and its two numbers. */
function readTask(text: string, cues: readonly string[]): { task: number; x: number; y: number } | null {
  const w = words(text);
  const task = w.findIndex((word) => cues.includes(word));
  if (task < 0) return null;
  const numbers = w.filter((word) => /^\d+$/.test(word)).map(Number);
  return { task: cues.indexOf(w[task]!), x: numbers[0] ?? 0, y: numbers[1] ?? 0 };
}

/**
 * The offline frozen model of the demo, a real in-context learner in miniature: it knows how to
 * compute every task, but it answers in the format of the first demonstration of the query's
 * task among those it is shown, and without one it cannot tell what is asked and answers "unknown".
 */
export function createOfflineIcdScorer(): IcdScorer {
  return {
    specificationVersion: 'v1',
    provider: 'offline-icd-model',
    async doScore(
      query: IcdQuery,
      demonstrations: readonly IcdDemonstration[],
      _options?: CallOptions,
    ): Promise<IcdScore> {
      const asked = readTask(query.question, QUERY_CUES);
      let answer = 'unknown';
      if (asked) {
        for (const demo of demonstrations) {
          const shown = readTask(demo.question, DEMO_CUES);
          if (!shown || shown.task !== asked.task) continue;
          const styleWord = words(demo.answer).find((word) => STYLE_WORDS.includes(word) && word !== '');
          const style = styleWord ? STYLE_WORDS.indexOf(styleWord) : 0;
          answer = STYLES[style]!(apply(asked.task, asked.x, asked.y));
          break;
        }
      }
      return { answer, accuracy: vqaSoftAccuracy(answer, query.answers) };
    },
  };
}

/** The text an embedder sees for a demonstration (question and answer: the format is part of it). */
export function demonstrationText(demo: IcdDemonstration): string {
  return `${demo.question} ${demo.answer}${demo.context ? ` ${demo.context}` : ''}`;
}
