"""skyrl-gym 0.4's own `make` builds `SearcherServeEnv` (searcher_rl_trainers.skyrl_env), which plays
whole episodes against a `searcher-rl serve-env` started here on 127.0.0.1 with a token. skyrl-train
itself is not installable here (Python 3.12 only, flash-attn; docs/scale-out.md), so this is the
environment interface it drives: init, step ... done with the reward, close."""

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import skyrl_gym

from searcher_rl_trainers.skyrl_env import ServeEnvError, register

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "skyrltokencanary000000000000042"
IDLE_TIMEOUT_MS = 2000
TASK = "arklummon_10_0"  # "What was the revenue of Arklummon in 2002?"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("serve-env") / "server.log", "wb")
    command = [str(ROOT / "node_modules" / ".bin" / "tsx"), "src/cli/main.ts", "serve-env", "--host", "127.0.0.1",
               "--port", str(port), "--token", TOKEN, "--idle-timeout-ms", str(IDLE_TIMEOUT_MS)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"serve-env did not start; see {log.name}")
                time.sleep(0.25)
        yield f"ws://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def test_skyrl_gym_plays_episodes_against_serve_env(server_url, monkeypatch):
    monkeypatch.setenv("SEARCHER_ENV_URL", server_url)
    monkeypatch.setenv("SEARCHER_RL_TOKEN", TOKEN)
    env_id = register()
    assert register() == env_id and env_id in skyrl_gym.registry

    env = skyrl_gym.make(env_id, env_config={"server_url": "ws://127.0.0.1:9"}, extras={"extra_info": {"task_id": TASK}})
    observations, info = env.init([{"role": "user", "content": "the dataset's prompt, replaced by the server's"}])
    assert info == {"task_id": TASK}
    assert observations[0]["role"] == "user" and "Question: What was the revenue of Arklummon in 2002?" in observations[0]["content"]
    step = env.step("<think>look</think>\n<search>What was the revenue of Arklummon in 2002?</search>")
    assert step["done"] is False and step["reward"] == 0.0
    assert step["observations"][0]["content"].startswith("<information>[page arklummon_10.png")
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
