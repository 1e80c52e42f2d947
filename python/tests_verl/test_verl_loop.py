"""SearcherEnvAgentLoop run by verl 0.9.1's own AgentLoopWorker (config composed by hydra from verl's
ppo_trainer.yaml, the loop registered through integrations/verl/agent_loop.yaml), with a scripted
stand-in for verl's LLM server, against a serve-env started here on 127.0.0.1; its output is
verl's own post-processing (`_agent_loop_postprocess`, `_postprocess`: padding, masks, rm_scores)."""

import asyncio
import itertools

import pytest
import yaml
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, _agent_loop_registry

from searcher_rl_trainers.verl_loop import STOP_STRINGS, turn_close_ids
from searcher_rl_trainers.verl_session import RetryPolicy, ServeEnvError, ServeEnvSession
from serve_env import ROOT
from verl_harness import (
    AGENT_LOOP_YAML,
    ScriptedLLMServer,
    compose_ppo_config,
    make_batch,
    question_of,
)

TASK = "bexarktek_10_0"  # "What was the revenue of Bexarktek in 2002?": its search finds the golden page


def worker_for(model_path, *overrides, yaml_path=AGENT_LOOP_YAML, policy=None):
    config = compose_ppo_config(model_path, yaml_path, overrides)
    from transformers import AutoTokenizer

    llm = ScriptedLLMServer(AutoTokenizer.from_pretrained(model_path), **({"policy": policy} if policy else {}))
    return config, llm, AgentLoopWorker(config, llm)


def runs(values):
    return [(value, len(list(group))) for value, group in itertools.groupby(values)]


def closes_own_turn(episode, turn, prompt_text):
    """Odd episodes end their turns with <|im_end|> themselves, as a model stopping at eos does."""
    end, think = ("<|im_end|>", "ends its own turns") if episode % 2 else ("", "look")
    if turn == 0:
        return f"<think>{think}</think>\n<search>{question_of(prompt_text)}</search>{end}"
    return f"<think>{think}</think>\n<search_complete>true</search_complete>{end}"


def test_shipped_yaml_registers_the_package_loop_without_address_or_token(model_path):
    entries = yaml.safe_load(AGENT_LOOP_YAML.read_text())
    assert [entry["name"] for entry in entries] == ["searcher_env"]
    assert not {"server_url", "token"} & set(entries[0]), "SEARCHER_ENV_URL and SEARCHER_RL_TOKEN must decide"
    config, _llm, _worker = worker_for(model_path)
    assert _agent_loop_registry["searcher_env"]["_target_"] == "searcher_rl_trainers.verl_loop.SearcherEnvAgentLoop"
    assert config.trainer.use_v1 is True  # verl 0.9.1's default trainer


def test_episodes_pass_verls_postprocessing_with_turns_closed_and_masks_right(model_path, server, env_for):
    env_for(server)
    config, llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=4", policy=closes_own_turn)
    tok = worker.tokenizer
    rollout = config.actor_rollout_ref.rollout
    prompt_length, response_length = rollout.prompt_length, rollout.response_length
    tasks = [TASK, "bexarktek_10_1"]
    out = asyncio.run(worker.generate_sequences(make_batch(tasks, n=4)))

    batch = out.batch
    assert {k: tuple(v.shape) for k, v in batch.items()} == {
        "prompts": (8, prompt_length),
        "responses": (8, response_length),
        "response_mask": (8, response_length),
        "input_ids": (8, prompt_length + response_length),
        "attention_mask": (8, prompt_length + response_length),
        "position_ids": (8, prompt_length + response_length),
        "rollout_log_probs": (8, response_length),
        "rm_scores": (8, response_length),
    }
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"] * 8
    assert list(out.non_tensor_batch["terminated"]) == ["complete"] * 8
    assert list(out.non_tensor_batch["reward_missing"]) == [False] * 8
    assert [call["sampling_params"]["stop"] for call in llm.calls] == [STOP_STRINGS] * 16
    assert all(call["sampling_params"]["include_stop_str_in_output"] for call in llm.calls)

    close = tok.encode("<|im_end|>\n", add_special_tokens=False)
    assert turn_close_ids(tok) == close and len(close) == 2
    by_request = {}
    for call in llm.calls:
        by_request.setdefault(call["request_id"], []).append(call)
    first_prompts = {tuple(calls[0]["prompt_ids"]): calls for calls in by_request.values()}
    assert len(first_prompts) == 2  # one prompt per task, shared by its 4 rollouts

    for row in range(8):
        length = int(batch["attention_mask"][row, prompt_length:].sum())
        response = batch["responses"][row, :length].tolist()
        mask = batch["response_mask"][row, :length].tolist()
        prompt = [t for t, a in zip(batch["prompts"][row].tolist(), batch["attention_mask"][row, :prompt_length].tolist()) if a]
        calls = next(c for c in by_request.values() if c[0]["prompt_ids"] == prompt and len(c) == 2 and
                     c[1]["prompt_ids"] == prompt + response[: len(c[1]["prompt_ids"]) - len(prompt)])
        turn1 = tok.encode(closes_own_turn(calls[0]["episode"], 0, tok.decode(prompt)), add_special_tokens=False)
        turn2 = tok.encode(closes_own_turn(calls[0]["episode"], 1, ""), add_special_tokens=False)
        own_close = calls[0]["episode"] % 2 == 1
        # What the model saw at its second turn is exactly what is trained on: token in, token out.
        second_prompt = calls[1]["prompt_ids"][len(prompt):]
        assert response[: len(second_prompt)] == second_prompt
        # Assistant tokens 1; the end of turn the loop appends 0; the observation turn 0.
        shape = runs(mask)
        assert [value for value, _ in shape] == [1, 0, 1, 0]
        assert shape[0][1] == len(turn1) and shape[2][1] == len(turn2)
        assert response[: len(turn1)] == turn1
        after = response[len(turn1): len(turn1) + 2]
        assert (after[:1] if own_close else after) == (close[1:] if own_close else close)
        observation = tok.decode(response[len(turn1): len(second_prompt)])
        assert "<|im_start|>user\n<information>" in observation and observation.endswith("<|im_start|>assistant\n")
        assert observation.count("<|im_end|>") == (1 if own_close else 2)  # never doubled
        assert tok.decode(response).endswith("</search_complete><|im_end|>\n")
        assert shape[3][1] == (1 if own_close else 2)
        # rm_scores: the server's reward on the last response token; verl's logprobs 0 off the mask.
        rm = batch["rm_scores"][row]
        assert rm.nonzero().flatten().tolist() == [length - 1] and float(rm[length - 1]) > 0
        logprobs = batch["rollout_log_probs"][row, :length].tolist()
        assert all(lp == (-0.5 if m else 0.0) for lp, m in zip(logprobs, mask))
        assert calls[0]["sampling_params"]["max_tokens"] == response_length
        assert calls[1]["sampling_params"]["max_tokens"] == response_length - len(second_prompt)
    assert float(batch["rm_scores"][0].sum()) == 1.0  # judged right, golden page first


def test_searcher_env_url_wins_over_a_server_url_in_the_yaml(model_path, server, env_for, tmp_path):
    entry = yaml.safe_load(AGENT_LOOP_YAML.read_text())[0]
    (tmp_path / "agent_loop.yaml").write_text(yaml.safe_dump([{**entry, "server_url": "ws://127.0.0.1:9"}]))
    env_for(server)
    _config, _llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=1", yaml_path=tmp_path / "agent_loop.yaml")
    out = asyncio.run(worker.generate_sequences(make_batch([TASK], n=1)))
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"]


def test_the_token_goes_as_bearer_and_a_wrong_one_is_refused_without_echo(model_path, server, env_for):
    env_for(server, token="not-the-servers-token-7781")
    _config, _llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=1")
    with pytest.raises(ServeEnvError) as refused:
        asyncio.run(worker.generate_sequences(make_batch([TASK], n=1)))
    assert refused.value.code == "HTTP_401"
    assert "SEARCHER_RL_TOKEN" in str(refused.value) and "7781" not in str(refused.value)


def test_capacity_reached_is_retried_with_backoff(model_path, two_session_server, env_for):
    # Six rollouts of one prompt against --max-sessions 2: four are answered CAPACITY_REACHED first.
    env_for(two_session_server)

    def slow(episode, turn, prompt_text):
        text = f"<think>look</think>\n<search>{question_of(prompt_text)}</search>" if turn == 0 else (
            "<think>enough</think>\n<search_complete>true</search_complete>")
        return text, 0.3

    _config, _llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=6", policy=slow)
    out = asyncio.run(worker.generate_sequences(make_batch([TASK], n=6)))
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"] * 6
    attempts = sorted(out.non_tensor_batch["session_attempts"].tolist())
    assert attempts[:2] == [1, 1] and attempts[-1] > 1, attempts


def test_a_server_that_stays_full_gives_a_typed_error_naming_the_settings(two_session_server):
    env = two_session_server

    async def scenario():
        held = [await ServeEnvSession.open(env.url, env.token, {"task": TASK}) for _ in range(2)]
        try:
            with pytest.raises(ServeEnvError) as full:
                await ServeEnvSession.open(env.url, env.token, {"task": TASK}, RetryPolicy(open_timeout_s=1.5))
            await held.pop().close()
            later = await ServeEnvSession.open(env.url, env.token, {"task": TASK}, RetryPolicy(open_timeout_s=30))
            await later.close()
            return full.value
        finally:
            for session in held:
                await session.close()

    error = asyncio.run(scenario())
    assert error.code == "CAPACITY_REACHED"
    assert "--max-sessions" in str(error) and "open_timeout_s" in str(error)


@pytest.mark.parametrize(
    "overrides, yaml_changes, message",
    [
        (("trainer.use_v1=false",), {"failed_reward": "drop"}, "trainer.use_v1=true"),
        (("trainer.use_v1=false", "algorithm.adv_estimator=grpo"), {}, "algorithm.adv_estimator=grpo_masked"),
        (("algorithm.adv_estimator=rloo",), {"failed_reward": "mask"}, "algorithm.adv_estimator=grpo_masked"),
        ((), {"failed_reward": "zero"}, "failed_reward must be one of"),
    ],
)
def test_settings_that_would_let_a_failed_reward_into_a_group_are_refused(
    model_path, server, env_for, tmp_path, overrides, yaml_changes, message
):
    entry = yaml.safe_load(AGENT_LOOP_YAML.read_text())[0]
    (tmp_path / "agent_loop.yaml").write_text(yaml.safe_dump([{**entry, **yaml_changes}]))
    env_for(server)
    _config, llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=1", *overrides, yaml_path=tmp_path / "agent_loop.yaml")
    with pytest.raises(Exception) as refused:
        asyncio.run(worker.generate_sequences(make_batch([TASK], n=1)))
    assert message in str(refused.value)
    assert llm.calls == []  # refused before any generation


@pytest.mark.parametrize("images", ["auto", "off"])
def test_page_images_reach_a_vision_language_processor_as_image_parts(tmp_path_factory, server, env_for, tmp_path, images):
    from verl_harness import build_tiny_vision_model

    model = build_tiny_vision_model(tmp_path_factory.mktemp("tiny-vision"))
    entry = yaml.safe_load(AGENT_LOOP_YAML.read_text())[0]
    (tmp_path / "agent_loop.yaml").write_text(yaml.safe_dump([{**entry, "images": images}]))
    env_for(server)
    _config, llm, worker = worker_for(model, "actor_rollout_ref.rollout.n=1", yaml_path=tmp_path / "agent_loop.yaml")
    assert type(worker.processor).__name__ == "MllamaProcessor"
    out = asyncio.run(worker.generate_sequences(make_batch([TASK], n=1)))
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"]
    image_token = worker.tokenizer.convert_tokens_to_ids("<|image|>")
    response, mask = out.batch["responses"][0], out.batch["response_mask"][0]
    inputs = out.non_tensor_batch["multi_modal_inputs"][0]
    if images == "off":
        assert [call["images"] for call in llm.calls] == [[], []]
        assert int((response == image_token).sum()) == 0 and "pixel_values" not in inputs
        return
    # The search's page (a 640x360 slide) reaches the model with its observation, as an image part.
    assert [call["images"] for call in llm.calls] == [[], [(640, 360)]]
    at = (response == image_token).nonzero().flatten().tolist()
    assert len(at) == 1 and int(mask[at[0]]) == 0
    assert "<|im_start|>user\n<|image|><information>[page bexarktek_10.png (640x360)]" in worker.tokenizer.decode(response)
    assert tuple(inputs["pixel_values"].shape) == (1, 1, 1, 3, 28, 28)  # verl's processor run over the image


def test_make_dataset_rows_go_through_verls_dataset_to_the_loop(model_path, server, env_for, tmp_path, monkeypatch):
    import subprocess
    import sys

    import numpy as np
    from transformers import AutoTokenizer
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    monkeypatch.setenv("SEARCHER_RL_TOKEN", server.token)  # make_dataset.py reads it; never on its command line
    made = subprocess.run([sys.executable, str(ROOT / "integrations" / "verl" / "make_dataset.py"), server.http_url,
                           str(tmp_path / "train.parquet")], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    total = server.get("/tasks?limit=1")["total"]
    assert made.stdout.strip() == f"{total} rows -> {tmp_path / 'train.parquet'}"  # every task, not the first page

    config = compose_ppo_config(model_path, AGENT_LOOP_YAML, ("actor_rollout_ref.rollout.n=2", f"+data.cache_dir={tmp_path}"))
    dataset = RLHFDataset(str(tmp_path / "train.parquet"), AutoTokenizer.from_pretrained(model_path), config.data)
    assert len(dataset) == total
    rows = [dataset[i] for i in (0, total - 1)]
    batch = DataProto.from_single_dict(collate_fn(rows))
    batch.non_tensor_batch["uid"] = np.array(["first", "last"], dtype=object)
    batch = batch.repeat(repeat_times=2, interleave=True)  # as verl's trainer does for rollout.n
    env_for(server)
    _config, _llm, worker = worker_for(model_path, "actor_rollout_ref.rollout.n=2")
    out = asyncio.run(worker.generate_sequences(batch))
    assert list(out.non_tensor_batch["reward_status"]) == ["ok"] * 4
    assert [info["task_id"] for info in out.non_tensor_batch["extra_info"]] == [rows[0]["extra_info"]["task_id"]] * 2 + [
        rows[1]["extra_info"]["task_id"]] * 2
    assert list(out.non_tensor_batch["task_id"]) == [info["task_id"] for info in out.non_tensor_batch["extra_info"]]


@pytest.mark.parametrize(
    "template, close",
    [
        ("chatml", "<|im_end|>\n"),
        ("{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>{% endfor %}",
         "<|eot_id|>"),  # Llama 3's shape
        ("{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}",
         "<end_of_turn>\n"),  # Gemma's shape
        (None, "<|im_end|>"),  # no template: the eos token
    ],
)
def test_the_end_of_turn_is_read_from_the_chat_template(model_path, template, close):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|eot_id|>", "<end_of_turn>", "<|im_start|>", "<|im_end|>"]})
    if template != "chatml":
        tokenizer.chat_template = template
    assert turn_close_ids(tokenizer) == tokenizer.encode(close, add_special_tokens=False)
