import { z } from 'zod';
import { ConfigValidationError } from '../core/errors';
import {
  adaptersConfigSchema,
  refineSearcherSections,
  searcherConfigSchema,
  searcherSectionsShape,
} from '../config';
import { SFT_RUN } from './checkpoints';
import { trainerSettingsSchema } from './trainer';
import { issueFields, positiveInt } from '../provider-utils/settings';
import type { TfjsPolicySettings } from '../adapters/tfjs/settings';
import { applyOverrides, parseOverrides, readConfigFile, resolveInputPaths } from './config-file';
import { trackerConfigSchema } from '../tracker-config';
import { COMPACT_INSTRUCTIONS, datasetSchema, SLIDE_SFT_FIELDS, sftSchema } from './config-sections';

export { COMPACT_INSTRUCTIONS } from './config-sections';

const unit = () => z.number().min(0).max(1);

/** The run's policy, a small TensorFlow.js transformer: the same settings for slide runs and runs on your own data. */
export const runPolicySchema = z
  .object({
    layers: positiveInt().default(2),
    width: positiveInt().default(64),
    heads: positiveInt().default(4),
    contextLength: positiveInt().default(256),
    backend: z.enum(['auto', 'tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']).default('auto'),
    tokenizer: z
      .enum(['vocabulary', 'bytes'])
      .default('vocabulary')
      .describe(
        "`vocabulary`: the corpus's (or dataset's) words as tokens (saved with checkpoints); `bytes`: the protocol byte tokenizer.",
      ),
    rollouts: z
      .enum(['auto', 'tfjs', 'onnx'])
      .default('auto')
      .describe(
        'Where rollouts run: `tfjs` (the training backend), `onnx` (the same weights in ONNX Runtime, needs onnxruntime-node; log-probs equal within 1e-5; the demo gives the same figures), `auto`: onnx when onnxruntime-node is installed, else tfjs.',
      ),
    training: z
      .enum(['tfjs', 'onnx'])
      .default('tfjs')
      .describe(
        "Where gradients are computed: `tfjs` (the training backend), `onnx` (a forward + backward graph in ONNX Runtime, needs onnxruntime-node; gradients equal within 1e-4 of the largest, about 3x faster on the wasm backend). Not `auto`: the rounding differs, so a run's figures differ from the tfjs ones.",
      ),
    trainingThreads: positiveInt()
      .default(1)
      .describe(
        "ONNX Runtime's intra-op threads for `training: onnx` (rollouts keep one: a decode step's operators are too small for a second). The last bits of the gradients depend on the count, so figures compare at the same count.",
      ),
    trainingLanes: positiveInt()
      .default(2)
      .describe(
        "Data-parallel lanes for `training: onnx`: each update's rows are split into this many shares that run side by side, one on the main thread and each other on a worker thread with its own ONNX Runtime sessions (onnxruntime-node runs a session on the thread that calls it). The gradients are summed in row order; their last bits differ from one lane's, so figures compare at the same count. Default 2 (the library's createTfjsPolicy defaults to 1): on 2 cores the demo's SFT took 45.9 s instead of 67.4 s and its two RL phases 25.6 s instead of 40.6 s; on one core a step took 3% longer than on one lane (docs/train.md#the-demo-npm-run-demo). 1 keeps everything on the main thread.",
      ),
    coalesceSessions: z
      .boolean()
      .default(true)
      .describe(
        "Decode concurrent groups in shared forwards (faster). The last bits of a log-prob then depend on which groups shared a forward, which follows the ports' timing: a resumed run equals the uninterrupted one exactly only with `false` (each group alone).",
      ),
  })
  .strict();

const A = adaptersConfigSchema.shape;

/**
 * The run's ports, each optional: an unset one is the environment's (the slide environment's
 * SQLite FTS5, sharp, slide reader and rule judge; for your own data, the Searcher's defaults).
 * The policy is the run's own tfjs transformer (`policy`) unless `policy` names another here; the
 * store is the run folder.
 */
const runAdaptersSchema = z
  .object({
    searchEngine: A.searchEngine.unwrap().optional(),
    policy: A.policy,
    generator: A.generator.unwrap().optional(),
    judge: A.judge.unwrap().optional(),
    imageOps: A.imageOps.unwrap().optional(),
  })
  .strict();

const corpusSchema = z
  .object({
    seed: z.number().int().default(1),
    decks: positiveInt().default(200),
    minSlides: positiveInt().default(5),
    maxSlides: positiveInt().default(15),
    smallPrintRate: unit().default(0.25),
    validationShare: unit().default(0.1),
    testShare: unit().default(0.1),
    heldOutPlaces: z
      .boolean()
      .default(false)
      .describe(
        'Small print of the validation and test decks at places no training deck uses (64 px to the right: location bins no training crop starts at), for measuring whether a crop written as location tokens (sft.cropBy=location) copies the box from the page (npm run bench:places).',
      ),
    cacheDir: z
      .string()
      .min(1)
      .default('.cache/searcher-rl/slides')
      .describe('The generated corpus is cached here and reused while its settings are the same.'),
  })
  .strict()
  .describe('The offline slide environment (runs without a `dataset`).');

/**
 * The Searcher of a run. Rollouts of slide runs at temperature 0.7: the warm start copies names
 * well, and the crops and second searches it makes rarely need sampling to be found
 * (docs/method.md#slide-environment).
 */
const SEARCHER_DEFAULTS = {
  slides: {
    episode: {
      instructions: '',
      // Three searches, a crop of the third page and search_complete: a crop the budget cuts off gets no answer.
      maxTurns: 5,
      maxTurnTokens: 48,
      maxContextTokens: 256,
      observationMaxChars: 300,
      temperature: 0.7,
    },
    rl: { nAgent: 8 },
  },
  dataset: {
    episode: {
      maxTurns: 4,
      maxTurnTokens: 48,
      maxContextTokens: 256,
      observationMaxChars: 60,
      temperature: 0.5,
    },
    rl: { nAgent: 4 },
  },
} as const;

/**
 * A training run, as a YAML or JSON file: the offline slide environment, or your own questions
 * (`dataset`) with the adapters of `searcher.adapters`. Every hyperparameter of the method's
 * settings table (docs/method.md#settings-table) has a place: B (`trainer.batchSize`), n_agent
 * (`searcher.rl.nAgent`), max_turns (`searcher.episode.maxTurns`), reward weights
 * (`phases[].weights`), clip low/high and KL (`searcher.rl.loss`), entropy
 * (`searcher.rl.entropyCoef`), minibatches (`searcher.rl.miniBatchSize`, `ppoEpochs`), learning
 * rate (`phases[].learningRate`), save frequency and resume mode (`trainer`).
 */
export const runConfigObjectSchema = z
  .object({
    runsDir: z.string().min(1).default('runs').describe('Where run folders go.'),
    runId: z
      .string()
      .max(128)
      .regex(/^[A-Za-z0-9._-]+$/)
      .refine((id) => id !== '.' && id !== '..', 'must not be . or ..')
      .optional()
      .describe('Default: a timestamped id.'),
    seed: z.number().int().default(1),
    dataset: datasetSchema.optional(),
    corpus: corpusSchema.optional(),
    policy: runPolicySchema
      .extend({
        initFrom: z
          .string()
          .min(1)
          .nullable()
          .default(null)
          .describe(
            "Start from a checkpoint instead of the warm start: `RUN_DIR/STORE_RUN` (e.g. runs/x/sft-distilled), its latest checkpoint; or a Hugging Face GPT-2-family folder (config.json, model.safetensors, tokenizer.json: GPT-2, DistilGPT-2, a checkpoint's policy/ folder), whose config.json then sets the model (layers, width, heads, contextLength) and whose tokenizer is used.",
          ),
      })
      .optional()
      .describe(
        "The run's trainable tfjs transformer (absent when `searcher.adapters.policy` names the policy).",
      ),
    sft: sftSchema.optional(),
    /** RL phases in order, e.g. phase 1 (format + NDCG) then phase 2 (judge). */
    phases: z
      .array(
        z
          .object({
            name: z.string().min(1),
            steps: z.number().int().min(0),
            weights: searcherConfigSchema.shape.reward.unwrap().shape.weights,
            learningRate: z.number().positive().default(1e-3),
            warmupSteps: z.number().int().min(0).default(5),
          })
          .strict(),
      )
      .refine(
        (phases) => new Set(phases.map((p) => p.name)).size === phases.length,
        'phase names must be distinct (each is its own run in the run folder)',
      )
      .refine(
        (phases) =>
          phases.every(
            (p) => /^[A-Za-z0-9_-]{1,64}$/.test(p.name) && p.name !== SFT_RUN && !p.name.startsWith('eval-'),
          ),
        "phase names are up to 64 letters, digits, '-' and '_', and not 'sft' or 'eval-*' (reserved)",
      )
      .default([
        { name: 'phase1', steps: 20, weights: 'phase1', learningRate: 3e-4, warmupSteps: 5 },
        { name: 'phase2', steps: 20, weights: 'default', learningRate: 3e-4, warmupSteps: 0 },
      ]),
    trainer: trainerSettingsSchema
      .pick({ batchSize: true, saveFreq: true, resumeMode: true, keepLast: true, keepBestBy: true })
      .extend({ batchSize: positiveInt().default(8) })
      .strict()
      .prefault({}),
    /** The Searcher: episode, reward scheme, RL (n_agent, loss, epochs, minibatches), pipeline, port policies, adapters. */
    searcher: z
      .object({ ...searcherSectionsShape, adapters: runAdaptersSchema.prefault({}) })
      .strict()
      .superRefine(refineSearcherSections)
      // The defaults shown are a slide run's; a run on your own data without a `searcher` section
      // gets SEARCHER_DEFAULTS.dataset (withKindDefaults fills the section before this applies).
      .prefault(SEARCHER_DEFAULTS.slides)
      .describe(
        "Without this section, a slide run uses the defaults shown; a run on your own data uses maxTurns 4, maxTurnTokens 48, maxContextTokens 256 (null, the policy's own, for a named policy of searcher.adapters), observationMaxChars 60, temperature 0.5, nAgent 4, and instructions: one line naming the actions for the run's own policy (the protocol's, about 480 tokens, cannot fit its context; null asks for them), the protocol's for a named policy. A partial section keeps these for the fields it does not set.",
      ),
    evaluation: z
      .object({
        split: z
          .enum(['train', 'validation', 'test'])
          .optional()
          .describe(
            'The split evaluated: slide runs default to `test`; on your own data, the rows of that split (validation: `dataset.evalPath` where set), by default the evaluation questions.',
          ),
        limit: positiveInt().nullable().default(null).describe('Questions evaluated (`null`: all).'),
        temperature: z.number().min(0).default(0),
      })
      .strict()
      .prefault({}),
    trackers: z
      .array(trackerConfigSchema)
      .prefault(['jsonl'])
      .describe(
        "Where the run's figures go: `jsonl` (the run folder's records, always written), `tensorboard`, `mlflow`, as names or `{type, ...settings}` (docs/train.md: Trackers).",
      ),
  })
  .strict();

type RunConfigObject = z.output<typeof runConfigObjectSchema>;

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Each kind's defaults, and the refusal of settings the run would ignore (naming the field): a run
 * on your own data has no corpus, warm start or split; a run from a checkpoint no warm start; a
 * named policy no `policy` block; the run folder is the store.
 */
function withKindDefaults(input: unknown, ctx: z.RefinementCtx): unknown {
  if (input === undefined) input = {};
  if (!isMapping(input)) return input;
  const out: Record<string, unknown> = { ...input };
  const dataset = input.dataset !== undefined;
  const refuse = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: 'custom', path, message, input });
  const searcher = isMapping(input.searcher) ? input.searcher : undefined;
  const adapters = isMapping(searcher?.adapters) ? searcher.adapters : undefined;
  const namedPolicy = adapters?.policy !== undefined;
  const policy = isMapping(input.policy) ? input.policy : undefined;
  const initFrom = policy?.initFrom !== undefined && policy.initFrom !== null;
  if (adapters && 'store' in adapters)
    refuse(
      ['searcher', 'adapters', 'store'],
      'a run stores everything in its run folder (runsDir/runId); remove it',
    );
  if (namedPolicy && isMapping(adapters.policy) && adapters.policy.type === 'tfjs')
    refuse(
      ['searcher', 'adapters', 'policy', 'type'],
      "the run's own tfjs policy is configured in `policy`; remove searcher.adapters.policy",
    );
  else if (namedPolicy && input.policy !== undefined)
    refuse(
      ['policy'],
      'searcher.adapters.policy names the policy, so the run has no tfjs policy of its own to configure; remove `policy`',
    );
  if (dataset) {
    if (input.corpus !== undefined)
      refuse(
        ['corpus'],
        'belongs to the offline slide environment; a run on your own data (dataset) does not use it',
      );
    // Refused when set to anything but the default (a run folder's config.json holds the defaults).
    if (isMapping(input.sft))
      for (const field of SLIDE_SFT_FIELDS)
        if (input.sft[field] !== undefined && input.sft[field] !== sftSchema.shape[field].parse(undefined))
          refuse(
            ['sft', field],
            "belongs to the slide oracle's demonstrations; a run on your own data keeps the demonstrator's successful episodes only (sft.keepPerQuestion)",
          );
  } else {
    out.corpus ??= {};
    out.evaluation = { split: 'test', ...(isMapping(input.evaluation) ? input.evaluation : {}) };
  }
  if (initFrom && input.sft !== undefined)
    refuse(['sft'], 'the warm start is skipped when policy.initFrom names a checkpoint; remove `sft`');
  if (!initFrom && !namedPolicy) out.sft ??= {};
  if (!namedPolicy) out.policy ??= {};
  // A partial `searcher` block merges with the kind's defaults (those `train --help` lists), section
  // by section: `searcher: {rl: {nAgent: 4}}` keeps the run's episode settings, not the core's.
  let defaults: Record<string, Record<string, unknown>> = SEARCHER_DEFAULTS[dataset ? 'dataset' : 'slides'];
  if (dataset && !namedPolicy) {
    // A small policy of the run's own: one line of instructions, not the protocol's (which cannot fit its context).
    const episode = isMapping(searcher?.episode) ? searcher.episode : {};
    const mode = episode.mode === 'answer' ? 'answer' : 'searcher';
    defaults = {
      ...defaults,
      episode: { ...SEARCHER_DEFAULTS.dataset.episode, instructions: COMPACT_INSTRUCTIONS[mode] },
    };
  }
  if (namedPolicy) {
    // A named policy (a pretrained model of searcher.adapters) has its own context, which its chat
    // template and the protocol's instructions need: the episodes follow it (null), not the 256
    // tokens sized for the run's own small policy, which cut a SmolLM2 episode after one turn.
    defaults = { ...defaults, episode: { ...defaults.episode, maxContextTokens: null } };
  }
  if (searcher === undefined) out.searcher = defaults;
  else if (isMapping(input.searcher)) {
    const merged: Record<string, unknown> = { ...input.searcher };
    for (const [section, values] of Object.entries(defaults)) {
      const given = merged[section];
      if (given === undefined) merged[section] = values;
      else if (isMapping(given)) merged[section] = { ...values, ...given };
    }
    out.searcher = merged;
  }
  return out;
}

function refineRun(config: RunConfigObject, ctx: z.RefinementCtx): void {
  // Fresh names, asked for, rename whole-word tokens, which the byte tokenizer and a named policy's pieces are not.
  if (
    config.sft?.freshNames === true &&
    (config.policy?.tokenizer === 'bytes' || config.searcher.adapters.policy)
  )
    ctx.addIssue({
      code: 'custom',
      path: ['sft', 'freshNames'],
      message: config.searcher.adapters.policy
        ? "renames the run's own policy's whole-word tokens; a policy of searcher.adapters has its own tokenizer (subword pieces): set sft.freshNames: false"
        : 'renames whole-word tokens, and policy.tokenizer: bytes has none: set policy.tokenizer: vocabulary, or sft.freshNames: false',
    });
  // A rollouts-only policy (ONNX Runtime runs the graph forward only) can be evaluated, not trained.
  const policy = config.searcher.adapters.policy;
  const training = config.phases.filter((p) => p.steps > 0);
  if (policy?.type === 'onnx' && training.length > 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['searcher', 'adapters', 'policy', 'type'],
      message: `the 'onnx' policy runs rollouts only and cannot be trained; set the steps of phase${training.length > 1 ? 's' : ''} ${training.map((p) => `'${p.name}'`).join(', ')} to 0 to evaluate it, or train the run's own tfjs policy (\`policy\`)`,
    });
  }
}

/**
 * A run's configuration (the job `searcher-rl train` runs) as a zod schema; `parseRunConfig`
 * applies it.
 */
export const runConfigSchema = z.preprocess(withKindDefaults, runConfigObjectSchema.superRefine(refineRun));

/** A validated run configuration with every default filled. */
export type RunConfig = z.output<typeof runConfigSchema>;
/** A run configuration as written in a YAML or JSON file: every field optional. */
export type RunConfigInput = z.input<typeof runConfigObjectSchema>;
export type RunPolicyConfig = NonNullable<RunConfig['policy']>;

/** `policy.rollouts: auto`: ONNX Runtime where onnxruntime-node is installed (the same figures, faster rollouts), else tfjs. */
export async function resolveRollouts(choice: 'auto' | 'tfjs' | 'onnx'): Promise<'tfjs' | 'onnx'> {
  if (choice !== 'auto') return choice;
  return import('onnxruntime-node').then(
    () => 'onnx' as const,
    () => 'tfjs' as const,
  );
}
/** `createTfjsPolicy` settings for a run's `policy` block and seed (the engines resolved; the optimizer left to the caller). */
export async function runPolicySettings(
  policy: z.output<typeof runPolicySchema>,
  seed: number,
): Promise<TfjsPolicySettings> {
  const {
    layers,
    width,
    heads,
    contextLength,
    backend,
    coalesceSessions,
    training,
    trainingThreads,
    trainingLanes,
  } = policy;
  return {
    model: { layers, width, heads, contextLength },
    seed,
    backend,
    coalesceSessions,
    rollouts: await resolveRollouts(policy.rollouts),
    training,
    onnx: { intraOpThreads: 1, trainingThreads, trainingLanes },
  };
}

/**
 * Validates a run configuration; an invalid one throws `ConfigValidationError` naming each field,
 * and `source` (the file) in its message.
 */
export function parseRunConfig(input: unknown, source = 'config'): RunConfig {
  const parsed = runConfigSchema.safeParse(input === undefined ? {} : input);
  if (!parsed.success) {
    throw new ConfigValidationError({
      issues: issueFields(parsed.error.issues).map((issue) => ({
        ...issue,
        field: `${source}: ${issue.field}`,
      })),
    });
  }
  return parsed.data;
}

/**
 * Reads a run configuration from YAML (`.yaml`, `.yml`) or JSON (`.json`), or none (`null`: the
 * defaults), then applies `overrides` in order: `key.path=value` settings as Hydra's and verl's
 * users write them, values read as YAML. Fields are validated by name; a problem a setting caused
 * says which argument it came from.
 */
export async function loadRunConfig(
  path: string | null,
  options: { overrides?: readonly string[] } = {},
): Promise<RunConfig> {
  const overrides = parseOverrides(options.overrides ?? []);
  // Paths in the file are the file's (resolveInputPaths); those given as arguments the working directory's.
  const raw = path === null ? {} : resolveInputPaths(await readConfigFile(path), path);
  try {
    return parseRunConfig(applyOverrides(raw, overrides), path ?? 'config');
  } catch (error) {
    if (!ConfigValidationError.isInstance(error) || overrides.length === 0) throw error;
    throw new ConfigValidationError({
      issues: error.issues.map((issue) => {
        const field = issue.field.slice(issue.field.indexOf(': ') + 2);
        const from = overrides.find((o) => {
          const set = o.path.join('.');
          return field === set || field.startsWith(`${set}.`) || set.startsWith(`${field}.`);
        });
        return from ? { ...issue, message: `${issue.message} (from the argument '${from.text}')` } : issue;
      }),
    });
  }
}
