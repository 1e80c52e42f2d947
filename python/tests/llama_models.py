"""Helpers for test_llama_engine.py: tiny Llama-family models made by transformers (offline, fixed
seeds), the TypeScript engine's probe (scripts/llama-probe.ts) and the PyTorch references it is
checked against (log-probs, greedy tokens, the gradient of the probe's objective J)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

ROOT = Path(__file__).resolve().parents[2]
VOCAB = 128

_COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    rope_theta=10000.0,
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
)

# kind -> (model class, config); the settings each model is made to exercise.
TINY_MODELS: dict[str, tuple[type[PreTrainedModel], object]] = {
    # Tied embeddings: no lm_head tensor; the embedding's gradient carries the output projection's.
    "llama-tied": (LlamaForCausalLM, lambda: LlamaConfig(**_COMMON, tie_word_embeddings=True)),
    # Llama 3's rotary scaling with all three bands present (head_dim 16, theta 1e4: wavelengths
    # 6.3 (kept, < 32/4), 19.9 (smoothed), 63 and up (divided by the factor)); untied.
    "llama3-rope": (
        LlamaForCausalLM,
        lambda: LlamaConfig(
            **_COMMON,
            tie_word_embeddings=False,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 4.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
        ),
    ),
    # Biases on q, k, v (not o); untied.
    "qwen2": (Qwen2ForCausalLM, lambda: Qwen2Config(**_COMMON, tie_word_embeddings=False)),
    # RMSNorm on each head's queries and keys; head_dim 32 set explicitly (not hidden / heads = 16).
    "qwen3": (Qwen3ForCausalLM, lambda: Qwen3Config(**_COMMON, head_dim=32, tie_word_embeddings=False)),
}


def make_tiny_model(kind: str, folder: Path, seed: int = 0) -> PreTrainedModel:
    """A random model of `kind`, float32, eager attention, saved with save_pretrained (safetensors).
    Weights are redrawn far from transformers' initialisation (std 0.02 gives near-uniform logits and
    greedy ties): matrices N(0, 0.15²), embeddings N(0, 0.4²), lm_head N(0, 0.3²), biases N(0, 0.1²),
    norm weights 1 + N(0, 0.1²), so that layouts, scalings and norms all show in the logits."""
    cls, make_config = TINY_MODELS[kind]
    config = make_config()
    torch.manual_seed(seed)
    model = cls(config).to(torch.float32).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.1 * noise)
            elif "embed_tokens" in name:
                p.copy_(0.4 * noise)
            elif name == "lm_head.weight":
                p.copy_(0.3 * noise)
            else:
                p.copy_(0.15 * noise)
    model.save_pretrained(folder)
    return load_model(folder)


def load_model(folder: Path | str, **kwargs) -> PreTrainedModel:
    model = AutoModelForCausalLM.from_pretrained(
        str(folder), dtype=torch.float32, attn_implementation="eager", **kwargs
    )
    return model.eval()


def random_sequences(lengths: list[int], vocab: int = VOCAB, seed: int = 0) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (n,), generator=generator).tolist() for n in lengths]


def random_upstream(sequences: list[list[int]], seed: int = 0) -> list[list[float]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(len(s) - 1, generator=generator).tolist() for s in sequences]


def probe(request: dict, folder: Path, name: str = "request") -> dict:
    """Runs scripts/llama-probe.ts on one request (written to folder/name.json); its JSON answer."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(request))
    result = subprocess.run(
        [str(ROOT / "node_modules/.bin/tsx"), "scripts/llama-probe.ts", str(path)],
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"llama-probe {name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("{")]
    assert lines, f"llama-probe {name} printed no JSON:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return json.loads(lines[-1])


def reference_log_probs(model: torch.nn.Module, sequence: list[int], temperature: float = 1.0) -> torch.Tensor:
    """log_softmax(logits[p-1] / T)[ids[p]] for p = 1..len-1, one sequence at a time (no padding)."""
    ids = torch.tensor([sequence])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].double() / temperature
    return logits.log_softmax(-1).gather(1, ids[0, 1:, None])[:, 0]


def objective(
    model: torch.nn.Module,
    sequences: list[list[int]],
    upstream: list[list[float]],
    temperature: float,
    entropy_weight: float,
) -> torch.Tensor:
    """The probe's J: Σ upstream[p-1]·logp(p) − w·Σ H(softmax(logits[p-1] / T)) over every sequence
    and position p = 1..len-1, in the model's dtype."""
    total = None
    for sequence, up in zip(sequences, upstream):
        ids = torch.tensor([sequence])
        logits = model(ids).logits[0, :-1] / temperature
        logp = logits.log_softmax(-1)
        chosen = logp.gather(1, ids[0, 1:, None])[:, 0]
        entropy = -(logp.exp() * logp).sum(-1)
        term = (torch.tensor(up, dtype=logp.dtype) * chosen).sum() - entropy_weight * entropy.sum()
        total = term if total is None else total + term
    return total


def generate_greedy(model: PreTrainedModel, prompt: list[int], tokens: int, cache: bool) -> list[int]:
    """transformers' greedy generate, exactly `tokens` new tokens (no end-of-sequence stop: generate
    fills an unset eos_token_id from the model's generation config, and min_new_tokens would then
    suppress that token rather than let it be picked, so the model's own is cleared meanwhile)."""
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    config = GenerationConfig(
        do_sample=False,
        max_new_tokens=tokens,
        min_new_tokens=tokens,
        eos_token_id=None,
        pad_token_id=0,
        bos_token_id=None,
        use_cache=cache,
    )
    try:
        with torch.no_grad():
            out = model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                generation_config=config,
            )
    finally:
        model.generation_config.eos_token_id = saved
    generated = out[0, len(prompt) :].tolist()
    # Plain argmax decoding, as a teacher-forced forward sees it (no processor changed a pick).
    ids = torch.tensor([prompt + generated])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].double().log_softmax(-1)
    picked = logits.gather(1, torch.tensor(generated)[:, None])[:, 0]
    assert (logits.max(-1).values - picked).max().item() <= 1e-4, "generate did not pick the argmax"
    return generated


def greedy_margins(model: torch.nn.Module, prompt: list[int], generated: list[int]) -> list[float]:
    """For each greedy step: the log-prob gap between the best and the second-best next token."""
    ids = torch.tensor([prompt + generated])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : len(prompt) + len(generated) - 1].double()
    top = logits.log_softmax(-1).topk(2, dim=-1).values
    return (top[:, 0] - top[:, 1]).tolist()


def compare_greedy(
    model: torch.nn.Module, prompt: list[int], got: list[int], want: list[int], tie: float = 1e-4
) -> tuple[bool, str]:
    """Whether the probe's greedy tokens are transformers': equal, or equal up to a step where the
    reference's best and the probe's pick are within `tie` in log-prob (a tie that float rounding
    may break either way; after it the two continuations legitimately differ). Returns (ok, note)."""
    if got == want:
        return True, "identical"
    if len(got) != len(want):
        return False, f"lengths differ: {len(got)} vs {len(want)}"
    k = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
    ids = torch.tensor([prompt + want[:k]])
    with torch.no_grad():
        logp = model(ids).logits[0, -1].double().log_softmax(-1)
    gap = (logp[want[k]] - logp[got[k]]).item()
    note = (
        f"first difference at step {k}: transformers {want[k]} (logp {logp[want[k]].item():.6f}), "
        f"probe {got[k]} (logp {logp[got[k]].item():.6f}), gap {gap:.3g}"
    )
    return abs(gap) <= tie, note


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item()
