"""`searcher-rl serve-env` started by a test, from this checkout (tsx, 127.0.0.1, a free port), and
a stand-in OpenAI Responses endpoint for a judge that fails on the calls a test chooses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def searcher_cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    """`searcher-rl <args>` from this checkout (tsx), failing the test with its output."""
    result = subprocess.run(
        [str(ROOT / "node_modules/.bin/tsx"), "src/cli/main.ts", *args],
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert result.returncode == 0, f"searcher-rl {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


class ServeEnv:
    """A running serve-env; `url` is ws://127.0.0.1:PORT (no credentials), `token` its token."""

    def __init__(self, config: Path, log: Path, token: str | None, *extra: str, start_timeout_s: float = 300):
        self.port = free_port()
        self.token = token
        self.url = f"ws://127.0.0.1:{self.port}"
        self.log = log
        args = ["serve-env", "--config", str(config), "--port", str(self.port), *extra]
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("SEARCHER_RL_TOKEN", None)
        if token is not None:
            env["SEARCHER_RL_TOKEN"] = token  # not on the command line
        self._log_file = open(log, "w")
        self.process = subprocess.Popen(
            [str(ROOT / "node_modules/.bin/tsx"), "src/cli/main.ts", *args],
            cwd=ROOT,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + start_timeout_s
        while "serve-env: ws://" not in log.read_text():
            if self.process.poll() is not None:
                raise RuntimeError(f"serve-env exited ({self.process.returncode}):\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"serve-env did not start in {start_timeout_s} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()


def first_tasks(server: ServeEnv, count: int) -> list[dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/tasks?limit={count}")
    if server.token:
        import base64

        request.add_header("Authorization", "Basic " + base64.b64encode(f"x:{server.token}".encode()).decode())
    with urllib.request.urlopen(request) as response:
        return json.load(response)["tasks"]


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
