"""Whole episodes through OpenEnv's own released client (openenv-core's `GenericEnvClient`, unmodified).

The client sends no headers of its own, so with `serve-env --token T` the token rides in the URL
given as `base_url`, as HTTP Basic credentials: `ws://searcher:T@host:port`. The client's
`websockets` connection sends them as `Authorization: Basic ...`, which serve-env takes (any user
name, the token as password). TRL's `environment_factory` class wraps this same client
(searcher_rl_trainers.trl_env). src/server/openenv-client.test.ts runs this module.

Runs the episodes concurrently with the async client, one more with the `.sync()` wrapper TRL's
environments use, and an `mcp` frame (OpenEnv's MCP passthrough) through the client's own
connection. Prints one JSON line per episode, one for the mcp answer, then a summary line.

    PYTHONPATH=python/src python3 -m searcher_rl_trainers.openenv_episodes ws://searcher:TOKEN@127.0.0.1:8000 --tasks t1,t2 --episodes 4
"""

import argparse
import asyncio
import json

from openenv.core.generic_client import GenericEnvClient

SEARCH = "<think>find the page</think>\n<search>{question}</search>"
COMPLETE = "<think>enough</think>\n<search_complete>true</search_complete>"


def summary(task, result, steps):
    meta = result.observation.get("metadata", {})
    return {
        "task": task,
        "done": result.done,
        "reward": result.reward,
        "reward_status": meta.get("reward_status"),
        "terminated": meta.get("terminated"),
        "steps": steps,
    }


async def episode(base_url, task):
    async with GenericEnvClient(base_url=base_url) as env:
        first = await env.reset(task=task)
        question = first.observation["text"].split("Question:")[-1].strip().splitlines()[0]
        await env.step({"text": SEARCH.format(question=question)})
        return summary(task, await env.step({"text": COMPLETE}), 2)


async def mcp(base_url):
    async with GenericEnvClient(base_url=base_url) as env:
        # The client's own connection and framing (EnvClient._send/_receive), as its MCP callers use.
        await env._send({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}})
        answer = await env._receive()
        state = await env.state()
        return {"mcp": answer, "state_after": state.get("step_count")}


def sync_episode(base_url, task):
    with GenericEnvClient(base_url=base_url).sync() as env:
        env.reset(task=task)
        return summary(task, env.step({"text": COMPLETE}), 1)


async def main(args):
    tasks = args.tasks.split(",")
    results = await asyncio.gather(*(episode(args.base_url, tasks[i % len(tasks)]) for i in range(args.episodes)))
    results.append(sync_episode(args.base_url, tasks[0]))
    for line in results:
        print(json.dumps(line))
    print(json.dumps(await mcp(args.base_url)))
    print(json.dumps({"episodes": len(results), "done": sum(r["done"] for r in results)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--episodes", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
