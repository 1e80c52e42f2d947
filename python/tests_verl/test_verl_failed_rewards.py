"""A reward the server could not compute contributes nothing to the loss and nothing to its GRPO
group's statistics, checked with verl 0.9.1's own advantage and loss functions:

- `failed_reward: drop` (v1 trainer): verl's v1 worker (AgentLoopWorkerTQ, with an in-memory
  stand-in for TransferQueue) stores nothing for the sample, and `compute_advantage_for_multi_trajectories`
  with stock `grpo` normalises the group without it;
- `failed_reward: mask` + `algorithm.adv_estimator=grpo_masked` (legacy trainer): verl's
  `compute_advantage` gives the others exactly verl's GRPO over the group without the failed
  sample, the failed one advantage 0, and verl's `agg_loss` no gradient through it.

The failures are real: a session the server closes mid-episode (idle timeout) and a judge that
cannot be reached (reward_status `missing`, stage judge). Each case fails if the 0.0 enters the group.
"""

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.trainer.ppo.core_algos import agg_loss, compute_grpo_outcome_advantage
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.v1 import agent_loop_tq
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
from verl.utils import tensordict_utils as tu

from searcher_rl_trainers.verl_advantage import GRPO_MASKED
from serve_env import ROOT
from verl_harness import (
    ScriptedLLMServer,
    compose_ppo_config,
    make_batch,
    question_of,
    search_then_complete,
)

from conftest import IDLE_TIMEOUT_MS

TASK = "bexarktek_10_0"
STALL_S = IDLE_TIMEOUT_MS / 1000 + 2.5


def mixed_group(episode, turn, prompt_text):
    """Episodes 0 and 2 find the golden page (reward 1), 1 searches nonsense (reward 0), 3 stalls
    past the server's idle timeout before its first action: the session is lost, no reward."""
    if turn > 0:
        return "<think>enough</think>\n<search_complete>true</search_complete>"
    if episode == 1:
        return "<think>guess</think>\n<search>zzqx wobble</search>"
    search = f"<think>look</think>\n<search>{question_of(prompt_text)}</search>"
    return (search, STALL_S) if episode == 3 else search


def grpo(scores, norm=True, epsilon=1e-6):
    scores = torch.tensor(scores, dtype=torch.float32)
    centred = scores - scores.mean()
    return (centred / (scores.std() + epsilon) if norm else centred).tolist()


def scored_batch(rewards, masks, uids):
    length = max(len(m) for m in masks)
    response_mask = torch.zeros(len(masks), length, dtype=torch.int64)
    rewards_t = torch.zeros(len(masks), length)
    for i, (reward, mask) in enumerate(zip(rewards, masks)):
        response_mask[i, : len(mask)] = torch.tensor(mask)
        rewards_t[i, len(mask) - 1] = reward
    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards_t, "response_mask": response_mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )


@pytest.mark.parametrize("seed", range(12))
def test_grpo_masked_is_verls_grpo_without_the_failed_samples(seed):
    generator = np.random.default_rng(seed)
    sizes = generator.integers(1, 7, size=generator.integers(1, 5))
    uids = [f"g{g}" for g, size in enumerate(sizes) for _ in range(size)]
    rewards = generator.choice([0.0, 0.2, 1.0, generator.random()], size=len(uids)).tolist()
    lengths = generator.integers(1, 9, size=len(uids))
    failed = generator.random(len(uids)) < 0.35
    failed[0] = True
    masks = [[0] * n if bad else [1] * n for n, bad in zip(lengths, failed)]
    norm = bool(generator.integers(0, 2))
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": norm})

    data = compute_advantage(scored_batch([0.0 if f else r for r, f in zip(rewards, failed)], masks, uids),
                             adv_estimator=GRPO_MASKED, config=config)
    kept = [i for i in range(len(uids)) if not failed[i]]
    if kept:
        reference = scored_batch([rewards[i] for i in kept], [masks[i] for i in kept], [uids[i] for i in kept])
        expected, _ = compute_grpo_outcome_advantage(
            reference.batch["token_level_rewards"], reference.batch["response_mask"], reference.non_tensor_batch["uid"],
            norm_adv_by_std_in_grpo=norm,
        )
        got = data.batch["advantages"][kept][:, : expected.shape[1]]
        torch.testing.assert_close(got, expected)
    assert float(data.batch["advantages"][failed].abs().sum()) == 0.0
    # The v1 helper hands non-GRPO names to compute_advantage: the same numbers there.
    via_v1 = compute_advantage_for_multi_trajectories(
        scored_batch([0.0 if f else r for r, f in zip(rewards, failed)], masks, uids),
        batch_keys=[f"{u}_{i}_0" for i, u in enumerate(uids)], adv_estimator=GRPO_MASKED, config=config,
    )
    torch.testing.assert_close(via_v1.batch["advantages"], data.batch["advantages"])


def test_stock_grpo_lets_the_zero_in_and_grpo_masked_does_not():
    # The case that fails if the 0.0 enters the group: rewards 1, 0, 1 and a failed fourth.
    data = scored_batch([1.0, 0.0, 1.0, 0.0], [[1, 1], [1, 1], [1, 1], [0, 0]], ["g"] * 4)
    stock = compute_advantage(data, adv_estimator="grpo").batch["advantages"][:, 0].tolist()
    masked = compute_advantage(data, adv_estimator=GRPO_MASKED, config=OmegaConf.create({})).batch["advantages"]
    assert masked[:, 0].tolist() == pytest.approx(grpo([1.0, 0.0, 1.0]) + [0.0], abs=1e-5)
    assert stock[:3] != pytest.approx(grpo([1.0, 0.0, 1.0]), abs=1e-3)


def test_masked_failed_rewards_end_to_end_on_the_legacy_trainer(model_path, server, judge_down_server, env_for):
    config = compose_ppo_config(
        model_path, overrides=("trainer.use_v1=false", f"algorithm.adv_estimator={GRPO_MASKED}", "actor_rollout_ref.rollout.n=4")
    )
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    env_for(server)
    lost = asyncio.run(AgentLoopWorker(config, ScriptedLLMServer(tokenizer, mixed_group)).generate_sequences(make_batch([TASK], n=4)))
    env_for(judge_down_server)
    judged = asyncio.run(AgentLoopWorker(config, ScriptedLLMServer(tokenizer, search_then_complete)).generate_sequences(make_batch([TASK], n=2)))
    data = DataProto.concat([lost, judged])  # one group, uid u0: four sessions on one server, two on the other

    missing = data.non_tensor_batch["reward_missing"].astype(bool)
    causes = [json.loads(c) for c in data.non_tensor_batch["reward_cause"][missing]]
    assert sorted(c["stage"] for c in causes) == ["judge", "judge", "session"], causes
    assert all(s == "missing" for s in data.non_tensor_batch["reward_status"][missing])
    mask = data.batch["response_mask"]
    assert int(mask[torch.from_numpy(missing)].sum()) == 0 and bool((mask[torch.from_numpy(~missing)].sum(-1) > 0).all())
    scores = data.batch["rm_scores"].sum(-1)
    assert sorted(scores[torch.from_numpy(~missing)].tolist()) == [0.0, 1.0, 1.0]

    # The legacy trainer's path: token_level_rewards from rm_scores, then compute_advantage.
    data.batch["token_level_rewards"] = data.batch["rm_scores"]
    algorithm = config.algorithm
    out = compute_advantage(data, adv_estimator=algorithm.adv_estimator, gamma=algorithm.gamma, lam=algorithm.lam,
                            num_repeat=4, norm_adv_by_std_in_grpo=algorithm.norm_adv_by_std_in_grpo, config=algorithm)
    advantages = out.batch["advantages"]
    kept = torch.from_numpy(~missing)
    expected, _ = compute_grpo_outcome_advantage(data.batch["rm_scores"][kept], mask[kept], data.non_tensor_batch["uid"][~missing])
    torch.testing.assert_close(advantages[kept], expected)
    assert float(advantages[~kept].abs().sum()) == 0.0
    first = mask.argmax(-1)
    kept_advantages = advantages[kept, :][torch.arange(int(kept.sum())), first[kept]]
    assert sorted(kept_advantages.tolist()) == pytest.approx(sorted(grpo(scores[kept].tolist())), abs=1e-5)
    stock = compute_advantage(data, adv_estimator="grpo").batch["advantages"]
    assert not torch.allclose(stock[kept], expected, atol=1e-3)  # the 0.0s would have entered

    # The loss: no gradient through a failed sample, the same loss as without it.
    loss_mat = torch.randn(mask.shape, requires_grad=True)
    for mode, extra in (("token-mean", {}), ("seq-mean-token-mean", {"global_batch_size": 8})):
        loss = agg_loss(loss_mat, mask, mode, **extra)
        (grad,) = torch.autograd.grad(loss, loss_mat)
        assert float(grad[~kept].abs().sum()) == 0.0
        torch.testing.assert_close(loss, agg_loss(loss_mat[kept], mask[kept], mode, **extra))


class InMemoryTransferQueue:
    """The calls verl's v1 agent loop worker makes on TransferQueue, kept in memory."""

    def __init__(self):
        self.status: dict[str, list[str]] = {}
        self.stored: dict[str, dict] = {}

    def init(self):
        pass

    async def async_kv_put(self, key, partition_id, tag):
        self.status.setdefault(key, []).append(tag["status"])

    async def async_kv_batch_put(self, keys, fields, tags, partition_id):
        for i, key in enumerate(keys):
            self.stored[key] = {"response_mask": fields["response_mask"][i], "rm_scores": fields["rm_scores"][i],
                                "extra_fields": fields["extra_fields"][i]}


def test_dropped_failed_rewards_on_verls_v1_worker(model_path, server, env_for, monkeypatch):
    config = compose_ppo_config(model_path, overrides=("actor_rollout_ref.rollout.n=4", "algorithm.adv_estimator=grpo"))
    assert config.trainer.use_v1 is True
    queue = InMemoryTransferQueue()
    monkeypatch.setattr(agent_loop_tq, "tq", queue)
    worker_class = agent_loop_tq.AgentLoopWorkerTQ.__ray_metadata__.modified_class.__mro__[1]
    assert worker_class.__name__ == "AgentLoopWorkerTQ"
    from transformers import AutoTokenizer

    env_for(server)
    worker = worker_class(config, ScriptedLLMServer(AutoTokenizer.from_pretrained(model_path), mixed_group))
    rows = make_batch([TASK], n=1, uids=["g1"]).non_tensor_batch
    batch = tu.get_tensordict({key: list(value) for key, value in rows.items()})
    tu.assign_non_tensor_data(batch, "global_steps", 1)

    async def run():
        await worker.generate_sequences(batch)
        await asyncio.gather(*list(worker.background_tasks))

    asyncio.run(run())
    assert queue.status["g1"] == ["running", "finished"]  # the group finished, not failed
    keys = sorted(queue.stored)
    assert len(keys) == 3 and all(k.startswith("g1_") and k.endswith("_0") for k in keys), keys
    assert all(not queue.stored[k]["extra_fields"]["reward_missing"] for k in keys)

    # The v1 trainer's _compute_advantage: rm_scores as rewards, then the multi-trajectory GRPO.
    masks = [queue.stored[k]["response_mask"] for k in keys]
    length = max(len(m) for m in masks)
    pad = lambda t: torch.nn.functional.pad(t, (0, length - len(t)))  # noqa: E731
    data = DataProto.from_dict(
        tensors={"response_mask": torch.stack([pad(m) for m in masks]),
                 "token_level_rewards": torch.stack([pad(queue.stored[k]["rm_scores"]) for k in keys])},
        non_tensors={"uid": np.array([k.split("_")[0] for k in keys], dtype=object)},
    )
    scores = data.batch["token_level_rewards"].sum(-1).tolist()
    assert sorted(scores) == [0.0, 1.0, 1.0]
    out = compute_advantage_for_multi_trajectories(
        data, batch_keys=keys, adv_estimator=config.algorithm.adv_estimator, num_repeat=4,
        norm_adv_by_std_in_grpo=config.algorithm.norm_adv_by_std_in_grpo, config=config.algorithm,
    )
    first = data.batch["response_mask"].argmax(-1)
    got = out.batch["advantages"][torch.arange(3), first].tolist()
    assert got == pytest.approx(grpo(scores), abs=1e-5)
    assert got != pytest.approx(grpo(scores + [0.0])[:3], abs=1e-3)  # what a stored 0.0 would have given


def test_grpo_masked_is_registered_at_import_verl_by_the_entry_point_or_the_variable(tmp_path):
    # The estimator runs in verl's driver, which imports only verl: the package's `verl.plugins`
    # entry point (python/pyproject.toml) or VERL_USE_EXTERNAL_MODULES must register it there.
    project = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]
    plugins = project["entry-points"]["verl.plugins"]
    assert plugins == {"searcher_rl_trainers": "searcher_rl_trainers.verl_advantage"}
    dist_info = tmp_path / "searcher_rl_trainers_probe-0.0.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: searcher-rl-trainers-probe\nVersion: 0.0.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[verl.plugins]\n" + "".join(f"{name} = {target}\n" for name, target in plugins.items())
    )
    probe = ("import sys, verl\nfrom verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as r\n"
             "print('grpo_masked' in r, 'searcher_rl_trainers.verl_advantage' in sys.modules)")
    src = str(ROOT / "python" / "src")
    base = {k: v for k, v in os.environ.items() if k not in ("VERL_USE_EXTERNAL_MODULES", "VERL_USE_EXTERNAL_PLUGINS")}
    cases = {
        "entry point": {**base, "PYTHONPATH": os.pathsep.join([str(tmp_path), src]), "VERL_USE_EXTERNAL_PLUGINS": "searcher_rl_trainers"},
        "variable": {**base, "PYTHONPATH": src, "VERL_USE_EXTERNAL_PLUGINS": "none",
                     "VERL_USE_EXTERNAL_MODULES": "searcher_rl_trainers.verl_advantage"},
        "neither": {**base, "PYTHONPATH": src, "VERL_USE_EXTERNAL_PLUGINS": "none"},
    }
    seen = {}
    for name, env in cases.items():
        result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        seen[name] = result.stdout.split()[-2:]
    assert seen == {"entry point": ["True", "True"], "variable": ["True", "True"], "neither": ["False", "False"]}
