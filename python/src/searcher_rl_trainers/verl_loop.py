"""A verl agent loop (verl 0.9) that rolls out Searcher episodes on `searcher-rl serve-env`.

verl owns the policy (vLLM/SGLang behind `server_manager`, FSDP/Megatron for the update); the
server owns the episode: search, crops, the frozen generator, the judge and the reward. Per sample
`run` opens one session (`verl_session.ServeEnvSession`) and:

1. resets to the row's `extra_info.task_id`; the first observation (instructions and question)
   is the user turn, templated by verl's Continuous Token builder (`ct_build_initial_tokens`);
2. generates one action at a time with `server_manager.generate(request_id, prompt_ids=...,
   sampling_params=...)`, stopping at the closing action tags; the turn's tokens get
   `response_mask` 1 and their log-probs;
3. closes the turn as the chat template closes an assistant message (`<|im_end|>\\n` for ChatML):
   generation that stopped at a stop string never produced it. Those tokens get mask 0 and
   log-prob 0, as verl's own boundary tokens do;
4. steps the server with the turn's text; the observation (with its page images for a
   vision-language processor) is merged as the next user turn (`ct_merge_context_msg`, mask 0);
5. at `done`, `reward_score` is the server's reward, so verl runs no reward function of its own.

A reward the server could not compute (`reward_status: missing`, or the session lost mid-episode)
must contribute nothing to the loss and nothing to its group's statistics. `failed_reward`:
- `drop` (verl's default trainer, `trainer.use_v1=true`): `run` returns `[]`; verl's v1 worker
  stores nothing for the sample, and GRPO's group is computed over the others;
- `mask` (the legacy trainer, `use_v1=false`, which cannot take an empty output): the sample keeps
  reward 0.0 with an all-zero `response_mask` (no loss) and `extra_fields.reward_missing`; pair it
  with `algorithm.adv_estimator=grpo_masked` (`verl_advantage`), which leaves such samples out of
  the group statistics. A group-relative estimator other than that is refused at construction;
- `auto` (default): `drop` under `use_v1`, else `mask`.

Register it with `actor_rollout_ref.rollout.agent.agent_loop_config_path` pointing at a yaml
whose entry has `_target_: searcher_rl_trainers.verl_loop.SearcherEnvAgentLoop`
(integrations/verl/agent_loop.yaml) and give the dataset an `agent_name` column with the entry's
name (integrations/verl/make_dataset.py). The server's address comes from `SEARCHER_ENV_URL`
and its token from `SEARCHER_RL_TOKEN`; the yaml holds neither.
"""

import base64
import io
import json
import logging
from typing import Any, Optional
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
from verl.utils.profiler import simple_timer
from websockets.exceptions import ConnectionClosed

from .connection import CONNECTION_CLOSED, RetryPolicy, ServeEnvError, ServerAddress
from .verl_advantage import GRPO_MASKED
from .verl_session import EpisodeOutcome, ServeEnvSession, outcome_of

logger = logging.getLogger(__name__)

# The Searcher's actions end with these tags; generation stops after one action.
STOP_STRINGS = ["</search>", "</bbox>", "</search_complete>", "</answer>"]
FAILED_REWARD_MODES = ("auto", "drop", "mask")
# verl's estimators that normalise within a `uid` group: with `mask` the failed sample's 0.0
# would enter the group's mean (and std). GAE and REINFORCE++ (batch whitening) do not group.
GROUP_ESTIMATORS = frozenset(
    {"grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized", "opo", "gpg", "gdpo", "remax",
     "reinforce_plus_plus_baseline", "optimal_token_baseline", "tir_optimal_token_baseline"}
)
_MARKER = "SEARCHER_TURN_END_MARKER"
_turn_close_cache: dict[int, tuple[Any, list[int]]] = {}


def turn_close_ids(tokenizer: Any) -> list[int]:
    """The tokens the chat template puts after an assistant message's content (`<|im_end|>\\n` for
    ChatML, `<|eot_id|>` for Llama 3), read from the template itself; the eos token without one."""
    cached = _turn_close_cache.get(id(tokenizer))
    if cached is not None and cached[0] is tokenizer:
        return cached[1]
    ids: list[int] = []
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "question"}, {"role": "assistant", "content": _MARKER}], tokenize=False
        )
        if _MARKER in text:
            ids = tokenizer.encode(text.rsplit(_MARKER, 1)[1], add_special_tokens=False)
    if not ids and tokenizer.eos_token_id is not None:
        ids = [tokenizer.eos_token_id]
    _turn_close_cache[id(tokenizer)] = (tokenizer, ids)
    return ids


def _stop_params(rollout_name: str) -> dict[str, Any]:
    # The turn's token ids go back to the model either way; the flags only keep the tag in the text.
    if rollout_name == "sglang":
        return {"stop": STOP_STRINGS, "no_stop_trim": True}
    return {"stop": STOP_STRINGS, "include_stop_str_in_output": True}


def _images_from_data_uris(uris: list[str]) -> list[Any]:
    from PIL import Image

    return [Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB") for uri in uris]


class SearcherEnvAgentLoop(AgentLoopBase):
    def __init__(
        self,
        *args: Any,
        max_turns: int = 32,
        failed_reward: str = "auto",
        images: str = "auto",
        open_timeout_s: float = 600.0,
        server_url: Optional[str] = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        # SEARCHER_ENV_URL and SEARCHER_RL_TOKEN win over the yaml; the token stays out of the repr.
        self.server = ServerAddress.from_environment(server_url)
        self.max_turns = int(max_turns)
        self.retry = RetryPolicy(open_timeout_s=float(open_timeout_s))
        self.response_length = int(self.rollout_config.response_length)
        self.failed_reward = self._failed_reward_mode(failed_reward)
        if images not in ("auto", "off"):
            raise ValueError(f"agent_loop.yaml: images must be 'auto' or 'off', got {images!r}")
        self.vision = (
            images == "auto" and self.processor is not None and self.continuous_token_builder.supports_multimodal()
        )
        self.turn_close = turn_close_ids(self.tokenizer)
        self.stop_params = _stop_params(str(self.rollout_config.get("name", "vllm")))

    def _failed_reward_mode(self, mode: str) -> str:
        if mode not in FAILED_REWARD_MODES:
            raise ValueError(f"agent_loop.yaml: failed_reward must be one of {FAILED_REWARD_MODES}, got {mode!r}")
        use_v1 = bool(self.config.trainer.get("use_v1", False))
        if mode == "auto":
            mode = "drop" if use_v1 else "mask"
        if mode == "drop" and not use_v1:
            raise ValueError(
                "agent_loop.yaml: failed_reward: drop needs verl's v1 trainer (trainer.use_v1=true), whose worker "
                "accepts an empty output; with use_v1=false use failed_reward: mask and "
                f"algorithm.adv_estimator={GRPO_MASKED}"
            )
        estimator = str(self.config.algorithm.get("adv_estimator", ""))
        if mode == "mask" and estimator in GROUP_ESTIMATORS:
            raise ValueError(
                f"algorithm.adv_estimator={estimator} puts a masked sample's 0.0 into its group's statistics; "
                f"use algorithm.adv_estimator={GRPO_MASKED} (registered by searcher_rl_trainers.verl_advantage) with "
                "failed_reward: mask" + (", or failed_reward: drop on the v1 trainer" if use_v1 else "")
            )
        return mode

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput | list:
        task_id = _task_id(kwargs)
        request_id = uuid4().hex
        metrics: dict[str, Any] = {}
        session = await ServeEnvSession.open(
            self.server.url, self.server.token, {"task": task_id, "episode_id": request_id}, self.retry
        )
        params = {**sampling_params, **self.stop_params}
        images: list[Any] = []
        outcome: Optional[EpisodeOutcome] = None
        terminated = "max_turns"
        num_turns = 1
        try:
            messages = [self._user_message(session.first["observation"], images)]
            ids = await self.ct_build_initial_tokens(messages, images=list(images) or None)
            prompt_length = len(ids)
            mask: list[int] = []
            logprobs: Optional[list[float]] = None
            for _ in range(self.max_turns):
                budget = self.response_length - len(mask)
                if budget <= 0:
                    terminated = "context"
                    break
                with simple_timer("generate_sequences", metrics):
                    out = await self.server_manager.generate(
                        request_id,
                        prompt_ids=ids,
                        sampling_params={**params, "max_tokens": budget},
                        image_data=list(images) or None,
                    )
                turn = list(out.token_ids)
                if out.log_probs and logprobs is None:
                    logprobs = [0.0] * len(mask)
                merged, mask, logprobs = await self.ct_merge_assistant_token(
                    ids, turn, mask, logprobs, assistant_logprobs=out.log_probs if logprobs is not None else None
                )
                close = self.turn_close[1:] if turn[-1:] == self.turn_close[:1] else self.turn_close
                ids = merged.token_ids + close
                mask = mask + [0] * len(close)
                logprobs = logprobs + [0.0] * len(close) if logprobs is not None else None
                num_turns += 1
                text = self.tokenizer.decode(turn, skip_special_tokens=True)
                if len(turn) >= budget and not _ends_an_action(text) and turn[-1:] != self.turn_close[:1]:
                    terminated = "context"  # cut by the response budget mid-action: nothing to send
                    break
                try:
                    with simple_timer("tool_calls", metrics):
                        result = await session.request({"type": "step", "data": {"text": text}})
                except (ServeEnvError, ConnectionClosed) as error:
                    outcome = _lost(error)
                    break
                if result.get("done"):
                    outcome = outcome_of(result)
                    break
                messages.append({"role": "assistant", "content": text})
                previous = list(messages)
                messages.append(self._user_message(result["observation"], images))
                merged, mask, logprobs = await self.ct_merge_context_msg(previous, messages, ids, mask, logprobs)
                ids = merged.token_ids
                num_turns += 1
        finally:
            await session.close()

        if outcome is None:
            # Cut by the context or the turn limit before `done`: the format gate's 0, as the SDK scores it.
            outcome = EpisodeOutcome(0.0, "ok", terminated, None)
        extra_fields: dict[str, Any] = {
            "task_id": task_id,
            "reward_status": outcome.reward_status,
            "terminated": outcome.terminated,
            "reward_missing": outcome.missing,
            "reward_cause": json.dumps(outcome.cause) if outcome.cause else None,
            # Tries it took to get a session (more than 1: the server was at --max-sessions).
            "session_attempts": session.attempts,
        }
        if outcome.missing:
            logger.warning("searcher episode %s on task %s: reward missing (%s)", request_id, task_id, outcome.cause)
            if self.failed_reward == "drop":
                return []
            mask = [0] * len(mask)
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=ids[:prompt_length],
            response_ids=ids[prompt_length:][:n],
            response_mask=mask[:n],
            response_logprobs=logprobs[:n] if logprobs is not None else None,
            multi_modal_data={"images": images} if images else None,
            reward_score=0.0 if outcome.missing else outcome.reward,
            num_turns=num_turns,
            metrics=metrics,
            extra_fields=extra_fields,
        )

    def _user_message(self, observation: dict[str, Any], images: list[Any]) -> dict[str, Any]:
        text = observation.get("text", "")
        uris = observation.get("images") or []
        if not (self.vision and uris):
            return {"role": "user", "content": text}
        new_images = _images_from_data_uris(uris)
        images.extend(new_images)
        return {"role": "user", "content": [*({"type": "image", "image": im} for im in new_images), {"type": "text", "text": text}]}


def _task_id(kwargs: dict[str, Any]) -> str:
    extra_info = kwargs.get("extra_info") or {}
    task_id = kwargs.get("task_id") or (extra_info.get("task_id") if isinstance(extra_info, dict) else None)
    if not task_id:
        raise ValueError(
            "the dataset row has no extra_info.task_id: the server needs the task to reset to; build the "
            "dataset with integrations/verl/make_dataset.py (one row per task of the server's /tasks)"
        )
    return str(task_id)


def _ends_an_action(text: str) -> bool:
    stripped = text.rstrip()
    return any(stripped.endswith(tag) for tag in STOP_STRINGS)


def _lost(error: Exception) -> EpisodeOutcome:
    code = getattr(error, "code", None) if isinstance(error, ServeEnvError) else CONNECTION_CLOSED
    cause = {"stage": "session", "kind": str(code).lower(), "message": str(error)}
    return EpisodeOutcome(None, "missing", "session_lost", cause)
