import { InvalidArgumentError } from '../errors';
import { DEFAULT_ICD_SETTINGS, type IcdTrajectory } from './types';

/** The quotas of `TrajectoryQualityController`; each default comes from `DEFAULT_ICD_SETTINGS`. */
export interface TrajectoryQualityOptions {
  targetTrajectoryCount?: number;
  positiveMin?: number;
  positiveQuota?: number;
  partialMin?: number;
  partialQuota?: number;
}

/** The final trajectories of one query and how they were made up (property 6). */
export interface FinalTrajectories {
  /** Exactly `targetTrajectoryCount`. */
  trajectories: IcdTrajectory[];
  /** Distinct trajectories (by pointer) among them. */
  distinct: number;
  /** Copies added because the query had fewer distinct trajectories than the target. */
  repeated: number;
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
   * The final M trajectories (docs/method.md#commit-on-improve); property 6: exactly M, always.
   * Trajectories are distinct by pointer (the same choice of demonstrations twice is one). In
   * order: acc 1.0 up to `positiveMin` (2), 0 < acc < 1 (the seed's 0.6 bucket) up to `partialMin`
   * (1), then up to the quotas (`positiveQuota` 4, `partialQuota` 2), then every acc-0 one (the
   * bucket that fills the rest); within a bucket, higher accuracy and earlier trajectories come
   * first. The quotas are ceilings only while other trajectories remain: when every distinct
   * acc-0 trajectory is in and M is not reached, the positives and then the partials beyond their
   * quotas fill it. Only when the distinct trajectories are fewer than M are they repeated: the
   * acc-0 ones in that order when there are any (so no quota is passed by a copy), else all of
   * them in that order; `repeated` counts the copies. An empty input is an error.
   */
  selectFinal(all: readonly IcdTrajectory[]): FinalTrajectories {
    const { targetTrajectoryCount: m, positiveMin, positiveQuota, partialMin, partialQuota } = this.settings;
    if (all.length === 0)
      throw new InvalidArgumentError({
        argument: 'all',
        message: 'a query has no trajectories to select from',
      });
    const seen = new Set<string>();
    const distinct = all
      .map((t, i) => ({ t, i }))
      .sort((a, b) => b.t.vqa_acc_score - a.t.vqa_acc_score || a.i - b.i)
      .map((x) => x.t)
      .filter((t) => {
        const key = t.pointer.join(',');
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
    const positive = distinct.filter((t) => t.vqa_acc_score >= 1);
    const partial = distinct.filter((t) => t.vqa_acc_score > 0 && t.vqa_acc_score < 1);
    const zero = distinct.filter((t) => t.vqa_acc_score <= 0);
    const chosen = [
      ...positive.slice(0, positiveMin),
      ...partial.slice(0, partialMin),
      ...positive.slice(positiveMin, positiveQuota),
      ...partial.slice(partialMin, partialQuota),
      ...zero,
      ...positive.slice(Math.max(positiveMin, positiveQuota)),
      ...partial.slice(Math.max(partialMin, partialQuota)),
    ].slice(0, m);
    const distinctCount = chosen.length;
    const copies = zero.length > 0 ? zero : chosen.slice(0, distinctCount);
    for (let i = 0; chosen.length < m; i++) chosen.push(copies[i % copies.length]!);
    return { trajectories: chosen, distinct: distinctCount, repeated: m - distinctCount };
  }

  /** `selectFinal`'s trajectories: exactly `targetTrajectoryCount` of them. */
  selectFinalTrajectories(all: readonly IcdTrajectory[]): IcdTrajectory[] {
    return this.selectFinal(all).trajectories;
  }
}
