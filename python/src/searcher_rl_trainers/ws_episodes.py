"""Drives whole serve-env episodes over the OpenEnv WebSocket protocol, as OpenEnv's EnvClient does,
with nothing but `websockets` (src/server/python-client.test.ts runs it).

Frames are the ones `openenv.core.env_client.EnvClient` sends: {"type": "reset", "data": kwargs},
{"type": "step", "data": action}, {"type": "state"}, {"type": "close"}; replies are read with the
`_parse_result` shape {"observation": ..., "reward": ..., "done": ...}. Only `websockets` is needed
(Debian's python3-websockets 10.4 and PyPI's 14 and later work: the header keyword
was renamed from `extra_headers` to `additional_headers` in 14). The address and the token go
through the package's connection module (the token as `Authorization: Bearer`, from `--token` or the
URL's credentials). Prints one JSON line per episode, then a summary line.

    PYTHONPATH=python/src python3 -m searcher_rl_trainers.ws_episodes ws://127.0.0.1:8000 --episodes 4 [--token T]
"""

import argparse
import asyncio
import json
import urllib.request

import websockets

from .connection import ServerAddress


async def request(ws, message):
    await ws.send(json.dumps(message))
    reply = json.loads(await ws.recv())
    if reply.get("type") == "error":
        raise RuntimeError(f"Server error: {reply['data'].get('message')} (code: {reply['data'].get('code')})")
    return reply["data"]


# websockets 14 replaced the legacy client, whose `extra_headers` became `additional_headers`.
HEADERS_KEYWORD = "additional_headers" if int(websockets.__version__.split(".")[0]) >= 14 else "extra_headers"


async def episode(address, task, index):
    async with websockets.connect(address.ws_url, **{HEADERS_KEYWORD: address.headers()}) as ws:
        first = await request(ws, {"type": "reset", "data": {"seed": index, "episode_id": f"py-{index}", "task": task["id"]}})
        assert first["done"] is False and first["reward"] is None
        assert task["question"] in first["observation"]["text"]
        turns = [
            f"<think>search for it</think>\n<search>{task['question']}</search>",
            "<think>that page answers it</think>\n<search_complete>true</search_complete>",
        ]
        result = first
        for text in turns:
            result = await request(ws, {"type": "step", "data": {"text": text}})
            if result["done"]:
                break
        state = await request(ws, {"type": "state"})
        await ws.send(json.dumps({"type": "close"}))
        meta = result["observation"]["metadata"]
        return {"episode_id": state["episode_id"], "task": task["id"], "done": result["done"], "reward": result["reward"],
                "reward_status": meta.get("reward_status"), "terminated": meta.get("terminated"), "steps": state["step_count"]}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--token")
    args = parser.parse_args()
    address = ServerAddress.parse(args.base_url, args.token)
    with urllib.request.urlopen(f"{address.http_url}/health") as r:
        assert json.load(r)["status"] == "healthy"
    with urllib.request.urlopen(urllib.request.Request(f"{address.http_url}/tasks", headers=address.headers())) as r:
        tasks = json.load(r)["tasks"]
    results = await asyncio.gather(*(episode(address, tasks[i % len(tasks)], i) for i in range(args.episodes)))
    for line in results:
        print(json.dumps(line))
    print(json.dumps({"episodes": len(results), "done": sum(r["done"] for r in results), "rewarded": sum(r["reward_status"] == "ok" for r in results)}))


if __name__ == "__main__":
    asyncio.run(main())
