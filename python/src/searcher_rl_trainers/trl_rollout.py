"""TRL's tag mode: `GRPOTrainer(rollout_func=TagRollout(...))`, the Searcher's own protocol.

The model writes `<think>...</think>` and one action tag per turn (`<search>`, `<bbox>`,
`<search_complete>`, or `<answer>` in Search-R1 mode), as this SDK's policy and the seeds do. For
each batch, every rollout gets a session of `searcher-rl serve-env`; the trainer's own model
generates the turns of all active rollouts together (transformers `generate`, sampling with the
GRPOConfig's temperature/top_p/top_k), each turn stopping at a closing action tag; the raw turn
goes to the server, whose observation is appended; at `done` the server's reward is the rollout's.

- Token ids are kept as generated (the turn's ids, not a re-encoding of its text); `env_mask` is 1
  on them and 0 on everything else (observations, an appended end-of-turn token).
- The end of a turn: a checkpoint of this SDK ends a turn on the closing tag (one token, listed in
  its `generation_config.json` eos ids), and the observation follows directly, as the SDK's own
  rollouts lay out the context; nothing is appended. A chat model (its tokenizer has a chat
  template) gets its end-of-turn token (`eos_token`, e.g. `<|im_end|>`) appended after a turn cut
  at a stop string, and the observation as a user turn rendered by its template (`end_of_turn`:
  "auto" the tokenizer's eos token, an id, or None for the plain layout).
- Rewards: the server's (`server_reward` column, for `server_reward` the reward function); `None`
  where the server could not compute it or the session was lost mid-episode (TRL leaves it out of
  its group's mean and std, advantage 0); 0.0 where the context window ran out (this SDK's
  'context' ending, which fails the format gate).
- Sessions: a fresh one per rollout, opened with backoff on CAPACITY_REACHED; a batch larger than
  `max_sessions` runs in waves of that many (all of a wave's sessions are open at once).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .openenv_glue import env_client, reset_fresh, reward_or_none

DEFAULT_STOP_STRINGS = ("</search>", "</bbox>", "</search_complete>", "</answer>")
# A hard cap on turns; the server ends an episode at its own `episode.maxTurns` first.
MAX_TURNS_GUARD = 64


def chat_observation_ids(tokenizer: Any, text: str) -> list[int]:
    """The ids that follow an assistant turn closed by the end-of-turn token: the rest of the
    template's turn separator, `text` as a user turn, and the next generation prompt. Read from the
    template's rendering of a conversation where an assistant turn is followed by that user turn
    (templates render the last assistant turn differently, e.g. Qwen3's empty think block, so the
    turn is not rendered last)."""
    marker = "\u2063searcher-rl-assistant-turn\u2063"
    eos = tokenizer.eos_token or ""
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": marker}, {"role": "user", "content": text}],
        tokenize=False,
        add_generation_prompt=True,
    )
    closed = marker + eos
    if closed not in rendered:
        raise ValueError(f"the chat template does not end an assistant turn with the tokenizer's eos_token ({eos!r}); pass end_of_turn=None")
    return tokenizer(rendered[rendered.index(closed) + len(closed) :], add_special_tokens=False)["input_ids"]


def server_reward(prompts: list, completions: list, server_reward: list, **kwargs: Any) -> list[float | None]:
    """The reward function for `TagRollout`: the server's reward, `None` where missing."""
    return list(server_reward)


class _Episode:
    __slots__ = ("task", "client", "prompt_ids", "completion", "mask", "done", "reward", "ending", "turns")

    def __init__(self, task: str, client: Any):
        self.task, self.client = task, client
        self.prompt_ids: list[int] = []
        self.completion: list[int] = []
        self.mask: list[int] = []
        self.done = False
        self.reward: float | None = None
        self.ending: str | None = None
        self.turns = 0

    def end(self, ending: str, reward: float | None) -> None:
        self.done, self.ending, self.reward = True, ending, reward


class TagRollout:
    """A `rollout_func` for TRL's GRPOTrainer: Searcher episodes in the tag protocol against serve-env.

    The dataset's `prompt` is the task id (`tag_dataset`). `generate(model, tokenizer, batch_ids,
    max_new_tokens)` may replace the default sampler (tests script turns with it); it returns one
    list of new ids per row."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        turn_tokens: int = 48,
        context_tokens: int | None = None,
        stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
        end_of_turn: str | int | None = "auto",
        max_sessions: int = 64,
        reset_attempts: int = 8,
        generate: Callable[..., list[list[int]]] | None = None,
    ):
        if max_sessions < 1:
            raise ValueError("TagRollout: max_sessions must be at least 1 (serve-env's --max-sessions)")
        self.base_url, self.token = base_url, token
        self.turn_tokens, self.context_tokens = turn_tokens, context_tokens
        self.stop_strings = tuple(stop_strings)
        self.end_of_turn = end_of_turn
        self.max_sessions, self.reset_attempts = max_sessions, reset_attempts
        self.generate = generate
        self.stats: dict[str, Any] = {
            "episodes": 0,
            "steps": 0,
            "endings": Counter(),
            "generate_s": 0.0,
            "env_s": 0.0,
            "generated_tokens": 0,
        }

    # -- the trainer's side ---------------------------------------------------------------------
    def __call__(self, prompts: list, trainer: Any) -> dict:
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        args = trainer.args
        sampling = {
            "temperature": args.temperature,
            "top_p": args.top_p,
            "top_k": args.top_k or 0,
        }
        budget = args.max_completion_length
        tasks = [p if isinstance(p, str) else p["task_id"] for p in prompts]
        episodes: list[_Episode] = []
        # The rollouts run with the model in eval mode, its own `generate` or the caller's: the
        # trainer holds it in train mode, where gradient checkpointing (GRPOConfig's default) turns
        # the key/value cache off while transformers' `generate` still feeds one new token a step,
        # so each token was sampled without the context before it (the tiny SFT checkpoint that
        # copies the question greedily wrote "<search><search><search>..."). Dropout is off too.
        training = model.training
        model.eval()
        try:
            for start in range(0, len(tasks), self.max_sessions):
                wave = tasks[start : start + self.max_sessions]
                episodes += asyncio.run(self._run_wave(wave, model, tokenizer, sampling, budget))
        finally:
            model.train(training)
        for episode in episodes:
            if not episode.completion:  # TRL needs a token: the end-of-sequence one, not trained
                episode.completion, episode.mask = [tokenizer.eos_token_id], [0]
            self.stats["endings"][episode.ending] += 1
        self.stats["episodes"] += len(episodes)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion for e in episodes],
            "logprobs": None,
            "env_mask": [e.mask for e in episodes],
            "server_reward": [e.reward for e in episodes],
            "episode_ending": [e.ending for e in episodes],
        }

    # -- one wave of sessions ---------------------------------------------------------------------
    async def _run_wave(self, tasks: list[str], model: Any, tokenizer: Any, sampling: dict, budget: int) -> list[_Episode]:
        # A chat model's layout (its template's turns) unless end_of_turn=None asks for the plain one.
        chat = self.end_of_turn is not None and getattr(tokenizer, "chat_template", None) is not None
        episodes = [_Episode(task, env_client(self.base_url, self.token)) for task in tasks]
        context = self.context_tokens or _context_of(model)
        started = time.perf_counter()
        firsts = await asyncio.gather(
            *(reset_fresh(e.client, attempts=self.reset_attempts, task=e.task) for e in episodes), return_exceptions=True
        )
        self.stats["env_s"] += time.perf_counter() - started
        try:
            errors = [f for f in firsts if isinstance(f, BaseException)]
            if errors:
                raise errors[0]
            for episode, first in zip(episodes, firsts):
                text = first.observation["text"]
                episode.prompt_ids = (
                    tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True, add_generation_prompt=True)
                    if chat
                    else tokenizer(text, add_special_tokens=False)["input_ids"]
                )
                if not isinstance(episode.prompt_ids, list):  # BatchEncoding from some tokenizers
                    episode.prompt_ids = list(episode.prompt_ids["input_ids"])
            for _turn in range(MAX_TURNS_GUARD):
                active = [e for e in episodes if not e.done]
                for episode in active:
                    if self._room(episode, context, budget) <= 0:
                        episode.end("context", 0.0)
                active = [e for e in active if not e.done]
                if not active:
                    break
                await self._turn(active, model, tokenizer, sampling, context, budget, chat)
            for episode in episodes:
                if not episode.done:
                    episode.end("turns", 0.0)
        finally:
            await asyncio.gather(*(e.client.disconnect() for e in episodes), return_exceptions=True)
        return episodes

    def _room(self, episode: _Episode, context: int, budget: int) -> int:
        return min(context - len(episode.prompt_ids) - len(episode.completion), budget - len(episode.completion))

    async def _turn(self, active: list[_Episode], model: Any, tokenizer: Any, sampling: dict, context: int, budget: int, chat: bool) -> None:
        limits = [min(self.turn_tokens, self._room(e, context, budget)) for e in active]
        started = time.perf_counter()
        rows = [e.prompt_ids + e.completion for e in active]
        # In a thread: the sessions' event loop keeps answering the server (pings) during a long turn.
        if self.generate is not None:
            generated = await asyncio.to_thread(self.generate, model, tokenizer, rows, max(limits))
        else:
            generated = await asyncio.to_thread(_sample, model, tokenizer, rows, max(limits), self.stop_strings, sampling)
        self.stats["generate_s"] += time.perf_counter() - started
        end_ids = _end_ids(model, tokenizer)
        pad = {tokenizer.pad_token_id, *end_ids} - {None}
        texts, reasons = [], []
        for episode, new, limit in zip(active, generated, limits):
            ids, reason = _cut_turn(tokenizer, list(new)[:limit], end_ids, self.stop_strings)
            self.stats["generated_tokens"] += len(ids)
            episode.completion += ids
            episode.mask += [1] * len(ids)
            episode.turns += 1
            if chat and reason != "eos":
                eos = tokenizer.eos_token_id if self.end_of_turn == "auto" else int(self.end_of_turn)
                episode.completion.append(eos)
                episode.mask.append(0)
            while ids and ids[-1] in pad and ids[-1] not in _tag_ids(tokenizer, self.stop_strings):
                ids = ids[:-1]
            texts.append(tokenizer.decode(ids, skip_special_tokens=False))
            reasons.append(reason)
        started = time.perf_counter()
        results = await asyncio.gather(
            *(e.client.step({"text": t, "finish_reason": r}) for e, t, r in zip(active, texts, reasons)), return_exceptions=True
        )
        self.stats["env_s"] += time.perf_counter() - started
        self.stats["steps"] += len(active)
        for episode, result in zip(active, results):
            if isinstance(result, BaseException):
                # A lost session (idle timeout, server restart) or a refused turn: no reward to learn from.
                episode.end("lost", None)
                continue
            if result.done:
                episode.end(result.observation.get("metadata", {}).get("terminated") or "done", reward_or_none(result))
                continue
            text = result.observation.get("text", "")
            ids = chat_observation_ids(tokenizer, text) if chat else tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(episode.prompt_ids) + len(episode.completion) + len(ids) > min(context, len(episode.prompt_ids) + budget):
                episode.end("context", 0.0)  # an observation that does not fit ends the episode, as in-process
                continue
            episode.completion += ids
            episode.mask += [0] * len(ids)


def _context_of(model: Any) -> int:
    config = model.config
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError("TagRollout: the model's config names no context length; pass context_tokens=")


def _end_ids(model: Any, tokenizer: Any) -> list[int]:
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured] if configured is not None else []
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids = [*ids, tokenizer.eos_token_id]
    return ids


def _tag_ids(tokenizer: Any, stop_strings: Sequence[str]) -> set[int]:
    ids = set()
    for tag in stop_strings:
        encoded = tokenizer(tag, add_special_tokens=False)["input_ids"]
        if len(encoded) == 1:
            ids.add(encoded[0])
    return ids


def _cut_turn(tokenizer: Any, new: list[int], end_ids: list[int], stop_strings: Sequence[str]) -> tuple[list[int], str]:
    """The turn's ids up to and including its stop (an end id or the end of a stop string) and how
    it ended: `stop` (a closing tag), `eos` (the end-of-sequence token, no tag) or `length`."""
    tags = _tag_ids(tokenizer, stop_strings)
    last_chars = {s[-1] for s in stop_strings}
    for k, token in enumerate(new, start=1):
        if token in tags:
            return new[:k], "stop"
        if token in end_ids:
            return new[:k], "eos"
        piece = tokenizer.decode([token], skip_special_tokens=False)
        if piece and piece[-1] in last_chars and tokenizer.decode(new[:k], skip_special_tokens=False).endswith(tuple(stop_strings)):
            return new[:k], "stop"
    return new, "length"


def _sample(model: Any, tokenizer: Any, rows: list[list[int]], max_new: int, stop_strings: Sequence[str], sampling: dict) -> list[list[int]]:
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(len(r) for r in rows)
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=model.device)
    attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=model.device)
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=attention,
            max_new_tokens=max_new,
            do_sample=True,
            temperature=sampling["temperature"],
            top_p=sampling["top_p"],
            top_k=sampling["top_k"],
            stop_strings=list(stop_strings),
            tokenizer=tokenizer,
            pad_token_id=pad,
        )
    return [row[width:].tolist() for row in out]


def tag_dataset(tasks: list[dict]) -> Any:
    """A dataset for `TagRollout`: the prompt is the task id (the server's reset gives the text)."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [task["id"] for task in tasks]})
