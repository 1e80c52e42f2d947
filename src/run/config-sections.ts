import { z } from 'zod';
import { positiveInt } from '../provider-utils/settings';

// The run configuration's warm start and dataset sections (src/run/config.ts composes them).

const unit = () => z.number().min(0).max(1);

export const sftSchema = z
  .object({
    demonstrations: z
      .number()
      .int()
      .min(0)
      .default(2000)
      .describe(
        "Training questions demonstrated (0: no warm start): by the demonstrator's searches over the search engine, its successful episodes kept (rejection sampling), or by the slide oracle (`sft.demonstrator: oracle`).",
      ),
    demonstrator: z
      .enum(['rejection-sampling', 'oracle'])
      .default('rejection-sampling')
      .describe(
        "Who demonstrates on a slide run. 'rejection-sampling' (default, the honest warm start): the generic demonstrator that a run on your own data uses, from what a dataset holds (questions, references, golden pages): it searches with the question's words (the whole question first), searches again (the next result) where the page read is not a golden page, crops a region the page marks where the reference is not legible on it, and keeps the episodes the judge scores fully right. 'oracle': the slide oracle, which knows where each fact was drawn; its own success on the evaluation split is printed as a reference line either way (docs/train.md#baselines).",
      ),
    keepPerQuestion: positiveInt()
      .default(1)
      .describe(
        'Your own data: successful demonstrations kept per question at most (rejection sampling, as in rare-success harvesting), the shortest searches first: one consistent way per question is what a small policy imitates best.',
      ),
    epochs: positiveInt().default(6),
    batchSize: positiveInt()
      .default(8)
      .describe(
        'Demonstrations per optimizer step: small, because copying names from the question into the query needs many steps (docs/method.md#slide-environment).',
      ),
    learningRate: z.number().positive().default(3e-3),
    freshNames: z
      .boolean()
      .nullable()
      .default(null)
      .describe(
        "Each epoch, the words a demonstration's actions copy from its question (the asked entity in the query) are renamed, consistently through the whole demonstration and the pages it read, to words drawn at random from the vocabulary: a small policy can then only imitate by copying, not by memorising its training names (docs/method.md#copying-names). null (default): on where the policy has the vocabulary tokenizer (policy.tokenizer: vocabulary) and the SFT makes at least 1,000 optimizer steps, off otherwise; chosen on the slides' validation split, seeds 1-3 (judge success after RL 0.0-0.2% without, 48.9-58.4% with). Copying is learnt after some thousands of steps; after a few hundred, renaming scored below memorising.",
      ),
    vagueRate: unit()
      .default(0)
      .describe(
        "Ablation, `sft.demonstrator: oracle` only: share of the oracle's demonstrations that search with the entity's name alone (a vague query). Default 0: degraded demonstrations are an ablation, never the default warm start (issue 39; the old demo's 0.7 made RL undo a handicap).",
      ),
    skipCropRate: unit()
      .default(0)
      .describe(
        "Ablation, `sft.demonstrator: oracle` only: share of pages showing the asked role's region where the demonstration does not crop it (default: it always crops the region it chose).",
      ),
    smallPrintShare: unit()
      .default(0.2)
      .describe(
        '`sft.demonstrator: oracle` only (it knows which facts are small print): share of the demonstrated questions whose answer is in small print (repeated, each its own rollout, where the training split holds fewer). More crops demonstrated, fewer queries: 0.5 (about 350 crops of 2000, not 160) taught seed 1 to crop (right region 0 -> 48.4%) but cost seed 2 its query learning (judge success +9.6 points, not +62.3): docs/method.md#why-the-crop-was-not-learned.',
      ),
    cropPractice: z
      .number()
      .int()
      .min(0)
      .nullable()
      .default(null)
      .describe(
        "Crop practice: crop episodes trained on the crop turn alone, beside the demonstrations (whose mix of queries stays as it is): the rejection-sampling demonstrator's kept episodes that crop, repeated; with `sft.demonstrator: oracle`, the oracle's episodes on small-print training questions whose page has two or three regions. null (default): half of sft.demonstrations, 1000 of the 2000; 0 turns it off. On the corpus before the pointer lines, where the question's template told the role, crops that name their region went from 54-80% right without it to 93-97% with 1000 on seeds 1-3 (docs/method.md#why-the-crop-was-not-learned); with the pointer lines the crops hit the named region 48-72% of the time after RL (docs/train.md#honest-figures-issue-39).",
      ),
    cropBy: z
      .enum(['region', 'location'])
      .default('region')
      .describe(
        "How the demonstrations' crops name the region: 'region' (default) by the name the page marks it with, <bbox>footnote</bbox>; 'location' by its box in location tokens, which the episode crops: the oracle writes the four tokens, the rejection-sampling demonstrator the page's whole mark (<bbox>footnote at <x1_17><y1_20><x2_23><y2_25></bbox>, the name not read). The 2-layer policy did not learn to copy the box (right region 55.6% -> 64.7% after RL on the validation split, seed 1; docs/method.md#why-the-crop-was-not-learned).",
      ),
    cropPracticeQuestions: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        "Rejection-sampling demonstrator only (the oracle ignores it): its crop practice also draws on this many more training questions (after the demonstrations' sample): their kept crops join the demonstrations' own, so the practice repeats more distinct pages. 0 (default): the demonstrations' crops alone. Measured on the slides' validation split with all 1506 other training questions (499 distinct crops, not about 275): 72.1 / 61.3 / 72.6% after RL on seeds 1-3 against 72.6 / 75.1 / 71.0% without, the crops in the pointed region 49-62% of the time (docs/train.md#honest-figures-issue-39).",
      ),
    thinkBeforeCrop: z
      .boolean()
      .default(false)
      .describe(
        "Rejection-sampling demonstrator only (the oracle ignores it): its crops first think the page's line that shares the most words with the question (<think>Employees 2015: see footnote</think><bbox>footnote</bbox>), so that the crop copies the region's name from the line just written. Off by default: on the slides' validation split (seeds 1-3) it gave 72.8 / 67.9 / 65.6% after RL against 72.6 / 75.1 / 71.0% without it, the crops still in the pointed region 52-58% of the time (docs/train.md#honest-figures-issue-39); measured before questionLine matched headquartered to Headquarters, so headquarters crops thought the slide's title.",
      ),
    skipResearchRate: unit()
      .default(0)
      .describe(
        "Ablation, `sft.demonstrator: oracle` only: share of pages without the asked fact after which the demonstration does not search again. Default 0 (the old demo's 0.85 was chosen on the test split to leave RL more to correct: issue 39).",
      ),
  })
  .strict()
  .describe(
    "The warm start: SFT on demonstrations (the demonstrator's successful episodes, docs/method.md#warm-start-on-your-own-data; on a slide run optionally the oracle's).",
  );

/** The sft fields of the slide oracle, which a run on your own data does not use. */
export const SLIDE_SFT_FIELDS = [
  'demonstrator',
  'vagueRate',
  'skipCropRate',
  'skipResearchRate',
  'smallPrintShare',
  'cropPractice',
  'cropBy',
  'cropPracticeQuestions',
  'thinkBeforeCrop',
] as const;

/**
 * The instructions of a run on your own data with its own small policy, unless set: one line
 * naming the actions (the protocol's own, about 480 tokens, leave no room in a 256-token context).
 */
export const COMPACT_INSTRUCTIONS = {
  searcher: 'Search: <search>query</search> then <search_complete>true</search_complete>',
  answer: 'Search: <search>query</search> then answer: <answer>answer</answer>',
} as const;

export const datasetSchema = z
  .object({
    path: z
      .string()
      .min(1)
      .describe(
        'Questions: JSONL ({uid|id, question, reference|answer, golden|goldenBasenames: page basenames}) or Parquet in the verl/Search-R1 layout.',
      ),
    format: z.enum(['auto', 'jsonl', 'parquet']).default('auto').describe('`auto`: by the file extension.'),
    evalPath: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        'Questions to evaluate on (same formats; `eval --split validation`); `null`: the rows of `path` whose split column (JSONL `split`, Parquet `extra_info.split`) is validation or test, else the training questions.',
      ),
    allowMissingGolden: z
      .boolean()
      .default(false)
      .describe(
        "Train although some golden pages are not in the search engine's index (counted in the log); by default such a run is refused before it starts.",
      ),
  })
  .strict()
  .describe(
    'Your own questions (then the pages come from `searcher.adapters.searchEngine`); without it, the offline slide environment.',
  );
