import type { GroupRuleOptions } from './group-rule';
import type { LossSettings } from './update-batch';

/** The RL half of a Searcher's configuration (docs/method.md#rl). */
export interface RlSettings {
  /** Rollouts per prompt (n_agent). */
  nAgent: number;
  advantage: Required<Pick<GroupRuleOptions, 'std' | 'normalize' | 'dropZeroVarianceGroups'>> & {
    eps?: number;
  };
  loss: LossSettings;
  /** Passes over each step's batch (verl's ppo_epochs). */
  ppoEpochs: number;
  /** Sequences per optimizer step (`null`: the whole batch in one step). */
  miniBatchSize: number | null;
  /** Entropy bonus (the seed's runs: 0). */
  entropyCoef: number;
  /**
   * State masking (docs/method.md#state-masking): only the policy's own tokens are trained. `false`
   * trains the observation tokens between them too (the ablation Search-R1 reports), their old
   * log-probs recomputed by the policy before the step's update.
   */
  stateMasking: boolean;
}

/** The seed's focused-round settings (docs/method.md#hyperparameters): GSPO, clip 3e-4 / 4e-4, no KL, no entropy. */
export const DEFAULT_RL_SETTINGS: Readonly<RlSettings> = Object.freeze({
  nAgent: 4,
  advantage: Object.freeze({ std: 'population', normalize: true, dropZeroVarianceGroups: false }),
  loss: Object.freeze({
    kind: 'gspo',
    clipLow: 3e-4,
    clipHigh: 4e-4,
    aggregation: 'seq-mean-token-mean',
    klCoef: 0,
    klEstimator: 'k3',
  }),
  ppoEpochs: 1,
  miniBatchSize: null,
  entropyCoef: 0,
  stateMasking: true,
} as const);
