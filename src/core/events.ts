import type { Trajectory } from './trajectory/trajectory';
import type { StoreRecord } from '../ports/store';
import type { SupersededCounts } from './store/records';

/** The unified log's event types (docs/method.md#unified-log). */
export type UnifiedEventType =
  | 'run.start'
  | 'step.start'
  | 'step.end'
  | 'model.plan'
  | 'search.request'
  | 'search.response'
  | 'bbox.result'
  | 'generator.response'
  | 'reward.detail'
  | 'api.latency';

/** Every event carries run id, step, prompt uid and rollout index (null for run and step events). */
export interface UnifiedEvent {
  type: UnifiedEventType;
  runId: string;
  step: number;
  promptUid: string | null;
  rolloutIndex: number | null;
  sampleId: string | null;
  turn?: number;
  data: Record<string, unknown>;
}

/** The per-turn and per-episode events of one finished rollout, in order. */
export function episodeEvents(
  trajectory: Trajectory,
  runId: string,
  step: number,
  latency?: { generatorMs?: number; judgeMs?: number },
): UnifiedEvent[] {
  const ids = {
    runId,
    step,
    promptUid: trajectory.promptUid,
    rolloutIndex: trajectory.rolloutIndex,
    sampleId: trajectory.sampleId,
  };
  const events: UnifiedEvent[] = [];
  for (const turn of trajectory.turns) {
    events.push({
      type: 'model.plan',
      ...ids,
      turn: turn.index,
      data: { think: turn.think, action: turn.action, invalid: turn.invalid, forced: turn.forced },
    });
    if (turn.search) {
      events.push({ type: 'search.request', ...ids, turn: turn.index, data: { query: turn.search.query } });
      events.push({
        type: 'search.response',
        ...ids,
        turn: turn.index,
        data: {
          hits: turn.search.hitBasenames,
          chosen: turn.search.chosenBasename,
          chosenRank: turn.search.chosenRank,
          goldenRanks: turn.search.goldenRanks,
        },
      });
    }
    if (turn.crop)
      events.push({
        type: 'bbox.result',
        ...ids,
        turn: turn.index,
        data: { bbox: turn.crop.bbox, basename: turn.crop.basename, sourceRegion: turn.crop.sourceRegion },
      });
  }
  events.push({
    type: 'generator.response',
    ...ids,
    data: { answer: trajectory.finalAnswer, error: trajectory.error, usage: trajectory.generatorUsage },
  });
  const detail = trajectory.rewardDetail;
  events.push({
    type: 'reward.detail',
    ...ids,
    data: {
      reward: trajectory.reward,
      judgeScore: detail?.components.judgeScore ?? null,
      ndcg: detail?.components.ndcg ?? null,
      formatPassed: detail?.components.formatPassed ?? null,
      status: detail?.status ?? null,
      cause: detail?.status === 'missing' ? detail.cause : null,
      ...(latency?.judgeMs !== undefined && { judgeLatencyMs: latency.judgeMs }),
    },
  });
  if (latency) events.push({ type: 'api.latency', ...ids, data: latency });
  return events;
}

export function runEvent(
  type: 'run.start' | 'step.start' | 'step.end',
  runId: string,
  step: number,
  data: Record<string, unknown>,
): UnifiedEvent {
  return { type, runId, step, promptUid: null, rolloutIndex: null, sampleId: null, data };
}

/**
 * The trainer's and the warm start's own events, stored beside the unified log's: a run resumed
 * from a checkpoint or restarted (with the records of an interrupted attempt it supersedes), a run
 * halted by missing rewards, an SFT epoch's loss.
 */
export type LifecycleEvent =
  | { type: 'resume'; from: string; nextStep: number; superseded?: SupersededCounts }
  | { type: 'restart'; nextStep: number; superseded?: SupersededCounts }
  | { type: 'halt'; reason: string; causes: Readonly<Record<string, number>> }
  | { type: 'sft-epoch'; loss: number };

/** Every event type a run folder's `event` records carry. */
export type RunEventType = UnifiedEventType | LifecycleEvent['type'];

/** The store record of an event (`kind: 'event'`) of a run's step. */
export function eventRecord(runId: string, step: number, data: UnifiedEvent | LifecycleEvent): StoreRecord {
  return { kind: 'event', runId, step, time: Date.now(), data };
}
