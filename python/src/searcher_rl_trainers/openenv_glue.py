"""OpenEnv client glue for `searcher-rl serve-env`: what openenv-core's clients leave to the caller.

openenv-core 0.3's `EnvClient` / `GenericEnvClient` hold one WebSocket (one server session) for as
long as they live, send no headers, and never reconnect: after the server ends an idle session
the client still holds the dead socket, and its next call raises `ConnectionClosedOK`. Trainers
pool their environments (TRL keeps one instance per concurrent rollout and resets it for the next
batch), so this module:

- puts the token in the URL as credentials (`ws://searcher:TOKEN@host:port`), which the client's
  `websockets` connection sends as HTTP Basic and serve-env takes; the token is percent-encoded, so
  any token works, and it is redacted from every error raised here;
- opens a fresh session for every episode (`reset_fresh`: disconnect, then reset), retrying with
  jittered exponential backoff (0.5 s doubling, at most 8 s: `connection.backoff_s`) on
  CAPACITY_REACHED, a server that is draining or restarting, and a closed connection (the rule
  every glue shares, `connection.RETRYABLE_*`); 401/403 are not retried;
- turns a reward the server could not compute into `None` (`reward_or_none`), never 0;
- reads every task from `/tasks`, page by page until `total`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

# The URL, credentials and retry rule are the connection module's; re-exported here, where users of
# the OpenEnv glue (and its docs) have imported them from.
from .connection import (
    RETRYABLE_CODES,
    RETRYABLE_STATUSES,
    backoff_s,
    basic_headers,
    credentials_of,
    http_url,
    redact,
    with_credentials,
)

__all__ = [
    "RETRYABLE_CODES", "RETRYABLE_STATUSES", "EnvConnectionError", "backoff_s", "credentials_of", "env_client", "error_code",
    "fetch_tasks", "http_url", "is_retryable", "metadata_of", "redact", "refused_status", "reset_fresh", "reset_fresh_sync",
    "reward_or_none", "with_credentials",
]


class EnvConnectionError(ConnectionError):
    """A session could not be opened or went away; `status` is the HTTP status of a refused
    upgrade (401 without the token), `code` serve-env's error code (CAPACITY_REACHED), where known.
    The message never carries the token."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.code = code
        self.attempts = attempts


def error_code(error: BaseException) -> str | None:
    """serve-env's error code in openenv-core's `RuntimeError("Server error: ... (code: X)")`."""
    match = re.search(r"\(code: ([A-Z_]+)\)", str(error))
    return match.group(1) if match else None


def refused_status(error: BaseException) -> int | None:
    """The HTTP status of a refused WebSocket upgrade (websockets' InvalidStatus, wrapped by openenv-core)."""
    seen = error
    while seen is not None:
        response = getattr(seen, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status
        seen = seen.__cause__ or seen.__context__
    match = re.search(r"HTTP (\d{3})", str(error))
    return int(match.group(1)) if match else None


def is_retryable(error: BaseException) -> bool:
    """Whether opening the session again may succeed: capacity, a draining or restarting server, a
    dropped connection; not a refused token, a bad task id or a validation error."""
    code = error_code(error)
    if code is not None:
        return code in RETRYABLE_CODES
    status = refused_status(error)
    if status is not None:
        return status in RETRYABLE_STATUSES
    try:
        from websockets.exceptions import ConnectionClosed
    except ImportError:  # pragma: no cover - websockets comes with openenv-core
        ConnectionClosed = ()  # type: ignore[assignment]
    return isinstance(error, (ConnectionClosed, ConnectionError, OSError, asyncio.TimeoutError, TimeoutError))


def _give_up(error: BaseException, secret: str | None, attempts: int) -> EnvConnectionError:
    what = "could not open a serve-env session"
    hint = ""
    status = refused_status(error)
    if status == 401:
        hint = "; the server needs its token: put it in the URL (with_credentials) or pass token="
    elif error_code(error) == "CAPACITY_REACHED":
        hint = "; the server is at --max-sessions: raise it or run fewer rollouts at once"
    elif type(error).__name__.startswith("ConnectionClosed"):
        # A refused session is answered CAPACITY_REACHED and closed at once: a client that sends
        # its reset after the close sees only the closed connection.
        hint = "; the server closed the session at once (at --max-sessions, draining or restarting?)"
    message = f"{what} after {attempts} attempt(s): {redact(str(error), secret)}{hint}"
    return EnvConnectionError(message, status=status, code=error_code(error), attempts=attempts)


async def reset_fresh(
    client: Any,
    *,
    attempts: int = 8,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    **reset_kwargs: Any,
) -> Any:
    """`client.reset(**reset_kwargs)` on a new session of an async `EnvClient`: the old socket is
    closed first (a pooled client's server session may have been ended as idle), and a refused or
    dropped session is retried with backoff. Raises `EnvConnectionError` (token redacted)."""
    secret = credentials_of(getattr(client, "_ws_url", "") or "")
    for attempt in range(attempts):
        try:
            await client.disconnect()
        except Exception:  # best effort: the socket may already be gone
            pass
        try:
            return await client.reset(**reset_kwargs)
        except Exception as error:  # noqa: BLE001 - classified below
            if not is_retryable(error) or attempt == attempts - 1:
                raise _give_up(error, secret, attempt + 1) from None
            await sleep(backoff_s(attempt))
    raise AssertionError("unreachable")


def reset_fresh_sync(
    client: Any,
    *,
    attempts: int = 8,
    sleep: Callable[[float], None] = time.sleep,
    **reset_kwargs: Any,
) -> Any:
    """`reset_fresh` for openenv-core's `SyncEnvClient` (`GenericEnvClient(...).sync()`)."""
    inner = getattr(client, "async_client", None)
    secret = credentials_of(getattr(inner, "_ws_url", "") or "")
    for attempt in range(attempts):
        try:
            client.disconnect()
        except Exception:
            pass
        try:
            return client.reset(**reset_kwargs)
        except Exception as error:  # noqa: BLE001
            if not is_retryable(error) or attempt == attempts - 1:
                raise _give_up(error, secret, attempt + 1) from None
            sleep(backoff_s(attempt))
    raise AssertionError("unreachable")


def metadata_of(result: Any) -> dict:
    observation = getattr(result, "observation", None)
    if isinstance(observation, dict):
        return observation.get("metadata") or {}
    return getattr(observation, "metadata", None) or {}


def reward_or_none(result: Any) -> float | None:
    """The episode's reward at `done`, or `None` where the server could not compute it
    (`reward_status` other than `ok`: a judge or generator outage). Never 0 for a missing reward."""
    if metadata_of(result).get("reward_status") != "ok" or result.reward is None:
        return None
    return float(result.reward)


def _get_json(url: str, token: str | None, timeout_s: float) -> dict:
    request = urllib.request.Request(url, headers=basic_headers(token))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        hint = "; pass the server's token" if error.code == 401 else ""
        raise EnvConnectionError(f"GET {redact(url, token)}: HTTP {error.code}{hint}", status=error.code) from None
    except urllib.error.URLError as error:
        raise EnvConnectionError(f"GET {redact(url, token)}: {redact(str(error.reason), token)}") from None


def fetch_tasks(base_url: str, token: str | None = None, *, page_size: int = 1000, timeout_s: float = 60.0) -> list[dict]:
    """Every task the server serves (`{"id", "question"}`), read from `/tasks` page by page until its
    `total` (the server caps a page at 1,000). The token: `token=` or the URL's credentials."""
    token = token or credentials_of(base_url)
    root = http_url(base_url)
    tasks: list[dict] = []
    total = None
    while total is None or len(tasks) < total:
        page = _get_json(f"{root}/tasks?offset={len(tasks)}&limit={page_size}", token, timeout_s)
        total = int(page["total"])
        if not page["tasks"]:
            break
        tasks.extend(page["tasks"])
    if len(tasks) != total:
        raise EnvConnectionError(f"{root}/tasks: read {len(tasks)} of {total} tasks (the list changed while paging)")
    return tasks


def env_client(base_url: str, token: str | None = None, *, message_timeout_s: float = 300.0, **kwargs: Any) -> Any:
    """openenv-core's `GenericEnvClient` (async; `.sync()` for the blocking one) for serve-env at
    `base_url`, the token in the URL. A step's reply can wait for the judge, hence the 300 s."""
    from openenv.core.generic_client import GenericEnvClient

    return GenericEnvClient(base_url=with_credentials(base_url, token), message_timeout_s=message_timeout_s, **kwargs)
