"""How every client of this package reaches `searcher-rl serve-env`: the address, the token, the
headers that carry it, the retry rule, and the error a session fails with.

The four clients (`ws_episodes`, `openenv_glue`, `verl_session`, `skyrl_env`) build their URLs and
credentials here and nowhere else. Standard library only: the trainer glues import this module, and
it imports none of them (nor websockets, nor a trainer), so it loads wherever the package does.

- The address: a ws://, wss://, http:// or https:// base URL, with or without a trailing `/ws`;
  `ws_url` and `http_url` give the endpoints, without credentials.
- The token: sent as `Authorization: Bearer T` (`bearer_headers`) by the clients that set headers,
  or as HTTP Basic credentials in the URL (`with_credentials`: `ws://searcher:T@host:port`, the
  token percent-encoded) for openenv-core's clients, which take only a URL; serve-env takes both.
  A token already in a base URL is read back with `credentials_of`.
- Secrets: `ServerAddress` keeps the token out of its repr, and `redact` takes it (raw or
  percent-encoded) and any URL credentials out of a message before it is raised or logged.
- The retry rule: the codes and refused-upgrade statuses a later attempt can get past, and the
  backoff between attempts, `min(initial * 2^n, max)` times a jitter in [0.75, 1] (openai-node's).
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SERVER_URL = "ws://127.0.0.1:8000"
URL_VARIABLE = "SEARCHER_ENV_URL"
# The same variable `serve-env --token` reads.
TOKEN_VARIABLE = "SEARCHER_RL_TOKEN"
# The user name put beside the token in Basic credentials; serve-env checks only the password.
BASIC_USER = "searcher"

# serve-env's error codes that a later attempt can get past (docs/scale-out.md, "The protocol").
RETRYABLE_CODES = frozenset({"CAPACITY_REACHED", "SESSION_ERROR"})
# HTTP statuses of a refused upgrade that are worth another attempt (draining, overloaded).
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# Codes of this package's own for a session that failed before the server answered.
CONNECTION_CLOSED = "CONNECTION_CLOSED"
UNREACHABLE = "UNREACHABLE"

_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
_HTTP_SCHEMES = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


def _split(base_url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/ws"):
        path = path[: -len("/ws")]
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1], path=path.rstrip("/"), query="", fragment="")


def server_root(base_url: str) -> str:
    """`base_url` without credentials, query, trailing slash or trailing `/ws`; its scheme kept."""
    return urllib.parse.urlunsplit(_split(base_url))


def ws_url(base_url: str) -> str:
    """The WebSocket endpoint (`.../ws`) of a ws(s):// or http(s):// server URL, without credentials."""
    parts = _split(base_url)
    return urllib.parse.urlunsplit(parts._replace(scheme=_WS_SCHEMES.get(parts.scheme, parts.scheme))) + "/ws"


def http_url(base_url: str) -> str:
    """The HTTP(S) URL of a ws(s):// or http(s):// server URL, without credentials or a trailing `/ws`."""
    parts = _split(base_url)
    return urllib.parse.urlunsplit(parts._replace(scheme=_HTTP_SCHEMES.get(parts.scheme, parts.scheme)))


def credentials_of(base_url: str) -> str | None:
    """The token carried in `base_url` as its password, if any (decoded)."""
    password = urllib.parse.urlsplit(base_url).password
    return urllib.parse.unquote(password) if password else None


def with_credentials(base_url: str, token: str | None, user: str = BASIC_USER) -> str:
    """`base_url` with `token` as its password (percent-encoded), for clients that take only a URL."""
    if not token:
        return base_url
    parts = urllib.parse.urlsplit(base_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    secret = urllib.parse.quote(token, safe="")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{urllib.parse.quote(user, safe='')}:{secret}@{host}"))


def bearer_headers(token: str | None) -> dict[str, str]:
    """`Authorization: Bearer T`, or no header without a token."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def basic_headers(token: str | None, user: str = BASIC_USER) -> dict[str, str]:
    """`Authorization: Basic base64(user:T)`, as a client with the token in its URL sends it."""
    if not token:
        return {}
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


def redact(text: str, secret: str | None) -> str:
    """`text` without `secret`, raw or percent-encoded, and without any URL credentials."""
    text = re.sub(r"(\w+://)[^/@\s]*@", r"\1***@", text)
    if secret:
        for form in {secret, urllib.parse.quote(secret, safe="")}:
            text = text.replace(form, "***")
    return text


def resolve_server_url(configured: str | None = None) -> str:
    """`SEARCHER_ENV_URL`, else the configured URL, else ws://127.0.0.1:8000; a ws(s):// root, checked.

    The variable the docs tell users to export wins over a `server_url` in code or a yaml. A URL
    carrying credentials is refused: the token belongs in `SEARCHER_RL_TOKEN`, not in a config."""
    url = (os.environ.get(URL_VARIABLE) or configured or DEFAULT_SERVER_URL).strip().rstrip("/")
    if url.endswith("/ws"):
        url = url[: -len("/ws")]
    parts = urllib.parse.urlsplit(url)
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


def resolve_token(configured: str | None = None) -> str | None:
    """`SEARCHER_RL_TOKEN`, else the configured token, else none."""
    return os.environ.get(TOKEN_VARIABLE) or configured or None


@dataclass(frozen=True)
class ServerAddress:
    """A serve-env address and its token. `url` is the root without credentials; the token never
    shows in the repr."""

    url: str
    token: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, base_url: str, token: str | None = None) -> ServerAddress:
        """From a base URL that may carry the token as credentials (`ws://searcher:T@host:port`);
        `token` wins over the URL's."""
        return cls(server_root(base_url), token or credentials_of(base_url))

    @classmethod
    def from_environment(cls, configured_url: str | None = None, configured_token: str | None = None) -> ServerAddress:
        """`SEARCHER_ENV_URL` and `SEARCHER_RL_TOKEN`, else the configured ones (`resolve_server_url`)."""
        return cls(resolve_server_url(configured_url), resolve_token(configured_token))

    @property
    def ws_url(self) -> str:
        return ws_url(self.url)

    @property
    def http_url(self) -> str:
        return http_url(self.url)

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.token)

    def url_with_credentials(self) -> str:
        return with_credentials(self.url, self.token)

    def redact(self, text: str) -> str:
        return redact(text, self.token)


def backoff_s(attempt: int, initial_s: float = 0.5, max_s: float = 8.0, rng: random.Random | None = None) -> float:
    """The pause before retry `attempt` (0-based): min(initial·2^attempt, max) times a jitter in
    [0.75, 1], as openai-node backs off."""
    return min(initial_s * 2**attempt, max_s) * (rng or random).uniform(0.75, 1.0)


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying to get a session, and the backoff between tries."""

    open_timeout_s: float = 600.0
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def delay(self, attempt: int) -> float:
        return backoff_s(attempt, self.initial_delay_s, self.max_delay_s)


class ServeEnvError(RuntimeError):
    """The server answered an error frame, refused the connection, or could not be reached in time.

    `code` is the protocol's error code (CAPACITY_REACHED, SESSION_ERROR, EXECUTION_ERROR, ...),
    `HTTP_<status>` for a refused upgrade, `CONNECTION_CLOSED` or `UNREACHABLE`. The message is the
    caller's to keep free of the token (the URLs here never carry it).
    """

    def __init__(self, code: str, message: str):
        super().__init__(f"serve-env {code}: {message}")
        self.code = code

    @property
    def status(self) -> int | None:
        """The HTTP status of a refused upgrade."""
        return int(self.code[len("HTTP_") :]) if self.code.startswith("HTTP_") and self.code[5:].isdigit() else None

    @property
    def retryable(self) -> bool:
        """Whether opening the session again may succeed: a full, draining or restarting server, a
        dropped or refused connection; not a refused token, a bad task id or a validation error."""
        if self.status is not None:
            return self.status in RETRYABLE_STATUSES
        return self.code in RETRYABLE_CODES or self.code in (CONNECTION_CLOSED, UNREACHABLE)


def refused_upgrade(status: int, endpoint: str, hint: str = "check the server") -> ServeEnvError:
    """The error of an upgrade refused with HTTP `status`; a 401 says where the token goes."""
    if status == 401:
        hint = f"set {TOKEN_VARIABLE} to the server's --token"
    return ServeEnvError(f"HTTP_{status}", f"{endpoint} refused the session ({hint})")


def error_of_frame(reply: Any) -> ServeEnvError | None:
    """The `ServeEnvError` of an `{"type": "error", "data": {"code", "message"}}` frame, else None."""
    if not isinstance(reply, dict) or reply.get("type") != "error":
        return None
    data = reply.get("data") or {}
    return ServeEnvError(str(data.get("code", "ERROR")), str(data.get("message", "")))


def data_of_reply(text: str | bytes) -> dict[str, Any]:
    """The `data` of a reply frame; an error frame raises its `ServeEnvError`."""
    reply = json.loads(text)
    error = error_of_frame(reply)
    if error is not None:
        raise error
    return reply["data"]
