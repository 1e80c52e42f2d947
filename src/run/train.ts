import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createScriptedPolicy } from '../adapters/scripted-policy/scripted-policy';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { createTfjsPolicy, tokenizerFromCheckpoint, type TfjsPolicy } from '../adapters/tfjs/policy';
import { closeSearcherContainer, createSearcherContainer, resolvePorts, resolveSearcher, type SearcherContainer } from '../container';
import { InvalidArgumentError } from '../core/errors';
import { runEpisodes } from '../core/episode/run-episodes';
import { createProtocolTokenizer, createVocabularyTokenizer } from '../core/protocol/tokenizer';
import { createRandom, permutation, RANDOM_STREAMS } from '../core/random';
import { expandGroups } from '../core/rl/groups';
import { runSft, sftExamples, type SftExample } from '../core/rl/policy-update';
import type { Trajectory } from '../core/trajectory/trajectory';
import { buildSlideEnvironment, type SlideEnvironment } from '../env/slides/build';
import { corpusVocabulary, type CorpusQuestion } from '../env/slides/corpus';
import { createOracleScript } from '../env/slides/oracle';
import { slideEnvironmentAdapters } from '../env/slides/adapters-config';
import type { PolicyCheckpoint } from '../ports/policy-backend';
import type { Store } from '../ports/store';
import { createTrainer, latestCheckpointKey, readPolicyCheckpoint, writePolicyCheckpoint, type StepMetrics } from './trainer';
import { createProgress, type ProgressStream } from '../cli/progress';
import { parseRunConfig, resolveRollouts, runPolicySettings, type RunConfig } from './config';

export interface EvalSummary {
  split: string;
  questions: number;
  /** Share of questions the judge scored >= 0.5. */
  judgeSuccess: number;
  ndcg: number;
  completion: number;
  /** Judge success on questions whose answer is in small print (crops needed). */
  smallPrintSuccess: number | null;
  /** Share of episodes with a crop. */
  cropRate: number;
  /** Share of small-print questions whose episode cropped. */
  smallPrintCropRate: number | null;
}

export interface TrainRunResult {
  runId: string;
  runDir: string;
  before: EvalSummary;
  after: EvalSummary;
  steps: Array<StepMetrics & { phase: string }>;
}

export interface RunContext {
  log: (line: string) => void;
  stream: ProgressStream;
  signal?: AbortSignal;
}

export async function prepareEnvironment(config: RunConfig, context: RunContext): Promise<SlideEnvironment> {
  const { cacheDir, ...corpus } = config.corpus;
  const holder: { progress: ReturnType<typeof createProgress> | null } = { progress: null };
  const env = await buildSlideEnvironment(cacheDir, corpus, {
    onProgress: (done, total) => {
      holder.progress ??= createProgress('rendering slides', total, context.stream);
      holder.progress.update(done);
    },
  });
  holder.progress?.done();
  const slides = env.corpus.decks.reduce((n, d) => n + d.slides.length, 0);
  const q = env.corpus.questions;
  context.log(`corpus: ${env.corpus.decks.length} decks, ${slides} slides, questions ${q.train.length} train / ${q.validation.length} validation / ${q.test.length} test (${env.rebuilt ? 'built' : 'cached'} in ${cacheDir})`);
  return env;
}

export async function createRunPolicy(config: RunConfig, env: SlideEnvironment): Promise<TfjsPolicy> {
  const tokenizer = config.policy.tokenizer === 'vocabulary' ? createVocabularyTokenizer(corpusVocabulary(env.corpus)) : createProtocolTokenizer();
  return createTfjsPolicy({ ...(await runPolicySettings(config.policy, config.seed)), optimizer: { learningRate: config.sft.learningRate, weightDecay: 0 } }, { tokenizer });
}

function summarise(split: string, questions: readonly CorpusQuestion[], trajectories: readonly Trajectory[]): EvalSummary {
  const byUid = new Map(questions.map((q) => [q.uid, q]));
  const success = (t: Trajectory) => ((t.rewardDetail?.components.judgeScore ?? 0) >= 0.5 ? 1 : 0);
  const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  const small = trajectories.filter((t) => byUid.get(t.promptUid)?.metadata.small);
  const cropped = (t: Trajectory) => (t.turns.some((turn) => turn.crop) ? 1 : 0);
  return {
    split,
    questions: trajectories.length,
    judgeSuccess: mean(trajectories.map(success)),
    ndcg: mean(trajectories.map((t) => t.rewardDetail?.components.ndcg ?? 0)),
    completion: mean(trajectories.map((t) => (t.terminated === 'complete' ? 1 : 0))),
    smallPrintSuccess: small.length === 0 ? null : mean(small.map(success)),
    cropRate: mean(trajectories.map(cropped)),
    smallPrintCropRate: small.length === 0 ? null : mean(small.map(cropped)),
  };
}

/**
 * The run's composition root: the environment's adapters from configuration, the run's policy and
 * its store (the run folder). Searchers of the phases and evaluations are resolved from it.
 */
export function runContainer(config: RunConfig, env: SlideEnvironment, policy: TfjsPolicy, store: Store): SearcherContainer {
  return createSearcherContainer({ ...config.searcher, adapters: slideEnvironmentAdapters(env) }, { ports: { policy, store } });
}

/** Runs the policy on a split (one rollout per question, evaluation temperature) and records it under `name`. */
export async function evaluate(config: RunConfig, env: SlideEnvironment, container: SearcherContainer, runDir: string, name: string, context: RunContext): Promise<EvalSummary> {
  const all = env.corpus.questions[config.evaluation.split];
  const questions = config.evaluation.limit === null ? all : all.slice(0, config.evaluation.limit);
  // An evaluation replaces the previous one under the same name (the store is append-only).
  await rm(join(runDir, name), { recursive: true, force: true });
  const searcher = await resolveSearcher(container, {
    ...config.searcher,
    episode: { ...config.searcher.episode, temperature: config.evaluation.temperature },
    rl: { ...config.searcher.rl, nAgent: 1 },
    reward: { ...config.searcher.reward, weights: 'default' },
  });
  const trajectories: Trajectory[] = [];
  const chunk = 64;
  const progress = createProgress(`evaluating (${name})`, questions.length, context.stream);
  for (let start = 0; start < questions.length; start += chunk) {
    const batch = await searcher.collect(questions.slice(start, start + chunk), { nAgent: 1, runId: name, step: 0, ...(context.signal && { signal: context.signal }) });
    trajectories.push(...batch.episodes.map((e) => e.trajectory));
    progress.update(Math.min(questions.length, start + chunk));
  }
  const summary = summarise(config.evaluation.split, questions, trajectories);
  progress.done(`judge success ${(summary.judgeSuccess * 100).toFixed(1)}%`);
  return summary;
}

/** Temp file then rename: a process killed mid-write leaves the previous file or none, never half of one. */
async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFile(`${path}.tmp`, `${JSON.stringify(value, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

const pct = (x: number | null) => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);

/**
 * The main job: the slide environment, SFT warm start on oracle demonstrations, the RL phases
 * (each its own trainer run with checkpoints), evaluation before and after RL, all written to
 * `runsDir/runId/`.
 */
export async function trainRun(config: RunConfig, context: RunContext): Promise<TrainRunResult> {
  const runId = config.runId ?? `run-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDir = join(config.runsDir, runId);
  await mkdir(runDir, { recursive: true });
  // Continuing a run folder needs the same corpus, policy and demonstrations as before.
  const configPath = join(runDir, 'config.json');
  const previous = await readFile(configPath, 'utf8').then((text) => JSON.parse(text) as RunConfig, () => null);
  if (previous) {
    // How sessions share forwards, and which engines run rollouts and compute gradients, change the model's numbers in their last bits only, so a folder may continue with another setting.
    const policyPart = (c: RunConfig) => ({ ...c.policy, coalesceSessions: null, rollouts: null, training: null });
    const same = (key: 'corpus' | 'policy' | 'sft' | 'seed', a: RunConfig, b: RunConfig) => JSON.stringify(key === 'policy' ? policyPart(a) : a[key]) === JSON.stringify(key === 'policy' ? policyPart(b) : b[key]);
    for (const key of ['corpus', 'policy', 'sft', 'seed'] as const) {
      if (!same(key, previous, config)) {
        throw new InvalidArgumentError(`config.${key}`, `the run folder '${runDir}' was started with other '${key}' settings; use another runId to start afresh`);
      }
    }
  }
  await writeJsonAtomic(configPath, config);
  const env = await prepareEnvironment(config, context);
  const store = createJsonlStore({ dir: runDir });
  const policy = await createRunPolicy(config, env);
  let container: SearcherContainer | null = null;
  try {
    container = runContainer(config, env, policy, store);
    const ports = await resolvePorts(container);
    context.log(`policy: ${policy.parameterCount} parameters on ${policy.backend.name} (rollouts: ${await resolveRollouts(config.policy.rollouts)}, training: ${config.policy.training}), vocabulary ${policy.tokenizer.vocabSize} tokens`);
    // The warm start runs once per run folder and is kept as a checkpoint, so that a continued run
    // evaluates and trains from the same weights.
    const sft = await readCheckpoint(store, SFT_RUN);
    if (sft) {
      await policy.load(sft.checkpoint);
      context.log(`SFT warm start: loaded ${SFT_RUN}/${sft.key}`);
    } else if (config.sft.demonstrations > 0) {
      const collectStarted = performance.now();
      const examples = await collectDemonstrations(config, env, policy, ports, config.sft.demonstrations);
      const collectSeconds = (performance.now() - collectStarted) / 1000;
      const sftStarted = performance.now();
      const progress = createProgress('SFT warm start', config.sft.epochs, context.stream, { every: 1 });
      const result = await runSft(policy, examples, { epochs: config.sft.epochs, batchSize: config.sft.batchSize }, { random: createRandom(config.seed, RANDOM_STREAMS.sftOrder), ...(context.signal && { signal: context.signal }), onEpoch: (epoch, loss) => progress.update(epoch + 1, `loss ${loss.toFixed(3)}`) });
      progress.done(`${examples.length} demonstrations`);
      // Where the warm start's time goes (docs/method.md#slide-environment): collecting the oracle's episodes, then training.
      const tokens = examples.reduce((n, e) => n + e.inputIds.length, 0);
      const scored = examples.reduce((n, e) => n + e.positions.length, 0);
      const trainSeconds = (performance.now() - sftStarted) / 1000;
      context.log(`SFT: demonstrations collected in ${collectSeconds.toFixed(1)} s; ${config.sft.epochs} epochs x ${tokens} tokens (${scored} trained) in ${trainSeconds.toFixed(1)} s, ${((tokens * config.sft.epochs) / trainSeconds).toFixed(0)} tokens/s, ${result.updates} optimizer steps`);
      await store.doAppend(result.epochLoss.map((loss, epoch) => ({ kind: 'event' as const, runId: SFT_RUN, step: epoch + 1, time: Date.now(), data: { type: 'sft-epoch', loss } })));
      await writePolicyCheckpoint(store, SFT_RUN, 0, await policy.save());
    }
    const beforePath = join(runDir, 'eval-before-rl.json');
    let before = await readFile(beforePath, 'utf8').then((text) => JSON.parse(text) as EvalSummary, () => null);
    if (!before) {
      before = await evaluate(config, env, container, runDir, 'eval-before-rl', context);
      await writeJsonAtomic(beforePath, before);
    }
    context.log(`before RL (after SFT) on ${before.split}: judge success ${pct(before.judgeSuccess)}, NDCG ${before.ndcg.toFixed(3)}, small print ${pct(before.smallPrintSuccess)} (cropped ${pct(before.smallPrintCropRate ?? null)}), crops ${pct(before.cropRate)}`);
    const steps: TrainRunResult['steps'] = [];
    for (const phase of config.phases) {
      if (phase.steps === 0) continue;
      policy.resetOptimizer({ learningRate: phase.learningRate, warmupSteps: phase.warmupSteps });
      const searcher = await resolveSearcher(container, { ...config.searcher, reward: { ...config.searcher.reward, weights: phase.weights } });
      const trainer = createTrainer({ searcher, store, prompts: env.corpus.questions.train, settings: { runId: phase.name, steps: phase.steps, batchSize: config.trainer.batchSize, saveFreq: config.trainer.saveFreq, resumeMode: config.trainer.resumeMode, seed: config.seed } });
      const progress = createProgress(phase.name, phase.steps, context.stream, { every: Math.max(1, Math.ceil(phase.steps / 10)) });
      const result = await trainer.run({
        ...(context.signal && { signal: context.signal }),
        onStep: (m) => {
          steps.push({ ...m, phase: phase.name });
          progress.update(m.step, `reward ${m.rewardMean?.toFixed(3) ?? 'missing'} success ${pct(m.successRate)} NDCG ${m.ndcgMean.toFixed(2)}`);
        },
      });
      progress.done(result.resumedFrom ? `(resumed from ${result.resumedFrom.key})` : undefined);
    }
    const after = await evaluate(config, env, container, runDir, 'eval-after-rl', context);
    await writeJsonAtomic(join(runDir, 'eval-after-rl.json'), after);
    context.log(`after RL on ${after.split}: judge success ${pct(after.judgeSuccess)}, NDCG ${after.ndcg.toFixed(3)}, small print ${pct(after.smallPrintSuccess)} (cropped ${pct(after.smallPrintCropRate)}), crops ${pct(after.cropRate)}`);
    const result: TrainRunResult = { runId, runDir, before, after, steps };
    await writeJsonAtomic(join(runDir, 'summary.json'), { runId, before, after, corpus: { cacheDir: config.corpus.cacheDir, slidesDir: env.slidesDir } });
    return result;
  } finally {
    if (container) await closeSearcherContainer(container);
    policy.dispose();
  }
}

/**
 * The warm start's SFT examples: the oracle's episodes on `count` training questions, a seeded
 * sample of the split, not its first rows (the split is sorted by id, deck by deck, and its first
 * 2000 questions would leave the policy never having seen half of the names).
 */
export async function collectDemonstrations(config: RunConfig, env: SlideEnvironment, policy: TfjsPolicy, ports: Pick<Awaited<ReturnType<typeof resolvePorts>>, 'searchEngine' | 'imageOps'>, count: number): Promise<SftExample[]> {
  const train = env.corpus.questions.train;
  const questions = permutation(train.length, createRandom(config.seed, RANDOM_STREAMS.sftQuestions)).slice(0, count).map((i) => train[i]!);
  const oracle = createScriptedPolicy({ tokenizer: policy.tokenizer, script: createOracleScript(env.corpus, { vagueRate: config.sft.vagueRate, skipCropRate: config.sft.skipCropRate, skipResearchRate: config.sft.skipResearchRate, seed: config.seed }) });
  const demos = await runEpisodes(expandGroups(questions, 1), { policy: oracle, searchEngine: ports.searchEngine, imageOps: ports.imageOps }, { config: config.searcher.episode });
  return sftExamples(demos.map((d) => d.trajectory));
}

/** The store run that holds the SFT warm start's checkpoint. */
const SFT_RUN = 'sft';

/** The latest checkpoint of a store run (a trainer phase or the SFT warm start), or null. */
async function readCheckpoint(store: Store, runId: string): Promise<{ key: string; checkpoint: PolicyCheckpoint } | null> {
  const key = await latestCheckpointKey(store, runId);
  return key === null ? null : { key, checkpoint: (await readPolicyCheckpoint(store, runId, key)).checkpoint };
}

/**
 * The policy of a run folder's latest checkpoint (the last phase that saved one), with the
 * tokenizer it was trained with.
 */
export async function loadRunPolicy(runDir: string, config: RunConfig): Promise<{ policy: TfjsPolicy; from: string }> {
  const store = createJsonlStore({ dir: runDir });
  for (const runId of [...config.phases.map((p) => p.name)].reverse().concat(SFT_RUN)) {
    const found = await readCheckpoint(store, runId);
    if (!found) continue;
    const policy = await createTfjsPolicy(await runPolicySettings(config.policy, config.seed), { tokenizer: tokenizerFromCheckpoint(found.checkpoint) });
    await policy.load(found.checkpoint);
    return { policy, from: `${runId}/${found.key}` };
  }
  throw new InvalidArgumentError('run', `'${runDir}' has no checkpoint (train it first)`);
}

/** `searcher-rl eval`: the latest checkpoint of a run on a split; the summary is written to `eval-<split>.json`. */
export async function evalRun(runDir: string, overrides: { split?: 'train' | 'validation' | 'test'; limit?: number | null }, context: RunContext): Promise<EvalSummary> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8'));
  } catch (error) {
    throw new InvalidArgumentError('run', `'${runDir}' has no config.json (is it a run folder?)`, { cause: error });
  }
  const base = parseRunConfig(raw, join(runDir, 'config.json'));
  const config = parseRunConfig({ ...base, evaluation: { ...base.evaluation, ...(overrides.split && { split: overrides.split }), ...(overrides.limit !== undefined && { limit: overrides.limit }) } });
  const env = await prepareEnvironment(config, context);
  const { policy, from } = await loadRunPolicy(runDir, config);
  const container = runContainer(config, env, policy, createJsonlStore({ dir: runDir }));
  try {
    context.log(`evaluating ${from} on ${config.evaluation.split}`);
    const summary = await evaluate(config, env, container, runDir, `eval-${config.evaluation.split}`, context);
    await writeFile(join(runDir, `eval-${config.evaluation.split}.json`), `${JSON.stringify({ checkpoint: from, ...summary }, null, 2)}\n`);
    context.log(`judge success ${pct(summary.judgeSuccess)}, NDCG ${summary.ndcg.toFixed(3)}, small print ${pct(summary.smallPrintSuccess)}, crops ${pct(summary.cropRate)}`);
    return summary;
  } finally {
    await closeSearcherContainer(container);
    policy.dispose();
  }
}
