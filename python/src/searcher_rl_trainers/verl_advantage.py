"""`grpo_masked`: verl's GRPO advantage with failed rewards left out of their group.

A Searcher episode whose reward the server could not compute (`reward_status: missing`: a judge or
generator outage, a lost session) has no reward. verl's stock GRPO (`compute_grpo_outcome_advantage`)
puts every sample of a `uid` into its group's mean and std whatever its `response_mask`, so the
0.0 such a sample carries would pull its group's mean down and widen its std. With
`failed_reward: mask`, `SearcherEnvAgentLoop` zeroes a failed sample's whole `response_mask`;
this estimator treats an all-zero mask as "no reward", computes the groups of the others with
verl's own `compute_grpo_outcome_advantage`, and gives the failed samples advantage 0 (and, their
mask being zero, no loss).

Registered with verl's `register_adv_est` when this module is imported; select it with
`algorithm.adv_estimator=grpo_masked`. The advantage is computed in verl's driver (the TaskRunner),
so the module must be imported there: the `verl.plugins` entry point in python/pyproject.toml
imports it at `import verl` in every process where this package is installed, and
`VERL_USE_EXTERNAL_MODULES=searcher_rl_trainers.verl_advantage` does the same without
installing it (on a multi-node Ray cluster pass that variable through
`+ray_kwargs.ray_init.runtime_env.env_vars`).

With verl's default trainer (`trainer.use_v1=true`) the loop's default is `failed_reward: drop`
instead: it returns no output for the sample, which then never enters the batch, and stock
`grpo` computes its group over the others (`compute_advantage_for_multi_trajectories`).
"""

from typing import Any, Optional

import numpy as np
import torch

# Imported at `import verl` through the entry point: only verl's algorithm module, which the
# driver imports anyway.
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, register_adv_est

GRPO_MASKED = "grpo_masked"


def _norm_by_std(config: Optional[Any], default: bool) -> bool:
    if config is None:
        return default
    value = config.get("norm_adv_by_std_in_grpo", default)
    return default if value is None else bool(value)


@register_adv_est(GRPO_MASKED)
def compute_grpo_masked_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Optional[Any] = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO over the samples whose `response_mask` has a token; the others get advantage 0.

    Equal, for every sample with a token, to verl's `compute_grpo_outcome_advantage` run on the
    batch without the all-masked samples (verl's `compute_advantage` passes only the algorithm
    config here, so `algorithm.norm_adv_by_std_in_grpo` decides the scaling).
    """
    norm = _norm_by_std(config, norm_adv_by_std_in_grpo)
    advantages = torch.zeros_like(token_level_rewards, dtype=torch.float32)
    scored = (response_mask.sum(dim=-1) > 0).nonzero(as_tuple=True)[0]
    if len(scored) > 0:
        kept = scored.tolist()
        scored_advantages, _returns = compute_grpo_outcome_advantage(
            token_level_rewards=token_level_rewards[kept],
            response_mask=response_mask[kept],
            index=np.asarray(index, dtype=object)[kept],
            epsilon=epsilon,
            norm_adv_by_std_in_grpo=norm,
        )
        advantages[kept] = scored_advantages.to(advantages.dtype)
    return advantages, advantages
