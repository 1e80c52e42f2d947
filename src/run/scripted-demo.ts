import { createScriptedPolicy } from '../adapters/scripted-policy/index';
import { closeSearcherContainer, createSearcherContainer, resolveSearcher } from '../container';
import type { PromptRecord } from '../core/types';
import type { ScoredBatch } from '../searcher';
import { mean } from '../core/stats';

const PAGES = [
  { basename: 'acme_1.png', text: 'Acme Corp annual report 2019: overview of the year' },
  { basename: 'acme_2.png', text: 'Acme revenue 2019: 4.5 billion dollars, up 12 percent' },
  { basename: 'acme_3.png', text: 'Acme employees 2019: 12,000 across 14 countries' },
  { basename: 'globex_1.png', text: 'Globex history: founded 1989 in Springfield' },
  { basename: 'globex_2.png', text: 'Globex revenue 2019: 7 billion dollars' },
  { basename: 'initech_1.png', text: 'Initech headquarters: Austin, Texas' },
  { basename: 'initech_2.png', text: 'Initech leadership: chief executive Bill Lumbergh' },
];

/** What each page lets the frozen reader answer. */
const FACTS: Record<string, string> = {
  'acme_2.png': '4.5 billion dollars',
  'acme_3.png': '12,000',
  'globex_1.png': '1989',
  'globex_2.png': '7 billion dollars',
  'initech_1.png': 'Austin, Texas',
  'initech_2.png': 'Bill Lumbergh',
};

interface DemoQuestion extends PromptRecord {
  entity: string;
  attribute: string;
  distractor: string;
}

const QUESTIONS: DemoQuestion[] = [
  {
    uid: 'acme-revenue',
    question: 'What was the revenue of Acme in 2019?',
    reference: '4.5 billion dollars',
    goldenBasenames: ['acme_2.png'],
    entity: 'Acme',
    attribute: 'revenue 2019',
    distractor: 'Globex',
  },
  {
    uid: 'globex-founded',
    question: 'In which year was Globex founded?',
    reference: '1989',
    goldenBasenames: ['globex_1.png'],
    entity: 'Globex',
    attribute: 'founded',
    distractor: 'Initech',
  },
  {
    uid: 'initech-ceo',
    question: 'Who is the chief executive of Initech?',
    reference: 'Bill Lumbergh',
    goldenBasenames: ['initech_2.png'],
    entity: 'Initech',
    attribute: 'chief executive',
    distractor: 'Acme',
  },
];

/** Four behaviours, one per rollout of a group: precise, vague then precise, off-topic, tag-less. */
function scriptedTurn(question: DemoQuestion, rollout: number, turn: number): string {
  const precise = `<search>${question.entity} ${question.attribute}</search>`;
  const done = '<think>The pages I have should answer it.</think>\n<search_complete>true</search_complete>';
  const plans: string[][] = [
    [`<think>I need the ${question.attribute} of ${question.entity}.</think>\n${precise}`, done],
    [
      `<think>Start broad.</think>\n<search>${question.entity}</search>`,
      `<think>Narrow down.</think>\n${precise}`,
      done,
    ],
    [
      `<think>Maybe ${question.distractor} is related.</think>\n<search>${question.distractor}</search>`,
      done,
    ],
    [`I already know this one, no need to search.`, `<think>Fine, search.</think>\n${precise}`, done],
  ];
  const plan = plans[rollout % plans.length]!;
  return plan[Math.min(turn, plan.length - 1)]!;
}

/** Options of `runDemo`. */
export interface DemoOptions {
  /** Folder for the run's JSONL records. */
  out: string;
  nAgent?: number;
  /** Where lines go (default: the console). */
  log?: (line: string) => void;
}

/** The scripted demo's scored batch, its run id and the loss of its update. */
export interface DemoResult {
  batch: ScoredBatch;
  runId: string;
  loss: { value: number; clipFraction: number };
}

/** Left-aligns in a column of `width`, cutting long text with an ellipsis so columns never touch. */
const pad = (text: string, width: number) =>
  text.length >= width ? `${text.slice(0, width - 2)}… ` : text + ' '.repeat(width - text.length);
const num = (value: number | null, digits = 3) => (value === null ? 'missing' : value.toFixed(digits));

/**
 * The scripted-policy demo: B=3 questions x n_agent=4 rollouts over the mock adapters, scored by
 * the rule judge and NDCG, with GRPO advantages and one GSPO loss evaluation.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const nAgent = options.nAgent ?? 4;
  const byQuestion = new Map(QUESTIONS.map((q) => [q.question, q]));
  const policy = createScriptedPolicy({
    script: (ctx) => {
      const question = [...byQuestion.values()].find((q) => ctx.context.includes(`Question: ${q.question}`))!;
      return scriptedTurn(question, ctx.rolloutId % nAgent, ctx.turn);
    },
  });
  // The scripted policy is a function of the context, so it is given as an object; the rest is configuration.
  const container = createSearcherContainer(
    {
      rl: { nAgent },
      episode: { maxTurns: 4 },
      reward: { weights: 'default' },
      adapters: {
        searchEngine: { type: 'mock', pages: PAGES },
        generator: { type: 'mock', facts: FACTS, fallback: 'I cannot tell from these pages' },
        judge: { type: 'rule' },
        store: { type: 'jsonl', dir: options.out },
      },
    },
    { ports: { policy } },
  );
  const searcher = await resolveSearcher(container);
  const runId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;

  log('searcher-rl demo: a scripted Searcher over mock search, generator and rule judge');
  log(
    `B=${QUESTIONS.length} questions x n_agent=${nAgent} rollouts; reward = 0.8 judge + 0.2 NDCG, 0 if the format gate fails\n`,
  );
  const batch = await searcher.collect(QUESTIONS, { runId, step: 0 });

  for (const question of QUESTIONS) {
    log(
      `Q: ${question.question}   (reference: ${question.reference}; golden: ${question.goldenBasenames!.join(', ')})`,
    );
    log(
      `  ${pad('rollout', 8)}${pad('end', 9)}${pad('searches', 42)}${pad('answer', 22)}${pad('judge', 7)}${pad('ndcg', 7)}${pad('reward', 8)}advantage`,
    );
    for (const { trajectory: t } of batch.episodes.filter((e) => e.trajectory.promptUid === question.uid)) {
      const searches = t.turns
        .flatMap((turn) => (turn.search ? [turn.search.query] : turn.invalid ? ['(invalid)'] : []))
        .join(' | ');
      const detail = t.rewardDetail;
      const judge =
        detail && 'judgeScore' in detail.components ? (detail.components.judgeScore ?? null) : null;
      const ndcg = detail?.components.ndcg ?? null;
      log(
        `  ${pad(String(t.rolloutIndex), 8)}${pad(t.terminated, 9)}${pad(searches, 42)}${pad(t.finalAnswer, 22)}${pad(judge === null ? '-' : judge.toFixed(2), 7)}${pad(num(ndcg, 2), 7)}${pad(num(t.reward), 8)}${num(t.advantage)}`,
      );
    }
    log('');
  }

  const update = await searcher.update(batch);
  const rewards = batch.episodes.map((e) => e.trajectory.reward).filter((r): r is number => r !== null);
  const meanReward = mean(rewards);
  const success =
    batch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length /
    batch.episodes.length;
  log(
    `mean reward ${meanReward.toFixed(3)}; judge success rate ${(success * 100).toFixed(0)}%; missing rewards ${batch.missingRewards}`,
  );
  const p = batch.pipeline;
  log(
    `pipeline (${p.mode}): ${p.samplesScored}/${p.samplesTotal} samples and ${p.promptsUsable}/${p.promptsTotal} prompts scored in ${p.stepTimeMs.toFixed(0)} ms`,
  );
  // At ratio 1 the loss is -mean(advantage), zero up to rounding since each group's advantages sum to zero.
  const lossShown = Math.abs(update.loss) < 1e-12 ? 0 : update.loss;
  log(
    `GSPO loss at ratio 1 (clip 3e-4/4e-4): ${lossShown.toFixed(6)}, clip fraction ${update.clipFraction.toFixed(3)}; the scripted policy is not trainable, so no step was applied`,
  );
  log(`trajectories and rewards written to ${options.out}/${runId}/ (trajectory.jsonl, reward.jsonl)`);
  await closeSearcherContainer(container);
  return { batch, runId, loss: { value: update.loss, clipFraction: update.clipFraction } };
}
