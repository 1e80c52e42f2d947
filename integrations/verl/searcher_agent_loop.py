"""A verl agent loop that rolls out Searcher episodes on a `searcher-rl serve-env` server.

verl owns the policy (vLLM/SGLang through `server_manager`, FSDP/Megatron for the update); the
server owns everything around it: the episode semantics, search, crops, the frozen generator, the
judge and the reward. Per sample, `run` opens one OpenEnv WebSocket session and:

1. `reset` with the dataset row's task id -> the first observation (instructions + question),
   templated as the user turn -> `prompt_ids`.
2. Token-in/token-out: `server_manager.generate(request_id, prompt_ids=..., sampling_params=...,
   image_data=...)` with stop strings on the closing action tags; the turn's tokens go to
   `response_ids` with `response_mask` 1 (and their log-probs).
3. `step` with the decoded turn text -> the observation, whose tokens are appended with
   `response_mask` 0 (its images, for vision models, templated through the processor and passed on
   in `image_data` and `multi_modal_data`).
4. At `done`, `reward_score` is the server's reward, so verl does not run its own reward function.
   When the server could not compute the reward (`reward_status: missing`: a judge or generator
   outage), the whole `response_mask` is zeroed (no gradient from the sample) and the cause goes
   to `extra_fields`.

Register it with `actor_rollout_ref.rollout.agent.agent_loop_config_path=agent_loop.yaml` and give
the dataset an `agent_name` column with the entry's `name` (see README.md).
Written against verl's `verl/experimental/agent_loop/agent_loop.py` (AgentLoopBase, AgentLoopOutput).
"""

import json
import os
from typing import Any, Optional
from uuid import uuid4

import websockets

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
from verl.utils.profiler import simple_timer

# The Searcher's actions end with these tags; generation stops after one action.
STOP_STRINGS = ["</search>", "</bbox>", "</search_complete>", "</answer>"]


def _images_from_data_uris(uris: list[str]) -> list[Any]:
    import base64
    import io

    from PIL import Image

    return [Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB") for uri in uris]


class SearcherEnvAgentLoop(AgentLoopBase):
    def __init__(self, *args, server_url: Optional[str] = None, token: Optional[str] = None, max_turns: int = 16, **kwargs):
        kwargs.pop("name", None)
        super().__init__(*args, **kwargs)
        self.server_url = (server_url or os.environ.get("SEARCHER_ENV_URL", "ws://127.0.0.1:8000")).rstrip("/")
        self.token = token or os.environ.get("SEARCHER_RL_TOKEN")
        self.max_turns = max_turns
        self.response_length = self.config.actor_rollout_ref.rollout.response_length

    async def _request(self, ws, message: dict) -> dict:
        await ws.send(json.dumps(message))
        reply = json.loads(await ws.recv())
        if reply.get("type") == "error":
            data = reply.get("data", {})
            raise RuntimeError(f"serve-env error {data.get('code')}: {data.get('message')}")
        return reply["data"]

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        extra_info = kwargs.get("extra_info") or {}
        task_id = kwargs.get("task_id") or extra_info.get("task_id")
        request_id = uuid4().hex
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        params = {**sampling_params, "stop": STOP_STRINGS, "include_stop_str_in_output": True}
        metrics: dict[str, Any] = {}
        response_ids: list[int] = []
        response_mask: list[int] = []
        response_logprobs: list[float] = []
        images: list[Any] = []
        extra_fields: dict[str, Any] = {}
        reward_score: Optional[float] = None
        num_turns = 0

        async with websockets.connect(f"{self.server_url}/ws", extra_headers=headers, max_size=None) as ws:
            first = await self._request(ws, {"type": "reset", "data": {"task": task_id, "episode_id": request_id, "seed": kwargs.get("index")}})
            prompt_ids = await self.apply_chat_template([{"role": "user", "content": first["observation"]["text"]}])
            result = first
            for _ in range(self.max_turns):
                budget = self.response_length - len(response_ids)
                if budget <= 0:
                    break
                with simple_timer("generate_sequences", metrics):
                    output = await self.server_manager.generate(
                        request_id=request_id,
                        prompt_ids=prompt_ids + response_ids,
                        sampling_params={**params, "max_tokens": budget},
                        image_data=images or None,
                    )
                response_ids += output.token_ids
                response_mask += [1] * len(output.token_ids)
                if output.log_probs:
                    response_logprobs += output.log_probs
                num_turns += 1
                text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
                with simple_timer("tool_calls", metrics):
                    result = await self._request(ws, {"type": "step", "data": {"text": text}})
                if result["done"]:
                    break
                observation = result["observation"]
                new_images = _images_from_data_uris(observation["images"]) if observation["images"] and self.processor is not None else []
                if new_images:
                    # A vision model needs the image placeholders: the observation is a user turn through the processor.
                    content = [{"type": "image"} for _ in new_images] + [{"type": "text", "text": observation["text"]}]
                    obs_ids = await self.apply_chat_template([{"role": "user", "content": content}], images=new_images, remove_system_prompt=True)
                    images += new_images
                else:
                    obs_ids = self.tokenizer.encode(observation["text"], add_special_tokens=False)
                response_ids += obs_ids
                response_mask += [0] * len(obs_ids)
                if response_logprobs:
                    response_logprobs += [0.0] * len(obs_ids)
                num_turns += 1
            if not result["done"]:
                # The trainer's response budget ran out first: the episode ended by context, which
                # fails the format gate (reward 0), as in-process rollouts score it.
                extra_fields["terminated"] = "context"
                reward_score = 0.0
            try:
                await ws.send(json.dumps({"type": "close"}))
            except websockets.ConnectionClosed:
                pass

        if result["done"]:
            meta = result["observation"]["metadata"]
            extra_fields["terminated"] = meta.get("terminated")
            extra_fields["reward_status"] = meta.get("reward_status")
            if meta.get("reward_status") == "ok" and result["reward"] is not None:
                reward_score = float(result["reward"])
            else:
                # A failed reward is masked, never trained on as 0.
                response_mask = [0] * len(response_mask)
                reward_score = 0.0
                extra_fields["reward_missing"] = True
                extra_fields["reward_cause"] = json.dumps(meta.get("reward_cause"))

        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:n],
            response_mask=response_mask[:n],
            response_logprobs=response_logprobs[:n] if response_logprobs else None,
            multi_modal_data={"images": images} if images else {},
            reward_score=reward_score,
            num_turns=num_turns + 1,
            metrics=metrics,
            extra_fields=extra_fields,
        )
