"""The ONNX policy's fixtures (src/adapters/onnx/__fixtures__) against the released transformers.

scripts/make-onnx-fixture.py made each fixture with transformers 4.57 and Optimum's exporter (an
environment of its own, python/export-requirements.txt: optimum-onnx needs transformers<4.58) and
wrote reference.json: token ids, greedy continuations and per-token log-probs. The vitest suite
checks the ONNX policy against reference.json; these tests check that reference.json is still what
the tests' transformers computes from the committed weights (hf/, as save_pretrained wrote it), and
that the committed model.onnx is those weights, so neither can drift from transformers.
"""

import json
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

FIXTURES = Path(__file__).resolve().parents[2] / "src" / "adapters" / "onnx" / "__fixtures__"
NAMES = ["tiny-gpt", "tiny-gemma"]
# Both sides run the model in float64 (transformers 4.57 then, the pinned release now). GPT-2 is
# float64 throughout and agrees to rounding; Gemma's RMSNorm computes in float32 whatever the
# model's dtype (GemmaRMSNorm casts to float), so its log-probs carry float32 rounding (1.4e-6
# apart between 4.57.6 and 5.24.0). The ONNX graph runs in float32.
LOG_PROB_TOLERANCE = {"tiny-gpt": 1e-9, "tiny-gemma": 1e-5}
ONNX_LOGIT_TOLERANCE = 1e-4


def reference(name: str) -> dict:
    return json.loads((FIXTURES / name / "reference.json").read_text())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("folder", ["hf", "."])
def test_the_tokenizer_encodes_as_reference_json_says(name: str, folder: str) -> None:
    data = reference(name)
    tokenizer = AutoTokenizer.from_pretrained(FIXTURES / name / folder)
    for text, ids in data["encodings"].items():
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == ids, text
        assert tokenizer.decode(ids) == text
    for prompt in data["prompts"]:
        assert tokenizer(prompt["text"], add_special_tokens=False)["input_ids"] == prompt["promptIds"]
    for token, token_id in data["addedTokens"].items():
        assert tokenizer.convert_tokens_to_ids(token) == token_id
        assert tokenizer(token, add_special_tokens=False)["input_ids"] == [token_id]
    assert tokenizer.eos_token_id == data["eosTokenId"]
    assert len(tokenizer) == data["vocabSize"]


@pytest.mark.parametrize("name", NAMES)
def test_greedy_tokens_and_log_probs_are_what_transformers_computes(name: str) -> None:
    data = reference(name)
    model = AutoModelForCausalLM.from_pretrained(FIXTURES / name / "hf").double().eval()
    assert model.config.vocab_size == data["vocabSize"]
    worst = 0.0
    with torch.no_grad():
        for prompt in data["prompts"]:
            sequence = prompt["promptIds"] + [s["tokenId"] for s in prompt["greedy"]]
            log_probs = F.log_softmax(model(input_ids=torch.tensor([sequence]), use_cache=False).logits[0], dim=-1)
            start = len(prompt["promptIds"])
            for k, step in enumerate(prompt["greedy"]):
                row = log_probs[start + k - 1]
                assert int(torch.argmax(row)) == step["tokenId"], f"{prompt['text']!r} step {k}"
                worst = max(worst, abs(row[step["tokenId"]].item() - step["logProb"]))
    print(f"{name}: largest log-prob difference {worst:.2e}")
    assert worst < LOG_PROB_TOLERANCE[name]


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_onnx_export_is_the_committed_weights(name: str) -> None:
    data = reference(name)
    folder = FIXTURES / name
    # Optimum writes the model's config.json beside model.onnx: the same model.
    assert json.loads((folder / "config.json").read_text()) == json.loads((folder / "hf" / "config.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(folder / "hf").eval()
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    worst = 0.0
    for prompt in data["prompts"]:
        sequence = prompt["promptIds"] + [s["tokenId"] for s in prompt["greedy"]]
        n = len(sequence)
        feeds = {}
        for value in session.get_inputs():
            if value.name == "input_ids":
                feeds[value.name] = np.array([sequence], dtype=np.int64)
            elif value.name == "attention_mask":
                feeds[value.name] = np.ones((1, n), dtype=np.int64)
            elif value.name == "position_ids":
                feeds[value.name] = np.arange(n, dtype=np.int64)[None, :]
            else:
                heads, width = value.shape[1], value.shape[3]
                feeds[value.name] = np.zeros((1, heads, 0, width), dtype=np.float32)
        logits = session.run(["logits"], feeds)[0]
        with torch.no_grad():
            expected = model(input_ids=torch.tensor([sequence]), use_cache=False).logits.numpy()
        worst = max(worst, float(np.abs(logits - expected).max()))
    print(f"{name}: largest logit difference ONNX Runtime vs transformers {worst:.2e}")
    assert worst < ONNX_LOGIT_TOLERANCE
