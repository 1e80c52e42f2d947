"""Writes a verl parquet dataset whose rows select the Searcher agent loop.

    SEARCHER_RL_TOKEN=... python3 make_dataset.py http://127.0.0.1:8000 train.parquet

Each row: `prompt` (the question as a chat message, for verl's length filter and logs; the loop
replaces it with the server's first observation), `agent_name: searcher_env` (the agent loop
config entry), `extra_info.task_id` (the task the server resets to), and an empty
`reward_model.ground_truth` (the reward comes from the server).
"""

import argparse
import os

import pandas as pd
from searcher_rl_trainers.openenv_glue import fetch_tasks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("out")
    parser.add_argument("--token", default=os.environ.get("SEARCHER_RL_TOKEN"), help="default: SEARCHER_RL_TOKEN")
    parser.add_argument("--agent-name", default="searcher_env")
    args = parser.parse_args()
    # Every task, page by page to the server's total (the token never in an error).
    tasks = fetch_tasks(args.base_url, args.token)
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
