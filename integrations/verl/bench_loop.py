"""Episodes per second through verl's own AgentLoopWorker and SearcherEnvAgentLoop, against a
serve-env this script starts on 127.0.0.1, with a scripted stand-in for verl's LLM server (so the
figure is the loop, the Continuous Token templating and the server, not a model).

    PYTHONPATH=python/src "$(scripts/python-env.sh verl)" integrations/verl/bench_loop.py \
        [--prompts 16] [--n 4] [--rounds 3] [--workers 1] [--max-sessions 64]

Each episode: reset, `<search>` the question, the observation merged, `<search_complete>`, the
reward. Prints one JSON line per round and one summary line.
"""

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

# The tests' helpers (python/testing): the serve-env launcher and verl's stand-ins; not in the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "testing"))

from serve_env import ServeEnv  # noqa: E402
from verl_harness import ScriptedLLMServer, build_tiny_chat_model, compose_ppo_config, make_batch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--max-sessions", type=int, default=64)
    args = parser.parse_args()

    import os

    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    folder = Path(tempfile.mkdtemp(prefix="searcher-verl-bench-"))
    model = build_tiny_chat_model(folder / "model")
    config = compose_ppo_config(model, overrides=(f"actor_rollout_ref.rollout.n={args.n}",))
    token = "benchtoken000000000000000000042"
    # One trainer uses the whole server: its per-client share is every session.
    server_args = ("--workers", str(args.workers), "--max-sessions", str(args.max_sessions),
                   "--max-sessions-per-client", str(args.max_sessions))
    with ServeEnv(token, *server_args, log_path=folder / "server.log") as env:
        os.environ["SEARCHER_ENV_URL"], os.environ["SEARCHER_RL_TOKEN"] = env.url, token
        tasks = env.task_ids(args.prompts * args.rounds)
        llm = ScriptedLLMServer(AutoTokenizer.from_pretrained(model))
        worker = AgentLoopWorker(config, llm)
        rates = []
        for round_index in range(args.rounds):
            batch = make_batch(tasks[round_index * args.prompts : (round_index + 1) * args.prompts], n=args.n)
            start = time.perf_counter()
            out = asyncio.run(worker.generate_sequences(batch))
            seconds = time.perf_counter() - start
            episodes = len(out)
            server_s = sum(m["tool_calls"] for m in out.meta_info["metrics"])
            ok = int((out.non_tensor_batch["reward_status"] == "ok").sum())
            rates.append(episodes / seconds)
            print(json.dumps({"round": round_index, "episodes": episodes, "seconds": round(seconds, 2),
                              "episodes_per_s": round(episodes / seconds, 1), "rewards_ok": ok,
                              "step_request_s_per_episode": round(server_s / episodes, 3),
                              "max_session_attempts": int(max(out.non_tensor_batch["session_attempts"]))}))
        print(json.dumps({"figure": "verl loop episodes/s", "prompts": args.prompts, "n": args.n,
                          "workers": args.workers, "max_sessions": args.max_sessions,
                          "best": round(max(rates), 1), "median": round(sorted(rates)[len(rates) // 2], 1)}))


if __name__ == "__main__":
    main()
