import { AbortedError, InvalidArgumentError, PortOutputError, SearcherError } from '../errors';
import { parseAction, renderAction, type ParsedTurn } from '../protocol/actions';
import { correctiveMessage, renderNoResults, renderObservation, type ObservationItem } from '../protocol/observation';
import { TURN_STOP_TAGS } from '../protocol/tags';
import { TrajectoryTokens } from '../trajectory/builder';
import type { CropRecord, EvidenceRef, SearchRecord, TerminationReason, Trajectory, TurnRecord } from '../trajectory/trajectory';
import type { PromptRecord } from '../types';
import type { Generator } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { PolicyBackend, TurnOutput } from '../../ports/policy-backend';
import type { SearchEngine } from '../../ports/search-engine';
import { classifyFailure } from './failure';
import { callPort, cropImage, generateAnswer, searchPages } from './calls';
import { resolveEpisodeConfig, type EpisodeConfig } from './config';
import { buildPrompt } from './prompt';
import type { BoundingBox, Evidence, PageImage } from '../../ports/types';

/** One rollout to run: a prompt, its group and its index within the group. */
export interface EpisodeInstance {
  prompt: PromptRecord;
  groupId: string;
  rolloutIndex: number;
}

export interface EpisodePorts {
  policy: PolicyBackend;
  searchEngine: SearchEngine;
  /** Needed for `<bbox>`; without it a bbox is an invalid action. */
  imageOps?: ImageOps;
}

/** A finished rollout: the serialisable trajectory plus the evidence (with images) it collected. */
export interface Episode {
  trajectory: Trajectory;
  evidence: Evidence[];
}

export interface RunEpisodesOptions {
  config?: Partial<EpisodeConfig>;
  signal?: AbortSignal;
  /** Called as each episode ends (before the others of the batch), with its index in `instances`. */
  onEpisode?: (episode: Episode, index: number) => void;
}

/** The image the next bbox applies to: a page or a crop, with the frame that maps back to the page. */
interface ShownImage {
  basename: string;
  source: PageImage;
  /** The region of `source` this image shows, in source pixels. */
  region: BoundingBox;
  shownWidth: number;
  shownHeight: number;
}

interface RolloutState {
  instance: EpisodeInstance;
  tokens: TrajectoryTokens;
  turns: TurnRecord[];
  evidence: Evidence[];
  retrieved: string[];
  retrievedSet: Set<string>;
  lastImage: ShownImage | null;
  /** Images of the latest observation, for policies that see images. */
  observationImages: PageImage[];
  invalidActions: number;
  done: boolean;
  terminated: TerminationReason | null;
  finalAnswer: string;
  error: { stage: string; message: string; kind?: string } | null;
}

export function sampleIdOf(groupId: string, rolloutIndex: number): string {
  return `${groupId}#${rolloutIndex}`;
}

/**
 * Runs a batch of episodes in lockstep: every active rollout generates its next turn in one
 * `generateTurn` call, actions run concurrently, observations are appended with loss mask 0.
 * A failing search, crop or policy call ends only the episodes it concerns (`terminated:
 * 'error'`, with the stage and message); an abort ends all, once every call has settled.
 */
export async function runEpisodes(instances: readonly EpisodeInstance[], ports: EpisodePorts, options: RunEpisodesOptions = {}): Promise<Episode[]> {
  const config = resolveEpisodeConfig(options.config);
  const { policy } = ports;
  const signal = options.signal;
  checkInstances(instances);
  if (instances.length === 0) return [];
  if (signal?.aborted) throw new AbortedError('runEpisodes', { cause: signal.reason });

  const promptIds = instances.map((instance) => policy.tokenizer.encode(buildPrompt(instance.prompt.question, config.mode, config.instructions)));
  const states: RolloutState[] = instances.map((instance, i) => ({
    instance,
    tokens: new TrajectoryTokens(promptIds[i]!, policy.provider),
    turns: [],
    evidence: [],
    retrieved: [],
    retrievedSet: new Set(),
    lastImage: null,
    observationImages: [],
    invalidActions: 0,
    done: false,
    terminated: null,
    finalAnswer: '',
    error: null,
  }));

  // An ended episode is built once: the object emitted early is the one returned at the end.
  const ended = new Map<number, Episode>();
  const emit = (id: number) => {
    if (ended.has(id) || !states[id]!.done) return;
    const episode = toEpisode(states[id]!);
    ended.set(id, episode);
    options.onEpisode?.(episode, id);
  };
  const fail = (id: number, stage: string, error: unknown) => {
    const state = states[id]!;
    state.error = { stage, message: error instanceof Error ? error.message : String(error) };
    finish(state, 'error');
    emit(id);
  };

  const session = await callPort('policy', policy.provider, signal, () => policy.begin(promptIds, { signal }));
  if (session.size !== instances.length) {
    await session.end();
    throw new PortOutputError({ port: 'policy', provider: policy.provider, field: 'session.size', message: `expected ${instances.length} rollouts, got ${session.size}` });
  }
  let aborted: unknown = null;
  try {
    for (let turn = 0; turn < config.maxTurns && aborted === null; turn++) {
      const active: number[] = [];
      for (let id = 0; id < states.length; id++) {
        const state = states[id]!;
        if (state.done) continue;
        if (state.tokens.length >= config.maxContextTokens) {
          finish(state, 'context');
          emit(id);
        } else active.push(id);
      }
      if (active.length === 0) break;
      // Each rollout's own budget: one rollout near its context limit does not cut the others short.
      const maxTokens = active.map((id) => Math.min(config.maxTurnTokens, config.maxContextTokens - states[id]!.tokens.length));
      let outputs: TurnOutput[];
      try {
        outputs = await callPort('policy', policy.provider, signal, () =>
          session.generateTurn(active, { stopAfter: TURN_STOP_TAGS, maxTokens, temperature: config.temperature, topP: config.topP, signal }),
        );
      } catch (error) {
        if (AbortedError.isInstance(error)) {
          aborted = error;
          break;
        }
        for (const id of active) fail(id, 'policy', error);
        break;
      }
      const byId = indexTurnOutputs(outputs);

      const settled = await Promise.allSettled(
        active.map(async (id) => {
          const state = states[id]!;
          try {
            const output = checkTurnOutput(byId.get(id), id, policy.provider);
            const text = policy.tokenizer.decode(output.steps.map((s) => s.tokenId));
            state.tokens.appendPolicy(output.steps, text);
            const record = await executeTurn(state, turn, text, output.finishReason, ports, config, signal);
            state.turns.push(record);
            if (state.done) {
              emit(id);
              return;
            }
            const ids = policy.tokenizer.encode(record.observation);
            // An observation that does not fit ends the episode instead of overflowing the window.
            if (state.tokens.length + ids.length > config.maxContextTokens) {
              finish(state, 'context');
              emit(id);
              return;
            }
            const images = policy.modalities === 'text+image' ? state.observationImages : [];
            await callPort('policy', policy.provider, signal, () => session.append(id, ids, { signal, ...(images.length > 0 && { images }) }));
            state.tokens.appendContext(ids, record.observation);
          } catch (error) {
            if (AbortedError.isInstance(error)) throw error;
            fail(id, 'policy', error);
          }
        }),
      );
      const abortedTurn = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (abortedTurn) aborted = abortedTurn.reason;
    }
    if (aborted === null) {
      // Out of turns: close the episode with a forced completion. It is not policy output (mask 0).
      for (const state of states) {
        if (state.done) continue;
        if (config.mode === 'searcher') {
          const forced = renderAction({ type: 'search_complete' });
          state.tokens.appendContext(policy.tokenizer.encode(forced), forced);
          state.turns.push({
            index: state.turns.length,
            text: forced,
            forced: true,
            think: null,
            action: { type: 'search_complete' },
            invalid: null,
            ignoredActions: [],
            observation: '',
          });
        }
        finish(state, 'budget');
      }
      states.forEach((_state, id) => emit(id));
    }
  } finally {
    await session.end();
  }
  if (aborted !== null) throw aborted;
  return states.map((_state, id) => ended.get(id)!);
}

function checkInstances(instances: readonly EpisodeInstance[]): void {
  if (!Array.isArray(instances)) throw new InvalidArgumentError('instances', 'expected an array of episode instances');
  const seen = new Set<string>();
  instances.forEach((instance, i) => {
    const prompt = instance?.prompt;
    if (typeof prompt?.question !== 'string') throw new InvalidArgumentError(`instances[${i}].prompt.question`, 'must be a string');
    if (typeof prompt.uid !== 'string' || prompt.uid.length === 0) throw new InvalidArgumentError(`instances[${i}].prompt.uid`, 'must be a non-empty string');
    if (prompt.reference !== undefined && typeof prompt.reference !== 'string') throw new InvalidArgumentError(`instances[${i}].prompt.reference`, 'must be a string when given');
    if (prompt.goldenBasenames !== undefined && !(Array.isArray(prompt.goldenBasenames) && prompt.goldenBasenames.every((b: unknown) => typeof b === 'string'))) {
      throw new InvalidArgumentError(`instances[${i}].prompt.goldenBasenames`, 'must be an array of basenames (strings) when given');
    }
    if (typeof instance.groupId !== 'string' || instance.groupId.length === 0) throw new InvalidArgumentError(`instances[${i}].groupId`, 'must be a non-empty string');
    if (!(Number.isInteger(instance.rolloutIndex) && instance.rolloutIndex >= 0)) throw new InvalidArgumentError(`instances[${i}].rolloutIndex`, 'must be an integer >= 0');
    const sampleId = sampleIdOf(instance.groupId, instance.rolloutIndex);
    if (seen.has(sampleId)) throw new InvalidArgumentError(`instances[${i}]`, `repeats sample '${sampleId}' (group id and rollout index must be unique)`);
    seen.add(sampleId);
  });
}

function indexTurnOutputs(outputs: unknown): Map<number, unknown> {
  const byId = new Map<number, unknown>();
  if (Array.isArray(outputs)) for (const output of outputs) byId.set((output as TurnOutput)?.rolloutId, output);
  return byId;
}

function checkTurnOutput(output: unknown, id: number, provider: string): TurnOutput {
  const bad = (field: string, message: string) => new PortOutputError({ port: 'policy', provider, field: `generateTurn[${id}].${field}`, message });
  if (typeof output !== 'object' || output === null) throw bad('(output)', `no output for active rollout ${id}`);
  const o = output as TurnOutput;
  if (!Array.isArray(o.steps)) throw bad('steps', 'expected an array of TokenSteps');
  o.steps.forEach((step, k) => {
    if (typeof step !== 'object' || step === null) throw bad(`steps[${k}]`, 'expected a TokenStep object');
  });
  if (o.finishReason !== 'stop' && o.finishReason !== 'length' && o.finishReason !== 'eos') throw bad('finishReason', `expected 'stop', 'length' or 'eos', got ${String(o.finishReason)}`);
  return o;
}

function finish(state: RolloutState, reason: TerminationReason): void {
  state.done = true;
  state.terminated = reason;
}

async function executeTurn(
  state: RolloutState,
  turn: number,
  text: string,
  finishReason: TurnOutput['finishReason'],
  ports: EpisodePorts,
  config: EpisodeConfig,
  signal: AbortSignal | undefined,
): Promise<TurnRecord> {
  let parsed: ParsedTurn = parseAction(text);
  if (parsed.kind === 'valid') {
    const type = parsed.action.type;
    if ((config.mode === 'searcher' && type === 'answer') || (config.mode === 'answer' && type === 'search_complete')) {
      const allowed = config.mode === 'searcher' ? '<search>, <bbox> or <search_complete>' : '<search>, <bbox> or <answer>';
      parsed = { kind: 'invalid', think: parsed.think, reason: 'action_not_allowed', message: `<${type}> is not an action here; use ${allowed}` };
    }
  }
  const record: TurnRecord = {
    index: turn,
    text,
    forced: false,
    think: parsed.think,
    action: parsed.kind === 'valid' ? parsed.action : null,
    invalid: parsed.kind === 'invalid' ? { reason: parsed.reason, message: parsed.message } : null,
    ignoredActions: parsed.kind === 'valid' ? parsed.ignoredActions : [],
    observation: '',
    finishReason,
  };
  const markInvalid = (reason: TurnRecord['invalid'] & object) => {
    record.action = null;
    record.invalid = reason;
    record.observation = correctiveMessage(reason.reason, reason.message, config.mode);
    state.invalidActions++;
  };
  if (parsed.kind === 'invalid') {
    markInvalid({ reason: parsed.reason, message: parsed.message });
    return record;
  }
  const action = parsed.action;
  state.observationImages = [];
  try {
    switch (action.type) {
      case 'search_complete':
        finish(state, 'complete');
        return record;
      case 'answer':
        state.finalAnswer = action.answer;
        finish(state, 'answer');
        return record;
      case 'search': {
        // Asking for as many more hits as pages already shown lets a repeated query page past topK.
        const hits = await searchPages(ports.searchEngine, action.query, config.searchTopK + state.retrieved.length, signal);
        const chosenIndex = hits.findIndex((hit) => !state.retrievedSet.has(hit.basename));
        const golden = new Set(state.instance.prompt.goldenBasenames ?? []);
        const search: SearchRecord = {
          query: action.query,
          hitBasenames: hits.map((h) => h.basename),
          chosenBasename: null,
          chosenRank: null,
          goldenRanks: hits.flatMap((h, i) => (golden.has(h.basename) ? [i + 1] : [])),
        };
        record.search = search;
        if (chosenIndex < 0) {
          record.observation = renderNoResults(action.query, hits.length === 0 ? 'empty' : 'exhausted');
          return record;
        }
        const hit = hits[chosenIndex]!;
        search.chosenBasename = hit.basename;
        search.chosenRank = chosenIndex + 1;
        state.retrieved.push(hit.basename);
        state.retrievedSet.add(hit.basename);
        state.evidence.push({ kind: 'page', basename: hit.basename, ...(hit.text !== undefined && { text: hit.text }), ...(hit.image && { image: hit.image }) });
        const item: ObservationItem = { kind: 'page', basename: hit.basename, ...(hit.text !== undefined && { text: hit.text }) };
        if (hit.image) {
          const shown = shownSize(hit.image.width, hit.image.height, config.policyImageMaxSide);
          state.lastImage = { basename: hit.basename, source: hit.image, region: [0, 0, hit.image.width, hit.image.height], shownWidth: shown.width, shownHeight: shown.height };
          state.observationImages = [hit.image];
          item.shownWidth = shown.width;
          item.shownHeight = shown.height;
        } else {
          // The newest page has no image: a bbox now would crop a page the policy no longer sees.
          state.lastImage = null;
        }
        record.observation = renderObservation([item], { maxTextChars: config.observationMaxChars });
        return record;
      }
      case 'bbox': {
        const shown = state.lastImage;
        if (!ports.imageOps) {
          markInvalid({ reason: 'action_not_allowed', message: 'cropping is not available in this environment' });
          return record;
        }
        if (!shown) {
          markInvalid({ reason: 'bbox_no_image', message: 'there is no image to crop yet; search first' });
          return record;
        }
        const [x1, y1, x2, y2] = action.bbox;
        if (x2 > shown.shownWidth || y2 > shown.shownHeight) {
          markInvalid({ reason: 'bbox_outside_image', message: `the bbox must lie inside the image, which is ${shown.shownWidth}x${shown.shownHeight}` });
          return record;
        }
        const region = mapToSource(action.bbox, shown);
        if (region[2] - region[0] < 1 || region[3] - region[1] < 1) {
          markInvalid({ reason: 'bbox_empty_area', message: 'the region is smaller than one pixel of the page; choose a larger box' });
          return record;
        }
        const crop = await cropImage(ports.imageOps, shown.source, region, config.cropMinOutputSide, signal);
        const cropShown = shownSize(crop.width, crop.height, config.policyImageMaxSide);
        state.lastImage = { basename: shown.basename, source: shown.source, region, shownWidth: cropShown.width, shownHeight: cropShown.height };
        state.evidence.push({ kind: 'crop', basename: shown.basename, image: crop, sourceRegion: region });
        state.observationImages = [crop];
        const cropRecord: CropRecord = { bbox: action.bbox, basename: shown.basename, sourceRegion: region, shownWidth: shown.shownWidth, shownHeight: shown.shownHeight };
        record.crop = cropRecord;
        record.observation = renderObservation(
          [{ kind: 'crop', basename: shown.basename, sourceRegion: region, shownWidth: cropShown.width, shownHeight: cropShown.height }],
          { maxTextChars: config.observationMaxChars },
        );
        return record;
      }
    }
  } catch (error) {
    if (AbortedError.isInstance(error)) throw error;
    const message = SearcherError.isInstance(error) || error instanceof Error ? error.message : String(error);
    state.error = { stage: action.type === 'bbox' ? 'crop' : 'search', kind: classifyFailure('episode', error).kind, message };
    finish(state, 'error');
    return record;
  }
}

/** Size of an image as shown to the policy, with its longer side capped at `maxSide`. */
export function shownSize(width: number, height: number, maxSide: number | null): { width: number; height: number } {
  if (maxSide === null || Math.max(width, height) <= maxSide) return { width, height };
  const scale = maxSide / Math.max(width, height);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * Maps a bbox in the shown image's pixels to the source page's pixels, through the frame of the
 * shown image (a resized page, or a crop of a crop: DDAI scaled against the crop but cut the
 * original, which is the bug this avoids).
 */
export function mapToSource(bbox: BoundingBox, shown: { region: BoundingBox; shownWidth: number; shownHeight: number }): BoundingBox {
  const [rx1, ry1, rx2, ry2] = shown.region;
  const sx = (rx2 - rx1) / shown.shownWidth;
  const sy = (ry2 - ry1) / shown.shownHeight;
  const [x1, y1, x2, y2] = bbox;
  return [rx1 + x1 * sx, ry1 + y1 * sy, rx1 + x2 * sx, ry1 + y2 * sy];
}

function toEpisode(state: RolloutState): Episode {
  const { instance, tokens } = state;
  const evidence: EvidenceRef[] = state.evidence.map((e) => ({
    kind: e.kind,
    basename: e.basename,
    ...(e.sourceRegion && { sourceRegion: e.sourceRegion }),
    ...(e.image && { width: e.image.width, height: e.image.height }),
  }));
  const trajectory: Trajectory = {
    formatVersion: 1,
    sampleId: sampleIdOf(instance.groupId, instance.rolloutIndex),
    groupId: instance.groupId,
    promptUid: instance.prompt.uid,
    rolloutIndex: instance.rolloutIndex,
    query: instance.prompt.question,
    reference: instance.prompt.reference ?? null,
    goldenBasenames: [...(instance.prompt.goldenBasenames ?? [])],
    promptLength: tokens.promptLength,
    tokenSteps: [...tokens.tokenSteps],
    generatedText: tokens.generatedText,
    finalAnswer: state.finalAnswer,
    fullInputIds: [...tokens.fullInputIds],
    generatedPositions: [...tokens.generatedPositions],
    lossMask: [...tokens.lossMask],
    turns: state.turns,
    retrievedBasenames: [...state.retrieved],
    evidence,
    terminated: state.terminated ?? 'budget',
    error: state.error,
    invalidActions: state.invalidActions,
    generatorUsage: null,
    reward: null,
    rewardDetail: null,
    advantage: null,
  };
  return { trajectory, evidence: state.evidence };
}

/** Evidence for the Generator: retrieved pages first, then crops, deduplicated, at most `max`. */
export function selectEvidence(evidence: readonly Evidence[], max: number): Evidence[] {
  const seen = new Set<string>();
  const key = (e: Evidence) => (e.kind === 'page' ? `page:${e.basename}` : `crop:${e.basename}:${e.sourceRegion?.map((v) => v.toFixed(2)).join(',')}`);
  const ordered = [...evidence.filter((e) => e.kind === 'page'), ...evidence.filter((e) => e.kind === 'crop')];
  const out: Evidence[] = [];
  for (const e of ordered) {
    const k = key(e);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(e);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * The terminal augmentation of seed 000: the frozen Generator answers from the evidence, and its
 * `<answer>` is appended to the trajectory for logging with loss mask 0. In `answer` mode, or
 * after an episode error, nothing is called. A generator failure is recorded on the trajectory.
 */
export async function completeWithGenerator(
  episode: Episode,
  generator: Generator,
  options: { policy: PolicyBackend; maxEvidence?: number; mode?: EpisodeConfig['mode']; signal?: AbortSignal },
): Promise<Episode> {
  const t = episode.trajectory;
  if (options.mode === 'answer' || t.terminated === 'error' || t.terminated === 'answer') return episode;
  try {
    const result = await generateAnswer(generator, t.query, selectEvidence(episode.evidence, options.maxEvidence ?? 8), options.signal);
    const block = `<answer>${result.answer}</answer>`;
    const ids = options.policy.tokenizer.encode(block);
    t.finalAnswer = result.answer.trim();
    t.generatedText += block;
    for (const id of ids) {
      t.fullInputIds.push(id);
      t.lossMask.push(0);
    }
    t.generatorUsage = result.usage ?? null;
  } catch (error) {
    if (AbortedError.isInstance(error)) throw error;
    const failure = classifyFailure('generator', error);
    t.error = { stage: 'generator', kind: failure.kind, message: failure.message };
  }
  return episode;
}
