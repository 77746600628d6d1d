"""Chapters executed without Jupyter (`lib.edition.headless`), as on a borrowed GPU machine that has no notebook
tooling, and the packing of what such a machine needs (`scripts/gpu_edition.py`)."""

import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest

from lib.core import sources
from lib.edition import headless
from lib.encode.models import minilm_path
from lib.errors import BookError
from lib.experiments.verdicts import VERDICTS
from lib.settings import REPO_ROOT
from lib.train import workers

BARE = Path(__file__).parent / "bare_python"  # sitecustomize: IPython, nbformat, jupytext, papermill, … cannot be imported

TOY = """# %% [markdown]
# # A toy chapter

# %% tags=["parameters"]
n = 2
word = "a"

# %%
import json
print(json.dumps({"n": n, "word": word}))

# %%
1 / (n - 3)
"""


def test_parameters_come_in_after_their_cell_and_a_failing_cell_is_named(tmp_path, monkeypatch, capsys):
    (tmp_path / "99_toy.py").write_text(TOY)
    monkeypatch.setattr(sources, "NOTEBOOKS", tmp_path)
    headless.execute("99_toy", {"n": 4, "word": "b"})  # 1 / (4 - 3): the injected n, not the cell's 2
    assert '{"n": 4, "word": "b"}' in capsys.readouterr().out
    with pytest.raises(BookError, match=r"chapter 99_toy failed in cell 3 \(line 13\): ZeroDivisionError"):
        headless.execute("99_toy", {"n": 3})


def test_a_chapter_runs_where_notebook_tooling_is_missing(tmp_path, shared_data):
    """Chapter 01 of the quick edition, headless, in a Python that cannot import IPython, nbformat, jupytext, papermill
    or the MiniLM package (MiniLM read from a folder, as `gpu_edition pack` ships it): its tables are written."""
    env = {**os.environ, "PYTHONPATH": f"{BARE}{os.pathsep}{REPO_ROOT}", "BOOK_MINILM_DIR": str(minilm_path())}
    env |= {"BOOK_RESULTS_DIR": str(tmp_path / "results"), "BOOK_CACHE_DIR": str(tmp_path / "cache"), "MPLBACKEND": "Agg"}
    probe = subprocess.run([sys.executable, "-c", "import IPython"], env=env, capture_output=True, text=True)
    assert "not on the GPU machine" in probe.stderr  # the stand-in for that machine works
    done = subprocess.run(
        [sys.executable, "-m", "lib.edition.headless", "01_anisotropy", "--profile", "quick", "--seconds-to", str(tmp_path / "s.json")],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tables = sorted((tmp_path / "results" / "quick").rglob("*.csv"))
    assert tables and all(len(pd.read_csv(t)) > 0 for t in tables)
    assert "01_anisotropy" in (tmp_path / "s.json").read_text()


def test_a_bad_parameter_is_one_line(capsys):
    """The command's whole path but the interpreter's start (which the test above takes): stopped while planning."""
    with pytest.raises(SystemExit) as stopped:
        headless.main(["01_anisotropy", "-p", "no_such_thing", "1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.strip().count("\n") == 0 and err.startswith("error: unknown parameter 'no_such_thing' for 01_anisotropy")


def test_gpu_slots_follow_the_gpu_memory(monkeypatch):
    class Props:
        total_memory = 80 * 2**30

    monkeypatch.setattr(workers.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(workers.torch.cuda, "get_device_properties", lambda _: Props())
    assert workers.gpu_slots() == 80 // workers.SLOT_GIB
    Props.total_memory = 4 * 2**30
    assert workers.gpu_slots() == 1
    monkeypatch.setattr(workers.torch.cuda, "is_available", lambda: False)
    assert workers.gpu_slots() == 0


@pytest.fixture(scope="module")
def gpu_pack(shared_data, tmp_path_factory) -> Path:
    """What `make gpu-pack` carries to a borrowed GPU machine, packed once for this module's tests."""
    from scripts import gpu_edition

    folder = tmp_path_factory.mktemp("gpu") / "pack"
    gpu_edition.pack(folder)
    return folder


def test_the_pack_holds_what_chapters_05_and_13_read_within_the_travel_limit(gpu_pack):
    folder = gpu_pack
    with tarfile.open(folder / "data.tar.xz") as tar:
        names = set(tar.getnames())
    assert {"glue/MRPC/msr_paraphrase_train.txt", "sts/STSBenchmark/sts-train.csv", "sst2/sentiment-train", "corpus/brown/a01.txt"} <= names
    weights = (folder / "minilm" / "model.safetensors").stat().st_size
    assert weights < 0.6 * (minilm_path() / "model.safetensors").stat().st_size  # 16-bit
    tracked = sum((REPO_ROOT / f).stat().st_size for f in subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=REPO_ROOT).stdout.split())
    assert tracked + sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) < 64 * 2**20


def test_grading_a_failed_run_says_so_and_touches_nothing(tmp_path, monkeypatch):
    from scripts import gpu_edition

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "13_isotropy_calibration.log").write_text("Traceback …")
    (tmp_path / "facts.json").write_text('{"profile": "gpu", "scale": 1.0, "failed": "chapter 13_isotropy_calibration failed"}')
    with tarfile.open(tmp_path / gpu_edition.ARCHIVE, "w:gz") as tar:
        for part in ("logs", "facts.json"):
            tar.add(tmp_path / part, arcname=part)
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(BookError, match="that run failed .chapter 13_isotropy_calibration failed.; its logs are in the archive"):
        gpu_edition.grade(tmp_path)
    assert not (tmp_path / "results").exists()
    with pytest.raises(BookError, match="no such archive"):
        gpu_edition.grade(tmp_path / "nothing")


def test_a_failed_run_still_sends_back_its_logs(tmp_path, monkeypatch):
    """No data: every process fails at once (whichever is seen first is named); the error names a log, and the archive
    holds all logs."""
    from scripts import gpu_edition

    (tmp_path / "data").mkdir()
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path / "data"))
    pretraining = r"pre-training gpu-roberta-pe, .* failed; its log is in gpu-edition.tar.gz \(logs/pretraining-gpu-roberta-pe.log\)"
    failed = rf"({pretraining}|chapter 13_isotropy_calibration failed; its log is in gpu-edition.tar.gz \(logs/13_isotropy_calibration.log\))"
    with pytest.raises(BookError, match=failed):
        gpu_edition.run(tmp_path / "out", "gpu", 0.001, tmp_path / "no-pack")
    with tarfile.open(tmp_path / "out" / gpu_edition.ARCHIVE) as tar:
        names = tar.getnames()
        facts = json.loads(tar.extractfile("facts.json").read())
    assert "logs/pretraining-gpu-roberta-pe.log" in names and "logs/13_isotropy_calibration.log" in names
    assert re.fullmatch(failed, facts["failed"])


def test_a_failed_chapter_13_ends_the_wait_for_pre_training_at_once():
    """A borrowed GPU's minutes are few: chapter 13 failing while pre-training runs ends the run in about a second."""
    from scripts import gpu_edition

    training = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])]
    failing = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    try:
        start = time.monotonic()
        with pytest.raises(BookError, match="chapter 13_isotropy_calibration failed"):
            gpu_edition._wait(training, failing)
        assert time.monotonic() - start < 30 and training[0].poll() is None
    finally:
        for p in (*training, failing):
            p.kill()
            p.wait()
    sleeping = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    failing = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    try:
        start = time.monotonic()
        gpu_edition._wait([failing, sleeping[0]], sleeping[1])  # a failed pre-training run ends the wait too
        assert time.monotonic() - start < 30 and failing.returncode == 1
    finally:
        for p in (*sleeping, failing):
            p.kill()
            p.wait()


def test_a_run_refuses_a_parameter_or_value_the_chapters_do_not_take_before_it_starts(tmp_path):
    from scripts import gpu_edition

    with pytest.raises(BookError, match="typo"):
        gpu_edition.run(tmp_path / "out", "gpu", 0.001, tmp_path / "no-pack", [["typo", "1"]])
    with pytest.raises(BookError, match="tasks: unknown 'foo'; choose from sst2"):  # a declared name, a value no chapter 13 run takes
        gpu_edition.run(tmp_path / "out", "gpu", 0.001, tmp_path / "no-pack", [["tasks", "foo"]])
    assert not (tmp_path / "out").exists()


# Smoke sizes: every method on a classification and a regression task, two seeds (the t-tests need two), one batch of
# 32 examples for one epoch (one optimiser step per run), 32 scored, two rounds of step times and one prior scale; the
# gpu profile's other sizes at --scale 0.001 (never below the quick profile's: chapter 05's four 60-step runs).
SIZES = {"tasks": "rte,stsb", "seeds": "2", "n_train": "32", "n_dev": "32", "epochs": "1", "step_rounds": "2", "spectrum_scales": "'0.05'"}
SMOKE = ["--scale", "0.001", *(a for name, value in SIZES.items() for a in ("-p", name, value))]


def test_the_gpu_edition_runs_from_its_pack_without_notebook_tooling_and_is_graded(gpu_pack, tmp_path):
    """Chapters 05 and 13 of the gpu edition as a borrowed GPU runs them (README, "On a borrowed GPU"): from the pack,
    executed headless side by side in a Python that cannot import the notebook tooling, at smoke sizes, then graded."""
    env = {**os.environ, "BOOK_RESULTS_DIR": str(tmp_path / "results"), "BOOK_BUILD_DIR": str(tmp_path / "build"), "BOOK_MODELS_DIR": str(tmp_path / "models")}
    bare = {**env, "PYTHONPATH": str(BARE)}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "scripts.gpu_edition", "run", "--folder", str(gpu_pack), "--out", str(out), *SMOKE]
    ran = subprocess.run(command, cwd=REPO_ROOT, env=bare, capture_output=True, text=True, timeout=1800)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    grade = [sys.executable, "-m", "scripts.gpu_edition", "grade", str(out)]
    graded = subprocess.run(grade, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert graded.returncode == 0, graded.stderr[-2000:]
    runs = pd.read_csv(tmp_path / "results" / "gpu" / "minilm" / "13_isotropy_calibration" / "runs.csv")
    assert set(runs["method"]) == {"none", "cosreg", "spectrum-pol", "spectrum-exp", "flow"} and set(runs["task"]) == {"RTE", "STS-B"}
    assert runs.groupby(["task", "method"])["seed"].nunique().eq(2).all()
    summary = pd.read_csv(tmp_path / "results" / "gpu" / "chapter" / "05_pretraining" / "summary.csv")
    assert summary["position_embeddings"].tolist().count(True) == 2 and summary["valid_perplexity"].gt(1).all()
    verdicts = [line.strip().split("  ")[0] for line in graded.stdout.splitlines() if "(all-MiniLM-L6-v2)" in line]  # chapter 13's claims
    assert verdicts and set(verdicts) <= set(VERDICTS), graded.stdout[-2000:]
    assert not (tmp_path / "build" / "gpu" / "costs.yaml").exists()  # a scaled run's times are not what the chapters cost
