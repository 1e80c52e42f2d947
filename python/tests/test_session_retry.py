"""One retry rule for every trainer's glue: a draining or overloaded server is tried again.

serve-env, while draining, refuses the upgrade with 503 and answers a reset that got through with
SESSION_ERROR. The TRL glue retried both; verl's and SkyRL's sessions raised at once, so a rolling
restart killed their rollouts. This server refuses with 503, then answers SESSION_ERROR, then
accepts: both sessions must get the observation, while a 401 is still refused at once.
"""

import asyncio
import json
import threading
from http import HTTPStatus

import pytest
from websockets.asyncio.server import serve

from searcher_rl_trainers import connection, openenv_glue, verl_session
from searcher_rl_trainers.verl_session import RetryPolicy, ServeEnvError, ServeEnvSession

FAST = RetryPolicy(open_timeout_s=10.0, initial_delay_s=0.01, max_delay_s=0.05)


class FlakyServer:
    """Refuses the first `refusals` upgrades with `status`, answers the next `drains` resets with SESSION_ERROR."""

    def __init__(self, status: int, refusals: int = 2, drains: int = 1):
        self.status, self.refusals, self.drains = status, refusals, drains
        self.handshakes = 0
        self.resets = 0
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> "FlakyServer":
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *_exc) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set_result, None)
        self._thread.join(10)

    def _process_request(self, connection, _request):
        self.handshakes += 1
        if self.handshakes <= self.refusals:
            return connection.respond(HTTPStatus(self.status), "refused\n")
        return None

    async def _handler(self, ws):
        message = json.loads(await ws.recv())
        assert message["type"] == "reset"
        self.resets += 1
        if self.resets <= self.drains:
            await ws.send(json.dumps({"type": "error", "data": {"code": "SESSION_ERROR", "message": "the server is draining"}}))
            await ws.close(1001)
            return
        await ws.send(json.dumps({"type": "observation", "data": {"observation": {"text": "Question: q"}, "done": False}}))
        await ws.wait_closed()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = self._loop.create_future()
        async with serve(self._handler, "127.0.0.1", 0, process_request=self._process_request) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop


def test_the_glues_share_one_retry_rule():
    # The connection module's, re-exported by the glues (the same objects, not copies).
    assert verl_session.RETRYABLE_CODES is openenv_glue.RETRYABLE_CODES is connection.RETRYABLE_CODES
    assert verl_session.RETRYABLE_STATUSES is openenv_glue.RETRYABLE_STATUSES is connection.RETRYABLE_STATUSES
    assert verl_session.RetryPolicy is connection.RetryPolicy and openenv_glue.backoff_s is connection.backoff_s
    assert 503 in verl_session.RETRYABLE_STATUSES and "SESSION_ERROR" in verl_session.RETRYABLE_CODES


@pytest.mark.parametrize("status", [503, 429])
def test_the_verl_session_retries_a_draining_then_accepting_server(status):
    with FlakyServer(status) as server:

        async def main():
            session = await ServeEnvSession.open(f"ws://127.0.0.1:{server.port}", None, {"task_id": "t"}, FAST)
            try:
                return session.first, session.attempts
            finally:
                await session.close()

        first, attempts = asyncio.run(main())
    assert first["observation"]["text"] == "Question: q"
    assert attempts == 4  # two refused upgrades, one SESSION_ERROR, then the session
    assert server.handshakes == 4 and server.resets == 2


def test_a_refused_token_is_not_retried_and_never_shows():
    token = "tokencanary-7c21"
    with FlakyServer(401, refusals=100) as server:
        with pytest.raises(ServeEnvError) as refused:
            asyncio.run(ServeEnvSession.open(f"ws://127.0.0.1:{server.port}", token, {}, FAST))
    assert refused.value.code == "HTTP_401" and server.handshakes == 1
    assert token not in str(refused.value) and "SEARCHER_RL_TOKEN" in str(refused.value)


def test_the_skyrl_env_retries_a_draining_then_accepting_server(monkeypatch):
    skyrl_env = pytest.importorskip("searcher_rl_trainers.skyrl_env")
    with FlakyServer(503) as server:
        monkeypatch.setenv("SEARCHER_ENV_URL", f"ws://127.0.0.1:{server.port}")
        env = skyrl_env.SearcherServeEnv(env_config={}, extras={"task_id": "t"})
        env.retry = FAST
        try:
            first = env._open({"task_id": "t"})
        finally:
            env.close()
    assert first["observation"]["text"] == "Question: q"
    assert server.handshakes == 4 and server.resets == 2
