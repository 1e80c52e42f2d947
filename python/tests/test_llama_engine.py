"""The TypeScript Llama-family engine (src/adapters/llama, through scripts/llama-probe.ts) against
transformers, peft and PyTorch autograd.

1. Tiny random models made here by transformers (fixed seeds, float32, eager attention, saved with
   save_pretrained): Llama with tied embeddings, Llama with Llama 3's rotary scaling (untied),
   Qwen2 (q/k/v biases) and Qwen3 (q/k norms, head_dim set apart from hidden / heads). For each:
   (a) log-probs of three sequences of different lengths within 1e-4 of transformers';
   (b) 64 greedy tokens equal to `generate(do_sample=False)`'s, with and without the key/value cache;
   (c) the gradient of the probe's objective J (upstream · log-probs − w · entropy, at a temperature)
       by every weight equal to autograd's (float64) within 1e-4 relative;
   (d) the same for a peft LoRA adapter (r 4, alpha 8, q/v/down projections, B not zero).
2. Checkpoints: in-process AdamW steps saved by the engine as a transformers folder (full) or a peft
   adapter (LoRA) load in transformers / peft and score as the engine scores them.
3. SmolLM2-135M-Instruct from its Q4_1 GGUF file (dequantised by both sides): log-probs of a ChatML
   prompt and 64 greedy tokens with and without the cache (against transformers' cached generate,
   whose tokens are checked to be the argmax of one uncached forward). Skipped when the file is
   absent (scripts/fetch-models.sh gets it). The slowest part: ~80 of the file's ~150 CPU seconds
   (transformers' dequantising load, the engine's 64 uncached forwards); 3-5 minutes' wall time on
   2 cores shared with other work.

Greedy comparisons: the tiny models' weights are scaled so that no step is a near tie (the smallest
best/second-best log-prob gap is checked and shown); where the engine's pick still differs, the two
are accepted as equal only when transformers' own log-probs put them within 1e-4 of each other (a
tie float rounding may break either way), and the tokens before that step must be equal.
"""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path

import pytest
import torch
from llama_models import (
    ROOT,
    TINY_MODELS,
    compare_greedy,
    generate_greedy,
    greedy_margins,
    load_model,
    make_tiny_model,
    max_abs,
    objective,
    probe,
    random_sequences,
    random_upstream,
    reference_log_probs,
)
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

TOLERANCE = 1e-4
GREEDY_TOKENS = 64
LORA_TARGETS = ["q_proj", "v_proj", "down_proj"]
KINDS = list(TINY_MODELS)
# kind -> (temperature, entropy weight) for scores and gradients.
SETTINGS = {
    "llama-tied": (1.0, 0.0),
    "llama3-rope": (0.7, 0.1),
    "qwen2": (1.0, 0.0),
    "qwen3": (0.7, 0.1),
}


def log(message: str) -> None:
    print(f"[llama-engine] {message}")


def relative_ok(got: torch.Tensor, want: torch.Tensor) -> tuple[bool, float, float]:
    """max|a − b| ≤ 1e-4 · max|b| + 1e-6, with the two sides of that inequality."""
    diff = max_abs(got, want)
    bound = TOLERANCE * want.double().abs().max().item() + 1e-6
    return diff <= bound, diff, bound


def head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def peft_key(name: str) -> str:
    """peft's parameter name as the probe names it: without `base_model.model.` and `.default`."""
    return name.removeprefix("base_model.model.").replace(".default.", ".")


class TinyCase:
    """One tiny model, its LoRA adapter, the inputs and the probe's answers (each probe run once)."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.root = folder
        self.folder = folder / "model"
        seed = KINDS.index(kind)
        self.model = make_tiny_model(kind, self.folder, seed=seed)
        self.temperature, self.entropy_weight = SETTINGS[kind]
        self.sequences = random_sequences([6, 19, 37], seed=10 + seed)
        self.upstream = random_upstream(self.sequences, seed=20 + seed)
        self.prompt = random_sequences([8], seed=30 + seed)[0]
        # The adapter: peft's own, saved, with B drawn too (init_lora_weights=False).
        self.adapter = folder / "adapter"
        torch.manual_seed(40 + seed)
        lora = get_peft_model(
            load_model(self.folder),
            LoraConfig(
                r=4, lora_alpha=8, target_modules=LORA_TARGETS, lora_dropout=0.0, init_lora_weights=False
            ),
        )
        lora.save_pretrained(self.adapter)

    def peft_model(self, adapter: Path | None = None, trainable: bool = False) -> PeftModel:
        return PeftModel.from_pretrained(
            load_model(self.folder), str(adapter or self.adapter), is_trainable=trainable
        ).eval()

    def gradients_request(self, mode: str) -> dict:
        return {
            "sequences": self.sequences,
            "upstream": self.upstream,
            "temperature": self.temperature,
            "entropyWeight": self.entropy_weight,
            "mode": mode,
        }

    def train_request(self, mode: str, saved: Path) -> dict:
        """TRAIN_STEPS AdamW steps at LEARNING_RATE on this case's sequences, saved to `saved`."""
        return {
            "mode": mode,
            "sequences": self.sequences,
            "steps": TRAIN_STEPS,
            "learningRate": LEARNING_RATE,
            "saveTo": str(saved),
        }

    def probe_model(self, name: str, **requests) -> dict:
        """One probe run on this case's model (with `requests`: score, greedy, gradients, adapter)."""
        return probe({"model": str(self.folder), **requests}, self.root, name)

    @cached_property
    def base(self) -> dict:
        """Score, greedy with the cache and full gradients in one probe run."""
        return self.probe_model(
            "base",
            score={"sequences": self.sequences, "temperature": self.temperature},
            greedy={"prompt": self.prompt, "maxTokens": GREEDY_TOKENS, "cache": True},
            gradients=self.gradients_request("full"),
        )

    @cached_property
    def uncached(self) -> dict:
        return self.probe_model("uncached", greedy={"prompt": self.prompt, "maxTokens": GREEDY_TOKENS, "cache": False})

    @cached_property
    def lora(self) -> dict:
        """Score and LoRA gradients with the adapter, in one probe run."""
        return self.probe_model(
            "lora",
            adapter=str(self.adapter),
            score={"sequences": self.sequences, "temperature": self.temperature},
            gradients=self.gradients_request("lora"),
        )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("llama-engine")
    cases: dict[str, TinyCase] = {}

    def get(kind: str) -> TinyCase:
        if kind not in cases:
            (root / kind).mkdir()
            cases[kind] = TinyCase(kind, root / kind)
        return cases[kind]

    return get


def check_log_probs(model, sequences, temperature, got: list[list[float]], label: str) -> None:
    assert len(got) == len(sequences), label
    worst = 0.0
    for sequence, row in zip(sequences, got):
        assert len(row) == len(sequence) - 1, label
        worst = max(worst, max_abs(torch.tensor(row), reference_log_probs(model, sequence, temperature)))
    log(f"{label}: log-probs max|Δ| = {worst:.3g}")
    assert worst <= TOLERANCE, f"{label}: log-probs max|Δ| = {worst:.3g} > {TOLERANCE}"


# 1 (a) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_log_probs_equal_transformers(tiny, kind: str) -> None:
    case = tiny(kind)
    check_log_probs(case.model, case.sequences, case.temperature, case.base["logProbs"], kind)


# 1 (b) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
@pytest.mark.parametrize("kind", KINDS)
def test_greedy_tokens_equal_generate(tiny, kind: str, cache: bool) -> None:
    case = tiny(kind)
    want = generate_greedy(case.model, case.prompt, GREEDY_TOKENS, cache=cache)
    margins = greedy_margins(case.model, case.prompt, want)
    got = (case.base if cache else case.uncached)["greedy"]
    ok, note = compare_greedy(case.model, case.prompt, got, want)
    gap = min(margins)
    log(f"{kind} greedy cache={cache}: {note}; smallest best/second gap {gap:.3g}; {len(set(want))} distinct tokens")
    assert ok, f"{kind} greedy (cache={cache}): {note}\n probe        {got}\n transformers {want}"


# 1 (c) ---------------------------------------------------------------------------------------------


def check_gradients(got: dict, want: dict[str, torch.Tensor], label: str) -> None:
    assert sorted(got) == sorted(want), f"{label}: names differ: {sorted(set(got) ^ set(want))}"
    failures, worst = [], ""
    worst_ratio = -1.0
    for name, reference in want.items():
        entry = got[name]
        shape = list(reference.shape)
        assert list(entry["shape"]) == shape, f"{label} {name}: shape {entry['shape']} vs {shape}"
        values = torch.tensor(entry["values"], dtype=torch.float64).reshape(reference.shape)
        ok, diff, bound = relative_ok(values, reference)
        ratio = diff / (reference.abs().max().item() + 1e-30)
        if ratio > worst_ratio:
            worst_ratio, worst = ratio, f"{name} max|Δ| {diff:.3g} (max|ref| {reference.abs().max().item():.3g})"
        if not ok:
            failures.append(f"{name}: max|Δ| {diff:.3g} > {bound:.3g} (max|ref| {reference.abs().max().item():.3g})")
    log(f"{label}: {len(want)} tensors, worst relative {worst_ratio:.3g}: {worst}")
    assert not failures, f"{label}: {len(failures)} of {len(want)} tensors off:\n  " + "\n  ".join(failures)


@pytest.mark.parametrize("kind", KINDS)
def test_full_gradients_equal_autograd(tiny, kind: str) -> None:
    case = tiny(kind)
    model = load_model(case.folder).double()
    model.zero_grad()
    objective(model, case.sequences, case.upstream, case.temperature, case.entropy_weight).backward()
    # named_parameters lists a tied lm_head once, as the embedding (whose grad has both parts).
    want = {name: p.grad.detach() for name, p in model.named_parameters()}
    if model.config.tie_word_embeddings:
        assert "lm_head.weight" not in want
    check_gradients(case.base["gradients"], want, f"{kind} full (T {case.temperature}, w {case.entropy_weight})")


# 1 (d) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_lora_log_probs_and_gradients_equal_peft(tiny, kind: str) -> None:
    case = tiny(kind)
    check_log_probs(case.peft_model(), case.sequences, case.temperature, case.lora["logProbs"], f"{kind} + LoRA")
    model = case.peft_model(trainable=True).double()
    model.zero_grad()
    objective(model, case.sequences, case.upstream, case.temperature, case.entropy_weight).backward()
    want = {peft_key(name): p.grad.detach() for name, p in model.named_parameters() if p.requires_grad}
    assert len(want) == 2 * 3 * model.config.num_hidden_layers
    assert all(v.abs().max() > 0 for v in want.values())  # B is not zero, so A's gradient is not either
    check_gradients(case.lora["gradients"], want, f"{kind} LoRA (T {case.temperature}, w {case.entropy_weight})")


# 2 -------------------------------------------------------------------------------------------------

TRAIN_STEPS = 2
LEARNING_RATE = 1e-2
# Trained weights within 0.1·lr of torch's AdamW. Adam's step g/(√v + ε) amplifies gradient rounding
# where |g| is near ε = 1e-8 (seen: up to 0.025·lr); a wrong update rule is off by ~lr (no bias
# correction: 2·lr and more on the first step).
ADAMW_TOLERANCE = 0.1


def adamw_replica(model: torch.nn.Module, sequences: list[list[int]], steps: int, lr: float) -> None:
    """The probe's training: AdamW (0.9, 0.999, eps 1e-8, no decay, no clipping) on the mean
    negative log-likelihood of every token, in float64."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    total = sum(len(s) - 1 for s in sequences)
    upstream = [[-1.0 / total] * (len(s) - 1) for s in sequences]
    for _ in range(steps):
        optimizer.zero_grad()
        # J = −mean logp is the loss the optimizer descends.
        objective(model, sequences, upstream, 1.0, 0.0).backward()
        optimizer.step()


@pytest.mark.parametrize("kind", KINDS)
def test_full_training_saves_a_folder_transformers_loads(tiny, kind: str) -> None:
    case = tiny(kind)
    saved = case.root / "trained-full"
    answer = case.probe_model(
        "train-full",
        train=case.train_request("full", saved),
    )
    assert Path(answer["saved"]) == saved
    assert {"config.json", "model.safetensors", "generation_config.json"} <= set(os.listdir(saved))
    trained, info = AutoModelForCausalLM.from_pretrained(
        str(saved), dtype=torch.float32, attn_implementation="eager", output_loading_info=True
    )
    trained.eval()
    assert not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    assert type(trained) is type(case.model)
    assert trained.config.tie_word_embeddings == case.model.config.tie_word_embeddings
    assert head_dim(trained.config) == head_dim(case.model.config)
    assert trained.config.rope_parameters == case.model.config.rope_parameters
    # Every weight moved (AdamW's first steps move each by about the learning rate).
    before, after = dict(case.model.named_parameters()), dict(trained.named_parameters())
    assert sorted(before) == sorted(after)
    unchanged = [n for n in before if max_abs(before[n], after[n]) == 0]
    assert not unchanged, f"{kind}: weights the training left unchanged: {unchanged}"
    # The same steps in PyTorch (float64): where the engine's weights land, in units of the step.
    replica = load_model(case.folder).double()
    adamw_replica(replica, case.sequences, TRAIN_STEPS, LEARNING_RATE)
    drift = max(max_abs(after[n], p) for n, p in replica.named_parameters()) / LEARNING_RATE
    moved = max(max_abs(before[n], after[n]) for n in before) / LEARNING_RATE
    log(f"{kind} full training: largest move {moved:.3g}·lr, largest difference from torch AdamW {drift:.3g}·lr")
    assert drift < ADAMW_TOLERANCE, f"{kind}: trained weights differ from torch's AdamW by up to {drift:.3g}·lr"
    # The saved folder scores in the engine as transformers scores it.
    scored = probe(
        {"model": str(saved), "score": {"sequences": case.sequences, "temperature": case.temperature}},
        case.root,
        "score-trained-full",
    )
    check_log_probs(trained, case.sequences, case.temperature, scored["logProbs"], f"{kind} trained (full)")


def check_lora_checkpoint(case: TinyCase, saved: Path, answer: dict, label: str) -> dict[str, torch.Tensor]:
    assert Path(answer["saved"]) == saved
    assert {"adapter_config.json", "adapter_model.safetensors"} <= set(os.listdir(saved))
    config = json.loads((saved / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 8, config
    assert sorted(config["target_modules"]) == sorted(LORA_TARGETS), config
    model = case.peft_model(saved)
    # Every adapter tensor in the file is one peft placed (none left at its initial value by a name mismatch).
    weights = load_file(str(saved / "adapter_model.safetensors"))
    placed = {peft_key(n): p.detach() for n, p in model.named_parameters() if "lora_" in n}
    assert sorted(peft_key(k) for k in weights) == sorted(placed), sorted(weights)
    for key, value in weights.items():
        assert max_abs(value, placed[peft_key(key)]) == 0, key
    scored = probe(
        {
            "model": str(case.folder),
            "adapter": str(saved),
            "score": {"sequences": case.sequences, "temperature": case.temperature},
        },
        case.root,
        f"score-{saved.name}",
    )
    check_log_probs(model, case.sequences, case.temperature, scored["logProbs"], label)
    return {peft_key(k): v for k, v in weights.items()}


@pytest.mark.parametrize("kind", ["llama-tied", "qwen3"])
def test_lora_training_saves_an_adapter_peft_loads(tiny, kind: str) -> None:
    case = tiny(kind)
    saved = case.root / "trained-lora"
    answer = case.probe_model(
        "train-lora",
        adapter=str(case.adapter),
        train=case.train_request("lora", saved),
    )
    trained = check_lora_checkpoint(case, saved, answer, f"{kind} trained (LoRA)")
    original = {peft_key(k): v for k, v in load_file(str(case.adapter / "adapter_model.safetensors")).items()}
    assert sorted(trained) == sorted(original)
    unchanged = [n for n in original if max_abs(original[n], trained[n]) == 0]
    assert not unchanged, f"{kind}: adapter weights the training left unchanged: {unchanged}"
    # The same steps in PyTorch on peft's model (float64).
    replica = case.peft_model(trainable=True).double()
    adamw_replica(replica, case.sequences, TRAIN_STEPS, LEARNING_RATE)
    want = {peft_key(n): p.detach() for n, p in replica.named_parameters() if p.requires_grad}
    drift = max(max_abs(trained[n], want[n]) for n in want) / LEARNING_RATE
    log(f"{kind} LoRA training: largest difference from torch AdamW {drift:.3g}·lr")
    assert drift < ADAMW_TOLERANCE, f"{kind}: trained adapter differs from torch's AdamW by up to {drift:.3g}·lr"


def test_a_fresh_lora_trains_and_saves_an_adapter_peft_loads(tiny) -> None:
    """`lora: {rank, alpha, targetModules}` without an adapter: B starts at zero, training moves it."""
    case = tiny("llama-tied")
    saved = case.root / "trained-fresh-lora"
    answer = case.probe_model(
        "train-fresh-lora",
        lora={"rank": 4, "alpha": 8, "targetModules": LORA_TARGETS},
        train=case.train_request("lora", saved),
    )
    trained = check_lora_checkpoint(case, saved, answer, "llama-tied fresh LoRA trained")
    assert all(v.abs().max() > 0 for k, v in trained.items() if "lora_B" in k)


# 3 -------------------------------------------------------------------------------------------------

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory):
    """SmolLM2-135M-Instruct Q4_1 dequantised by transformers (needs the gguf package), its tokenizer
    from the same file, a ~40-token ChatML prompt and the probe's answers (two runs)."""
    path = Path(os.environ.get("SEARCHER_RL_SMOLLM2_GGUF") or ROOT / ".cache/models" / SMOLLM2_FILE)
    if not path.is_file():
        pytest.skip(f"{path} is absent (scripts/fetch-models.sh fetches it)")
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    text = (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France? Answer in one word.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert 30 <= len(prompt) <= 50, len(prompt)
    folder = tmp_path_factory.mktemp("smollm2")

    cached = probe(
        {
            "model": str(path),
            "score": {"sequences": [prompt]},
            "greedy": {"prompt": prompt, "maxTokens": GREEDY_TOKENS, "cache": True},
        },
        folder,
        "cached",
    )
    uncached = probe(
        {"model": str(path), "greedy": {"prompt": prompt, "maxTokens": GREEDY_TOKENS, "cache": False}},
        folder,
        "uncached",
    )
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    greedy = generate_greedy(model, prompt, GREEDY_TOKENS, cache=True)
    return {
        "margin": min(greedy_margins(model, prompt, greedy)),
        "model": model,
        "tokenizer": tokenizer,
        "prompt": prompt,
        "greedy": greedy,
        "cached": cached,
        "uncached": uncached,
    }


def test_smollm2_gguf_log_probs_equal_transformers(smollm2) -> None:
    check_log_probs(smollm2["model"], [smollm2["prompt"]], 1.0, smollm2["cached"]["logProbs"], "SmolLM2 Q4_1")


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_smollm2_gguf_greedy_tokens_equal_generate(smollm2, cache: bool) -> None:
    """Both of the probe's runs against transformers' cached generate. Its tokens are also checked,
    inside generate_greedy, to be the argmax of one forward over the whole sequence without a cache
    (every step's best/second gap is ≥ 0.01 here), which is what generate(use_cache=False) would
    give at 64 full forwards' cost (minutes on 2 cores)."""
    model, prompt, want = smollm2["model"], smollm2["prompt"], smollm2["greedy"]
    got = smollm2["cached" if cache else "uncached"]["greedy"]
    ok, note = compare_greedy(model, prompt, got, want)
    text = smollm2["tokenizer"].decode(want)
    log(f"SmolLM2 greedy cache={cache}: {note}; smallest best/second gap {smollm2['margin']:.3g}; text {text[:60]!r}")
    assert ok, f"SmolLM2 greedy (cache={cache}): {note}\n probe        {got}\n transformers {want}"
