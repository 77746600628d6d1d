"""Chapters executed without Jupyter (`lib.edition.headless`), as on a borrowed GPU machine that has no notebook
tooling, and the packing of what such a machine needs (`scripts/gpu_edition.py`)."""

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

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


@pytest.fixture(scope="module")
def full_scale() -> dict:
    """The facts `run` records of the gpu edition at full scale from this checkout, as on an H200 that took a minute."""
    from scripts import gpu_edition

    facts = gpu_edition.run_facts("gpu", 1.0, [], Path("no-pack"))
    return facts | {"device": "NVIDIA H200", "seconds_from_start": dict.fromkeys(gpu_edition.CHAPTERS, 60.0)}


@pytest.fixture
def editions(tmp_path, monkeypatch) -> Path:
    """Results and editions under tmp_path: the quick edition's chapter 05 and the gpu edition's chapter 07 already there."""
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path / "build"))
    for kept in ("quick/chapter/05_pretraining", "gpu/mpnet/07_wic"):
        (tmp_path / "results" / kept).mkdir(parents=True)
        (tmp_path / "results" / kept / "kept.csv").write_text("a\n1\n")
    return tmp_path / "results"


def _sent_back(tmp_path: Path, facts: dict, results: tuple[str, ...] = ()) -> Path:
    """What `run` sends back (`gpu_edition.send_back`) from a tiny run: a table of each chapter (and any other results
    folders named), a log, the facts and the manifest."""
    from scripts import gpu_edition

    work = tmp_path / "work"
    for folder in (*(f"{facts['profile']}/chapter/{c}" for c in gpu_edition.CHAPTERS), *results):
        (work / "results" / folder).mkdir(parents=True)
        (work / "results" / folder / "notes.csv").write_text("step,seconds\n1,0.5\n")
    (work / "logs").mkdir()
    (work / "logs" / "13_isotropy_calibration.log").write_text("done\n")
    return gpu_edition.send_back(work, copy.deepcopy(facts), tmp_path / "out")


def _repacked(archive: Path, change) -> Path:
    """The archive unpacked, changed by change(folder) and packed again in its place, its manifest as it was."""
    folder = archive.parent / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    change(folder)
    with tarfile.open(archive, "w:gz") as tar:
        for part in sorted(folder.iterdir()):
            tar.add(part, arcname=part.name)
    return archive


def _nothing_graded(results: Path) -> None:
    """Neither edition's results nor costs were written, and the earlier results are as they were."""
    assert sorted(p.relative_to(results).as_posix() for p in results.rglob("*.csv")) == ["gpu/mpnet/07_wic/kept.csv", "quick/chapter/05_pretraining/kept.csv"]
    assert not (results.parent / "build" / "gpu" / "costs.yaml").exists()


def test_a_full_scale_run_is_graded_into_the_gpu_edition_saying_where_when_and_at_what_scale(tmp_path, full_scale, editions, capsys):
    """Chapters 05 and 13's results replace theirs in results/gpu (an old table goes), the other chapters' stay, the
    seconds become the edition's measured costs, and what is printed names the device, the commit and the dates."""
    from scripts import gpu_edition

    (editions / "gpu" / "chapter" / "05_pretraining").mkdir(parents=True)
    (editions / "gpu" / "chapter" / "05_pretraining" / "old.csv").write_text("a\n1\n")
    gpu_edition.grade(_sent_back(tmp_path, full_scale).parent)
    out = capsys.readouterr().out
    tables = sorted(p.relative_to(editions).as_posix() for p in editions.rglob("*.csv"))
    assert tables == [
        "gpu/chapter/05_pretraining/notes.csv",
        "gpu/chapter/13_isotropy_calibration/notes.csv",
        "gpu/mpnet/07_wic/kept.csv",
        "quick/chapter/05_pretraining/kept.csv",
    ]
    measured = yaml.safe_load((tmp_path / "build" / "gpu" / "costs.yaml").read_text())
    assert {c: row["seconds"] for c, row in measured.items()} == dict.fromkeys(gpu_edition.CHAPTERS, 60)
    assert "NVIDIA H200" in measured["05_pretraining"]["measured"]
    header = f"at full scale, computed on NVIDIA H200 (torch {full_scale['torch']}"
    assert header in out and f"at commit {full_scale['commit'][:7]}, from {full_scale['started']} to " in out and "SMOKE" not in out


@pytest.mark.parametrize(
    "change, refusal",
    [
        (lambda f: (f / "results/gpu/chapter/13_isotropy_calibration/notes.csv").write_text("step,seconds\n1,0.1\n"), "is not the file `run` wrote"),
        (lambda f: (f / "results/gpu/chapter/05_pretraining/extra.csv").write_text("a\n1\n"), "is not in its manifest.json, so it cannot be checked"),
        (lambda f: (f / "results/gpu/chapter/05_pretraining/notes.csv").unlink(), "listed in its manifest.json, is missing"),
        (lambda f: (f / "manifest.json").unlink(), "holds no manifest.json, so its files cannot be checked"),
    ],
    ids=["changed", "added", "removed", "no-manifest"],
)
def test_an_archive_changed_after_the_run_is_refused_and_nothing_written(tmp_path, full_scale, editions, change, refusal):
    from scripts import gpu_edition

    archive = _repacked(_sent_back(tmp_path, full_scale), change)
    with pytest.raises(BookError, match=re.escape(refusal)) as refused:
        gpu_edition.grade(archive)
    assert str(refused.value).startswith(str(archive)) and "\n" not in str(refused.value)
    _nothing_graded(editions)


def test_a_run_with_other_code_or_parameters_is_refused_the_same_at_another_commit_is_graded(tmp_path, full_scale, editions, capsys):
    from scripts import gpu_edition

    elsewhere = {**full_scale, "commit": "0123456789abcdef0123456789abcdef01234567"}
    other = copy.deepcopy(elsewhere)
    library = sorted(other["code"]["13_isotropy_calibration"]["lib"])[0]
    other["code"]["13_isotropy_calibration"]["lib"][library] = "0" * 64
    other["code"]["05_pretraining"]["parameters"]["steps"] = 5
    refusal = r"was computed at commit 0123456 with other code or parameters for chapters 05 and 13 than this checkout's \(commit .{7}\): "
    refusal += rf"05_pretraining parameter steps, 13_isotropy_calibration {re.escape(library)}; grade it in a checkout of its commit, or make the pack here"
    with pytest.raises(BookError, match=refusal):
        gpu_edition.grade(_sent_back(tmp_path / "other", other))
    _nothing_graded(editions)
    gpu_edition.grade(_sent_back(tmp_path / "same", elsewhere))
    assert "at commit 0123456, from" in capsys.readouterr().out and (editions / "gpu" / "chapter" / "13_isotropy_calibration" / "notes.csv").is_file()


def test_a_smoke_run_is_graded_into_a_folder_of_its_own_says_so_and_records_no_costs(tmp_path, editions, capsys):
    from scripts import gpu_edition

    facts = gpu_edition.run_facts("gpu", 0.001, [["seeds", "2"]], tmp_path / "no-pack")
    gpu_edition.grade(_sent_back(tmp_path, facts | {"seconds_from_start": dict.fromkeys(gpu_edition.CHAPTERS, 9.0)}))
    out = capsys.readouterr().out
    assert (editions / "gpu-smoke" / "chapter" / "13_isotropy_calibration" / "notes.csv").is_file()
    assert not (editions / "gpu" / "chapter").exists() and not (tmp_path / "build" / "gpu" / "costs.yaml").exists()
    assert "a SMOKE RUN of its chapters 05 and 13 at scale 0.001 with -p seeds 2, computed on" in out
    assert "verdicts of this smoke run (scale 0.001), not the gpu edition's:" in out


def test_a_run_of_another_edition_or_with_other_results_is_refused_and_touches_none(tmp_path, editions):
    """A run labelled quick never replaces results/quick; nor does a gpu run that carries a quick folder."""
    from scripts import gpu_edition

    quick = gpu_edition.run_facts("quick", 1.0, [], tmp_path / "no-pack") | {"seconds_from_start": dict.fromkeys(gpu_edition.CHAPTERS, 9.0)}
    with pytest.raises(BookError, match="is a run of the quick edition; grade takes only the gpu edition's runs .* so nothing was written"):
        gpu_edition.grade(_sent_back(tmp_path / "quick", quick))
    _nothing_graded(editions)
    gpu = quick | {"profile": "gpu"}
    with pytest.raises(BookError, match=r"holds results/quick, not chapters 05 and 13's results in results/gpu/<model>/<chapter>; nothing was written"):
        gpu_edition.grade(_sent_back(tmp_path / "gpu", gpu, results=("quick/chapter/05_pretraining",)))
    _nothing_graded(editions)


def test_grading_holds_the_gpu_edition_s_lock(tmp_path, full_scale, editions):
    from lib.edition.folders import Edition
    from scripts import gpu_edition

    archive = _sent_back(tmp_path, full_scale)
    with Edition("gpu").locked("make book PROFILE=gpu"), pytest.raises(BookError, match="the gpu edition is being written by make book PROFILE=gpu"):
        gpu_edition.grade(archive)
    _nothing_graded(editions)


def _facts_without(key: str):
    def change(folder: Path) -> None:
        (folder / "facts.json").write_text(json.dumps({k: v for k, v in json.loads((folder / "facts.json").read_text()).items() if k != key}))
        manifest = json.loads((folder / "manifest.json").read_text())
        digest = hashlib.sha256((folder / "facts.json").read_bytes()).hexdigest()
        (folder / "manifest.json").write_text(json.dumps({"files": {**manifest["files"], "facts.json": digest}}))

    return change


def _without_facts(folder: Path) -> None:
    (folder / "facts.json").unlink()
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({"files": {k: v for k, v in manifest["files"].items() if k != "facts.json"}}))


@pytest.mark.parametrize(
    "damage, refusal",
    [
        (lambda a: a.write_text("not an archive"), r"is not a whole archive \(ReadError: file could not be opened successfully\); grade only the archive"),
        (lambda a: a.write_bytes(a.read_bytes()[: a.stat().st_size // 2]), r"is not a whole archive \(EOFError: .*\); grade only the archive"),
        (lambda a: _repacked(a, _without_facts), r"holds no facts.json, so what it ran is unknown; grade only the archive"),
        (lambda a: _repacked(a, _facts_without("profile")), r"its facts.json has no 'profile' of the kind `run` writes; grade only the archive"),
    ],
    ids=["not-an-archive", "truncated", "no-facts", "no-profile"],
)
def test_a_damaged_archive_is_one_line_that_names_it(tmp_path, full_scale, editions, capsys, damage, refusal):
    from scripts import gpu_edition

    archive = _sent_back(tmp_path, full_scale)
    damage(archive)
    with pytest.raises(SystemExit) as stopped:
        gpu_edition.main(["grade", str(archive)])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and re.match(rf"error: {re.escape(str(archive))}:? .*{refusal}", err), err
    _nothing_graded(editions)


def test_grading_a_failed_run_says_so_and_touches_nothing(tmp_path, full_scale, editions):
    from scripts import gpu_edition

    archive = _sent_back(tmp_path, full_scale | {"failed": "chapter 13_isotropy_calibration failed"})
    with pytest.raises(BookError, match="that run failed .chapter 13_isotropy_calibration failed.; its logs are in the archive"):
        gpu_edition.grade(archive)
    _nothing_graded(editions)
    with pytest.raises(BookError, match="no such archive"):
        gpu_edition.grade(tmp_path / "nothing")


def test_a_pack_whose_data_cannot_be_unpacked_is_one_line_sends_back_its_archive_and_leaves_no_folder(tmp_path, monkeypatch):
    from scripts import gpu_edition

    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "data.tar.xz").write_bytes(b"not xz")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    refusal = rf"{re.escape(str(tmp_path / 'pack' / 'data.tar.xz'))} is not a whole archive \(ReadError: .*\); make the pack again \(make gpu-pack\)"
    with pytest.raises(BookError, match=refusal):
        gpu_edition.run(tmp_path / "out", "gpu", 0.001, tmp_path / "pack")
    assert list((tmp_path / "tmp").iterdir()) == []
    with tarfile.open(tmp_path / "out" / gpu_edition.ARCHIVE) as tar:
        assert re.match(refusal, json.loads(tar.extractfile("facts.json").read())["failed"])


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
    executed headless side by side in a Python that cannot import the notebook tooling, at smoke sizes, then graded as a
    smoke: into results/gpu-smoke, said so, its times not recorded."""
    env = {**os.environ, "BOOK_RESULTS_DIR": str(tmp_path / "results"), "BOOK_BUILD_DIR": str(tmp_path / "build"), "BOOK_MODELS_DIR": str(tmp_path / "models")}
    bare = {**env, "PYTHONPATH": str(BARE)}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "scripts.gpu_edition", "run", "--folder", str(gpu_pack), "--out", str(out), *SMOKE]
    ran = subprocess.run(command, cwd=REPO_ROOT, env=bare, capture_output=True, text=True, timeout=1800)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    grade = [sys.executable, "-m", "scripts.gpu_edition", "grade", str(out)]
    graded = subprocess.run(grade, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert graded.returncode == 0, graded.stderr[-2000:]
    runs = pd.read_csv(tmp_path / "results" / "gpu-smoke" / "minilm" / "13_isotropy_calibration" / "runs.csv")
    assert set(runs["method"]) == {"none", "cosreg", "spectrum-pol", "spectrum-exp", "flow"} and set(runs["task"]) == {"RTE", "STS-B"}
    assert runs.groupby(["task", "method"])["seed"].nunique().eq(2).all()
    summary = pd.read_csv(tmp_path / "results" / "gpu-smoke" / "chapter" / "05_pretraining" / "summary.csv")
    assert summary["position_embeddings"].tolist().count(True) == 2 and summary["valid_perplexity"].gt(1).all()
    verdicts = [line.strip().split("  ")[0] for line in graded.stdout.splitlines() if "(all-MiniLM-L6-v2)" in line]  # chapter 13's claims
    assert verdicts and set(verdicts) <= set(VERDICTS), graded.stdout[-2000:]
    assert not (tmp_path / "build" / "gpu" / "costs.yaml").exists()  # a scaled run's times are not what the chapters cost
    assert not (tmp_path / "results" / "gpu").exists() and "a SMOKE RUN of its chapters 05 and 13 at scale 0.001 with -p tasks rte,stsb" in graded.stdout
