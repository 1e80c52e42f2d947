import { InvalidArgumentError } from '../errors';
import { DEFAULT_ICD_SETTINGS, type IcdTrajectory } from './types';

export interface TrajectoryQualityOptions {
  targetTrajectoryCount?: number;
  positiveMin?: number;
  positiveQuota?: number;
  partialMin?: number;
  partialQuota?: number;
}

const distinctScores = (trajectories: readonly IcdTrajectory[]) =>
  new Set(trajectories.map((t) => t.vqa_acc_score)).size;
const maxScore = (trajectories: readonly IcdTrajectory[]) =>
  trajectories.reduce((m, t) => Math.max(m, t.vqa_acc_score), -Infinity);

/**
 * TrajectoryQualityController (docs/method.md#commit-on-improve): commit-on-improve while
 * trajectories are generated, then the final M (12) by quota.
 */
export class TrajectoryQualityController {
  readonly settings: Required<TrajectoryQualityOptions>;

  constructor(options: TrajectoryQualityOptions = {}) {
    const d = DEFAULT_ICD_SETTINGS;
    this.settings = {
      targetTrajectoryCount: options.targetTrajectoryCount ?? d.targetTrajectoryCount,
      positiveMin: options.positiveMin ?? d.positiveMin,
      positiveQuota: options.positiveQuota ?? d.positiveQuota,
      partialMin: options.partialMin ?? d.partialMin,
      partialQuota: options.partialQuota ?? d.partialQuota,
    };
    for (const [name, v] of Object.entries(this.settings)) {
      if (!(Number.isInteger(v) && v >= 0))
        throw new InvalidArgumentError({
          argument: name,
          message: `must be an integer >= 0, got ${String(v)}`,
        });
    }
    if (this.settings.targetTrajectoryCount < 1)
      throw new InvalidArgumentError({ argument: 'targetTrajectoryCount', message: 'must be at least 1' });
    if (
      this.settings.positiveMin > this.settings.positiveQuota ||
      this.settings.partialMin > this.settings.partialQuota
    ) {
      throw new InvalidArgumentError({
        argument: 'positiveMin',
        message: 'a minimum cannot exceed its quota',
      });
    }
  }

  /** Commit only if the new trajectory raises max(acc_score) or the number of distinct acc_score values. */
  shouldCommit(current: readonly IcdTrajectory[], candidate: IcdTrajectory): boolean {
    if (candidate.vqa_acc_score > maxScore(current)) return true;
    return distinctScores([...current, candidate]) > distinctScores(current);
  }

  /** Folds a sequence of generated trajectories through `shouldCommit`; returns the committed ones in order. */
  commitOnImprove(
    sequence: readonly IcdTrajectory[],
    initial: readonly IcdTrajectory[] = [],
  ): IcdTrajectory[] {
    const committed = [...initial];
    for (const t of sequence) if (this.shouldCommit(committed, t)) committed.push(t);
    return committed.slice(initial.length);
  }

  /**
   * The final M trajectories, the quotas holding with copies counted (docs/method.md#commit-on-improve):
   * acc 1.0 at least `positiveMin` (2) and at most `positiveQuota` (4), 0 < acc < 1 (the seed's
   * 0.6 bucket) at least `partialMin` (1) and at most `partialQuota` (2), and acc 0 fills the
   * rest. The minimums are taken first, so that a small M holds both kinds when they exist; within
   * a bucket, higher accuracy and earlier trajectories come first. When the distinct trajectories
   * are too few to reach M, the acc-0 ones are repeated in that order (acc 0 is the bucket that
   * fills the rest, so no quota is passed) and property 6 holds; a query with no acc-0 trajectory
   * cannot reach M within the quotas, and keeps its positives and partials (at most
   * positiveQuota + partialQuota), none repeated. An empty input is an error.
   */
  selectFinalTrajectories(all: readonly IcdTrajectory[]): IcdTrajectory[] {
    const { targetTrajectoryCount: m, positiveMin, positiveQuota, partialMin, partialQuota } = this.settings;
    if (all.length === 0)
      throw new InvalidArgumentError({
        argument: 'all',
        message: 'a query has no trajectories to select from',
      });
    const ordered = all
      .map((t, i) => ({ t, i }))
      .sort((a, b) => b.t.vqa_acc_score - a.t.vqa_acc_score || a.i - b.i)
      .map((x) => x.t);
    const positive = ordered.filter((t) => t.vqa_acc_score >= 1);
    const partial = ordered.filter((t) => t.vqa_acc_score > 0 && t.vqa_acc_score < 1);
    const zero = ordered.filter((t) => t.vqa_acc_score <= 0);
    const chosen = [
      ...positive.slice(0, positiveMin),
      ...partial.slice(0, partialMin),
      ...positive.slice(positiveMin, positiveQuota),
      ...partial.slice(partialMin, partialQuota),
    ].slice(0, m);
    for (let i = 0; zero.length > 0 && chosen.length < m; i++) chosen.push(zero[i % zero.length]!);
    return chosen;
  }
}
