"""skyrl-gym 0.4's own `make` builds `SearcherServeEnv` (searcher_rl_trainers.skyrl_env), which plays
whole episodes against a `searcher-rl serve-env` started here on 127.0.0.1 with a token. skyrl-train
itself is not installable here (Python 3.12 only, flash-attn; docs/scale-out.md), so this is the
environment interface it drives: init, step ... done with the reward, close."""

import time

import pytest
import skyrl_gym

from searcher_rl_trainers.skyrl_env import ServeEnvError, register
from serve_env import ServeEnv

TOKEN = "skyrltokencanary000000000000042"
IDLE_TIMEOUT_MS = 2000
TASK = "bexarktek_10_0"  # "What was the revenue of Bexarktek in 2002?"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    log = tmp_path_factory.mktemp("serve-env") / "server.log"
    with ServeEnv(TOKEN, "--idle-timeout-ms", str(IDLE_TIMEOUT_MS), log_path=log) as server:
        yield server.url


def test_skyrl_gym_plays_episodes_against_serve_env(server_url, monkeypatch):
    monkeypatch.setenv("SEARCHER_ENV_URL", server_url)
    monkeypatch.setenv("SEARCHER_RL_TOKEN", TOKEN)
    env_id = register()
    assert register() == env_id and env_id in skyrl_gym.registry

    env = skyrl_gym.make(env_id, env_config={"server_url": "ws://127.0.0.1:9"}, extras={"extra_info": {"task_id": TASK}})
    observations, info = env.init([{"role": "user", "content": "the dataset's prompt, replaced by the server's"}])
    assert info == {"task_id": TASK}
    assert observations[0]["role"] == "user" and "Question: What was the revenue of Bexarktek in 2002?" in observations[0]["content"]
    step = env.step("<think>look</think>\n<search>What was the revenue of Bexarktek in 2002?</search>")
    assert step["done"] is False and step["reward"] == 0.0
    assert step["observations"][0]["content"].startswith("<information>[page bexarktek_10.png")
    step = env.step("<think>enough</think>\n<search_complete>true</search_complete>")
    assert step["done"] is True and step["reward"] == 1.0
    assert step["metadata"] == {"reward_status": "ok", "reward_missing": False, "terminated": "complete"}
    env.close()

    # A session lost mid-episode (silent past the server's idle timeout) has no reward: skyrl-train
    # takes only floats, so it is 0.0 with the flag and the cause, never an unflagged 0.
    lost = skyrl_gym.make(env_id, env_config={}, extras={"task_id": TASK})
    lost.init([])
    time.sleep(IDLE_TIMEOUT_MS / 1000 + 1.5)
    step = lost.step("<think>late</think>\n<search_complete>true</search_complete>")
    assert step["done"] is True and step["reward"] == 0.0
    assert step["metadata"]["reward_missing"] is True and step["metadata"]["reward_status"] == "missing"
    assert step["metadata"]["reward_cause"]["stage"] == "session"

    monkeypatch.setenv("SEARCHER_RL_TOKEN", "not-the-servers-token-5519")
    with pytest.raises(ServeEnvError) as refused:
        skyrl_gym.make(env_id, extras={"task_id": TASK}).init([])
    assert refused.value.code == "HTTP_401" and "5519" not in str(refused.value)
