"""Writes a verl parquet dataset whose rows select the Searcher agent loop.

    SEARCHER_RL_TOKEN=... python3 make_dataset.py http://127.0.0.1:8000 train.parquet

Each row: `prompt` (the question as a chat message, for verl's length filter and logs; the loop
replaces it with the server's first observation), `agent_name: searcher_env` (the agent loop
config entry), `extra_info.task_id` (the task the server resets to), and an empty
`reward_model.ground_truth` (the reward comes from the server).
"""

import argparse
import json
import os
import urllib.request

import pandas as pd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("out")
    parser.add_argument("--token", default=os.environ.get("SEARCHER_RL_TOKEN"), help="default: SEARCHER_RL_TOKEN")
    parser.add_argument("--agent-name", default="searcher_env")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    tasks, offset = [], 0
    while True:
        url = f"{args.base_url.rstrip('/')}/tasks?offset={offset}&limit=1000"
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as r:
            page = json.load(r)
        tasks += page["tasks"]
        offset += len(page["tasks"])
        if not page["tasks"] or offset >= page["total"]:
            break
    rows = [
        {
            "data_source": "searcher-rl",
            "prompt": [{"role": "user", "content": t["question"]}],
            "agent_name": args.agent_name,
            "ability": "search",
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"task_id": t["id"], "index": i},
        }
        for i, t in enumerate(tasks)
    ]
    pd.DataFrame(rows).to_parquet(args.out)
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
