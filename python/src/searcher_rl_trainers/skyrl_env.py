"""A SkyRL environment (skyrl-gym 0.4 `BaseTextEnv`) over `searcher-rl serve-env`.

skyrl-train makes one environment per trajectory with `skyrl_gym.make(env_class,
env_config=cfg.skyrl_gym[env_class], extras=<the dataset row's extras>)` and runs `init` and `step`
in an executor, so this client is synchronous (websockets' sync client, one session per episode):

- `init` resets the server to the row's task (`extras["extra_info"]["task_id"]` or
  `extras["task_id"]`) and returns the first observation (instructions and question) as the user
  turn, in place of the dataset's prompt;
- `step(action)` sends the raw assistant turn; the observation comes back as the next user turn,
  and at `done` the server's reward.

A reward the server could not compute cannot be masked through this interface: skyrl-train
asserts `step_reward is not None` (`skyrl_train/generators/skyrl_gym_generator.py`, 0.3.1). Such
an episode therefore returns reward 0.0 with `metadata["reward_missing"] = True` and
`metadata["reward_cause"]` (as does a session lost mid-episode); leaving it out of the group needs
a change on skyrl-train's side (filtering on that flag). Page images are not passed: skyrl-gym's
messages are text (`Dict[str, str]`); the observation text names each page it shows.

Settings (`env_config`, i.e. `skyrl_gym.searcher_serve_env` in skyrl-train's config):
`server_url` (SEARCHER_ENV_URL wins), `open_timeout_s` (how long to retry while the server is at
--max-sessions, default 600). The token is SEARCHER_RL_TOKEN, sent as `Authorization: Bearer`.
"""

import contextlib
import json
import time
from typing import Any, Optional

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from .connection import CONNECTION_CLOSED, UNREACHABLE, RetryPolicy, ServeEnvError, ServerAddress, data_of_reply, refused_upgrade

__all__ = ["ENV_ID", "SearcherServeEnv", "ServeEnvError", "register"]

ENV_ID = "searcher_serve_env"


class SearcherServeEnv(BaseTextEnv):
    def __init__(self, env_config: Optional[dict[str, Any]] = None, extras: Optional[dict[str, Any]] = None):
        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        # The address, the token and the backoff as every glue takes them (the connection module).
        self.server = ServerAddress.from_environment(config.get("server_url"))
        self.retry = RetryPolicy(open_timeout_s=float(config.get("open_timeout_s", 600)))
        self.max_turns = int(config.get("max_turns", 32))
        extra_info = extras.get("extra_info") or {}
        self.task_id = extras.get("task_id") or extra_info.get("task_id")
        if not self.task_id:
            raise ValueError("extras has no task_id (nor extra_info.task_id): give each dataset row the task to reset to")
        self.ws: Optional[ClientConnection] = None
        self._connection = contextlib.ExitStack()

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        first = self._open({"task": self.task_id})
        return [{"role": "user", "content": first["observation"]["text"]}], {"task_id": self.task_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        try:
            result = self._request({"type": "step", "data": {"text": action}})
        except (ServeEnvError, ConnectionClosed) as error:
            code = error.code if isinstance(error, ServeEnvError) else CONNECTION_CLOSED
            cause = {"stage": "session", "kind": str(code).lower(), "message": str(error)}
            return self._finished(None, {"reward_status": "missing", "terminated": "session_lost", "reward_cause": cause})
        meta = result["observation"].get("metadata") or {}
        if result["done"]:
            ok = meta.get("reward_status") == "ok" and result.get("reward") is not None
            return self._finished(float(result["reward"]) if ok else None, meta)
        return BaseTextEnvStepOutput(
            observations=[{"role": "user", "content": result["observation"]["text"]}], reward=0.0, done=False, metadata={}
        )

    def close(self) -> None:
        if self.ws is not None:
            try:
                self.ws.send(json.dumps({"type": "close"}))
            except ConnectionClosed:
                pass
            self._connection.close()
            self.ws = None

    def _finished(self, reward: Optional[float], meta: dict[str, Any]) -> BaseTextEnvStepOutput:
        # skyrl-train needs a float: a missing reward is 0.0, flagged so that it can be told apart.
        metadata = {
            "reward_status": meta.get("reward_status") if reward is not None else "missing",
            "reward_missing": reward is None,
            "terminated": meta.get("terminated"),
        }
        if reward is None:
            metadata["reward_cause"] = meta.get("reward_cause")
        self.close()
        return BaseTextEnvStepOutput(observations=[], reward=0.0 if reward is None else reward, done=True, metadata=metadata)

    def _open(self, reset: dict[str, Any]) -> dict[str, Any]:
        endpoint = self.server.ws_url
        deadline = time.monotonic() + self.retry.open_timeout_s
        attempt = 0
        while True:
            try:
                # Entered as a context manager (websockets >= 17.1 deprecates the bare call), closed in close().
                self.ws = self._connection.enter_context(
                    connect(endpoint, additional_headers=self.server.headers(), max_size=None, open_timeout=30)
                )
            except InvalidStatus as error:
                failure = refused_upgrade(error.response.status_code, endpoint)
                # A draining (503) or overloaded server: another try (the connection module's rule).
                if not failure.retryable:
                    raise failure from None
            except (OSError, TimeoutError) as error:
                failure = ServeEnvError(UNREACHABLE, f"{endpoint}: {type(error).__name__}: {self.server.redact(str(error))}")
            else:
                try:
                    return self._request({"type": "reset", "data": reset})
                except (ServeEnvError, ConnectionClosed) as error:
                    self._connection.close()
                    self.ws = None
                    failure = error if isinstance(error, ServeEnvError) else ServeEnvError(CONNECTION_CLOSED, str(error))
                    if not failure.retryable:
                        raise failure from None
            pause = self.retry.delay(attempt)
            if time.monotonic() + pause > deadline:
                raise ServeEnvError(failure.code, f"no session in {self.retry.open_timeout_s:g} s ({failure}); raise the "
                                    "server's --max-sessions to the trajectories in flight")
            attempt += 1
            time.sleep(pause)

    def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.ws is not None, "init() opens the session"
        self.ws.send(json.dumps(message))
        return data_of_reply(self.ws.recv())


def register(env_id: str = ENV_ID) -> str:
    """Registers the environment with skyrl-gym under `env_id` (once) and returns the id."""
    from skyrl_gym.envs.registration import register as skyrl_register, registry

    if env_id not in registry:
        # By name, as skyrl-train's own entry scripts register theirs: importable on every worker.
        skyrl_register(id=env_id, entry_point=f"{__name__}:SearcherServeEnv")
    return env_id
