"""Fixtures for the verl tests (verl's own environment, python/requirements-verl.txt): a tiny ChatML
model folder, and `searcher-rl serve-env` processes on 127.0.0.1, started one after the other (the
first builds the slide environment's cache). The helpers are python/testing's, shared with python/tests."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testing"))

from serve_env import ServeEnv  # noqa: E402
from verl_harness import build_tiny_chat_model  # noqa: E402

TOKEN = "verltokencanary00000000000000042"
# A session silent this long is closed by the server: a test stalls one generation past it to lose
# a session mid-episode (a reward that cannot be computed).
IDLE_TIMEOUT_MS = 4000
# The judge of this server is an OpenAI-compatible endpoint where nothing listens: every episode
# that reaches the judge ends with reward_status `missing` (stage judge, provider_error).
JUDGE_DOWN_CONFIG = """\
searcher:
  adapters:
    judge: { type: openai, model: judge-down, apiKey: not-a-real-key, baseURL: "http://127.0.0.1:9/v1" }
  calls:
    judge: { maxRetries: 0, timeoutMs: 5000 }
"""


@pytest.fixture(scope="session")
def model_path(tmp_path_factory):
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-chatml"))


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    logs = tmp_path_factory.mktemp("serve-env")
    with ServeEnv(TOKEN, "--idle-timeout-ms", str(IDLE_TIMEOUT_MS), log_path=logs / "server.log") as env:
        yield env


@pytest.fixture(scope="session")
def judge_down_server(server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve-env-judge-down")
    (folder / "judge-down.yaml").write_text(JUDGE_DOWN_CONFIG)
    with ServeEnv(TOKEN, config=folder / "judge-down.yaml", log_path=folder / "server.log") as env:
        yield env


@pytest.fixture(scope="session")
def two_session_server(server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve-env-two-sessions")
    with ServeEnv(TOKEN, "--max-sessions", "2", "--max-sessions-per-client", "2", log_path=folder / "server.log") as env:
        yield env


@pytest.fixture
def env_for(monkeypatch):
    """Points the loop at a server the way users do: SEARCHER_ENV_URL and SEARCHER_RL_TOKEN."""

    def point(env, token=TOKEN):
        monkeypatch.setenv("SEARCHER_ENV_URL", env.url)
        if token is None:
            monkeypatch.delenv("SEARCHER_RL_TOKEN", raising=False)
        else:
            monkeypatch.setenv("SEARCHER_RL_TOKEN", token)

    return point
