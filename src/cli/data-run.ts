import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { createTfjsPolicy, tokenizerFromCheckpoint, type TfjsPolicy } from '../adapters/tfjs/policy';
import { closeSearcherContainer, createSearcherContainer, resolvePorts, resolveSearcher, type SearcherContainer } from '../container';
import { parseSearcherConfig } from '../config';
import { ConfigValidationError, InvalidArgumentError } from '../core/errors';
import { createProtocolTokenizer, createVocabularyTokenizer } from '../core/protocol/tokenizer';
import type { PromptRecord } from '../core/types';
import type { Trajectory } from '../core/trajectory/trajectory';
import { issueFields } from '../provider-utils/settings';
import { createTrainer, latestCheckpointKey, readPolicyCheckpoint, type StepMetrics } from '../run/trainer';
import { dataRunConfigSchema, readPromptDataset, type DataRunConfig } from '../run/dataset';
import { runPolicySettings } from '../run/config';
import { createProgress } from './progress';
import type { EvalSummary, RunContext } from '../run/train';

export function parseDataRunConfig(input: unknown, source = 'config'): DataRunConfig {
  const parsed = dataRunConfigSchema.safeParse(input);
  if (!parsed.success) throw new ConfigValidationError(issueFields(parsed.error.issues).map((issue) => ({ ...issue, field: `${source}: ${issue.field}` })));
  return parsed.data;
}

/** The words of the questions and references: the vocabulary tokenizer's tokens. */
function datasetVocabulary(prompts: readonly PromptRecord[]): string[] {
  const words = new Set<string>();
  for (const p of prompts) for (const text of [p.question, p.reference ?? '', ...(p.goldenBasenames ?? [])]) for (const w of text.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
  return [...words];
}

/** A checkpoint named `RUN_DIR/STORE_RUN`: the latest checkpoint of that store run in that run folder. */
export async function readNamedCheckpoint(reference: string) {
  const at = reference.lastIndexOf('/');
  if (at <= 0) throw new InvalidArgumentError('policy.initFrom', `expected RUN_DIR/STORE_RUN, got '${reference}'`);
  const store = createJsonlStore({ dir: reference.slice(0, at) });
  const runId = reference.slice(at + 1);
  const key = await latestCheckpointKey(store, runId);
  if (key === null) throw new InvalidArgumentError('policy.initFrom', `'${reference}' has no checkpoint`);
  return { key: `${runId}/${key}`, checkpoint: (await readPolicyCheckpoint(store, runId, key)).checkpoint };
}

async function createDataPolicy(config: DataRunConfig, prompts: readonly PromptRecord[]): Promise<TfjsPolicy> {
  const settings = await runPolicySettings(config.policy, config.seed);
  if (config.policy.initFrom !== null) {
    const { checkpoint } = await readNamedCheckpoint(config.policy.initFrom);
    const policy = await createTfjsPolicy(settings, { tokenizer: tokenizerFromCheckpoint(checkpoint) });
    await policy.load(checkpoint);
    return policy;
  }
  const tokenizer = config.policy.tokenizer === 'vocabulary' ? createVocabularyTokenizer(datasetVocabulary(prompts)) : createProtocolTokenizer();
  return createTfjsPolicy(settings, { tokenizer });
}

export function summariseEval(split: string, trajectories: readonly Trajectory[]): EvalSummary {
  const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  return {
    split,
    questions: trajectories.length,
    judgeSuccess: mean(trajectories.map((t) => ((t.rewardDetail?.components.judgeScore ?? 0) >= 0.5 ? 1 : 0))),
    ndcg: mean(trajectories.map((t) => t.rewardDetail?.components.ndcg ?? 0)),
    completion: mean(trajectories.map((t) => (t.terminated === 'complete' ? 1 : 0))),
    smallPrintSuccess: null,
    smallPrintCropRate: null,
    cropRate: mean(trajectories.map((t) => (t.turns.some((turn) => turn.crop) ? 1 : 0))),
  };
}

export interface DataRunResult {
  runId: string;
  runDir: string;
  before: EvalSummary;
  after: EvalSummary;
  steps: Array<StepMetrics & { phase: string }>;
}

/**
 * `searcher-rl train` on your own data: the dataset, the adapters of `searcher.adapters` through
 * the composition root (with the run's policy and its JSONL store), the RL phases, and an
 * evaluation before and after, in `runsDir/runId/` (the same layout as the slide runs, so `eval`,
 * `report` and `curate` read it).
 */
export async function trainDataRun(config: DataRunConfig, context: RunContext): Promise<DataRunResult> {
  const runId = config.runId ?? `run-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDir = join(config.runsDir, runId);
  await mkdir(runDir, { recursive: true });
  await writeFile(join(runDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  const searcherConfig = parseSearcherConfig(config.searcher);
  const needsReference = searcherConfig.reward.scheme === 'search-r1' || phasesNeedJudge(config);
  const prompts = await readPromptDataset(config.dataset.path, config.dataset.format, { needsReference });
  const evalPrompts = config.dataset.evalPath === null ? prompts : await readPromptDataset(config.dataset.evalPath, config.dataset.format, { needsReference });
  context.log(`dataset: ${prompts.length} questions (${config.dataset.path}), evaluation ${evalPrompts.length}`);
  const store = createJsonlStore({ dir: runDir });
  // A policy named in `searcher.adapters.policy` (e.g. a scripted one) is built by the container; otherwise the run's trainable transformer.
  const own = searcherConfig.adapters.policy === undefined ? await createDataPolicy(config, [...prompts, ...evalPrompts]) : null;
  const container = createSearcherContainer(config.searcher, { ports: { ...(own && { policy: own }), store } });
  try {
    const { policy } = await resolvePorts(container);
    if (own) context.log(`policy: ${own.parameterCount} parameters on ${own.backend.name}, vocabulary ${own.tokenizer.vocabSize} tokens${config.policy.initFrom ? ` (from ${config.policy.initFrom})` : ''}`);
    else context.log(`policy: ${policy.provider} (searcher.adapters.policy)`);
    const evaluate = (name: string) => evaluateData(config, container, evalPrompts, runDir, name, context);
    const before = await evaluate('eval-before-rl');
    const steps: DataRunResult['steps'] = [];
    for (const phase of config.phases) {
      if (phase.steps === 0) continue;
      own?.resetOptimizer({ learningRate: phase.learningRate, warmupSteps: phase.warmupSteps });
      const searcher = await resolveSearcher(container, { ...config.searcher, reward: { ...config.searcher.reward, weights: phase.weights } });
      const trainer = createTrainer({ searcher, store, prompts, settings: { runId: phase.name, steps: phase.steps, batchSize: Math.min(config.trainer.batchSize, prompts.length), saveFreq: config.trainer.saveFreq, resumeMode: config.trainer.resumeMode, seed: config.seed } });
      const progress = createProgress(phase.name, phase.steps, context.stream, { every: Math.max(1, Math.ceil(phase.steps / 10)) });
      await trainer.run({
        ...(context.signal && { signal: context.signal }),
        onStep: (m) => {
          steps.push({ ...m, phase: phase.name });
          progress.update(m.step, `reward ${m.rewardMean?.toFixed(3) ?? 'missing'} NDCG ${m.ndcgMean.toFixed(2)}`);
        },
      });
      progress.done();
    }
    const after = await evaluate('eval-after-rl');
    const pagesDir = searcherConfig.adapters.searchEngine.type === 'sqlite-fts' ? (searcherConfig.adapters.searchEngine.pagesDir ?? null) : null;
    await writeFile(join(runDir, 'summary.json'), `${JSON.stringify({ runId, before, after, corpus: { slidesDir: pagesDir } }, null, 2)}\n`);
    await writeFile(join(runDir, 'eval-after-rl.json'), `${JSON.stringify(after, null, 2)}\n`);
    context.log(`judge success ${(before.judgeSuccess * 100).toFixed(1)}% -> ${(after.judgeSuccess * 100).toFixed(1)}%, NDCG ${before.ndcg.toFixed(3)} -> ${after.ndcg.toFixed(3)}`);
    return { runId, runDir, before, after, steps };
  } finally {
    await closeSearcherContainer(container);
    own?.dispose();
  }
}

/** One rollout per question at the evaluation temperature, stored under `name` in the run folder. */
async function evaluateData(config: DataRunConfig, container: SearcherContainer, evalPrompts: readonly PromptRecord[], runDir: string, name: string, context: RunContext): Promise<EvalSummary> {
  await rm(join(runDir, name), { recursive: true, force: true });
  const searcher = await resolveSearcher(container, { ...config.searcher, episode: { ...config.searcher.episode, temperature: config.evaluation.temperature }, rl: { ...config.searcher.rl, nAgent: 1 }, reward: { ...config.searcher.reward, weights: 'default' } });
  const questions = config.evaluation.limit === null ? evalPrompts : evalPrompts.slice(0, config.evaluation.limit);
  const trajectories: Trajectory[] = [];
  for (let start = 0; start < questions.length; start += 64) {
    const batch = await searcher.collect(questions.slice(start, start + 64), { nAgent: 1, runId: name, step: 0, ...(context.signal && { signal: context.signal }) });
    trajectories.push(...batch.episodes.map((e) => e.trajectory));
  }
  return summariseEval(config.dataset.evalPath ?? config.dataset.path, trajectories);
}

/** `searcher-rl eval` on a run of your own data: the latest checkpoint of its last phase that saved one. */
export async function evalDataRun(runDir: string, config: DataRunConfig, limit: number | null, context: RunContext): Promise<EvalSummary> {
  // A policy named in `searcher.adapters.policy` (a pretrained ONNX export, a scripted one) is evaluated as configured; otherwise the run's latest checkpoint.
  const named = parseSearcherConfig(config.searcher).adapters.policy !== undefined;
  let found: Awaited<ReturnType<typeof readNamedCheckpoint>> | null = null;
  for (const reference of named ? [] : [...config.phases].reverse().map((p) => join(runDir, p.name))) {
    found = await readNamedCheckpoint(reference).catch(() => null);
    if (found) break;
  }
  if (!named && !found) throw new InvalidArgumentError('run', `'${runDir}' has no checkpoint (train it first)`);
  let policy: TfjsPolicy | null = null;
  if (found) {
    policy = await createTfjsPolicy(await runPolicySettings(config.policy, config.seed), { tokenizer: tokenizerFromCheckpoint(found.checkpoint) });
    await policy.load(found.checkpoint);
  }
  const container = createSearcherContainer(config.searcher, { ports: { ...(policy && { policy }), store: createJsonlStore({ dir: runDir }) } });
  const from = found?.key ?? `searcher.adapters.policy (${parseSearcherConfig(config.searcher).adapters.policy?.type})`;
  try {
    const evalConfig = { ...config, evaluation: { ...config.evaluation, limit: limit ?? config.evaluation.limit } };
    const prompts = await readPromptDataset(config.dataset.evalPath ?? config.dataset.path, config.dataset.format);
    const summary = await evaluateData(evalConfig, container, prompts, runDir, 'eval-dataset', context);
    await writeFile(join(runDir, 'eval-dataset.json'), `${JSON.stringify({ checkpoint: from, ...summary }, null, 2)}\n`);
    context.log(`evaluated ${from}: judge success ${(summary.judgeSuccess * 100).toFixed(1)}%, NDCG ${summary.ndcg.toFixed(3)}`);
    return summary;
  } finally {
    await closeSearcherContainer(container);
    policy?.dispose();
  }
}

function phasesNeedJudge(config: DataRunConfig): boolean {
  return config.phases.some((p) => p.weights !== 'phase1' && (typeof p.weights === 'string' || p.weights.judge !== 0));
}

/** Is this run folder's config.json a run on your own data? */
export async function readRunKind(runDir: string): Promise<{ kind: 'data'; config: DataRunConfig } | { kind: 'slides'; raw: unknown }> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8'));
  } catch (error) {
    throw new InvalidArgumentError('run', `'${runDir}' has no config.json (is it a run folder?)`, { cause: error });
  }
  if (typeof raw === 'object' && raw !== null && 'dataset' in raw) return { kind: 'data', config: parseDataRunConfig(raw, join(runDir, 'config.json')) };
  return { kind: 'slides', raw };
}
