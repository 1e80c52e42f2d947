"""One `searcher-rl serve-env` session over the OpenEnv WebSocket protocol (asyncio, websockets >= 14).

The verl agent loop opens one per sample. Nothing here imports verl, so the session can be used
(and tested) on its own.

- Where: `SEARCHER_ENV_URL` (ws://host:port) wins over a `server_url` given in code or a yaml,
  so the variable the docs tell users to export is the one that counts.
- Credentials: `SEARCHER_RL_TOKEN` (the same variable `serve-env --token` reads) is sent as
  `Authorization: Bearer`. It never appears in an error or a log line.
- Capacity: a server at `--max-sessions` accepts the upgrade, answers CAPACITY_REACHED and closes.
  That, a draining server (503 on the upgrade, SESSION_ERROR on reset), an upgrade refused with
  408, 429 or another 5xx, a refused connection and a connection closed before the first
  observation are retried (the same rule as the TRL glue's, openenv_glue.RETRYABLE_*)
  with jittered exponential backoff (min(initial * 2^n, max) times a jitter in [0.75, 1], the
  project's rule) until `open_timeout_s` has passed; then `ServeEnvError` says what to change.
"""

import asyncio
import json
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

from .openenv_glue import RETRYABLE_CODES as _GLUE_CODES
from .openenv_glue import RETRYABLE_STATUSES as _GLUE_STATUSES

DEFAULT_SERVER_URL = "ws://127.0.0.1:8000"
URL_VARIABLE = "SEARCHER_ENV_URL"
TOKEN_VARIABLE = "SEARCHER_RL_TOKEN"
# One retry rule for every trainer's glue (TRL's, verl's, SkyRL's): the codes and HTTP statuses that
# a later attempt can get past (a full server, a draining or restarting one), from openenv_glue.
RETRYABLE_CODES = frozenset(_GLUE_CODES)
RETRYABLE_STATUSES = frozenset(_GLUE_STATUSES)


class ServeEnvError(RuntimeError):
    """The server answered an error frame, refused the connection, or could not be reached in time.

    `code` is the protocol's error code (CAPACITY_REACHED, SESSION_ERROR, EXECUTION_ERROR, ...),
    `HTTP_<status>` for a refused upgrade, `CONNECTION_CLOSED` or `UNREACHABLE`.
    """

    def __init__(self, code: str, message: str):
        super().__init__(f"serve-env {code}: {message}")
        self.code = code


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying to get a session, and the backoff between tries."""

    open_timeout_s: float = 600.0
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def delay(self, attempt: int) -> float:
        return min(self.initial_delay_s * 2**attempt, self.max_delay_s) * random.uniform(0.75, 1.0)


def resolve_server_url(configured: Optional[str] = None) -> str:
    """`SEARCHER_ENV_URL`, else the configured URL, else ws://127.0.0.1:8000; checked."""
    url = (os.environ.get(URL_VARIABLE) or configured or DEFAULT_SERVER_URL).strip().rstrip("/")
    if url.endswith("/ws"):
        url = url[: -len("/ws")]
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        source = URL_VARIABLE if os.environ.get(URL_VARIABLE) else "server_url"
        raise ValueError(
            f"{source} must be the server's ws:// or wss:// address (e.g. ws://env-host:8000), got scheme "
            f"{parts.scheme!r}: set {URL_VARIABLE} to the address `searcher-rl serve-env` prints"
        )
    if parts.username or parts.password:
        raise ValueError(
            f"{URL_VARIABLE}/server_url carries credentials in the URL; give the token in {TOKEN_VARIABLE} instead"
        )
    return url


def resolve_token(configured: Optional[str] = None) -> Optional[str]:
    return os.environ.get(TOKEN_VARIABLE) or configured or None


class ServeEnvSession:
    """An open session: `request` sends one frame and returns the reply's `data`."""

    def __init__(self, ws: ClientConnection, first: dict[str, Any], attempts: int):
        self._ws = ws
        self.first = first
        self.attempts = attempts

    @classmethod
    async def open(
        cls,
        url: str,
        token: Optional[str],
        reset: dict[str, Any],
        retry: RetryPolicy = RetryPolicy(),
    ) -> "ServeEnvSession":
        """Connect and reset; retry while the server is full or unreachable, up to `retry.open_timeout_s`."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        deadline = time.monotonic() + retry.open_timeout_s
        attempt = 0
        while True:
            failure: ServeEnvError
            try:
                ws = await connect(f"{url}/ws", additional_headers=headers, max_size=None, open_timeout=30)
            except InvalidStatus as error:
                status = error.response.status_code
                hint = f"set {TOKEN_VARIABLE} to the server's --token" if status == 401 else "check the server"
                failure = ServeEnvError(f"HTTP_{status}", f"{url}/ws refused the session ({hint})")
                # A draining (503) or overloaded server: another try, maybe another worker behind the address.
                if status not in RETRYABLE_STATUSES:
                    raise failure from None
            except InvalidURI as error:
                raise ValueError(f"{URL_VARIABLE}: {error}") from None
            except (OSError, asyncio.TimeoutError) as error:
                failure = ServeEnvError("UNREACHABLE", f"{url}/ws: {type(error).__name__}: {error}")
            else:
                try:
                    first = await _request(ws, {"type": "reset", "data": reset})
                    return cls(ws, first, attempt + 1)
                except ServeEnvError as error:
                    await ws.close()
                    if error.code not in RETRYABLE_CODES:
                        raise
                    failure = error
                except ConnectionClosed as error:
                    # A full server answers CAPACITY_REACHED and closes at once, possibly before the
                    # reset went out: its frame may still be waiting to be read.
                    failure = await _pending_error(ws) or ServeEnvError(
                        "CONNECTION_CLOSED", f"{url}/ws closed before the first observation ({error})"
                    )
                    if failure.code not in RETRYABLE_CODES and failure.code != "CONNECTION_CLOSED":
                        raise failure from None
            pause = retry.delay(attempt)
            if time.monotonic() + pause > deadline:
                raise ServeEnvError(
                    failure.code,
                    f"no session after {attempt + 1} tries in {retry.open_timeout_s:g} s ({failure}); raise the server's "
                    "--max-sessions to train_batch_size x rollout.n, or open_timeout_s in agent_loop.yaml",
                ) from failure
            attempt += 1
            await asyncio.sleep(pause)

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        return await _request(self._ws, message)

    async def close(self) -> None:
        """Ends the session (a `close` frame, best effort) and the connection."""
        try:
            await self._ws.send(json.dumps({"type": "close"}))
        except ConnectionClosed:
            pass
        await self._ws.close()


async def _pending_error(ws: ClientConnection) -> Optional[ServeEnvError]:
    try:
        reply = json.loads(await asyncio.wait_for(ws.recv(), timeout=1.0))
    except (ConnectionClosed, asyncio.TimeoutError, ValueError):
        return None
    if not isinstance(reply, dict) or reply.get("type") != "error":
        return None
    data = reply.get("data") or {}
    return ServeEnvError(str(data.get("code", "ERROR")), str(data.get("message", "")))


async def _request(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    reply = json.loads(await ws.recv())
    if reply.get("type") == "error":
        data = reply.get("data") or {}
        raise ServeEnvError(str(data.get("code", "ERROR")), str(data.get("message", "")))
    return reply["data"]


@dataclass(frozen=True)
class EpisodeOutcome:
    """The reward of a finished episode, or why there is none (`missing`)."""

    reward: Optional[float]
    reward_status: str
    terminated: Optional[str]
    cause: Optional[dict[str, Any]]

    @property
    def missing(self) -> bool:
        return self.reward is None


def outcome_of(result: dict[str, Any]) -> EpisodeOutcome:
    """The outcome of a `done` observation frame: the reward only when `reward_status` is `ok`."""
    meta = (result.get("observation") or {}).get("metadata") or {}
    status = meta.get("reward_status") or "missing"
    reward = result.get("reward")
    if status == "ok" and reward is not None:
        return EpisodeOutcome(float(reward), "ok", meta.get("terminated"), None)
    cause = meta.get("reward_cause") or {"stage": "server", "kind": "no_reward", "message": "the server sent no reward"}
    return EpisodeOutcome(None, "missing", meta.get("terminated"), cause)
