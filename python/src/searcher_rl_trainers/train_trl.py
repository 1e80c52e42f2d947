"""GRPO with TRL against `searcher-rl serve-env`: the command and the trainer it builds.

    searcher-rl serve-env --port 8000 --max-sessions 64 --max-sessions-per-client 64 --token "$SEARCHER_RL_TOKEN" &
    python -m searcher_rl_trainers.train_trl --env-url ws://127.0.0.1:8000 \
        --model runs/<run-id>/sft/blobs/checkpoints/step-00000000/policy --mode tags \
        --steps 20 --prompts-per-step 8 --n-agent 8 --output-dir out/trl

`--mode tags` (`TagRollout`): the Searcher's tag protocol, for checkpoints of this SDK and models
trained on it; the turns are generated with transformers in this process. `--mode tools`
(`SearcherToolEnv`): search, crop and search_complete as tools, for chat models whose template TRL
can parse (Qwen, Llama 3, ...); TRL generates (with vLLM on a GPU: `--vllm colocate|server`).
The token is read from SEARCHER_RL_TOKEN (not a command-line argument: command lines are visible
to other users). The defaults are this SDK's phase-1 settings (GSPO: sequence-level ratio, clip
3e-4/4e-4, no KL, learning rate 3e-4 with 5 warm-up steps, AdamW with weight decay 0.01, gradient
norm clipped at 1, one optimizer step per batch, temperature 0.7, float32). One JSON line is printed per
step and one at the end; the model is saved (Hugging Face folder) to OUTPUT_DIR/model.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from typing import Any

from .openenv_glue import fetch_tasks


def grpo_args(
    output_dir: str,
    *,
    steps: int,
    prompts_per_step: int,
    n_agent: int,
    learning_rate: float = 3e-4,
    warmup_steps: int = 5,
    temperature: float = 0.7,
    clip_low: float = 3e-4,
    clip_high: float = 4e-4,
    max_completion_length: int = 256,
    seed: int = 1,
    use_cpu: bool = True,
    **overrides: Any,
) -> Any:
    """A GRPOConfig with this SDK's phase-1 settings: GSPO (TRL's sequence-level importance
    sampling with its `grpo` loss, each sequence's token mean averaged: the SDK's
    seq-mean-token-mean), one optimizer step per batch of prompts x n_agent rollouts."""
    from trl import GRPOConfig

    settings = dict(
        output_dir=output_dir,
        use_cpu=use_cpu,
        max_steps=steps,
        per_device_train_batch_size=prompts_per_step * n_agent,
        num_generations=n_agent,
        gradient_accumulation_steps=1,
        num_iterations=1,
        learning_rate=learning_rate,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=warmup_steps,
        weight_decay=0.01,
        max_grad_norm=1.0,
        importance_sampling_level="sequence",
        loss_type="grpo",
        epsilon=clip_low,
        epsilon_high=clip_high,
        beta=0.0,
        temperature=temperature,
        max_completion_length=max_completion_length,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=seed,
        # GRPOConfig defaults to bf16, which on a CPU runs generation and update under bf16
        # autocast: a small model then writes other turns (measured on the demo's checkpoint:
        # logits off by 0.06, its greedy query garbled). float32, as this SDK trains; set bf16=True
        # for a large model on a GPU.
        bf16=False,
    )
    return GRPOConfig(**{**settings, **overrides})


def build_trainer(
    env_url: str,
    token: str | None,
    model: Any,
    args: Any,
    *,
    mode: str = "tags",
    turn_tokens: int = 48,
    max_sessions: int = 64,
    vision: bool = False,
    tasks: list[dict] | None = None,
    callbacks: list | None = None,
    processing_class: Any = None,
) -> tuple[Any, Any]:
    """The GRPOTrainer for `mode` ('tags' or 'tools') over every task the server serves, and its
    rollout function (tags) or None (tools). `model` is a folder or hub id, or a loaded model (a
    PeftModel to train an adapter), with its tokenizer as `processing_class`."""
    from trl import GRPOTrainer

    tasks = tasks if tasks is not None else fetch_tasks(env_url, token)
    if mode == "tags":
        from .trl_rollout import TagRollout, server_reward, tag_dataset

        rollout = TagRollout(env_url, token, turn_tokens=turn_tokens, max_sessions=max_sessions)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=server_reward,
            args=args,
            train_dataset=tag_dataset(tasks),
            rollout_func=rollout,
            callbacks=callbacks,
            processing_class=processing_class,
        )
        return trainer, rollout
    if mode == "tools":
        from .trl_env import SearcherToolEnv, tool_dataset

        trainer = GRPOTrainer(
            model=model,
            args=args,
            train_dataset=tool_dataset(tasks),
            environment_factory=functools.partial(SearcherToolEnv, env_url, token, vision=vision),
            callbacks=callbacks,
            processing_class=processing_class,
        )
        return trainer, None
    raise ValueError(f"--mode: 'tags' or 'tools', not {mode!r}")


def step_printer(out=None):
    """A TrainerCallback printing one JSON line per logged step (reward, its std, gradient norm, time)
    to `out`, by default the sys.stdout of the moment it prints (not the one at import: a redirected
    or captured stdout gets the lines)."""
    from transformers import TrainerCallback

    keys = ("reward", "reward_std", "grad_norm", "loss", "step_time", "completions/mean_length", "tools/call_frequency")

    class StepLines(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "reward" in logs:
                line = {"step": state.global_step, **{k: logs[k] for k in keys if k in logs}}
                print(json.dumps(line), file=out or sys.stdout, flush=True)

    return StepLines()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m searcher_rl_trainers.train_trl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-url", default=os.environ.get("SEARCHER_ENV_URL", "ws://127.0.0.1:8000"))
    parser.add_argument("--model", required=True, help="a Hugging Face model folder or hub id")
    parser.add_argument("--mode", choices=["tags", "tools"], default="tags")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--n-agent", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--turn-tokens", type=int, default=48)
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--max-sessions", type=int, default=64, help="serve-env's --max-sessions (tags: sessions open at once)")
    parser.add_argument("--vision", action="store_true", help="tools: pages and crops as image parts (multimodal models)")
    parser.add_argument("--vllm", choices=["colocate", "server"], help="tools: generate with vLLM (a GPU)")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args(argv)
    token = os.environ.get("SEARCHER_RL_TOKEN")
    overrides = {"use_vllm": True, "vllm_mode": options.vllm} if options.vllm else {}
    args = grpo_args(
        options.output_dir,
        steps=options.steps,
        prompts_per_step=options.prompts_per_step,
        n_agent=options.n_agent,
        learning_rate=options.learning_rate,
        warmup_steps=options.warmup_steps,
        temperature=options.temperature,
        max_completion_length=options.max_completion_length,
        seed=options.seed,
        use_cpu=not options.vllm,
        **overrides,
    )
    trainer, rollout = build_trainer(
        options.env_url,
        token,
        options.model,
        args,
        mode=options.mode,
        turn_tokens=options.turn_tokens,
        max_sessions=options.max_sessions,
        vision=options.vision,
        callbacks=[step_printer()],
    )
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    trainer.save_model(os.path.join(options.output_dir, "model"))
    summary = {
        "steps": options.steps,
        "train_s": round(seconds, 1),
        "steps_per_s": round(options.steps / seconds, 4),
        "model": os.path.join(options.output_dir, "model"),
    }
    if rollout is not None:
        stats = rollout.stats
        summary.update(
            episodes=stats["episodes"],
            server_steps=stats["steps"],
            endings=dict(stats["endings"]),
            generate_s=round(stats["generate_s"], 1),
            env_s=round(stats["env_s"], 1),
        )
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
