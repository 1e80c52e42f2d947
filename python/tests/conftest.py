"""Fixtures shared by the trainer-side tests: serve-env processes of this checkout and a small SFT
checkpoint made by the CLI. Each is started once per pytest session, and only when a test asks.
The helpers (the serve-env launcher, a stand-in judge) are python/testing's, shared with python/tests_verl."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testing"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from serve_env import TINY_CORPUS, TINY_EPISODE, FakeJudge, ServeEnv, evaluation_run_config, judged_config, searcher_cli, write_config  # noqa: E402

# A token with characters a URL reserves: the glue must percent-encode it (a raw one gets 401).
TOKEN = "t@k:/27#?%&x"


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trainers")


@pytest.fixture(scope="session")
def corpus(workdir: Path) -> dict:
    return {**TINY_CORPUS, "cacheDir": str(workdir / "corpus")}


@pytest.fixture(scope="session")
def serve_config(workdir: Path, corpus: dict) -> Path:
    """The tiny slide environment with phase 1's reward (0.1 + 0.9·NDCG when the format passes)."""
    return write_config(
        workdir / "serve.json",
        {"corpus": corpus, "searcher": {"episode": TINY_EPISODE, "reward": {"weights": "phase1"}}},
    )


@pytest.fixture(scope="session")
def server(workdir: Path, serve_config: Path):
    """serve-env with a token, the default idle timeout, at most 64 sessions."""
    env = ServeEnv(TOKEN, config=serve_config, log_path=workdir / "serve.log")
    yield env
    env.close()


@pytest.fixture(scope="session")
def strict_server(workdir: Path, serve_config: Path):
    """serve-env that ends a session silent for 1.5 s and holds one session at a time."""
    env = ServeEnv(TOKEN, "--idle-timeout-ms", "1500", "--max-sessions", "1", config=serve_config, log_path=workdir / "strict.log")
    yield env
    env.close()


@pytest.fixture(scope="session")
def fake_judge():
    """A judge endpoint that fails (HTTP 500) on the calls a test chooses (`reset`)."""
    judge = FakeJudge(lambda n: 1.0)
    yield judge
    judge.close()


@pytest.fixture(scope="session")
def judged_server(workdir: Path, corpus: dict, fake_judge: FakeJudge):
    """serve-env whose judge is `fake_judge` (OpenAI Responses API, no retries): the default reward
    (judge 0.8, NDCG 0.2), missing wherever the judge failed."""
    config = judged_config(workdir / "judged.json", corpus, fake_judge)
    env = ServeEnv(TOKEN, config=config, log_path=workdir / "judged.log")
    yield env
    env.close()


@pytest.fixture(scope="session")
def sft_checkpoint(workdir: Path, corpus: dict) -> Path:
    """A small SFT warm start made by `searcher-rl train` on the tiny slide environment (the demo's
    policy and episode settings, fewer demonstrations): a Hugging Face GPT-2 folder that emits
    valid action tags and copies the question into its query: 14 epochs make about 1,050 optimizer
    steps, so its names are fresh (`sft.freshNames`, on from 1,000; with 3 epochs it wrote tags but
    rarely found a page, and GRPO's reward sat at the format's 0.1). SEARCHER_RL_SFT_CHECKPOINT
    names an existing one instead (e.g. the demo's)."""
    given = os.environ.get("SEARCHER_RL_SFT_CHECKPOINT")
    if given:
        return Path(given)
    config = evaluation_run_config(
        workdir / "sft.json",
        workdir / "runs",
        "tiny-sft",
        corpus,
        {"layers": 2, "width": 64, "heads": 4, "contextLength": 256, "tokenizer": "vocabulary"},
        sft={"demonstrations": 400, "epochs": 14, "batchSize": 8, "learningRate": 3.0e-3},
    )
    searcher_cli("train", "--config", str(config))
    folder = workdir / "runs/tiny-sft/sft/blobs/checkpoints/step-00000000/policy"
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    return folder


@pytest.fixture(scope="session")
def chat_model(sft_checkpoint, tmp_path_factory) -> Path:
    """A tiny random GPT-2 with a chat tokenizer: the SFT checkpoint's tokenizer plus <|im_start|>
    and <|im_end|> (end of turn), and TRL's Qwen3 chat template (tool calls it can parse)."""
    import trl
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
    from trl.chat_template_utils import supports_tool_calling

    out = tmp_path_factory.mktemp("chat-model")
    tokenizer = AutoTokenizer.from_pretrained(sft_checkpoint)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    assert supports_tool_calling(tokenizer)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=8192))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out
