"""TRL's GRPOTrainer on the real-text Search-R1 task, from the same SFT adapter as this SDK's GRPO
(the `trl` row of `npm run bench:search-r1`, which runs this script and evaluates what it saves).

    npm run bench:search-r1 -- --seeds 1 --rows sft,trl          # the usual way
    .cache/python-env/bin/python python/scripts/trl_search_r1.py \
        --run .cache/bench-search-r1/runs/sft-s1 --out .cache/bench-search-r1/trl-s1

The run folder is a finished `sft` row of the bench (a run of examples/smollm2/real-text.yaml): its
resolved `config.json` gives the task (the dataset's training split, the FTS5 index, the episode,
the Search-R1 reward) and the GRPO phase's settings, and its SFT checkpoint (a PEFT adapter
folder) is the start. TRL trains that adapter on SmolLM2-135M-Instruct as transformers
dequantises it from the same GGUF file, with:

- `TagRollout` against `searcher-rl serve-env` serving the same training questions with the
  same episode and reward (the chat template wraps prompt and observations as the SDK does);
- the phase's steps, prompts per step (`trainer.batchSize`) x `rl.nAgent` rollouts, learning
  rate (constant, its warm-up), the sampling temperature, GSPO with the run's clip range, no KL,
  AdamW with the Llama policy's optimizer settings (weight decay, betas, epsilon, gradient norm
  clip), float32, one optimizer step per batch.

It saves the adapter TRL trained to OUT/model and prints one JSON line per step and a summary
line: wall seconds of training, of generation and of the environment, generated tokens and their
rate, and the reward per step. The run's own refusals (a loss or setting TRL cannot match) name
the config field.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import secrets
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python/src"))
sys.path.insert(0, str(ROOT / "python/testing"))  # the serve-env launcher the tests use
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def refuse(field: str, message: str) -> SystemExit:
    return SystemExit(f"trl_search_r1: config field {field} {message}")


def sft_adapter(run: Path) -> Path:
    found = sorted(glob.glob(str(run / "sft/blobs/checkpoints/step-*/policy")))
    if not found:
        raise SystemExit(f"trl_search_r1: no SFT checkpoint under {run}/sft: run the bench's sft row first")
    return Path(found[-1])


def sft_optimizer(run: Path) -> dict:
    """The AdamW settings the SFT checkpoint's moments were made under (the Llama policy writes
    them, defaults resolved, into its checkpoint's metadata)."""
    state = json.loads((sft_adapter(run).parent / "state.json").read_text())
    settings = state.get("policy", {}).get("metadata", {}).get("optimizer")
    if not isinstance(settings, dict):
        raise SystemExit(
            f"trl_search_r1: the SFT checkpoint of {run} does not record its optimizer settings "
            "(written before checkpoints did): run the bench's sft row again"
        )
    return settings


def dequantised(gguf: Path) -> Path:
    """A float32 Hugging Face folder of the GGUF model as transformers dequantises it, made once
    beside the file: transformers refuses to train a model loaded with `gguf_file` (it counts as
    quantised), but trains the same weights saved and loaded back."""
    if not gguf.name.endswith(".gguf"):
        return gguf  # already a Hugging Face folder
    folder = gguf.parent / "hf" / gguf.name.removesuffix(".gguf")
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.config.quantization_config = None
    model.hf_quantizer = None
    partial = folder.with_name(folder.name + ".partial")
    model.save_pretrained(str(partial))
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(partial))
    partial.rename(folder)
    return folder


def task_settings(config: dict) -> dict:
    """What TRL needs from the run's resolved config, refused where TRL's GRPO cannot match it."""
    searcher = config["searcher"]
    loss = searcher["rl"]["loss"]
    if loss["kind"] != "gspo":
        raise refuse("searcher.rl.loss.kind", f"is {loss['kind']!r}; this comparison runs GSPO (TRL: importance_sampling_level='sequence')")
    if loss["aggregation"] != "seq-mean-token-mean":
        raise refuse("searcher.rl.loss.aggregation", f"is {loss['aggregation']!r}; TRL's 'grpo' loss is seq-mean-token-mean")
    if loss["klCoef"] != 0:
        raise refuse("searcher.rl.loss.klCoef", "is not 0; set beta here to compare a KL run")
    if searcher["rl"]["ppoEpochs"] != 1 or searcher["rl"]["miniBatchSize"] is not None:
        raise refuse("searcher.rl.ppoEpochs", "and miniBatchSize must be 1 and null (one optimizer step per batch)")
    phases = [p for p in config["phases"] if p["steps"] > 0]
    if len(phases) != 1:
        raise refuse("phases", f"has {len(phases)} phases with steps; this comparison runs one")
    policy = searcher["adapters"]["policy"]
    if policy.get("type") != "llama" or policy.get("finetune", "lora") != "lora":
        raise refuse("searcher.adapters.policy", "must be the llama policy with finetune 'lora'")
    return {"phase": phases[0], "policy": policy, "episode": searcher["episode"], "rl": searcher["rl"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a finished sft row's run folder (its config.json and SFT checkpoint)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, help="default: the GRPO phase's steps")
    options = parser.parse_args()
    run = Path(options.run).resolve()
    out = Path(options.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((run / "config.json").read_text())
    settings = task_settings(config)
    phase, policy, episode, rl = settings["phase"], settings["policy"], settings["episode"], settings["rl"]
    steps = options.steps or phase["steps"]
    adapter = sft_adapter(run)
    # The Llama policy's optimizer as the SFT checkpoint records it (its settings, defaults
    # resolved); the learning rate and warm-up are the phase's.
    optimizer = sft_optimizer(run)

    # A server config with the run's episode, reward and search engine only; serve-env serves the
    # dataset's training rows (`--split train`, as the run splits them).
    searcher = config["searcher"]
    serve_config = out / "serve.json"
    serve_config.write_text(
        json.dumps(
            {
                "searcher": {
                    "episode": episode,
                    "reward": searcher["reward"],
                    "adapters": {"searchEngine": searcher["adapters"]["searchEngine"]},
                },
            },
            indent=1,
        )
    )

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from searcher_rl_trainers.train_trl import build_trainer, grpo_args, step_printer
    from serve_env import ServeEnv

    started = time.perf_counter()
    folder = dequantised(Path(policy["model"]))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    base = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    model = PeftModel.from_pretrained(base, str(adapter), is_trainable=True)
    load_s = time.perf_counter() - started
    print(json.dumps({"start": str(adapter), "load_s": round(load_s, 1)}), flush=True)

    token = secrets.token_hex(16)
    tasks = ["--tasks", config["dataset"]["path"], "--split", "train"]
    with ServeEnv(token, *tasks, config=serve_config, log_path=out / "serve.log") as server:
        args = grpo_args(
            str(out / "trl"),
            steps=steps,
            prompts_per_step=config["trainer"]["batchSize"],
            n_agent=rl["nAgent"],
            learning_rate=phase["learningRate"],
            warmup_steps=phase["warmupSteps"],
            temperature=episode["temperature"],
            top_p=episode["topP"],
            clip_low=rl["loss"]["clipLow"],
            clip_high=rl["loss"]["clipHigh"],
            # The SDK bounds an episode by its turns and the context, not by a completion budget.
            max_completion_length=4096,
            seed=config["seed"],
            gradient_checkpointing=False,
            weight_decay=optimizer["weightDecay"],
            adam_beta1=optimizer["beta1"],
            adam_beta2=optimizer["beta2"],
            adam_epsilon=optimizer["epsilon"],
            max_grad_norm=optimizer["maxGradNorm"] or 0.0,
            # Advantages over each prompt's group: TRL divides by the sample std (Bessel's
            # correction), the SDK by the population std, so TRL's are sqrt(3/4) of the SDK's with
            # 4 rollouts; Adam's steps hardly depend on that scale.
            scale_rewards="group",
        )
        trainer, rollout = build_trainer(
            server.url,
            token,
            model,
            args,
            turn_tokens=episode["maxTurnTokens"],
            max_sessions=64,
            processing_class=tokenizer,
            callbacks=[step_printer()],
        )
        print(json.dumps({"tasks": len(trainer.train_dataset)}), flush=True)
        started = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - started
        trainer.save_model(str(out / "model"))
    logs = [h for h in trainer.state.log_history if "reward" in h]
    stats = rollout.stats
    summary = {
        "start": str(adapter),
        "model": str(out / "model"),
        "steps": steps,
        "train_s": round(train_s, 1),
        "generate_s": round(stats["generate_s"], 1),
        "env_s": round(stats["env_s"], 1),
        "generated_tokens": stats["generated_tokens"],
        "rollout_tokens_per_s": round(stats["generated_tokens"] / stats["generate_s"], 2) if stats["generate_s"] else None,
        "episodes": stats["episodes"],
        "endings": dict(stats["endings"]),
        "rewards": [h["reward"] for h in logs],
        "step_s": [h["step_time"] for h in logs],
        "load_s": round(load_s, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
