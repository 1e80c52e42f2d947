"""The PyTorch side of `npm run bench:llama` (bench/llama.ts): one workload on SmolLM2-135M-Instruct
in this process, so that the process's peak RSS is that workload's.

    .cache/python-env/bin/python python/scripts/llama_bench.py CONFIG.json

CONFIG (written by bench/llama.ts) names the GGUF file, the workload and the thread count:

- `rollout`: `model.generate` on `rows` copies of the prompt ids, sampling (temperature 1, top-p 1,
  top-k off) exactly `newTokens` new tokens a row with the key/value cache; tokens/s =
  rows * newTokens / the wall time of the whole call (prefill included). The warm-up calls sample
  `warmupTokens` each.
- `lora` / `full`: one training step on a fixed batch of token ids (every position after the first
  scored): forward, mean negative log-likelihood (cross-entropy), backward, gradient-norm clip at 1
  (as the TypeScript policy's default optimizer does), AdamW (weight decay 0). `lora`: peft's
  LoRA on the frozen base; `full`: every weight.

The model is the GGUF dequantised by transformers (float32, SDPA attention): the same float32
weights the TypeScript engine runs. `saveTo` saves it (not timed) for later children, which load
that folder (`loadFrom`) instead of reading the GGUF again. Prints one JSON line: the load time, each timed repeat, the
median, tokens/s, and the peak RSS (ru_maxrss: the whole process's; stepPeakRssMb: the peak from
just after the load, where the kernel lets /proc/self/clear_refs reset it).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> bool:
    """Resets the kernel's high-water mark of this process's RSS (VmHWM), Linux 4.0 and up."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def high_water_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def save_dequantised(model, folder: Path) -> None:
    """The model as a plain float32 checkpoint. save_pretrained refuses a model loaded from GGUF
    (its quantizer is attached); safetensors' save_model keeps the tied embedding once."""
    from safetensors.torch import save_model

    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("quantization_config", None)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    save_model(model, str(folder / "model.safetensors"))


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    threads = int(config["threads"])
    started = time.perf_counter()
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    import_seconds = time.perf_counter() - started

    model_path = Path(config["model"])
    load_from = config.get("loadFrom")
    started = time.perf_counter()
    if load_from:
        # The GGUF as an earlier child dequantised and saved it: the same float32 weights, without
        # transformers' GGUF reader (about 25 s here) in every child.
        model = AutoModelForCausalLM.from_pretrained(load_from, dtype=torch.float32, attn_implementation="sdpa")
    else:
        model = AutoModelForCausalLM.from_pretrained(
            str(model_path.parent),
            gguf_file=model_path.name,
            dtype=torch.float32,
            attn_implementation="sdpa",
        )
    if config.get("saveTo"):
        saving = time.perf_counter()
        save_dequantised(model, Path(config["saveTo"]))
        started += time.perf_counter() - saving
    workload = config["workload"]
    if workload == "lora":
        from peft import LoraConfig, get_peft_model

        lora = config["lora"]
        model = get_peft_model(
            model,
            LoraConfig(
                r=lora["rank"],
                lora_alpha=lora["alpha"],
                lora_dropout=0.0,
                target_modules=lora["targetModules"],
                bias="none",
                task_type="CAUSAL_LM",
            ),
        )
    load_seconds = time.perf_counter() - started
    load_peak_mb = peak_rss_mb()
    step_peak_tracked = reset_peak_rss()
    torch.manual_seed(config["seed"])

    times: list[float] = []
    extra: dict[str, object] = {}
    if workload == "rollout":
        rollout = config["rollout"]
        rows, new_tokens = rollout["rows"], rollout["newTokens"]
        prompt = torch.tensor([config["promptIds"]] * rows, dtype=torch.long)
        model.eval()
        eos = model.generation_config.eos_token_id
        for repeat in range(config["warmup"] + config["repeats"]):
            # The warm-up turn is short (warmupTokens): it runs every code path once.
            wanted = config["rollout"]["warmupTokens"] if repeat < config["warmup"] else new_tokens
            t0 = time.perf_counter()
            out = model.generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                top_k=0,
                max_new_tokens=wanted,
                min_new_tokens=wanted,
                use_cache=True,
                pad_token_id=eos if isinstance(eos, int) else eos[0],
            )
            times.append(time.perf_counter() - t0)
            generated = out.shape[1] - prompt.shape[1]
            if generated != wanted:
                raise SystemExit(f"generate gave {generated} new tokens, expected {wanted}")
        tokens = rows * new_tokens
        extra = {"promptLength": prompt.shape[1]}
    else:
        ids = torch.tensor(config["train"]["ids"], dtype=torch.long)
        model.train()
        if workload == "full":
            for p in model.parameters():
                p.requires_grad_(True)
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=config["learningRate"], weight_decay=0.0)
        losses: list[float] = []
        for _ in range(config["warmup"] + config["repeats"]):
            t0 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            logits = model(input_ids=ids).logits
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            times.append(time.perf_counter() - t0)
            losses.append(loss.item())
            del logits, loss
        tokens = ids.numel()
        extra = {
            "trainableParameters": sum(p.numel() for p in trainable),
            "losses": [round(v, 4) for v in losses],
        }

    timed = times[config["warmup"] :]
    median = statistics.median(timed)
    step_peak = high_water_mb() if step_peak_tracked else None
    print(
        json.dumps(
            {
                "side": "pytorch",
                "workload": workload,
                "threads": threads,
                "torch": torch.__version__,
                "importSeconds": round(import_seconds, 3),
                "loadSeconds": round(load_seconds, 3),
                "loadedFrom": "safetensors (dequantised GGUF)" if load_from else "gguf",
                "firstCallSeconds": round(times[0], 3),
                "seconds": [round(t, 3) for t in timed],
                "medianSeconds": median,
                "tokensPerSecond": tokens / median,
                "peakRssMb": round(peak_rss_mb(), 1),
                "loadPeakRssMb": round(load_peak_mb, 1),
                **({"stepPeakRssMb": round(step_peak, 1)} if step_peak is not None else {}),
                **extra,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
