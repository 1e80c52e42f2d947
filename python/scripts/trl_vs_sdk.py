"""TRL's GRPO against this SDK's own trainer, from the same SFT checkpoint, on the slide environment.

    npm run demo                                   # makes runs/<run-id>/sft/... (the SFT warm start)
    PYTHONPATH=python/src .cache/python-env/bin/python python/scripts/trl_vs_sdk.py [--steps 20]

Both arms start from the demo's SFT checkpoint (a Hugging Face GPT-2 folder) and run phase 1 of
the demo (reward 0.1 + 0.9 NDCG once the format passes; `--steps` steps of `--prompts-per-step`
prompts x `--n-agent` rollouts, GSPO with clip 3e-4/4e-4, learning rate 3e-4 after 5 warm-up
steps, temperature 0.7, the demo's episode settings):

- SDK: `searcher-rl train` with `policy.initFrom` = the checkpoint and that one phase;
- TRL: `GRPOTrainer` with `TagRollout` against `searcher-rl serve-env` (the same environment and
  reward, served), the same settings in TRL's terms (`train_trl.grpo_args`), then the model TRL
  saved is loaded back into this SDK (`policy.initFrom`) and evaluated by the SDK's evaluation.

All three (the start, the SDK's result, TRL's result) are evaluated the same way: the SDK's
evaluation (greedy, one rollout per question) on the demo run's evaluation split (the 436 test
questions). Prints a Markdown table and writes OUT/trl_vs_sdk.json and .md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python/src"))
# The serve-env launcher the tests use (python/testing).
sys.path.insert(0, str(ROOT / "python/testing"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def cli(*args: str, log: Path) -> float:
    started = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.call([str(ROOT / "node_modules/.bin/tsx"), "src/cli/main.ts", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        raise SystemExit(f"searcher-rl {' '.join(args)} failed ({code}); see {log}")
    return time.perf_counter() - started


def newest_sft() -> Path:
    found = sorted(glob.glob(str(ROOT / "runs/*/sft/blobs/checkpoints/step-*/policy")), key=os.path.getmtime)
    if not found:
        raise SystemExit("no SFT checkpoint under runs/: run `npm run demo` first, or pass --sft FOLDER")
    return Path(found[-1])


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path


def evaluation(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / f"{name}.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sft", help="the SFT checkpoint folder (default: the newest runs/*/sft one)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--n-agent", type=int, default=8)
    parser.add_argument("--eval-limit", type=int, help="evaluate on the first N questions only")
    parser.add_argument("--out", default=str(ROOT / "runs" / f"trl-vs-sdk-{time.strftime('%Y%m%d-%H%M%S')}"))
    options = parser.parse_args()
    wall = time.perf_counter()
    sft = Path(options.sft).resolve() if options.sft else newest_sft()
    run_config = json.loads((sft.parents[4] / "config.json").read_text())  # runs/<id>/config.json
    out = Path(options.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    episode = run_config["searcher"]["episode"]
    evaluation_settings = {**run_config["evaluation"], **({"limit": options.eval_limit} if options.eval_limit else {})}
    policy = {k: run_config["policy"][k] for k in ("backend", "rollouts", "training") if k in run_config["policy"]}
    phase = {"name": "phase1", "steps": options.steps, "weights": "phase1", "learningRate": 3.0e-4, "warmupSteps": 5}
    common = {"runsDir": str(out), "seed": run_config["seed"], "corpus": run_config["corpus"], "evaluation": evaluation_settings}
    rl = {**run_config["searcher"]["rl"], "nAgent": options.n_agent}
    print(f"start: {sft}", flush=True)

    # The SDK's own trainer.
    sdk_config = write(
        out / "sdk.json",
        {
            **common,
            "runId": "sdk",
            "policy": {**policy, "initFrom": str(sft)},
            "phases": [phase],
            "trainer": {"batchSize": options.prompts_per_step, "saveFreq": options.steps, "keepLast": 1, "keepBestBy": None},
            "searcher": {"episode": episode, "rl": rl},
        },
    )
    sdk_s = cli("train", "--config", str(sdk_config), log=out / "sdk.log")
    metrics = [json.loads(line)["data"] for line in open(out / "sdk/phase1/metric.jsonl")]
    sdk_step_s = sum(m["rolloutMs"] + m["updateMs"] for m in metrics) / 1000 / len(metrics)
    print(f"SDK: {sdk_s:.0f} s in all, {sdk_step_s:.2f} s per step", flush=True)

    # TRL against serve-env.
    from searcher_rl_trainers.train_trl import build_trainer, grpo_args
    from serve_env import ServeEnv

    token = secrets.token_hex(16)
    serve_config = write(out / "serve.json", {"corpus": run_config["corpus"], "searcher": {"episode": episode, "reward": {"weights": "phase1"}}})
    with ServeEnv(token, config=serve_config, log_path=out / "serve.log") as server:
        args = grpo_args(
            str(out / "trl"),
            steps=options.steps,
            prompts_per_step=options.prompts_per_step,
            n_agent=options.n_agent,
            temperature=episode["temperature"],
            max_completion_length=run_config["policy"]["contextLength"],
            seed=run_config["seed"],
            gradient_checkpointing=False,  # a 2-layer model: nothing to save, only time
        )
        trainer, rollout = build_trainer(
            server.url, token, str(sft), args, turn_tokens=episode["maxTurnTokens"], max_sessions=64
        )
        started = time.perf_counter()
        trainer.train()
        trl_s = time.perf_counter() - started
        trainer.save_model(str(out / "trl/model"))
    logs = [h for h in trainer.state.log_history if "reward" in h]
    trl_step_s = sum(h["step_time"] for h in logs) / len(logs)
    print(f"TRL: {trl_s:.0f} s of training, {trl_step_s:.2f} s per step, {options.steps / trl_s:.3f} steps/s", flush=True)

    # TRL's model, evaluated by the SDK (a run from its folder with no training steps).
    trl_eval = write(
        out / "trl-eval.json",
        {**common, "runId": "trl-eval", "policy": {**policy, "initFrom": str(out / "trl/model")}, "phases": [{**phase, "steps": 0}], "searcher": {"episode": episode}},
    )
    cli("train", "--config", str(trl_eval), log=out / "trl-eval.log")

    start = evaluation(out / "sdk", "eval-before-rl")
    rows = [
        ("SFT checkpoint (start)", start, None, None),
        (f"SDK trainer, {options.steps} steps", evaluation(out / "sdk", "eval-after-rl"), sdk_step_s, [m["rewardMean"] for m in metrics]),
        (f"TRL GRPOTrainer, {options.steps} steps", evaluation(out / "trl-eval", "eval-before-rl"), trl_step_s, [h["reward"] for h in logs]),
    ]
    lines = [
        f"| {options.steps} steps x {options.prompts_per_step} prompts x {options.n_agent} rollouts | judge success | NDCG | completed | small print solved | crops | s/step | train reward first 5 -> last 5 steps |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, e, step_s, rewards in rows:
        trend = "" if rewards is None else f"{sum(rewards[:5]) / len(rewards[:5]):.3f} -> {sum(rewards[-5:]) / len(rewards[-5:]):.3f}"
        lines.append(
            f"| {name} | {e['judgeSuccess']:.1%} | {e['ndcg']:.3f} | {e['completion']:.1%} | {e['smallPrintSuccess']:.1%} | {e['cropRate']:.1%} | {'' if step_s is None else f'{step_s:.2f}'} | {trend} |"
        )
    table = "\n".join(lines)
    summary = {
        "sft": str(sft),
        "questions": start["questions"],
        "split": start["split"],
        "rows": [{"name": n, **e, "step_s": s, "train_rewards": r} for n, e, s, r in rows],
        "trl_rollouts": {k: (dict(v) if k == "endings" else v) for k, v in rollout.stats.items()},
        "wall_s": round(time.perf_counter() - wall, 1),
    }
    write(out / "trl_vs_sdk.json", summary)
    (out / "trl_vs_sdk.md").write_text(table + "\n")
    print(table)
    print(json.dumps({"wall_s": summary["wall_s"], "out": str(out)}))


if __name__ == "__main__":
    main()
