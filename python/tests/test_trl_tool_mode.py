"""TRL 1.16's tool-calling mode (`environment_factory=SearcherToolEnv`) against `searcher-rl
serve-env`: search, crop and search_complete as tools, the server's reward through `get_reward`.

A small random model never writes a tool call, so the model's generation is scripted (the
completions a chat model would write, in the Qwen3 template's tool-call format); everything after
generation is TRL's own code: the response parser, tool dispatch to the environment, the tool
turns and their mask, the rewards and the update. The environment itself (images for multimodal
models, a fresh session after an idle timeout) is tested against the server directly.
"""

from __future__ import annotations

import functools
import json
import re
import time

import pytest
from PIL import Image
from transformers import AutoTokenizer
from trl import GRPOTrainer

from searcher_rl_trainers.openenv_glue import fetch_tasks
from searcher_rl_trainers.train_trl import grpo_args
from searcher_rl_trainers.trl_env import TOOL_INSTRUCTIONS, SearcherToolEnv, tool_dataset


class RecordingEnv(SearcherToolEnv):
    """The environment TRL pools, recording each action it sent and each reward it gave."""

    log: list[tuple] = []

    def _step(self, action):
        result = super()._step(action)
        RecordingEnv.log.append(("step", action, result if isinstance(result, str) else "parts"))
        return result

    def get_reward(self):
        reward = super().get_reward()
        RecordingEnv.log.append(("reward", reward))
        return reward


def call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def test_tool_calls_reach_the_server_and_its_rewards_reach_trl(chat_model, server, tmp_path):
    tasks = fetch_tasks(server.url, server.token)[:1]
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    calls = {"n": 0}

    def scripted(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        # What a chat model would write, by how far its episode has gone (tool results so far).
        first = calls["n"] == 0
        calls["n"] += 1
        out = []
        for row, ids in enumerate(prompt_ids):
            done = tokenizer.decode(ids).count("<tool_response>")
            if first and row == 3:
                text = "I cannot tell.<|im_end|>"  # no tool call: the episode never completes
            elif done == 0:
                text = call("search", query="revenue")
            elif done == 1:
                text = call("crop", x1=0, y1=0, x2=320, y2=180)
            elif done == 2:
                text = call("search_complete")
            else:
                text = "Done.<|im_end|>"
            out.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        return out, None

    RecordingEnv.log = []
    trainer = GRPOTrainer(
        model=str(chat_model),
        args=grpo_args(
            str(tmp_path / "grpo"),
            steps=1,
            prompts_per_step=1,
            n_agent=4,
            warmup_steps=0,
            max_completion_length=4096,
            max_tool_calling_iterations=6,
        ),
        train_dataset=tool_dataset(tasks * 4),
        environment_factory=functools.partial(RecordingEnv, server.url, server.token),
    )
    assert sorted(t.__name__ for t in trainer.tools) == ["crop", "crop_region", "search", "search_complete"]
    trainer._generate_single_turn = scripted
    seen = {}
    original = trainer._generate_and_score_completions

    def wrapped(inputs):
        output = original(inputs)
        seen.update(output)
        return output

    trainer._generate_and_score_completions = wrapped
    trainer.train()

    steps = [entry for entry in RecordingEnv.log if entry[0] == "step"]
    assert [s[1] for s in steps].count("<search>revenue</search>") == 3
    assert [s[1] for s in steps].count("<bbox>[0, 0, 320, 180]</bbox>") == 3
    assert [s[1] for s in steps].count("<search_complete>true</search_complete>") == 3
    assert all(s[2].startswith("<information>") for s in steps if s[1].startswith(("<search>", "<bbox>")))
    rewards = [entry[1] for entry in RecordingEnv.log if entry[0] == "reward"]
    assert sorted(rewards, key=lambda r: (r is None, r)) == [0.0, *[rewards[0] if rewards[0] else max(rewards)] * 3]
    completed = max(rewards)
    assert completed >= 0.1  # phase 1: 0.1 + 0.9 NDCG once the format passes
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == pytest.approx(9 / 4) and logged["tools/failure_frequency"] == 0
    assert logged["rewards/RecordingEnv/mean"] == pytest.approx(3 * completed / 4, abs=1e-4)
    # Tool results are not trained: mask 0 inside each completed rollout, 1 on its own turns.
    mask = seen["tool_mask"]
    for row in range(4):
        values = set(mask[row][: int(seen["completion_mask"][row].sum())].tolist())
        assert values == ({0, 1} if row != 3 else {1})
    # The environments' sessions were closed when their rewards were read.
    assert all(not env._open for env in trainer.environments)


def test_the_environment_gives_multimodal_models_image_parts_and_a_clean_first_turn(server):
    task = server.tasks(1)[0]
    env = SearcherToolEnv(server.url, server.token, vision=True)
    first = env.reset(task_id=task["id"])
    assert first == f"{TOOL_INSTRUCTIONS}\n\nQuestion: {task['question']}\n" and "<search>" not in first
    page = env.search(task["question"])
    assert [part["type"] for part in page] == ["image", "text"]
    assert isinstance(page[0]["image"], Image.Image) and page[0]["image"].size == (640, 360)
    assert page[1]["text"].startswith("<information>[page ")
    crop = env.crop(0, 0, 160, 90)
    assert isinstance(crop[0]["image"], Image.Image) and crop[0]["image"].size[0] >= 640
    assert env.search_complete() == "Search complete."
    with pytest.raises(ValueError, match="complete"):
        env.search("again")
    assert isinstance(env.get_reward(), float)
    # A question already in the row's prompt is kept apart from the observation TRL appends.
    row_prompt = [{"role": "user", "content": task["question"]}]
    assert env.reset(task_id=task["id"], prompt=row_prompt).startswith("\n\n" + TOOL_INSTRUCTIONS)
    env.get_reward()
    # A text model gets text.
    text_env = SearcherToolEnv(server.url, server.token)
    text_env.reset(task_id=task["id"])
    assert isinstance(text_env.search(task["question"]), str)
    assert text_env.get_reward() == 0.0  # stopped before search_complete: the format gate's 0


def test_a_pooled_environment_resets_after_the_server_ended_its_idle_session(strict_server):
    task = strict_server.tasks(1)[0]
    env = SearcherToolEnv(strict_server.url, strict_server.token)
    env.reset(task_id=task["id"])
    time.sleep(2.5)  # the server's --idle-timeout-ms is 1500
    # Mid-episode the session is gone: the episode has no reward (None, masked), never 0.
    with pytest.raises(Exception):
        env.search(task["question"])
    assert env.get_reward() is None
    # TRL's next batch resets the same instance: a fresh session.
    env.reset(task_id=task["id"])
    time.sleep(2.5)
    env.reset(task_id=task["id"])
    assert isinstance(env.search(task["question"]), str)
    assert env.search_complete() == "Search complete."
    assert isinstance(env.get_reward(), float)


def test_crop_region_crops_a_region_the_page_marks_and_names_the_marks_otherwise(server):
    env = SearcherToolEnv(server.url, server.token, vision=True)
    for task in server.tasks(60):
        env.reset(task_id=task["id"])
        page = env.search(task["question"])
        marks = re.findall(r"\[([a-z][a-z -]*?) at <x1_", page[-1]["text"] if isinstance(page, list) else page)
        if marks:
            break
        env.get_reward()
    else:
        pytest.fail("no page with a marked region among the first 60 tasks")
    crop = env.crop_region(marks[0])
    assert isinstance(crop[0]["image"], Image.Image) and crop[-1]["text"].startswith("<information>[crop of ")
    # A crop marks no regions: a name now is an invalid action, and the session goes on.
    again = env.crop_region(marks[0])
    assert f'a crop marks no regions, so "{marks[0]}" names none' in (again if isinstance(again, str) else again[-1]["text"])
    # A box, digits or location tokens are not a name: crop(x1, y1, x2, y2) is for boxes.
    for not_a_name in ["12, 30, 80, 90", "<x1_3><y1_4><x2_9><y2_6>", ""]:
        with pytest.raises(ValueError, match="crop_region takes a region's name"):
            env.crop_region(not_a_name)
    assert env.search_complete() == "Search complete."
    env.get_reward()
