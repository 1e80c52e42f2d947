"""A short run of the CLI (`searcher-rl train`) with `trackers: [jsonl, tensorboard, mlflow]`,
checked by TensorBoard's own event reader and a real MLflow tracking server (pinned in
python/requirements.txt), started here on 127.0.0.1 with a SQLite backend. About two minutes on a
shared 2-core machine, most of it the MLflow server's start."""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from serve_env import ROOT, free_port

TOKEN = "mlflowtokencanary0000000000000042"
EXPERIMENT = "searcher-rl-tests"


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(folder / "server.log", "wb")
    mlflow = Path(sys.executable).parent / "mlflow"
    server = subprocess.Popen(
        [
            str(mlflow) if mlflow.exists() else "mlflow",
            "server",
            "--host", "127.0.0.1",
            "--port", str(port),
            "--workers", "1",
            "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
            "--default-artifact-root", str(folder / "artifacts"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"mlflow server did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def tiny_config(root: Path, mlflow_url: str) -> dict:
    return {
        "runsDir": str(root / "runs"),
        "runId": "tiny",
        "corpus": {"decks": 4, "minSlides": 5, "maxSlides": 5, "smallPrintRate": 0.5, "cacheDir": str(root / "corpus")},
        "policy": {"layers": 1, "width": 16, "heads": 2, "contextLength": 192, "backend": "wasm"},
        "sft": {"demonstrations": 16, "epochs": 1, "batchSize": 4},
        "phases": [
            {"name": "phase1", "steps": 6, "weights": "phase1"},
            {"name": "phase2", "steps": 2, "weights": "default"},
        ],
        # Checkpoints at each phase's start and end only: a run stopped in phase 1 runs it again from step 1.
        "trainer": {"batchSize": 2, "saveFreq": 100},
        "searcher": {
            "episode": {"instructions": "", "maxTurns": 2, "maxTurnTokens": 12, "maxContextTokens": 192, "observationMaxChars": 30},
            "rl": {"nAgent": 2},
        },
        "evaluation": {"limit": 4},
        # A long timeout: the server (one worker, SQLite) shares a loaded 2-core machine in CI.
        "trackers": [
            "jsonl",
            "tensorboard",
            {"type": "mlflow", "trackingUri": mlflow_url, "experiment": EXPERIMENT, "timeoutMs": 120000},
        ],
    }


def train(config: dict, folder: Path, stop_after: str | None = None) -> str:
    """`searcher-rl train --config`; with `stop_after`, Ctrl-C (SIGINT) once that line is printed,
    to the CLI's own process (`node --import tsx`, one process: the `tsx` command relays a signal to
    its child and SIGKILLs it when the child has not answered within 30 ms, which a busy machine
    makes happen; npx would not pass it on at all)."""
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    env = {**os.environ, "MLFLOW_TRACKING_TOKEN": TOKEN}
    command = (
        [shutil.which("node") or "node", "--import", "tsx"]
        if stop_after
        else [shutil.which("npx") or "npx", "tsx"]
    ) + ["src/cli/main.ts", "train", "--config", str(path)]
    interrupted = stop_after is not None
    run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in run.stdout:
            lines.append(line)
            if stop_after and stop_after in line:
                run.send_signal(signal.SIGINT)
                stop_after = None
        code = run.wait(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
    output = "".join(lines)
    # 130: stopped by Ctrl-C at a safe point, what was done kept.
    assert code == (130 if interrupted else 0), output[-3000:]
    return output


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mlflow_server):
    """The run stopped by Ctrl-C after phase 1's second step, then continued by the same command:
    phase 1 runs again from its step 1 (its last checkpoint is its start)."""
    folder = tmp_path_factory.mktemp("run")
    config = tiny_config(folder, mlflow_server)
    first = train(config, folder, stop_after="phase1 2/6")
    run_dir = folder / "runs" / "tiny"
    stopped = step_metrics(run_dir, PHASES)
    second = train(config, folder)
    return {"dir": run_dir, "outputs": [first, second], "stopped": stopped}


PHASES = [("phase1", 6), ("phase2", 2)]


def step_metrics(run_dir: Path, phases) -> dict:
    """Each phase's step metrics from the run folder (metric.jsonl), by the run's step; of a step run
    twice, the later record (the one the run folder's readers keep)."""
    out, offset = {}, 0
    for name, steps in phases:
        log = run_dir / name / "metric.jsonl"
        for line in log.read_text().splitlines() if log.exists() else []:
            record = json.loads(line)
            out[offset + record["step"]] = (name, record["data"])
        offset += steps
    return out


def scalar_tags(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}


def test_tensorboard_reader_finds_every_step_metric(runs):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = runs["dir"]
    events = run_dir / "tensorboard"
    assert len([f for f in os.listdir(events) if "tfevents" in f]) == 2  # one file per attempt
    accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    expected = step_metrics(run_dir, PHASES)
    assert sorted(expected) == [1, 2, 3, 4, 5, 6, 7, 8]
    # Phase 1's first steps were run again: their timing differs from the stopped attempt's.
    assert 2 in runs["stopped"] and expected[2][1]["rolloutMs"] != runs["stopped"][2][1]["rolloutMs"]
    checked = 0
    for run_step, (phase, data) in expected.items():
        for key, value in scalar_tags(data).items():
            tag = f"{phase}/{key}"
            assert tag in tags, tag
            at_step = [e.value for e in accumulator.Scalars(tag) if e.step == run_step]
            # One value a step (the restart event drops the stopped attempt's), as a float32.
            assert len(at_step) == 1, (tag, run_step, at_step)
            assert at_step[0] == struct.unpack("f", struct.pack("f", value))[0], (tag, run_step)
            checked += 1
    assert checked >= 8 * 25
    for evaluation, step in (("eval-before-rl", 0), ("eval-after-rl", 8)):
        summary = json.loads((run_dir / f"{evaluation}.json").read_text())
        for key in ("judgeSuccess", "ndcg", "completion", "cropRate", "questions"):
            values = {e.step: e.value for e in accumulator.Scalars(f"{evaluation}/{key}")}
            assert values[step] == pytest.approx(summary[key], abs=1e-6), (evaluation, key)
    config = accumulator.Tensors("config")[-1].tensor_proto.string_val[0].decode()
    assert "| policy.layers | 1 |" in config and "| phases.0.steps | 6 |" in config


def test_mlflow_server_holds_the_runs_params_and_metrics(runs, mlflow_server):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    found = client.search_runs([experiment.experiment_id])
    # The continued run logged into the same MLflow run (KILLED by the Ctrl-C, then continued).
    assert len(found) == 1
    run = found[0]
    assert run.info.run_name == "tiny" and run.info.status == "FINISHED"
    state = json.loads((runs["dir"] / "trackers.json").read_text())["mlflow"]
    assert state["resume"]["runId"] == run.info.run_id and state["failures"] == 0
    params = run.data.params
    assert params["policy.layers"] == "1" and params["phases.0.name"] == "phase1" and params["phases.0.steps"] == "6"
    assert params["trackers.2.trackingUri"] == mlflow_server
    expected = step_metrics(runs["dir"], PHASES)
    checked = 0
    histories = {}
    for run_step, (phase, data) in expected.items():
        for key, value in scalar_tags(data).items():
            tag = f"{phase}/{key}"
            if tag not in histories:
                histories[tag] = client.get_metric_history(run.info.run_id, tag)
            at_step = [m for m in histories[tag] if m.step == run_step]
            assert at_step, (tag, run_step)
            # The latest value of a step is this attempt's.
            assert max(at_step, key=lambda m: m.timestamp).value == pytest.approx(value, rel=1e-12, abs=1e-12)
            checked += 1
    assert checked >= 8 * 25
    after = json.loads((runs["dir"] / "eval-after-rl.json").read_text())
    history = client.get_metric_history(run.info.run_id, "eval-after-rl/judgeSuccess")
    assert [m.value for m in history if m.step == 8] == [pytest.approx(after["judgeSuccess"])]


def test_the_token_reaches_no_output_and_no_file(runs):
    assert all(TOKEN not in output for output in runs["outputs"])
    for path in runs["dir"].rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
