"""The one launcher of `searcher-rl serve-env` for the Python-side tests (python/tests, python/tests_verl)
and the scripts beside them: this checkout's CLI through tsx, on 127.0.0.1 and a free port, the
token in the environment (never on a command line); and a stand-in OpenAI Responses endpoint for a
judge that fails on the calls a test chooses.

A test helper: python/testing is put on the tests' path by their conftest.py; the package
(python/src) never imports it (python/tests/test_layering.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from searcher_rl_trainers.connection import TOKEN_VARIABLE, basic_headers, http_url

ROOT = Path(__file__).resolve().parents[2]
TSX = ROOT / "node_modules" / ".bin" / "tsx"
# The tiny slide environment of these tests (a smaller corpus than the demo's; short episodes for a
# small policy: no instructions, 4 turns of at most 48 tokens, observations cut at 170 characters).
TINY_CORPUS = {"seed": 1, "decks": 24, "minSlides": 5, "maxSlides": 15, "smallPrintRate": 0.25}
TINY_EPISODE = {
    "instructions": "",
    "maxTurns": 4,
    "maxTurnTokens": 48,
    "maxContextTokens": 256,
    "observationMaxChars": 170,
    "temperature": 0.7,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(path: Path, data: dict) -> Path:
    """A configuration file for the CLI (JSON, which its YAML reader takes)."""
    path.write_text(json.dumps(data, indent=1))
    return path


def evaluation_run_config(path: Path, runs_dir: Path, run_id: str, corpus: dict, policy: dict, **sections) -> Path:
    """A train configuration of the tiny environment that trains no RL step (phase1 of 0 steps) and
    evaluates 4 test questions greedily; `sections` adds to it (e.g. `sft`)."""
    return write_config(
        path,
        {
            "runsDir": str(runs_dir),
            "runId": run_id,
            "seed": 1,
            "corpus": corpus,
            "policy": policy,
            **sections,
            "phases": [{"name": "phase1", "steps": 0, "weights": "phase1", "learningRate": 3.0e-4}],
            "searcher": {"episode": TINY_EPISODE},
            "evaluation": {"split": "test", "limit": 4, "temperature": 0},
        },
    )


def judged_config(path: Path, corpus: dict, judge: "FakeJudge") -> Path:
    """A serve-env configuration whose judge is `judge` (OpenAI Responses API, no retries), with the
    default reward (judge 0.8, NDCG 0.2): a reward is missing wherever the judge failed."""
    return write_config(
        path,
        {
            "corpus": corpus,
            "searcher": {
                "episode": TINY_EPISODE,
                "reward": {"weights": "default"},
                "calls": {"judge": {"maxRetries": 0}},
                "adapters": {
                    "judge": {"type": "openai", "model": "fake-judge", "apiKey": "sk-test", "baseURL": judge.base_url}
                },
            },
        },
    )


def searcher_cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    """`searcher-rl <args>` from this checkout (tsx), failing the test with its output."""
    result = subprocess.run(
        [str(TSX), "src/cli/main.ts", *args],
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert result.returncode == 0, f"searcher-rl {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


class ServeEnv:
    """`searcher-rl serve-env --host 127.0.0.1 --port <free> [--config CONFIG] ARGS`, started at
    construction and ready (it printed its address) when the constructor returns.

    `url` is ws://127.0.0.1:PORT (no credentials), `http_url` the same over HTTP, `token` the
    server's token (None: none). `process` is tsx's process (its node child is the server; with
    `--workers` that one forks the workers); `close()` ends the whole process group. A context
    manager, or closed by the fixture that made it.
    """

    def __init__(
        self,
        token: str | None,
        *args: str,
        log_path: Path,
        config: Path | None = None,
        start_timeout_s: float = 300,
    ):
        self.port = free_port()
        self.token = token
        self.url = f"ws://127.0.0.1:{self.port}"
        self.http_url = http_url(self.url)
        self.log_path = Path(log_path)
        command = [str(TSX), "src/cli/main.ts", "serve-env", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--config", str(config)] if config is not None else []
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop(TOKEN_VARIABLE, None)
        if token is not None:
            env[TOKEN_VARIABLE] = token  # not on the command line, where `ps` shows it
        self._log_file = open(self.log_path, "w")
        # A session of its own: close() ends tsx, the server and its cluster workers together.
        self.process = subprocess.Popen(
            [*command, *args], cwd=ROOT, env=env, stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + start_timeout_s
        while "serve-env: ws://" not in self.log_path.read_text():
            if self.process.poll() is not None:
                self.close()
                raise RuntimeError(f"serve-env exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"serve-env did not start in {start_timeout_s} s:\n{self.log()[-3000:]}")
            time.sleep(0.2)

    def __repr__(self) -> str:
        return f"ServeEnv(url={self.url!r}, log_path={str(self.log_path)!r})"

    def __enter__(self) -> ServeEnv:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def log(self) -> str:
        return self.log_path.read_text()

    def lines(self) -> list[str]:
        return self.log().splitlines()

    def get(self, path: str) -> Any:
        """GET `path` (with its query) as JSON, with the token."""
        request = urllib.request.Request(self.http_url + path, headers=basic_headers(self.token))
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def tasks(self, limit: int) -> list[dict]:
        """The first `limit` tasks (`{"id", "question"}`) of the server's first page."""
        return self.get(f"/tasks?limit={limit}")["tasks"]

    def task_ids(self, limit: int) -> list[str]:
        return [task["id"] for task in self.tasks(limit)]

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        else:
            # tsx gone, its children may not be (a server that lost its parent).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self._log_file.close()


class FakeJudge:
    """An OpenAI Responses API endpoint (POST /v1/responses) answering as a judge: `answer(n)`
    gives the n-th call's score, or None for an HTTP 500 (a judge outage on that call)."""

    def __init__(self, answer: Callable[[int], float | None]):
        self.calls = 0
        self.failed = 0
        self.answer = answer
        lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                self.rfile.read(length)
                with lock:
                    n = judge.calls
                    judge.calls += 1
                score = judge.answer(n)
                if score is None:
                    with lock:
                        judge.failed += 1
                    body = json.dumps({"error": {"message": "judge unavailable", "type": "server_error"}}).encode()
                    self.send_response(500)
                else:
                    text = json.dumps({"score": score})
                    body = json.dumps(
                        {
                            "id": f"resp_{n}",
                            "object": "response",
                            "created_at": 1757540535,
                            "status": "completed",
                            "model": "fake-judge",
                            "output": [
                                {
                                    "id": f"msg_{n}",
                                    "type": "message",
                                    "status": "completed",
                                    "role": "assistant",
                                    "content": [{"type": "output_text", "annotations": [], "text": text}],
                                }
                            ],
                        }
                    ).encode()
                    self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reset(self, answer: Callable[[int], float | None]) -> None:
        """Answer from now on with `answer`, counting calls from 0."""
        self.answer, self.calls, self.failed = answer, 0, 0

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
