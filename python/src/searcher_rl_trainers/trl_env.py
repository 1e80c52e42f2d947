"""TRL's tool-calling mode: `GRPOTrainer(environment_factory=...)` against `searcher-rl serve-env`.

TRL (>= 1.16) turns the public methods of the environment class into tools and runs the
multi-turn loop itself: the model's tool calls are parsed with its chat template's response
schema, run here, and their results appended as tool turns (mask 0). Each tool renders the
Searcher action it stands for and steps the server with it as the assistant turn, so the server
parses, executes and scores it exactly as for any other trainer.

    trainer = GRPOTrainer(
        model="Qwen/Qwen3-1.7B",
        train_dataset=tool_dataset(fetch_tasks(url, token)),
        environment_factory=functools.partial(SearcherToolEnv, url, token=token, vision=False),
        args=GRPOConfig(max_completion_length=4096, ...),
    )

- The reward is the environment's (`get_reward`): the server's at `done`; `None` (masked: left out
  of its group's statistics, advantage 0) where the server could not compute it or the session
  was lost mid-episode; 0.0 where the model stopped calling tools before `search_complete` (the
  format gate's 0, as this SDK scores an episode that never completes).
- A fresh server session per episode (`reset_fresh`): TRL pools its environments across batches,
  and serve-env ends a session idle past `--idle-timeout-ms`. The session is closed when the
  reward is read, so pooled environments do not hold server slots between batches.
- The first observation is the whole user turn (the dataset has no `prompt`), with instructions
  for tools instead of the server's tag instructions. With `vision=True` a page or crop comes back
  as an image part and a text part (for multimodal models); otherwise text only.
"""

from __future__ import annotations

import base64
import io
import os
from typing import Any

from .openenv_glue import env_client, error_code, reset_fresh_sync, reward_or_none

TOOL_INSTRUCTIONS = "\n".join(
    [
        "You are a search agent. Find the pages (slides, documents) that answer the question; another model will answer from the pages you collect.",
        "Use the tools: search(query) shows the best page not yet shown (a repeated query shows the next result; vary your queries);",
        "crop(x1, y1, x2, y2) crops and enlarges a region of the most recent image (pixels of the image as shown);",
        "crop_region(region) crops and enlarges a region the most recent page marks by name, as in [footnote at ...];",
        "search_complete() ends the search when the collected pages are enough to answer.",
    ]
)


def question_part(first_observation: str) -> str:
    """The `Question: ...` part of serve-env's first observation (its prompt is the instructions, a
    blank line, then `Question: <question>`; or the question alone when its instructions are empty)."""
    if first_observation.startswith("Question: "):
        return first_observation
    head, sep, tail = first_observation.partition("\n\nQuestion: ")
    return f"Question: {tail}" if sep else first_observation


def _image(data_uri: str) -> Any:
    from PIL import Image

    payload = data_uri.split(",", 1)[1] if data_uri.startswith("data:") else data_uri
    return Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB")


def _plain(text: str) -> str:
    # A query is data: an angle bracket or a line break would end the action early.
    return " ".join(text.replace("<", " ").replace(">", " ").split())


class SearcherToolEnv:
    """One rollout's environment for TRL's `environment_factory` (tools: search, crop, crop_region, search_complete)."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        vision: bool = False,
        instructions: str | None = TOOL_INSTRUCTIONS,
        reset_attempts: int = 8,
    ):
        base_url = base_url or os.environ.get("SEARCHER_ENV_URL")
        if not base_url:
            raise ValueError("SearcherToolEnv: pass base_url (ws://host:port) or set SEARCHER_ENV_URL")
        self._client = env_client(base_url, token or os.environ.get("SEARCHER_RL_TOKEN")).sync()
        self._vision = vision
        self._instructions = instructions
        self._reset_attempts = reset_attempts
        self._final: Any = None
        self._lost: str | None = None
        self._open = False

    def reset(self, task_id: str | None = None, **row: Any) -> str:
        self._final, self._lost = None, None
        first = reset_fresh_sync(self._client, attempts=self._reset_attempts, task=task_id)
        self._open = True
        text = first.observation["text"]
        if self._instructions is not None:
            text = f"{self._instructions}\n\n{question_part(text)}"
        # TRL appends this to the row's last user message as is: keep a question given there apart.
        prompt = row.get("prompt")
        if isinstance(prompt, list) and prompt and isinstance(prompt[-1].get("content"), str) and prompt[-1]["content"]:
            text = "\n\n" + text
        return text

    def _step(self, action: str) -> Any:
        if self._final is not None:
            raise ValueError("The search is complete; no more tool calls.")
        if self._lost is not None:
            raise ValueError(f"The environment session was lost ({self._lost}); this episode is over.")
        try:
            result = self._client.step({"text": action})
        except RuntimeError as error:
            # serve-env's answer to a bad step (VALIDATION_ERROR...): the session goes on.
            code = error_code(error)
            if code is not None and code != "SESSION_ERROR":
                raise ValueError(str(error)) from None
            self._lost = str(error)
            raise
        except Exception as error:
            # The server ended the session (idle, draining, restarted): the episode cannot go on.
            self._lost = type(error).__name__
            raise
        observation = result.observation
        if result.done:
            self._final = result
            return "Search complete."
        text = observation.get("text", "")
        images = observation.get("images") or []
        if self._vision and images:
            return [*({"type": "image", "image": _image(uri)} for uri in images), {"type": "text", "text": text}]
        return text

    def search(self, query: str) -> Any:
        """
        Search the collection; the best page not yet shown comes back.

        Args:
            query: What to search for.

        Returns:
            The page found, between <information> tags.
        """
        return self._step(f"<search>{_plain(query)}</search>")

    def crop(self, x1: int, y1: int, x2: int, y2: int) -> Any:
        """
        Crop and enlarge a region of the most recent image (pixels of the image as shown).

        Args:
            x1: Left edge.
            y1: Top edge.
            x2: Right edge.
            y2: Bottom edge.

        Returns:
            The enlarged crop.
        """
        return self._step(f"<bbox>[{int(x1)}, {int(y1)}, {int(x2)}, {int(y2)}]</bbox>")

    def crop_region(self, region: str) -> Any:
        """
        Crop and enlarge a region the most recent page marks by name (`[footnote at <x1_3>...]`).

        Args:
            region: The region's name as the page marks it, e.g. footnote.

        Returns:
            The enlarged crop, or which regions the page marks when it marks none by that name.
        """
        name = " ".join(str(region).split())
        # A box is crop's: refused here, or the server would crop the numbers. Whether a name is one
        # the page marks is the server's to say (its corrective observation lists the marks).
        if not name or any(c.isdigit() or c in "<>[],_" for c in name):
            raise ValueError(f"crop_region takes a region's name as the page marks it, not {region!r}; use crop(x1, y1, x2, y2) for a box")
        return self._step(f"<bbox>{name}</bbox>")

    def search_complete(self) -> str:
        """
        Declare that the collected pages are enough to answer the question; ends the episode.

        Returns:
            A confirmation.
        """
        return self._step("<search_complete>true</search_complete>")

    def get_reward(self) -> float | None:
        try:
            if self._lost is not None:
                return None
            if self._final is None:
                return 0.0
            return reward_or_none(self._final)
        finally:
            self._close_session()

    def _close_session(self) -> None:
        if self._open:
            self._open = False
            try:
                self._client.disconnect()
            except Exception:
                pass


def tool_dataset(tasks: list[dict]) -> Any:
    """A dataset for `environment_factory`: one row per task with its `task_id` and no `prompt`
    (TRL then starts from an empty user turn, and `reset` gives the whole first observation)."""
    from datasets import Dataset

    return Dataset.from_dict({"task_id": [task["id"] for task in tasks]})
