"""Hugging Face checkpoints both ways, against the released transformers, tokenizers and safetensors.

1. A checkpoint written by a TypeScript run (a tiny slide run: SFT warm start and RL steps, made by
   test/support/hf-roundtrip.ts) loads with AutoModelForCausalLM and AutoTokenizer; the tokenizer
   encodes the slide environment's prompts and episodes to the TS tokenizer's ids, and the model's
   logits equal the TS forward's.
2. A tiny GPT-2 made and saved by transformers (random weights, a byte-level BPE tokenizer trained
   here, offline) loads into the TS policy (`createTfjsPolicy({ initFrom })`) with the same ids and
   logits; the protocol tags it adds are the tokens `add_tokens` would add, their embedding rows the
   mean of their pieces'. The same weights under GPT-2's published tensor names load too.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-4
PROTOCOL_TAGS = [
    f"<{'/' if closing else ''}{tag}>"
    for tag in ["think", "search", "bbox", "search_complete", "answer", "information"]
    for closing in (False, True)
]


def tsx(*args: str) -> None:
    """Runs test/support/hf-roundtrip.ts with the repository's tsx (Node only, nothing remote)."""
    env = {**os.environ, "NO_COLOR": "1"}
    result = subprocess.run(
        ["npx", "--no-install", "tsx", "test/support/hf-roundtrip.ts", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"tsx {' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def test_a_checkpoint_written_by_a_ts_run_loads_in_transformers(tmp_path: Path) -> None:
    tsx("export", str(tmp_path))
    exported = json.loads((tmp_path / "export.json").read_text())
    folder = exported["folder"]
    assert sorted(os.listdir(folder)) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "optimizer.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == "GPT2LMHeadModel"
    assert model.config.vocab_size == exported["vocabSize"] == len(tokenizer)
    # The optimizer's moments sit beside the model, not in it.
    assert all(not k.startswith("exp_avg") for k in load_file(os.path.join(folder, "model.safetensors")))
    cases = exported["cases"]
    assert {c["kind"] for c in cases} == {"prompt", "episode"} and len(cases) >= 6
    for case in cases:
        text = case["text"]
        # Same ids as the TS tokenizer, with and without special-token handling (none is added).
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == case["textIds"], text
        assert tokenizer(text)["input_ids"] == case["textIds"], text
        assert tokenizer.decode(case["textIds"]) == text
        with torch.no_grad():
            logits = model(torch.tensor([case["ids"]])).logits[0]
        assert max_diff(logits, torch.tensor(case["logits"])) < TOLERANCE, case["kind"]
    # A turn ends on a closing action tag: generate() stops there too.
    generation = json.loads(Path(folder, "generation_config.json").read_text())
    stops = tokenizer.convert_ids_to_tokens(generation["eos_token_id"])
    assert stops == ["<eos>", "</search>", "</bbox>", "</search_complete>", "</answer>"]
    # The folder read back by the TS policy (initFrom) gives the run's own numbers.
    assert exported["rereadMaxDiff"] == 0


def test_the_tokenizer_json_gives_the_ts_ids_on_random_texts(tmp_path: Path) -> None:
    """Property over 5,000 seeded texts (unicode, tags inside words, number lists, one-byte words):
    the released tokenizers (Rust) and transformers' AutoTokenizer give the TS tokenizer's ids."""
    tsx("tokenizer", str(tmp_path), "5000")
    cases = json.loads((tmp_path / "texts.json").read_text())
    assert len(cases) == 5000
    rust = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "TokenizersBackend"}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    auto = AutoTokenizer.from_pretrained(str(tmp_path))
    wrong = [c["text"] for c in cases if rust.encode(c["text"], add_special_tokens=False).ids != c["ids"]]
    assert wrong == []
    wrong = [c["text"] for c in cases if auto(c["text"], add_special_tokens=False)["input_ids"] != c["ids"]]
    assert wrong == []
    undecoded = [c["text"] for c in cases if rust.decode(c["ids"], skip_special_tokens=False) != c["text"]]
    assert undecoded == []


def tiny_gpt2(folder: Path) -> tuple[GPT2LMHeadModel, GPT2Tokenizer]:
    """A GPT-2 made by transformers, saved with a byte-level BPE tokenizer trained here (offline)."""
    corpus = [
        "Corcor revenue grew 4.5 billion dollars in 2019, the report says.",
        "What was the revenue of Corcor in 2019? Search the slides first.",
        "Small print at the bottom right: net margin 12 percent, up from 9.",
        "한국 시장 매출 图中显示 the image shows a chart 😀",
    ] * 20
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    # GPT2Tokenizer: the class AutoTokenizer gives a GPT-2 folder, and what its save_pretrained writes.
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tokenizer = GPT2Tokenizer(vocab=trained["vocab"], merges=merges)
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=eos, eos_token_id=eos
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).eval()
    # Weights far from GPT-2's initialisation (biases and norms included), so that any mismatch in
    # layout, split order or scaling shows in the logits.
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else 0.0))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


TEXTS = [
    "What was the revenue of Corcor in 2019?",
    "Small print: net margin 12 percent.",
    "한국 图中 😀 unseen-words zzz",
    "<think>look for the margin</think>\n<search>Corcor margin 2019</search>",
    "<information>page-3.png: revenue 4.5 billion</information><bbox>[36, 326, 300, 350]</bbox>",
]


def ts_forward(folder: Path, tmp_path: Path) -> dict:
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(TEXTS))
    out = tmp_path / f"{folder.name}.json"
    tsx("forward", str(folder), str(texts), str(out))
    return json.loads(out.read_text())


def test_a_gpt2_saved_by_transformers_loads_into_the_ts_policy(tmp_path: Path) -> None:
    folder = tmp_path / "tiny-gpt2"
    model, tokenizer = tiny_gpt2(folder)
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "GPT2Tokenizer"
    ts = ts_forward(folder, tmp_path)
    vocab = len(tokenizer)
    assert ts["eos"] == tokenizer.eos_token_id
    # The tags the TS policy added are the tokens transformers' add_tokens gives, in the same order.
    pieces = {tag: tokenizer(tag, add_special_tokens=False)["input_ids"] for tag in PROTOCOL_TAGS}
    assert tokenizer.add_tokens(PROTOCOL_TAGS) == len(PROTOCOL_TAGS)
    assert ts["tags"] == {tag: tokenizer.convert_tokens_to_ids(tag) for tag in PROTOCOL_TAGS}
    assert ts["vocabSize"] == vocab + len(PROTOCOL_TAGS)
    # Their embedding rows: the mean of their pieces' rows.
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    with torch.no_grad():
        table = model.get_input_embeddings().weight
        for tag, ids in pieces.items():
            table[tokenizer.convert_tokens_to_ids(tag)] = table[ids].mean(0)
    for row, text in zip(ts["rows"], TEXTS):
        assert row["ids"] == tokenizer(text, add_special_tokens=False)["input_ids"], text
        with torch.no_grad():
            logits = model(torch.tensor([row["ids"]])).logits[0]
        assert max_diff(logits, torch.tensor(row["logits"])) < TOLERANCE, text

    # GPT-2 as published (openai-community/gpt2, distilgpt2): tensor names without `transformer.`.
    published = tmp_path / "published"
    published.mkdir()
    weights = load_file(str(folder / "model.safetensors"))
    save_file(
        {k.removeprefix("transformer."): v.contiguous() for k, v in weights.items() if k != "lm_head.weight"},
        str(published / "model.safetensors"),
        metadata={"format": "pt"},
    )
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (published / name).write_bytes((folder / name).read_bytes())
    again = ts_forward(published, tmp_path)
    assert [r["ids"] for r in again["rows"]] == [r["ids"] for r in ts["rows"]]
    for a, b in zip(again["rows"], ts["rows"]):
        assert max_diff(torch.tensor(a["logits"]), torch.tensor(b["logits"])) == 0
