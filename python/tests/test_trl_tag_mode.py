"""TRL 1.16's GRPOTrainer against `searcher-rl serve-env`, in the Searcher's tag protocol
(`rollout_func=TagRollout`), on CPU, from a small SFT checkpoint made by this SDK's CLI (a Hugging
Face GPT-2 folder).

- End to end: the trainer's own model samples the turns, the server runs the episodes and sends
  the rewards; the rewards arrive in TRL's logs, the gradient is not zero, the weights change, and
  the trained model, saved by TRL, loads back into this SDK (`policy.initFrom`) and evaluates.
  (Not "the loss moves": with one iteration per batch and no KL, GRPO's loss is about 0 by
  construction.)
- A reward the server could not compute (its judge failed) reaches TRL as None: the rollout is
  left out of its group's mean and std and gets advantage 0, so the group's other advantages are
  those of the group without it; a 0 in its place gives others, and fails this test.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from searcher_rl_trainers.openenv_glue import fetch_tasks
from searcher_rl_trainers.train_trl import grpo_args
from searcher_rl_trainers.trl_rollout import TagRollout, server_reward, tag_dataset
from serve_env import evaluation_run_config, searcher_cli


def capture_advantages(trainer: GRPOTrainer) -> list[list[float]]:
    """The advantages TRL computes for each generation batch (its own `_generate_and_score_completions`)."""
    seen: list[list[float]] = []
    original = trainer._generate_and_score_completions

    def wrapped(inputs):
        output = original(inputs)
        seen.append(output["advantages"].tolist())
        return output

    trainer._generate_and_score_completions = wrapped
    return seen


def group_normalized(rewards: list[float | None], group: int) -> list[float]:
    """GRPO's advantages with TRL's formula ((r - mean) / (std + 1e-4), unbiased std), a None
    rollout left out of its group's statistics with advantage 0; a group with fewer than two
    scored rollouts gets 0 throughout."""
    out: list[float] = []
    for start in range(0, len(rewards), group):
        chunk = rewards[start : start + group]
        scored = torch.tensor([r for r in chunk if r is not None], dtype=torch.float64)
        if len(scored) < 2:
            out += [0.0] * len(chunk)
            continue
        mean, std = scored.mean().item(), scored.std().item()
        out += [0.0 if r is None else (r - mean) / (std + 1e-4) for r in chunk]
    return out


def config(tmp_path, max_steps: int, **overrides) -> GRPOConfig:
    """train_trl's GRPOConfig (the SDK's settings, float32 on the CPU), 2 prompts x 4 rollouts a
    step, no warm-up (a test of a step or two would otherwise train at a learning rate near 0)."""
    return grpo_args(
        str(tmp_path / "grpo"), steps=max_steps, prompts_per_step=2, n_agent=4, warmup_steps=0, **overrides
    )


def test_a_none_reward_is_left_out_of_its_group_by_trl(sft_checkpoint, tmp_path):
    rewards = [1.0, 0.0, 1.0, None, 0.5, None, None, None]
    dataset = Dataset.from_dict({"prompt": ["Question: What was the revenue of Acme in 2019?\n"] * 8})
    trainer = GRPOTrainer(
        model=str(sft_checkpoint),
        reward_funcs=lambda prompts, completions, **kw: list(rewards[: len(prompts)]),
        args=config(tmp_path, max_steps=1, max_completion_length=8),
        train_dataset=dataset,
    )
    seen = capture_advantages(trainer)
    trainer.train()
    expected = group_normalized(rewards, 4)
    assert seen[0] == pytest.approx(expected, abs=1e-3)
    assert expected[:4] == pytest.approx([0.5773, -1.1546, 0.5773, 0.0], abs=1e-3)
    # The same batch with 0 in place of each None: other advantages (the test fails on a 0).
    zeroed = group_normalized([0.0 if r is None else r for r in rewards], 4)
    assert max(abs(a - b) for a, b in zip(seen[0], zeroed)) > 0.2


def test_a_reward_the_servers_judge_failed_reaches_trl_as_none(sft_checkpoint, judged_server, fake_judge, tmp_path):
    task = fetch_tasks(judged_server.url, judged_server.token, page_size=1)[:1]
    # Every second judge call fails: of a group's 4 completed episodes, 2 have no reward; the
    # others are judged 1 and 0.
    fake_judge.reset(lambda n: None if n % 2 == 1 else (1.0 if n % 4 == 0 else 0.0))

    def scripted(model, tokenizer, rows, max_new):
        turns = []
        for row in rows:
            text = tokenizer.decode(row, skip_special_tokens=False)
            question = text.split("Question: ", 1)[1].split("\n", 1)[0]
            action = "<search_complete>true</search_complete>" if "<information>" in text else f"<search>{question}</search>"
            turns.append(tokenizer(action, add_special_tokens=False)["input_ids"])
        return turns

    rollout = TagRollout(judged_server.url, judged_server.token, generate=scripted)
    received: list[list] = []

    def recording(prompts, trainer_):
        out = rollout(prompts, trainer_)
        received.append(list(out["server_reward"]))
        return out

    trainer = GRPOTrainer(
        model=str(sft_checkpoint),
        reward_funcs=server_reward,
        args=config(tmp_path, max_steps=1, per_device_train_batch_size=4),
        train_dataset=tag_dataset(task * 4),
        rollout_func=recording,
    )
    seen = capture_advantages(trainer)
    trainer.train()
    rewards = received[0]
    assert fake_judge.calls == 4 and fake_judge.failed == 2
    assert sum(r is None for r in rewards) == 2 and sorted(rollout.stats["endings"]) == ["complete"]
    scored = sorted(r for r in rewards if r is not None)
    assert scored[1] - scored[0] == pytest.approx(0.8)  # judged 1 and 0 (judge weight 0.8), same pages
    assert seen[0] == pytest.approx(group_normalized(rewards, 4), abs=1e-3)
    assert [a for a, r in zip(seen[0], rewards) if r is None] == [0.0, 0.0]
    zeroed = group_normalized([0.0 if r is None else r for r in rewards], 4)
    assert max(abs(a - b) for a, b in zip(seen[0], zeroed)) > 0.2
    logged = trainer.state.log_history[0]
    assert logged["reward"] == pytest.approx(sum(scored) / 2, abs=1e-4)  # the mean of the scored ones


def test_rollouts_sample_as_the_model_in_eval_mode_while_the_trainer_holds_it_in_train_mode(sft_checkpoint, server):
    """GRPOTrainer keeps the model in train mode with gradient checkpointing (TRL's default), which
    turns the key/value cache off while `generate` feeds one new token a step: sampled so, each
    token saw none of the context before it. TagRollout runs the rollouts in eval mode (its own
    sampler's and a caller's `generate`) and gives the model back in train mode."""
    tokenizer = AutoTokenizer.from_pretrained(sft_checkpoint)
    model = AutoModelForCausalLM.from_pretrained(sft_checkpoint)
    tasks = [t["id"] for t in fetch_tasks(server.url, server.token)[:2]]
    near_greedy = SimpleNamespace(temperature=1e-4, top_p=1.0, top_k=0, max_completion_length=128)
    trainer = SimpleNamespace(
        processing_class=tokenizer, model=model, args=near_greedy, accelerator=SimpleNamespace(unwrap_model=lambda m: m)
    )
    model.eval()
    expected = TagRollout(server.url, server.token)(tasks, trainer)["completion_ids"]
    model.gradient_checkpointing_enable()
    model.train()
    assert TagRollout(server.url, server.token)(tasks, trainer)["completion_ids"] == expected
    assert model.training
    modes = []

    def recording(model_, tokenizer_, rows, max_new):
        modes.append(model_.training)
        return [tokenizer_("<search_complete>true</search_complete>", add_special_tokens=False)["input_ids"]] * len(rows)

    TagRollout(server.url, server.token, generate=recording)(tasks, trainer)
    assert modes and not any(modes) and model.training


def test_grpo_trains_the_sft_checkpoint_against_serve_env_and_the_sdk_loads_the_result(
    sft_checkpoint, server, workdir, corpus, tmp_path
):
    tasks = fetch_tasks(server.url, server.token)
    rollout = TagRollout(server.url, server.token)
    steps = 4
    trainer = GRPOTrainer(
        model=str(sft_checkpoint),
        reward_funcs=server_reward,
        args=config(tmp_path, max_steps=steps),
        train_dataset=tag_dataset(tasks),
        rollout_func=rollout,
    )
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    print("steps:", [{k: round(h[k], 4) for k in ("reward", "reward_std", "grad_norm", "step_time")} for h in logs])
    print("rollouts:", rollout.stats)
    assert len(logs) == steps
    # The server's rewards arrived: phase 1's reward is at least 0.1 for a completed episode.
    assert all(math.isfinite(h["reward"]) for h in logs) and max(h["reward"] for h in logs) >= 0.1
    assert all(math.isfinite(h["grad_norm"]) for h in logs) and max(h["grad_norm"] for h in logs) > 0
    after = list(trainer.model.parameters())
    assert all(torch.isfinite(p).all() for p in after)
    assert sum((p - q).abs().sum().item() for p, q in zip(after, before)) > 0
    assert rollout.stats["episodes"] == steps * 8 and rollout.stats["endings"]["complete"] > 0
    assert rollout.stats["steps"] >= steps * 8

    # The trained model back in this SDK: a run that starts from TRL's folder and evaluates it.
    saved = tmp_path / "trl-model"
    trainer.save_model(str(saved))
    run_config = evaluation_run_config(
        tmp_path / "eval.json", tmp_path / "runs", "from-trl", corpus, {"initFrom": str(saved)}
    )
    searcher_cli("train", "--config", str(run_config))
    summary = json.loads((tmp_path / "runs/from-trl/eval-before-rl.json").read_text())
    assert summary["questions"] == 4 and summary["completion"] > 0


def test_a_chat_model_gets_its_end_of_turn_token_and_each_observation_as_a_user_turn(chat_model, server, tmp_path):
    """Tag mode with a chat model: a turn cut at a closing tag (the stop string; the model would
    have gone on) is closed with the end-of-turn token, not trained; the observation comes as a
    user turn of the template with the next generation prompt, not trained."""
    tasks = fetch_tasks(server.url, server.token)[:1]
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    turns = ["<think>look</think><search>revenue</search> and more words", "<search_complete>true</search_complete> and more"]

    def scripted(model, tokenizer_, rows, max_new):
        return [tokenizer_(turns[tokenizer_.decode(row).count("<|im_start|>user") - 1], add_special_tokens=False)["input_ids"] for row in rows]

    rollout = TagRollout(server.url, server.token, generate=scripted)
    outputs = []

    def recording(prompts, trainer_):
        outputs.append(rollout(prompts, trainer_))
        return outputs[-1]

    trainer = GRPOTrainer(
        model=str(chat_model),
        reward_funcs=server_reward,
        args=config(tmp_path, max_steps=1, per_device_train_batch_size=4, max_completion_length=2048),
        train_dataset=tag_dataset(tasks * 4),
        rollout_func=recording,
    )
    trainer.train()
    out = outputs[0]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompt = tokenizer.decode(out["prompt_ids"][0])
    assert prompt.startswith("<|im_start|>user\nQuestion: ") and prompt.endswith("<|im_start|>assistant\n")
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    trained = tokenizer.decode([t for t, m in zip(ids, mask) if m == 1])
    assert trained == "<think>look</think><search>revenue</search><search_complete>true</search_complete>"
    text = tokenizer.decode(ids)
    assert text.startswith("<think>look</think><search>revenue</search><|im_end|>\n<|im_start|>user\n<information>[page ")
    assert "</information><|im_end|>\n<|im_start|>assistant\n<search_complete>true</search_complete><|im_end|>" in text
    assert [m for t, m in zip(ids, mask) if t == end] == [0, 0, 0]  # two closed turns and the observation's
    assert out["episode_ending"] == ["complete"] * 4 and all(r is not None and r >= 0.1 for r in out["server_reward"])
    # The generated tokens counted are the trained ones: the turns as cut, not the end-of-turn tokens.
    assert rollout.stats["generated_tokens"] == sum(sum(mask) for mask in out["env_mask"])


def test_the_train_trl_command_trains_against_serve_env_and_saves_the_model(sft_checkpoint, server, tmp_path, monkeypatch, capsys):
    from searcher_rl_trainers.train_trl import main

    monkeypatch.setenv("SEARCHER_RL_TOKEN", server.token)  # read from the environment, not argv
    out = tmp_path / "out"
    summary = main(
        ["--env-url", server.url, "--model", str(sft_checkpoint), "--steps", "2", "--prompts-per-step", "2", "--n-agent", "4", "--output-dir", str(out)]
    )
    # Its JSON lines (transformers prints its own dicts, Python's repr, to the same stdout).
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"')]
    steps = [line for line in lines if "reward" in line]
    assert [s["step"] for s in steps] == [1, 2] and all(math.isfinite(s["reward"]) for s in steps)
    assert lines[-1] == summary and summary["episodes"] == 16 and summary["endings"].get("complete", 0) > 0
    assert (out / "model/config.json").is_file() and (out / "model/model.safetensors").is_file()
    assert server.token not in json.dumps(lines)


def test_build_trainer_trains_a_peft_adapter_given_as_a_model_with_its_tokenizer(sft_checkpoint, server, tmp_path):
    """The trl row of bench:search-r1 hands `build_trainer` a loaded PeftModel (the SDK's LoRA
    checkpoint is a PEFT adapter folder) with its tokenizer as `processing_class`: TRL trains the
    adapter's weights only, and saves an adapter folder."""
    from peft import LoraConfig, PeftModel, get_peft_model

    from searcher_rl_trainers.train_trl import build_trainer

    tokenizer = AutoTokenizer.from_pretrained(sft_checkpoint)
    base = AutoModelForCausalLM.from_pretrained(sft_checkpoint)
    adapter = tmp_path / "adapter"
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], init_lora_weights=False)
    get_peft_model(base, lora).save_pretrained(str(adapter))
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(sft_checkpoint), str(adapter), is_trainable=True)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    adapted = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert adapted and all("lora_" in n for n in adapted)
    tasks = fetch_tasks(server.url, server.token)
    trainer, rollout = build_trainer(
        server.url, server.token, model, config(tmp_path, max_steps=2), tasks=tasks, processing_class=tokenizer
    )
    assert trainer.processing_class is tokenizer
    trainer.train()
    after = dict(trainer.model.named_parameters())
    assert all(torch.equal(after[n], p) for n, p in frozen.items())
    assert any(not torch.equal(after[n], p) for n, p in adapted.items())
    assert rollout.stats["episodes"] == 16 and rollout.stats["generated_tokens"] > 0
    trainer.save_model(str(tmp_path / "saved"))
    assert (tmp_path / "saved/adapter_config.json").is_file() and (tmp_path / "saved/adapter_model.safetensors").is_file()
