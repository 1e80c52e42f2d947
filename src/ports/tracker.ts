import type { CallOptions, SetupCheck } from './common';

/** A run's parameter as a tracker records it (its configuration, flattened to dotted keys). */
export type TrackerParamValue = string | number | boolean | null;

/** Scalars of one step: `values` by tag (`phase1/rewardMean`, `eval-after-rl/ndcg`). */
export interface TrackerScalars {
  /** The run's step (the phases one after another). */
  step: number;
  /** Milliseconds since the epoch. */
  time: number;
  values: Readonly<Record<string, number>>;
}

/** What a tracker is told when a run starts (or continues). */
export interface TrackerStart {
  /** The run's id (its folder name): the tracker run's name. */
  runName: string;
  /**
   * What `doStart` returned when this run started before (a resumed run), so that the tracker
   * continues the same run where it can; `null` for a new run.
   */
  resume: TrackerResume | null;
  /**
   * The run's step this attempt continues at, when it continues an interrupted one: what a
   * tracker holds at and after it came from the steps run again (TensorBoard drops it, MLflow
   * keeps its history, the latest value of a step counting). `null`: nothing is run again.
   */
  continuesAt: number | null;
  /**
   * An id of this start, kept in the run folder before `doStart` is called and the same on every
   * attempt until a start succeeds: a tracker that makes its run on a server tags it with this, so
   * that a start cut off after the server made the run (its answer lost, or the process killed
   * before the run folder recorded `resume`) is found again instead of making a second run.
   */
  startId?: string;
}

/** What a tracker needs to continue its run later (JSON; kept in the run folder, never a secret). */
export type TrackerResume = Readonly<Record<string, string | number | boolean | null>>;

/** How a run ended, for the trackers that keep a status (MLflow's FINISHED / FAILED / KILLED). */
export type TrackerRunStatus = 'finished' | 'failed' | 'killed';

/**
 * Where a run's figures go besides the run folder: TensorBoard event files, an MLflow tracking
 * server (TRL's `report_to`, verl's `trainer.logger`). A run calls `doStart` once, then
 * `doLogParams` and `doLogScalars` in step order, then `doFinish`; a failure of a tracker is
 * recorded and never stops the run.
 */
export interface Tracker extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /** Opens the tracker's run (or continues the one `start.resume` names); returns what continues it later. */
  doStart(start: TrackerStart, options?: CallOptions): Promise<TrackerResume>;
  /** The run's configuration, flattened (`policy.layers`: 2). Logging the same values again changes nothing. */
  doLogParams(params: Readonly<Record<string, TrackerParamValue>>, options?: CallOptions): Promise<void>;
  /**
   * Scalars of one or more steps. A step logged again (a resumed run repeats the steps after its
   * last checkpoint) replaces the earlier values where the tracker allows it.
   */
  doLogScalars(scalars: readonly TrackerScalars[], options?: CallOptions): Promise<void>;
  /** Ends the tracker's run with this status; what it holds open is released. */
  doFinish(status: TrackerRunStatus, options?: CallOptions): Promise<void>;
}
