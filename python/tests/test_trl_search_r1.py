"""python/scripts/trl_search_r1.py (the trl row of `npm run bench:search-r1`): the settings it takes
from a finished run's resolved config, and its refusals, each naming the config field, where TRL's
GRPO cannot run what the SDK's run ran."""

from __future__ import annotations

import copy
import json
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("trl_search_r1", ROOT / "python/scripts/trl_search_r1.py")
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

CONFIG = {
    "seed": 1,
    "phases": [{"name": "grpo", "steps": 10, "weights": "default", "learningRate": 1e-4, "warmupSteps": 0}],
    "trainer": {"batchSize": 4},
    "searcher": {
        "episode": {"mode": "answer", "maxTurns": 3, "maxTurnTokens": 32, "temperature": 1, "topP": 1},
        "reward": {"scheme": "search-r1"},
        "rl": {
            "nAgent": 4,
            "loss": {"kind": "gspo", "clipLow": 3e-4, "clipHigh": 4e-4, "aggregation": "seq-mean-token-mean", "klCoef": 0},
            "ppoEpochs": 1,
            "miniBatchSize": None,
        },
        "adapters": {"policy": {"type": "llama", "model": "m.gguf", "finetune": "lora"}},
    },
}


def with_value(path: str, value):
    config = copy.deepcopy(CONFIG)
    node = config
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[keys[-1]] = value
    return config


def test_the_phase_the_policy_the_episode_and_the_rl_settings_are_taken_from_the_run():
    settings = script.task_settings(CONFIG)
    assert settings["phase"]["learningRate"] == 1e-4 and settings["phase"]["steps"] == 10
    assert settings["episode"]["maxTurnTokens"] == 32 and settings["rl"]["nAgent"] == 4
    assert settings["policy"]["model"] == "m.gguf"


def test_a_phase_without_steps_is_not_the_one_trained():
    config = copy.deepcopy(CONFIG)
    config["phases"].insert(0, {"name": "warm", "steps": 0, "learningRate": 1e-3, "warmupSteps": 0})
    assert script.task_settings(config)["phase"]["name"] == "grpo"


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("searcher.rl.loss.kind", "ppo", "searcher.rl.loss.kind"),
        ("searcher.rl.loss.aggregation", "token-mean", "searcher.rl.loss.aggregation"),
        ("searcher.rl.loss.klCoef", 0.001, "searcher.rl.loss.klCoef"),
        ("searcher.rl.ppoEpochs", 2, "searcher.rl.ppoEpochs"),
        ("searcher.rl.miniBatchSize", 8, "searcher.rl.ppoEpochs"),
        ("phases.0.steps", 0, "phases"),
        ("searcher.adapters.policy.finetune", "full", "searcher.adapters.policy"),
        ("searcher.adapters.policy.type", "onnx", "searcher.adapters.policy"),
    ],
)
def test_a_setting_trl_cannot_match_is_refused_by_its_field(path, value, field):
    with pytest.raises(SystemExit, match=f"config field {field} "):
        script.task_settings(with_value(path, value))


def test_a_hugging_face_folder_is_used_as_it_is(tmp_path):
    assert script.dequantised(tmp_path) == tmp_path


def _sft_checkpoint(run: Path, metadata: dict) -> None:
    step = run / "sft/blobs/checkpoints/step-00000004"
    (step / "policy").mkdir(parents=True)
    (step / "state.json").write_text(json.dumps({"policy": {"format": "searcher-rl.llama.v1", "metadata": metadata}}))


def test_the_optimizer_settings_are_the_sft_checkpoints_and_an_older_one_is_refused(tmp_path):
    settings = {"learningRate": 1e-3, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6, "weightDecay": 0.01, "maxGradNorm": None, "warmupSteps": 0}
    _sft_checkpoint(tmp_path / "new", {"optimizerStep": 92, "optimizer": settings})
    assert script.sft_optimizer(tmp_path / "new") == settings
    _sft_checkpoint(tmp_path / "old", {"optimizerStep": 92})
    with pytest.raises(SystemExit, match="does not record its optimizer settings"):
        script.sft_optimizer(tmp_path / "old")
