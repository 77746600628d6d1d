"""Pre-training under torchrun (2 CPU processes, gloo) against one process with the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from lib.settings import REPO_ROOT

from .ddp_worker import EVAL_EVERY, STEPS

# float32 sums of the same numbers in another order differ in the last bits (~1e-7 relative); over 20 Adam steps of a
# tiny model those differences stay far below 1e-4 of the loss, while a wrong global batch (a rank training on the
# whole batch, a loss averaged per rank instead of over the global batch's tokens) moves it by more than 1e-3.
RTOL = 1e-4


def _run(tmp_path, name: str, processes: int, *args: str) -> dict:
    out, checkpoints = tmp_path / f"{name}.pt", tmp_path / f"{name}-checkpoints"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"] if processes > 1 else [sys.executable]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [*launch, "-m", "tests.ddp_worker", str(out), str(checkpoints), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return torch.load(out, weights_only=True) if out.exists() else {}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("single"), "single", 1)


def _same_run(a: dict, b: dict) -> None:
    for column in ("step", "train_loss", "valid_loss"):
        np.testing.assert_allclose(a["history"][column], b["history"][column], rtol=RTOL, err_msg=column)
    for name, weight in a["weights"].items():
        torch.testing.assert_close(b["weights"][name], weight, rtol=1e-3, atol=1e-4, msg=name)


def test_two_processes_follow_the_single_process_trajectory(tmp_path, single):
    assert single["history"]["step"] == list(range(EVAL_EVERY, STEPS + 1, EVAL_EVERY))
    _same_run(single, _run(tmp_path, "ddp", 2))
    _same_run(single, _run(tmp_path, "accumulated", 1, "--micro-batch", "3"))  # 3 + 3 + 2 blocks: the same step


def test_a_checkpoint_written_by_two_processes_resumes_in_one(tmp_path, single):
    first = _run(tmp_path, "resume", 2, "--stop-after", "12")  # the checkpoint of step 10 stays
    assert first == {}
    resumed = _run(tmp_path, "resume", 1)
    _same_run(single, resumed)


def test_torchrun_trains_the_runs_chapter_05_then_reuses(tmp_path, shared_data):
    """`torchrun -m lib.edition.train_ahead` (2 processes) saves the quick profile's runs where chapter 05 finds them; a
    second launch trains nothing."""
    from lib.core.profiles import chapter_parameters
    from lib.experiments.pretraining import pretraining_runs
    from lib.train import masked_lm

    changes = {"steps": 4, "eval_every": 2, "warmup": 1, "seeds": 1, "track_blocks": 2, "device": "cpu"}  # two processes on a machine of one GPU too
    args = []
    for name, value in changes.items():
        args += ["-p", name, str(value)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "BOOK_MODELS_DIR": str(tmp_path / "models"), "BOOK_CACHE_DIR": str(tmp_path / "cache")}
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "lib.edition.train_ahead", "--profile", "quick", *args]
    done = subprocess.run(launch, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(": to train") == 2 and done.stdout.count(": saved in ") == 1  # one line for both runs
    _, configs = pretraining_runs({**chapter_parameters("05_pretraining", "quick"), **changes})  # what the chapter computes
    for name, cfg in configs.items():
        history, _ = masked_lm.saved_run(tmp_path / "models" / name, cfg)
        assert list(history["step"]) == [2, 4]
    again = subprocess.run(launch, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and again.stdout.count(": saved with these settings") == 2 and ": to train" not in again.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "nope"], "unknown profile 'nope'"),
        (["--profile", "quick", "-p", "steps", "abc"], "parameter steps must be an integer"),
        (["--profile", "quick", "-p", "names", "[a, b"], "-p names: '[a, b' is not a YAML value"),
        (["--profile", "quick", "--only", "xyz"], "--only: no run xyz; the runs are quick-roberta-pe"),
    ],
)
def test_the_launcher_refuses_bad_input_before_training(args, message, capsys):
    from lib.edition import train_ahead

    with pytest.raises(SystemExit) as stop:
        train_ahead.main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and message in err


def test_a_build_trains_each_unsaved_run_ahead_as_a_command_of_its_own(tmp_path, shared_data, monkeypatch):
    """`train_ahead.ahead`: one command per run not saved with the planned values, named after the chapter; a command
    saves its run where the chapter looks, so the next plan leaves it out; with retrain the chapter trains itself."""
    from lib.core.profiles import plan
    from lib.edition import train_ahead

    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    changes = {"steps": 4, "eval_every": 2, "warmup": 1, "seeds": 1, "track_blocks": 2, "device": "cpu"}
    ((_, params),) = plan("quick", ["05_pretraining"], changes)
    commands = train_ahead.ahead("quick", params)
    assert list(commands) == ["05_pretraining:quick-roberta-pe", "05_pretraining:quick-roberta-nope"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(commands["05_pretraining:quick-roberta-nope"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "quick-roberta-nope: to train" in done.stdout and "quick-roberta-pe: not asked for" in done.stdout
    assert list(train_ahead.ahead("quick", params)) == ["05_pretraining:quick-roberta-pe"]
    assert list(train_ahead.ahead("quick", {**params, "steps": 6})) == list(commands)  # other settings: saved runs do not count
    assert train_ahead.ahead("quick", {**params, "retrain": True}) == {}
