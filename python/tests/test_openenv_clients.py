"""openenv-core 0.3's own clients (GenericEnvClient, async and `.sync()`) through whole episodes
against `searcher-rl serve-env` started here, and the glue pooled trainers need around them:
the token in the URL (401 without it), a fresh session after the server ended an idle one,
backoff on CAPACITY_REACHED, missing rewards as None, every task reachable."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed

from searcher_rl_trainers.openenv_glue import (
    EnvConnectionError,
    env_client,
    fetch_tasks,
    reset_fresh,
    reset_fresh_sync,
    reward_or_none,
    with_credentials,
)

SEARCH = "<think>find the page</think>\n<search>{question}</search>"
COMPLETE = "<think>enough</think>\n<search_complete>true</search_complete>"


async def episode(client, task: dict):
    first = await client.reset(task=task["id"])
    assert first.done is False and first.reward is None
    assert task["question"] in first.observation["text"]
    page = await client.step({"text": SEARCH.format(question=task["question"])})
    assert page.done is False and page.observation["text"].startswith("<information>")
    assert len(page.observation["images"]) == 1 and page.observation["images"][0].startswith("data:image/")
    return await client.step({"text": COMPLETE})


def test_async_and_sync_generic_env_clients_run_whole_episodes_with_the_token_in_the_url(server):
    tasks = server.tasks(3)
    url = with_credentials(server.url, server.token)

    async def run_async():
        async def one(task):
            # openenv-core's client as users write it, the credentials in base_url.
            async with GenericEnvClient(base_url=url) as client:
                return await episode(client, task)

        return await asyncio.gather(*(one(t) for t in tasks))

    for result in asyncio.run(run_async()):
        meta = result.observation["metadata"]
        assert result.done is True and meta["reward_status"] == "ok" and meta["terminated"] == "complete"
        assert reward_or_none(result) == pytest.approx(result.reward) and 0.1 <= result.reward <= 1.0

    with GenericEnvClient(base_url=url).sync() as client:
        client.reset(task=tasks[0]["id"])
        client.step({"text": SEARCH.format(question=tasks[0]["question"])})
        last = client.step({"text": COMPLETE})
        assert last.done and reward_or_none(last) is not None
        state = client.state()
        assert state["task_id"] == tasks[0]["id"] and state["step_count"] == 2 and state["done"] is True


def test_without_the_token_the_upgrade_is_refused_with_401_and_the_token_never_shows(server):
    with pytest.raises(ConnectionError, match="401"):
        asyncio.run(GenericEnvClient(base_url=server.url).reset())
    # The glue: not retried, a typed error naming the status, no token in it (raw or encoded).
    wrong = "wrong-token-3f9a"
    started = time.monotonic()
    with pytest.raises(EnvConnectionError) as refused:
        reset_fresh_sync(env_client(server.url, wrong).sync(), attempts=5)
    assert refused.value.status == 401 and refused.value.attempts == 1
    assert time.monotonic() - started < 30  # no backoff on a refusal (a bound, not a timing)
    assert wrong not in str(refused.value) and "token" in str(refused.value)
    # The server's token, unencoded in the URL, breaks the URL (it has '@', ':', '/', '#'): the
    # glue percent-encodes it.
    raw = server.url.replace("ws://", f"ws://searcher:{server.token}@")
    with pytest.raises(Exception):
        asyncio.run(GenericEnvClient(base_url=raw).reset())


def test_a_pooled_client_whose_session_the_server_ended_as_idle_resets_through_the_glue(strict_server):
    task = strict_server.tasks(1)[0]

    async def run():
        client = env_client(strict_server.url, strict_server.token)
        first = await episode(client, task)
        assert first.done
        await asyncio.sleep(2.5)  # past --idle-timeout-ms 1500: the server ends the session
        # openenv-core never reconnects: the pooled client's next reset fails as TRL saw it.
        with pytest.raises(ConnectionClosed):
            await client.reset(task=task["id"])
        # The glue opens a fresh session and the next episode completes.
        await reset_fresh(client, task=task["id"])
        await client.step({"text": SEARCH.format(question=task["question"])})
        last = await client.step({"text": COMPLETE})
        await client.disconnect()
        return last

    assert asyncio.run(run()).done

    sync = env_client(strict_server.url, strict_server.token).sync()
    reset_fresh_sync(sync, task=task["id"])
    time.sleep(2.5)
    with pytest.raises(ConnectionClosed):
        sync.reset(task=task["id"])
    reset_fresh_sync(sync, task=task["id"])
    assert sync.step({"text": COMPLETE}).done
    sync.close()


def test_a_second_client_backs_off_on_capacity_reached_and_completes(strict_server):
    task = strict_server.tasks(1)[0]
    holder = env_client(strict_server.url, strict_server.token).sync()
    reset_fresh_sync(holder, task=task["id"])  # the one session --max-sessions 1 allows
    # Without the glue the second client is refused: the CAPACITY_REACHED frame, or only the close
    # that follows it when the client's reset went out after the close.
    second = env_client(strict_server.url, strict_server.token).sync()
    with pytest.raises((RuntimeError, ConnectionClosed)) as refused:
        second.reset(task=task["id"])
    assert isinstance(refused.value, ConnectionClosed) or "CAPACITY_REACHED" in str(refused.value)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            threading.Thread(target=holder.close).start()  # the first client finishes
        time.sleep(seconds)

    first = reset_fresh_sync(second, sleep=sleep, attempts=10, task=task["id"])
    assert first.done is False and len(waits) >= 2
    assert all(0.25 <= w <= 8 for w in waits) and waits[1] > waits[0] * 0.9
    assert second.step({"text": COMPLETE}).done
    second.close()
    # Given up after its attempts, the error says what to do.
    holder = env_client(strict_server.url, strict_server.token).sync()
    reset_fresh_sync(holder, task=task["id"])
    other = env_client(strict_server.url, strict_server.token).sync()
    with pytest.raises(EnvConnectionError, match="max-sessions") as full:
        reset_fresh_sync(other, attempts=2, sleep=lambda s: None, task=task["id"])
    # The refusal frame, or only the close after it when the reset was sent after the close.
    assert full.value.code in ("CAPACITY_REACHED", None) and full.value.attempts == 2
    holder.close()
    other.close()


def test_every_task_is_reachable_page_by_page(server):
    tasks = fetch_tasks(with_credentials(server.url, server.token), page_size=100)
    head = server.tasks(1000)
    assert len(tasks) == len({t["id"] for t in tasks}) > 400  # the tiny corpus: 409 training questions
    assert [t["id"] for t in tasks[: len(head)]] == [t["id"] for t in head]
    assert fetch_tasks(server.url, server.token) == tasks


def test_a_reward_the_judge_could_not_give_is_none_never_zero(judged_server, fake_judge):
    task = judged_server.tasks(1)[0]

    async def run():
        async with env_client(judged_server.url, judged_server.token) as client:
            results = []
            for _ in range(4):
                await reset_fresh(client, task=task["id"])
                await client.step({"text": SEARCH.format(question=task["question"])})
                results.append(await client.step({"text": COMPLETE}))
            return results

    fake_judge.reset(lambda n: None if n % 2 == 1 else 1.0)  # every second call fails
    results = asyncio.run(run())
    assert fake_judge.calls == 4 and fake_judge.failed == 2
    missing = [r for r in results if r.observation["metadata"]["reward_status"] == "missing"]
    scored = [r for r in results if r.observation["metadata"]["reward_status"] == "ok"]
    assert len(missing) == 2 and len(scored) == 2
    for result in missing:
        assert result.reward is None and reward_or_none(result) is None
        assert result.observation["metadata"]["reward_cause"]["stage"] == "judge"
    assert all(isinstance(reward_or_none(r), float) for r in scored)
