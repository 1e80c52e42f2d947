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
  observation are retried (the rule every glue shares, `connection.RETRYABLE_*`) with jittered
  exponential backoff (`connection.backoff_s`) until `open_timeout_s` has passed; then
  `ServeEnvError` says what to change.
"""

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Optional

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

# The address, the token and the retry rule are the connection module's, shared by every trainer's
# glue (TRL's, verl's, SkyRL's); re-exported here, where verl users have imported them from.
from .connection import (
    CONNECTION_CLOSED,
    DEFAULT_SERVER_URL,
    RETRYABLE_CODES,
    RETRYABLE_STATUSES,
    TOKEN_VARIABLE,
    UNREACHABLE,
    URL_VARIABLE,
    RetryPolicy,
    ServeEnvError,
    ServerAddress,
    data_of_reply,
    error_of_frame,
    refused_upgrade,
    resolve_server_url,
    resolve_token,
)

__all__ = [
    "DEFAULT_SERVER_URL", "RETRYABLE_CODES", "RETRYABLE_STATUSES", "TOKEN_VARIABLE", "URL_VARIABLE", "EpisodeOutcome",
    "RetryPolicy", "ServeEnvError", "ServeEnvSession", "outcome_of", "resolve_server_url", "resolve_token",
]


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
        """Connect and reset; retry while the server is full or unreachable, up to `retry.open_timeout_s`.
        `url` is the server's root (ws://host:port); the token goes in `Authorization: Bearer`."""
        address = ServerAddress.parse(url, token)
        endpoint = address.ws_url
        deadline = time.monotonic() + retry.open_timeout_s
        attempt = 0
        while True:
            failure: ServeEnvError
            try:
                ws = await connect(endpoint, additional_headers=address.headers(), max_size=None, open_timeout=30)
            except InvalidStatus as error:
                failure = refused_upgrade(error.response.status_code, endpoint)
                # A draining (503) or overloaded server: another try, maybe another worker behind the address.
                if not failure.retryable:
                    raise failure from None
            except InvalidURI as error:
                raise ValueError(f"{URL_VARIABLE}: {address.redact(str(error))}") from None
            except (OSError, asyncio.TimeoutError) as error:
                failure = ServeEnvError(UNREACHABLE, f"{endpoint}: {type(error).__name__}: {address.redact(str(error))}")
            else:
                try:
                    first = await _request(ws, {"type": "reset", "data": reset})
                    return cls(ws, first, attempt + 1)
                except ServeEnvError as error:
                    await ws.close()
                    if not error.retryable:
                        raise
                    failure = error
                except ConnectionClosed as error:
                    # A full server answers CAPACITY_REACHED and closes at once, possibly before the
                    # reset went out: its frame may still be waiting to be read.
                    failure = await _pending_error(ws) or ServeEnvError(
                        CONNECTION_CLOSED, f"{endpoint} closed before the first observation ({error})"
                    )
                    if not failure.retryable:
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
        return error_of_frame(json.loads(await asyncio.wait_for(ws.recv(), timeout=1.0)))
    except (ConnectionClosed, asyncio.TimeoutError, ValueError):
        return None


async def _request(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    return data_of_reply(await ws.recv())


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
