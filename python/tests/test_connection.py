"""The connection module every client builds its URLs and credentials with (searcher_rl_trainers.connection):
the endpoints of a base URL in each form users write it, the token as Bearer or Basic credentials or
in the URL, and the token kept out of reprs and messages."""

from __future__ import annotations

import base64
import random

import pytest

from searcher_rl_trainers import connection
from searcher_rl_trainers.connection import (
    RetryPolicy,
    ServeEnvError,
    ServerAddress,
    backoff_s,
    basic_headers,
    bearer_headers,
    credentials_of,
    data_of_reply,
    http_url,
    redact,
    refused_upgrade,
    resolve_server_url,
    resolve_token,
    with_credentials,
    ws_url,
)

# A token with characters a URL reserves: it must be percent-encoded in a URL.
TOKEN = "t@k:/27#?%&x"


@pytest.mark.parametrize(
    "base_url, ws, http",
    [
        ("ws://127.0.0.1:8000", "ws://127.0.0.1:8000/ws", "http://127.0.0.1:8000"),
        ("ws://127.0.0.1:8000/ws", "ws://127.0.0.1:8000/ws", "http://127.0.0.1:8000"),
        ("ws://127.0.0.1:8000/ws/", "ws://127.0.0.1:8000/ws", "http://127.0.0.1:8000"),
        ("http://env-host:8000/", "ws://env-host:8000/ws", "http://env-host:8000"),
        ("https://proxy.example/env", "wss://proxy.example/env/ws", "https://proxy.example/env"),
        ("wss://searcher:secret@env-host/ws", "wss://env-host/ws", "https://env-host"),
    ],
)
def test_the_endpoints_of_a_base_url_in_every_form_and_without_credentials(base_url, ws, http):
    assert ws_url(base_url) == ws and http_url(base_url) == http
    address = ServerAddress.parse(base_url)
    assert address.ws_url == ws and address.http_url == http


def test_the_token_round_trips_through_the_url_percent_encoded():
    url = with_credentials("ws://127.0.0.1:8000", TOKEN)
    assert TOKEN not in url and url.startswith("ws://searcher:") and url.endswith("@127.0.0.1:8000")
    assert credentials_of(url) == TOKEN
    # Credentials already there are replaced, not stacked.
    assert credentials_of(with_credentials(url, "other")) == "other"
    assert with_credentials("ws://h:1", None) == "ws://h:1" and credentials_of("ws://h:1") is None
    # The address reads them back; a token given beside the URL wins.
    assert ServerAddress.parse(url) == ServerAddress("ws://127.0.0.1:8000", TOKEN)
    assert ServerAddress.parse(url, "given").token == "given"
    assert ServerAddress.parse(url).url_with_credentials() == url


def test_headers_carry_the_token_as_bearer_or_basic():
    assert bearer_headers(TOKEN) == {"Authorization": f"Bearer {TOKEN}"} and bearer_headers(None) == {}
    scheme, encoded = basic_headers(TOKEN)["Authorization"].split(" ")
    assert scheme == "Basic" and base64.b64decode(encoded).decode() == f"searcher:{TOKEN}"
    assert basic_headers("") == {}
    assert ServerAddress("ws://h:1", TOKEN).headers() == bearer_headers(TOKEN)


def test_the_token_never_shows_in_a_repr_or_a_redacted_message():
    address = ServerAddress.parse(with_credentials("ws://127.0.0.1:8000", TOKEN))
    assert TOKEN not in repr(address) and TOKEN not in str(address) and "token" not in repr(address)
    encoded = with_credentials("ws://127.0.0.1:8000", TOKEN)
    message = f"GET {encoded}/tasks failed for {TOKEN}"
    assert redact(message, TOKEN) == "GET ws://***@127.0.0.1:8000/tasks failed for ***"
    assert address.redact(message) == redact(message, TOKEN)
    assert redact("http://user:pw@host/x", None) == "http://***@host/x"
    refused = refused_upgrade(401, address.ws_url)
    assert TOKEN not in str(refused) and "SEARCHER_RL_TOKEN" in str(refused) and refused.status == 401


def test_the_environment_wins_and_a_url_with_credentials_is_refused(monkeypatch):
    monkeypatch.delenv("SEARCHER_ENV_URL", raising=False)
    monkeypatch.delenv("SEARCHER_RL_TOKEN", raising=False)
    assert resolve_server_url() == "ws://127.0.0.1:8000" and resolve_token() is None
    assert resolve_server_url("ws://yaml-host:1/ws/") == "ws://yaml-host:1"
    assert resolve_token("configured") == "configured"
    monkeypatch.setenv("SEARCHER_ENV_URL", "wss://env-host:9")
    monkeypatch.setenv("SEARCHER_RL_TOKEN", TOKEN)
    assert ServerAddress.from_environment("ws://yaml-host:1", "configured") == ServerAddress("wss://env-host:9", TOKEN)
    monkeypatch.setenv("SEARCHER_ENV_URL", "http://env-host:9")
    with pytest.raises(ValueError, match="SEARCHER_ENV_URL must be the server's ws://"):
        resolve_server_url()
    monkeypatch.setenv("SEARCHER_ENV_URL", with_credentials("ws://env-host:9", TOKEN))
    with pytest.raises(ValueError, match="credentials") as refused:
        resolve_server_url()
    assert TOKEN not in str(refused.value)


def test_one_retry_rule():
    assert ServeEnvError("CAPACITY_REACHED", "").retryable and ServeEnvError("SESSION_ERROR", "").retryable
    assert ServeEnvError(connection.CONNECTION_CLOSED, "").retryable and ServeEnvError(connection.UNREACHABLE, "").retryable
    assert ServeEnvError("HTTP_503", "").retryable and ServeEnvError("HTTP_429", "").retryable
    assert not ServeEnvError("HTTP_401", "").retryable and not ServeEnvError("HTTP_403", "").retryable
    assert not ServeEnvError("VALIDATION_ERROR", "").retryable and ServeEnvError("VALIDATION_ERROR", "").status is None
    # min(0.5·2^n, 8) times a jitter in [0.75, 1].
    rng = random.Random(7)
    for attempt, top in [(0, 0.5), (1, 1.0), (3, 4.0), (4, 8.0), (10, 8.0)]:
        for _ in range(50):
            assert 0.75 * top <= backoff_s(attempt, rng=rng) <= top
    assert 0.75 <= RetryPolicy(initial_delay_s=1.0, max_delay_s=2.0).delay(5) / 2.0 <= 1.0


def test_reply_frames():
    assert data_of_reply('{"type": "observation", "data": {"done": false}}') == {"done": False}
    with pytest.raises(ServeEnvError) as error:
        data_of_reply('{"type": "error", "data": {"code": "CAPACITY_REACHED", "message": "full"}}')
    assert error.value.code == "CAPACITY_REACHED" and str(error.value) == "serve-env CAPACITY_REACHED: full"


def test_the_skyrl_env_keeps_the_token_out_of_its_attributes(monkeypatch):
    skyrl_env = pytest.importorskip("searcher_rl_trainers.skyrl_env")
    monkeypatch.setenv("SEARCHER_ENV_URL", "ws://127.0.0.1:9")
    monkeypatch.setenv("SEARCHER_RL_TOKEN", TOKEN)
    env = skyrl_env.SearcherServeEnv(env_config={}, extras={"task_id": "t"})
    assert env.server.token == TOKEN and TOKEN not in repr(vars(env))
