"""TRL 1.16's GRPOTrainer (tag mode, `TagRollout`) against `searcher-rl serve-env --workers 2` while
faults happen (issue 41, "a real trainer under faults"), on CPU at a tiny size:

- a worker process is killed (SIGKILL) in the middle of a batch: its sessions are lost, the
  primary starts another worker, the trainer's next resets go on;
- the judge fails (HTTP 500, no retries) on every 4th call: those rewards are missing;
- one client stalls: it opens a session, sends its reset and then nothing at all (not even a pong
  or a close reply), holding a slot until the server's idle timeout ends it.

What is shown: the run finishes its steps; every reward TRL's reward function got belongs to its
completion, checked by id: the trainer side records, for each completion, the episode id of the
session that produced it and the reward it got; a recording WebSocket relay between the trainer and
the server keeps the wire transcript (every frame, both directions, per connection), and for each
completion the server's frames of that episode id hold the turns the completion trained on and the
reward TRL got (or no reward where TRL got None). Missing rewards arrive as None, never 0; the
rewards the server sent that did not reach their completion (rewards lost) are 0. The figures are
printed as one JSON line (`FAULT-FIGURES {...}`, run with -s) for docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import signal
import socket
import threading
import time
from collections import Counter

import psutil
import pytest
from trl import GRPOTrainer

import searcher_rl_trainers.trl_rollout as trl_rollout
from searcher_rl_trainers.openenv_glue import fetch_tasks
from searcher_rl_trainers.train_trl import grpo_args
from searcher_rl_trainers.trl_rollout import TagRollout, tag_dataset
from serve_env import FakeJudge, ServeEnv, judged_config

TOKEN = "fault-token"
STEPS = int(os.environ.get("TRL_FAULTS_STEPS", "3"))  # a longer run: TRL_FAULTS_STEPS=20
PROMPTS, N_AGENT = 2, 4
BATCH = PROMPTS * N_AGENT
JUDGE_FAILS_EVERY = 4  # judge calls 3, 7, 11, ... fail: a rate of 1 in 4
KILL_IN_BATCH = 1  # the worker is killed at the first step reply of the second batch
IDLE_MS = 3000


# -- the wire transcript: a recording relay between the trainer and serve-env -------------------------
class RecordingRelay:
    """A WebSocket relay (its own thread and event loop): each connection the trainer opens is relayed
    to serve-env with its Authorization header (the per-client cap sees the same client), and every
    frame is kept as (connection, 'client'|'server', parsed JSON) in the order it crossed."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.frames: list[tuple[int, str, dict]] = []
        self.closes: dict[int, int | None] = {}
        self._ids = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(30)
        self.url = f"ws://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        from websockets.asyncio.server import serve

        self._server = await serve(self._handle, "127.0.0.1", 0, max_size=None, ping_interval=None)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, down) -> None:
        from websockets.asyncio.client import connect

        cid = next(self._ids)
        auth = down.request.headers.get("Authorization")
        try:
            up = await connect(
                self.upstream + down.request.path,
                additional_headers={"Authorization": auth} if auth else None,
                max_size=None,
                ping_interval=None,
            )
        except Exception:
            self.closes[cid] = None
            await down.close(1011)
            return

        async def pump(src, dst, who: str) -> None:
            try:
                async for message in src:
                    self.frames.append((cid, who, json.loads(message)))
                    await dst.send(message)
            except Exception:  # a side went away (a killed worker): the other is closed below
                pass

        tasks = [asyncio.create_task(pump(down, up, "client")), asyncio.create_task(pump(up, down, "server"))]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        self.closes[cid] = up.close_code
        code = up.close_code if up.close_code in (1000, 1001, 1011) else 1011
        await asyncio.gather(down.close(code), up.close(), return_exceptions=True)

    def episodes(self) -> dict[str, dict]:
        """Per episode id (the server's reply metadata): its connection, the turns the client sent, and
        the server's reply at done (None where none came: the session was lost)."""
        by_conn: dict[int, list[tuple[str, dict]]] = {}
        for cid, who, frame in self.frames:
            by_conn.setdefault(cid, []).append((who, frame))
        out: dict[str, dict] = {}
        for cid, frames in by_conn.items():
            episode_id, turns, done = None, [], None
            for who, frame in frames:
                if who == "client" and frame.get("type") == "step":
                    turns.append(frame["data"]["text"])
                elif who == "server" and frame.get("type") == "observation":
                    data = frame["data"]
                    episode_id = data["observation"]["metadata"]["episode_id"]
                    if data["done"]:
                        done = data
            if episode_id is not None:
                assert episode_id not in out, f"episode id {episode_id} on two connections"
                out[episode_id] = {"connection": cid, "turns": turns, "done": done, "close": self.closes.get(cid)}
        return out

    def close(self) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)


# -- the trainer side's record: which session each completion came from ------------------------------
class RecordingClient:
    """openenv-core's client, recording the episode id of its reset, the turns it sent and the
    reward it was given at done (the server's value, status and the trainer's None/float)."""

    def __init__(self, inner, on_step):
        self._inner, self._on_step = inner, on_step
        self.episode_id: str | None = None
        self.turns: list[str] = []
        self.done: dict | None = None

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def reset(self, **kwargs):
        result = await self._inner.reset(**kwargs)
        self.episode_id = result.observation["metadata"]["episode_id"]
        return result

    async def step(self, action):
        self.turns.append(action["text"])
        result = await self._inner.step(action)
        self._on_step()
        if result.done:
            self.done = {"reward": result.reward, "status": result.observation.get("metadata", {}).get("reward_status")}
        return result

    async def disconnect(self):
        return await self._inner.disconnect()


def worker_pids(root: int) -> list[int]:
    """serve-env's cluster workers: the node processes whose parent is the primary (tsx's CLI is
    the process the test started; it runs the primary as its node child, which forks the workers)."""
    pids = []
    for primary in psutil.Process(root).children():
        try:
            if "node" not in primary.name():
                continue
            pids += [w.pid for w in primary.children() if "node" in w.name() and w.status() != psutil.STATUS_ZOMBIE]
        except psutil.NoSuchProcess:
            pass
    return pids


def stall(port: int) -> socket.socket:
    """A client (its own user name) that opens a session, sends its reset and goes silent: it never
    reads, pongs or answers a close. Raw socket, masked frames as RFC 6455 wants from a client."""
    sock = socket.create_connection(("127.0.0.1", port))
    auth = base64.b64encode(f"staller:{TOKEN}".encode()).decode()
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Basic {auth}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    payload = json.dumps({"type": "reset", "data": {"seed": 0}}).encode()
    mask = os.urandom(4)
    assert len(payload) < 126
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    return sock


def worker_serving(workers: list[int], client: socket.socket) -> int | None:
    """The worker holding `client`'s connection: the one with a TCP socket whose remote end is the
    client's local address (waiting up to 5 s for the primary to hand the connection over)."""
    here = client.getsockname()[1]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for pid in workers:
            if any(c.raddr and c.raddr.port == here for c in psutil.Process(pid).net_connections(kind="tcp")):
                return pid
        time.sleep(0.05)
    return None


def test_grpo_finishes_under_a_killed_worker_a_failing_judge_and_a_stalled_client(sft_checkpoint, workdir, corpus, tmp_path, monkeypatch, capsys):
    started = time.perf_counter()
    judge = FakeJudge(lambda n: None if n % JUDGE_FAILS_EVERY == JUDGE_FAILS_EVERY - 1 else (1.0 if n % 2 == 0 else 0.0))
    config = judged_config(tmp_path / "faults.json", corpus, judge)
    # 9 slots: the trainer's 8 sessions at once (its own cap, 8) and the stalled client's one.
    server = ServeEnv(
        TOKEN,
        "--workers", "2", "--max-sessions", str(BATCH + 1), "--max-sessions-per-client", str(BATCH),
        "--idle-timeout-ms", str(IDLE_MS),
        config=config, log_path=tmp_path / "faults.log",
    )  # fmt: skip
    relay = RecordingRelay(server.url)
    staller = None
    try:
        workers_before = worker_pids(server.process.pid)
        assert len(workers_before) == 2, [p.cmdline() for p in psutil.Process(server.process.pid).children(recursive=True)]
        staller = stall(server.port)
        # The worker to kill is the one not serving the stalled client: killed with its worker, the
        # stalled session would end before its idle timeout could (a quick run kills within 3 s).
        serving = worker_serving(workers_before, staller)
        assert serving is not None, "no worker holds the stalled client's connection"
        victim = next(pid for pid in workers_before if pid != serving)

        # Trainer side: every client the rollout opens, in order (its episodes are built in order,
        # one client each, and returned in that order, wave after wave).
        clients: list[RecordingClient] = []
        batch = {"index": -1, "killed": None}

        def on_step():
            if batch["index"] == KILL_IN_BATCH and batch["killed"] is None:
                batch["killed"] = victim
                os.kill(victim, signal.SIGKILL)

        original_client = trl_rollout.env_client
        monkeypatch.setattr(
            trl_rollout, "env_client", lambda *a, **kw: clients.append(RecordingClient(original_client(*a, **kw), on_step)) or clients[-1]
        )
        rollout = TagRollout(relay.url, TOKEN, max_sessions=BATCH)
        batches: list[dict] = []  # per rollout call: its clients and its output

        def recording_rollout(prompts, trainer_):
            batch["index"] += 1
            first = len(clients)
            out = rollout(prompts, trainer_)
            batches.append({"clients": clients[first:], "out": out})
            return out

        got: list[list] = []  # what TRL's reward function was given and returned, per batch

        def server_reward(prompts, completions, server_reward, **kwargs):
            got.append(list(server_reward))
            return list(server_reward)

        tasks = fetch_tasks(server.url, TOKEN)
        trainer = GRPOTrainer(
            model=str(sft_checkpoint),
            reward_funcs=server_reward,
            args=grpo_args(str(tmp_path / "grpo"), steps=STEPS, prompts_per_step=PROMPTS, n_agent=N_AGENT, warmup_steps=0),
            train_dataset=tag_dataset(tasks),
            rollout_func=recording_rollout,
        )
        trainer.train()
        train_s = time.perf_counter() - started

        # The run finished its steps, and a worker was killed in it and replaced.
        logs = [h for h in trainer.state.log_history if "reward" in h]
        assert trainer.state.global_step == STEPS and len(logs) == STEPS
        assert batch["killed"] is not None
        deadline = time.monotonic() + 60
        while len(worker_pids(server.process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(worker_pids(server.process.pid)) == 2
        assert any("exited (SIGKILL); starting another" in line for line in server.lines()), server.lines()[-20:]

        # Every completion against the wire transcript, by episode id.
        wire = relay.episodes()
        assert len(got) == len(batches) == STEPS
        rows = []
        for b, (record, rewards) in enumerate(zip(batches, got)):
            out = record["out"]
            assert len(record["clients"]) == len(rewards) == BATCH
            assert rewards == out["server_reward"]  # TRL's reward function got the rollout's column, in order
            for i, (client, reward) in enumerate(zip(record["clients"], rewards)):
                assert client.episode_id is not None, f"batch {b} completion {i}: no session"
                seen = wire[client.episode_id]
                # The turns the server got for this episode are the completion's trained tokens.
                trained = trainer.processing_class.decode(
                    [t for t, m in zip(out["completion_ids"][i], out["env_mask"][i]) if m == 1], skip_special_tokens=False
                )
                ending = out["episode_ending"][i]
                assert all(t in trained for t in client.turns), (b, i)
                if ending == "lost":  # the turn sent as the session died may not have crossed
                    assert seen["turns"] == client.turns[: len(seen["turns"])] and len(client.turns) - len(seen["turns"]) <= 1, (b, i)
                else:
                    assert seen["turns"] == client.turns, (b, i)
                server_reward_ = seen["done"]["reward"] if seen["done"] else None
                status = seen["done"]["observation"]["metadata"].get("reward_status") if seen["done"] else None
                rows.append({"batch": b, "i": i, "episode": client.episode_id, "ending": ending, "reward": reward, "server": server_reward_, "status": status, "done": seen["done"] is not None})
                if seen["done"] is None:
                    # No reply at done (the session was lost, or it ran out of context/turns on the trainer's side): no reward.
                    assert reward is None if ending == "lost" else reward == 0.0, rows[-1]
                elif status == "ok":
                    assert reward == pytest.approx(server_reward_) and reward is not None, rows[-1]
                else:
                    assert reward is None and server_reward_ is None, rows[-1]  # missing: None, not 0

        # Each episode id belongs to one completion only.
        ids = [r["episode"] for r in rows]
        assert len(set(ids)) == len(ids)
        sent = [r for r in rows if r["server"] is not None]
        lost = [r for r in sent if r["reward"] is None or r["reward"] != pytest.approx(r["server"])]
        judge_missing = [r for r in rows if r["done"] and r["status"] != "ok"]
        figures = {
            "steps": STEPS,
            "episodes": len(rows),
            "endings": dict(Counter(r["ending"] for r in rows)),
            "faults": {
                "worker_killed": 1,
                "sessions_lost_to_the_kill": sum(r["ending"] == "lost" for r in rows),
                "judge_calls": judge.calls,
                "judge_failed": judge.failed,
                "stalled_clients": 1,
            },
            "rewards_sent_by_server": len(sent),
            "rewards_none": sum(r["reward"] is None for r in rows),
            "rewards_none_judge": len(judge_missing),
            "rewards_zero_from_context_or_turns": sum(r["reward"] == 0.0 and not r["done"] for r in rows),
            "rewards_lost": len(lost),
            "wire_connections": len(relay.closes),
            "wall_s": round(train_s, 1),
        }
        assert judge.failed >= 1 and len(judge_missing) == judge.failed
        assert figures["faults"]["sessions_lost_to_the_kill"] >= 1
        assert figures["rewards_lost"] == 0

        # The stalled client: the server ends it at its idle timeout, whenever the training ended
        # (a quicker run may end before it); the trainer never waited on it. The server closes the
        # connection after saying so, so the wait ends there.
        staller.settimeout(IDLE_MS / 1000 + 3)
        heard = b""
        how = "closed"
        try:
            while chunk := staller.recv(65536):
                heard += chunk
        except (TimeoutError, socket.timeout, ConnectionError) as e:
            how = type(e).__name__
        assert b"idle for more than" in heard, (how, time.perf_counter() - started, heard[-300:])
        figures["stalled_session_ended_by_idle_timeout"] = True
        with capsys.disabled():
            print("\nFAULT-FIGURES " + json.dumps(figures))
    finally:
        if staller is not None:
            staller.close()
        relay.close()
        server.close()
        judge.close()
