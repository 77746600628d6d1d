"""An edition is exactly what its build report says: parameter values are data, one writer per edition, results that
only a successful run replaces, verified model folders, and one line for every bad input (issue 32)."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lib import io
from lib.core import profiles, sources
from lib.edition import publishing, runner, schedule, staging
from lib.edition.cache import Entry
from lib.edition.folders import Edition
from lib.errors import BookError, cli
from lib.settings import REPO_ROOT
from tests.books import book_of

PAYLOAD_FILE = "/tmp/book-integrity-pwned"
# the payload: on the landed code papermill wrote the bytes unescaped into the notebook, and they ran
PAYLOAD = "[!!binary " + base64.b64encode(f'"+str(open("{PAYLOAD_FILE}","w").write("x"))+"'.encode()).decode() + ", 0.98]"

CHAPTER = """# %% [markdown]
# # A chapter with models

# %% tags=["parameters"]
profile = "default"
models = "a,b"  # comma-separated model names
n = 1  # a number the chapter writes
seed = 0  # a seed

# %%
import time
from pathlib import Path

import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema

for model in models.split(","):
    Results("01_models", profile).table(pd.DataFrame({{"n": [n]}}), Schema("01_models", "t", ("n",)), model, {{"n": n}})
    if model == "boom":
        raise RuntimeError("asked to fail after the first table")
    if Path({slow!r}).exists():
        time.sleep(60)
"""


@pytest.fixture
def book(tmp_path, monkeypatch):
    """One tiny chapter that writes a table per model, in an edition of its own."""
    slow = tmp_path / "slow"
    book_of(tmp_path, monkeypatch, {"01_models": CHAPTER.format(slow=str(slow))})
    yield tmp_path, slow
    sources.declared_parameters.cache_clear()


def _build(**parameters):
    return schedule.build("quick", [("01_models", {"profile": "quick", **parameters})])


def _results(root: Path) -> dict[str, int]:
    return {p.parent.parent.name: int(pd.read_csv(p)["n"].iloc[0]) for p in sorted((root / "results" / "quick").glob("*/01_models/t.csv"))}


def _plan(capsys) -> str:
    capsys.readouterr()
    schedule.build("quick", [("01_models", {"profile": "quick"})], dry_run=True)
    return capsys.readouterr().out


def test_nested_parameter_values_are_data_never_code(tmp_path):
    with pytest.raises(BookError, match=r"parameter adam_betas\[0\] must be a number"):
        profiles.checked_value("05_pretraining", "adam_betas", yaml.safe_load(PAYLOAD))
    for bad in ("{sst2: !!binary aGk=, imdb: 1, sst5: 1}", "{sst2: 2020-01-01, imdb: 1, sst5: 1}", "!!set {a, b}", "{sst2: .nan}"):
        with pytest.raises(BookError, match="n_train"):
            profiles.checked_value("09_supervised", "n_train", yaml.safe_load(bad))
    assert profiles.checked_value("09_supervised", "n_train", {"sst2": "7", "imdb": 1}) == {"sst2": 7, "imdb": 1}
    assert profiles.checked_value("05_pretraining", "adam_betas", [1, 0.5]) == [1.0, 0.5]
    Path(PAYLOAD_FILE).unlink(missing_ok=True)
    env = {**os.environ, "BOOK_BUILD_DIR": str(tmp_path / "build"), "BOOK_RESULTS_DIR": str(tmp_path / "results")}
    done = subprocess.run(
        [sys.executable, "-m", "lib.edition.runner", "--profile", "quick", "--chapters", "05_pretraining", "-p", "adam_betas", PAYLOAD],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "adam_betas[0] must be a number" in done.stderr
    assert not Path(PAYLOAD_FILE).exists() and not (tmp_path / "build").exists()


def test_a_profile_file_is_held_to_the_same_rule(book):
    root, _ = book
    (root / "profiles" / "bad.yaml").write_text(f"01_models:\n  models: {PAYLOAD}\n")
    with pytest.raises(BookError, match="parameter models must be a string"):
        profiles.load_profile("bad")
    (root / "profiles" / "bad.yaml").write_bytes(b"01_models:\n  n: \xff\n")
    with pytest.raises(BookError, match="is not UTF-8 text"):
        profiles.load_profile("bad")
    (root / "profiles" / "bad.yaml").write_text("01_models:\n  profile: default\n")
    with pytest.raises(BookError, match="choose it with --profile"):
        profiles.load_profile("bad")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["-p", "profile", "default"], "`profile` names the edition"),
        (["-p", "seed", "-1"], "seed must be a whole number ≥ 0"),
        (["--chapters", " "], "names no chapter"),
        (["-p", "n", "[1]"], "parameter n must be an integer"),
    ],
)
def test_bad_runner_input_is_one_line(book, capsys, args, expected):
    with pytest.raises(SystemExit) as stop:
        runner.main(["--profile", "quick", *args])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and expected in err
    assert not (book[0] / "build").exists()


def test_a_failed_run_leaves_the_editions_results_and_entry_as_they_were(book, capsys):
    root, _ = book
    _build()
    before = Entry.load(Edition("quick").entry("01_models"))
    with pytest.raises(BookError, match="asked to fail after the first table"):
        _build(models="c,boom", n=2)  # writes c's table, then fails
    assert _results(root) == {"a": 1, "b": 1}  # neither c nor boom: the failed run's tables never reached the edition
    assert Entry.load(Edition("quick").entry("01_models")) == before
    assert "would be reused" in _plan(capsys)
    assert not Edition("quick").running("01_models").exists()


def test_a_run_replaces_every_model_folder_of_its_chapter(book, capsys):
    root, _ = book
    _build()
    _build(models="a", n=5)  # b was this chapter's table of an earlier run: it is not kept beside the new run's
    assert _results(root) == {"a": 5}
    entry = Entry.load(Edition("quick").entry("01_models"))
    assert [Path(o["path"]).relative_to(root / "results") for o in entry.outputs] == [Path("quick/a/01_models/t.csv"), Path("quick/a/01_models/meta.json")]
    assert all(o["sha256"] == io.sha256(Path(o["path"])) for o in entry.outputs)  # the entry names the published files


def test_a_killed_run_changes_nothing_and_its_leftovers_go_with_the_next_run(book, capsys):
    root, slow = book
    _build()
    slow.touch()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    code = "import lib.core.sources as s, lib.core.profiles as p, lib.edition.runner as r, pathlib, sys; " + (
        f"s.NOTEBOOKS = pathlib.Path({str(root / 'notebooks')!r}); p.PROFILES = pathlib.Path({str(root / 'profiles')!r}); "
        "r.main(['--profile', 'quick', '--jobs', '1', '--force', '-p', 'n', '9'])"
    )
    child = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO_ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    staged = Edition("quick").running("01_models") / "quick" / "a" / "01_models" / "t.csv"
    deadline = time.time() + 120
    while not staged.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert staged.exists(), child.stderr.read() if child.poll() is not None else "the run never wrote its first table"
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    assert _results(root) == {"a": 1, "b": 1} and "would be reused" in _plan(capsys)
    with pytest.raises(BookError, match="being written by"):  # a second writer while the first holds the lock
        with Edition("quick").locked("a test"):
            with Edition("quick").locked("a second writer"):
                pass
    slow.unlink()
    _build(n=3)
    assert _results(root) == {"a": 3, "b": 3} and not Edition("quick").running("01_models").exists()
    assert not list((Edition("quick").root / "tmp").glob("01_models-*"))


def test_one_writer_per_edition(book, capsys):
    with Edition("quick").locked("python -m lib.edition.runner"):
        with pytest.raises(SystemExit) as stop:
            runner.main(["--profile", "quick"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and "the quick edition is being written by python -m lib.edition.runner (pid" in err
        with pytest.raises(SystemExit):
            publishing.main(["--profile", "quick"])
    runner.main(["--profile", "quick", "--plan"])  # reading needs no lock


def test_staging_copies_only_the_tables_the_entry_vouches_for(book):
    root, _ = book
    _build()
    table = root / "results" / "quick" / "a" / "01_models" / "t.csv"
    table.write_text("n\n7\n")
    source = staging.stage(Edition("quick"))  # the chapter's run no longer vouches for a page: it is shown as not executed
    page = (source / "book" / "chapters" / "01_models.md").read_text()
    assert "its result quick/a/01_models/t.csv has changed since" in page and not (source / "book" / "chapters" / "01_models.ipynb").exists()
    assert not any(source.rglob("t.csv"))  # nor is the table offered


def test_unwritable_build_folder_and_unknown_edition_are_one_line(book, capsys, monkeypatch):
    root, _ = book
    with pytest.raises(SystemExit):
        publishing.main(["--profile", "typo"])
    assert "unknown profile 'typo'" in capsys.readouterr().err and not (root / "build" / "typo").exists()
    (root / "a-file").write_text("")
    monkeypatch.setenv("BOOK_BUILD_DIR", str(root / "a-file" / "build"))  # cannot be created, whoever runs the test
    with pytest.raises(BookError, match="cannot write the build folder .*; make it writable or set BOOK_BUILD_DIR"):
        with Edition("quick").locked("test"):
            pass


def test_model_folders_are_checked_against_their_manifest(tmp_path, monkeypatch):
    folder = tmp_path / "models" / "mine"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    io.write_manifest(folder)
    io.verify_manifest(folder, "fix it")
    flipped = bytearray((folder / "model.safetensors").read_bytes())
    flipped[100] ^= 0xFF
    (folder / "model.safetensors").write_bytes(bytes(flipped))  # same size, different bytes
    with pytest.raises(BookError, match=r"model.safetensors differs from the file the manifest records .*; fix it"):
        io.verify_manifest(folder, "fix it")
    (folder / "model.safetensors").write_bytes(b"short")
    with pytest.raises(BookError, match="truncated or resized"):
        io.verify_manifest(folder, "fix it")
    # an emptied manifest does not switch the check off: the folder's files are not in it
    (folder / "model.safetensors").write_bytes(bytes(flipped))
    (folder / io.MANIFEST).write_text("")
    with pytest.raises(BookError, match=r"config.json is not in the folder's manifest \(.* lists 0 file\(s\)\), so it cannot be checked; fix it"):
        io.verify_manifest(folder, "fix it")
    (folder / "model.safetensors").unlink()  # nor with the weights deleted: a manifest must list them
    (folder / io.MANIFEST).write_text(f"{io.sha256(folder / 'config.json')}  2  config.json\n")
    with pytest.raises(BookError, match=r"lists no weights file \(.safetensors or .bin\), so the model cannot be checked; fix it"):
        io.verify_manifest(folder, "fix it")
    (folder / io.MANIFEST).write_text("garbage\n")  # a line that is not a manifest's: one line, no ValueError
    with pytest.raises(BookError, match=r"line 1 of .*\.manifest\.sha256 is not '<sha256>  <size>  <path>' \(it reads 'garbage'\); fix it"):
        io.verify_manifest(folder, "fix it")
    from lib.encode import models

    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    with pytest.raises(BookError, match="delete .*mine and train it again: `python -m lib.edition.runner --profile PROFILE"):
        models.resolve("trained:mine")
    with pytest.raises(BookError, match="not found in .*--profile PROFILE --chapters 05_pretraining"):
        models.resolve("trained:absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BookError, match="is a folder without config.json"):
        models.resolve(str(tmp_path / "empty"))


def test_a_killed_writers_temporary_folder_is_removed_by_the_next_one(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live = tmp_path / f".model.{dead.pid}.abc", tmp_path / f".model.{os.getpid()}.def"
    stale.mkdir()
    live.mkdir()
    io.write_folder_atomic(tmp_path / "model", lambda p: (p / "f").write_text("x"))
    assert not stale.exists() and live.exists() and (tmp_path / "model" / "f").read_text() == "x"


def test_the_kernel_imports_the_checkout_the_cache_is_keyed_on(tmp_path):
    env = {**os.environ, "BOOK_LIB_ROOT": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", "import lib"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode != 0 and "but the book build keys its cache on" in done.stderr
    env["BOOK_LIB_ROOT"] = str(REPO_ROOT)
    assert subprocess.run([sys.executable, "-c", "import lib"], env=env, cwd=tmp_path).returncode == 0


def test_interrupts_and_full_disks_are_one_line(capsys):
    @cli
    def interrupted():
        raise KeyboardInterrupt

    @cli
    def full():
        raise OSError(28, "No space left on device", "/x/y.csv")

    for command, code, text in ((interrupted, 130, "interrupted"), (full, 2, "No space left on device while writing /x/y.csv")):
        with pytest.raises(SystemExit) as stop:
            command()
        err = capsys.readouterr().err
        assert stop.value.code == code and err.count("\n") == 1 and text in err


def test_a_corrupt_meta_file_names_itself(tmp_path):
    from lib.book.results import Results
    from lib.core.store import Schema

    results = Results("01_x", "quick", root=tmp_path)
    results.table(pd.DataFrame({"a": [1]}), Schema("01_x", "t", ("a",)), "m", {})
    (results.folder("m") / "meta.json").write_text("{not json")
    with pytest.raises(BookError, match=r"meta.json is not readable JSON; delete it"):
        results.table(pd.DataFrame({"a": [1]}), Schema("01_x", "u", ("a",)), "m", {})


def test_sample_sizes_beyond_the_data_are_refused():
    import lib.book.chapter as ch

    assert ch.sample_size("pca_tokens", 600, 300) == 600
    with pytest.raises(BookError, match=r"parameter pca_tokens \(1,000,000,000,000\) is more tokens than 300 sentences can hold"):
        ch.sample_size("pca_tokens", 10**12, 300)


def _plain(value, where: str = "checkpoint") -> None:
    """Every leaf of a loaded checkpoint is a tensor or a plain Python value (no array, frame or class of ours)."""
    import torch

    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, (str, int)), f"{where}: key {k!r} is a {type(k).__name__}"
            _plain(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _plain(v, f"{where}[{i}]")
    else:
        assert value is None or type(value) in (str, int, float, bool, torch.Tensor), f"{where} is a {type(value).__name__}"


def test_checkpoints_hold_plain_data_only(tmp_path):
    """The one checkpoint writer, pre-training's (`masked_lm.train`; fine-tuning caches JSON rows, no checkpoint), writes
    a file that loads with weights_only=True and holds the run's weights, optimiser, schedule, RNG, curve and track."""
    from dataclasses import asdict

    import torch

    from lib.train import bpe, masked_lm, shards
    from tests.conftest import SENTENCES
    from tests.test_masked_lm import TINY

    texts = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))]
    tokenizer = bpe.train_tokenizer(texts, 300, 24)
    blocks = shards.in_memory(texts, tokenizer, 24)
    cfg = masked_lm.PretrainConfig(**{**TINY, "steps": 2, "warmup": 1, "eval_every": 1, "batch_size": 4})
    run = masked_lm.train(cfg, tokenizer, blocks, blocks, track_blocks=2, checkpoint_dir=tmp_path, device="cpu")
    state = torch.load(tmp_path / cfg.key() / "checkpoint.pt", weights_only=True)  # refuses anything but tensors and plain data
    _plain(state)
    assert set(state) == {"model", "optimizer", "schedule", "rng", "step", "history", "track", "config"} and state["step"] == 2
    assert state["model"].keys() == run.model.state_dict().keys() and all(torch.equal(v, run.model.state_dict()[k]) for k, v in state["model"].items())
    assert len(state["optimizer"]["state"]) == sum(p.requires_grad for p in run.model.parameters()) and state["rng"].dtype == torch.uint8
    assert pd.DataFrame(state["history"]).equals(run.history) and [h["step"] for h in state["history"]] == [1, 2]
    assert pd.concat([pd.DataFrame(t) for t in state["track"]], ignore_index=True).equals(run.track) and state["config"] == asdict(cfg)


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    done = subprocess.run(
        f"{sys.executable} -m lib.datasets --help >/dev/null; {sys.executable} -c 'from lib.errors import cli\n"
        "@cli\ndef main():\n    for i in range(100000):\n        print(i)\nmain()' | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert done.stdout == "0\n" and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
