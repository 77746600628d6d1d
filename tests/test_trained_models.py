"""Chapter 05's pre-trained models and the editions that read them by name (issue 73, item 7): an edition whose
chapter 05 would train a model with other settings into a folder that another edition's run holds stops with one line
before anything is trained, and leaves that model as it was; editions with identical settings share one model; an
edition's own model is trained again when its settings change (a saved run is never reused for other settings)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lib.core.profiles import chapter_parameters
from lib.edition import train_ahead
from lib.errors import BookError
from lib.experiments import pretraining
from lib.settings import models_dir
from lib.train import bpe, masked_lm, shards

from .test_masked_lm import TEXTS, TINY

CFG = masked_lm.PretrainConfig(**{**TINY, "steps": 10})


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture(scope="module")
def corpus() -> tuple:
    tokenizer = bpe.train_tokenizer(TEXTS, 300, 24)
    blocks = shards.in_memory(TEXTS, tokenizer, 24)
    return tokenizer, blocks, blocks


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def train(corpus: tuple, edition: str, cfg: masked_lm.PretrainConfig = CFG, name: str = "tiny-pe") -> dict:
    return pretraining.train_unless_saved({name: cfg}, corpus, track_blocks=4, device="cpu", edition=edition)


def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args, **kwargs):
        raise AssertionError("a run was trained")

    monkeypatch.setattr(masked_lm, "train", refused)


def test_another_editions_model_with_other_settings_is_never_replaced(folders, corpus, monkeypatch):
    train(corpus, "quick")
    folder = models_dir() / "tiny-pe"
    assert json.loads((folder / "training.json").read_text())["edition"] == "quick"
    before = files(folder)
    other = dataclasses.replace(CFG, steps=20)
    with pytest.raises(BookError) as err:
        train(corpus, "mine", other)
    message = str(err.value)
    assert "\n" not in message and str(folder) in message and "the quick edition" in message
    assert "steps 10 there, 20 in the mine edition" in message and 'names: "mine-roberta-pe,mine-roberta-nope"' in message
    assert files(folder) == before  # quick's model byte for byte
    assert not (folders / "cache" / "pretrain" / other.key()).exists()  # refused before training: no checkpoint either


def test_editions_with_identical_settings_share_one_model(folders, corpus, monkeypatch):
    history, _ = train(corpus, "quick")["tiny-pe"]
    before = files(models_dir() / "tiny-pe")
    no_training(monkeypatch)
    shared, _ = train(corpus, "twin")["tiny-pe"]  # the same settings: reused, not trained
    assert shared["valid_loss"].tolist() == pytest.approx(history["valid_loss"].tolist())
    assert files(models_dir() / "tiny-pe") == before


def test_an_editions_own_model_is_trained_again_when_its_settings_change(folders, corpus):
    train(corpus, "quick")
    longer = dataclasses.replace(CFG, steps=20)
    assert masked_lm.saved_run(models_dir() / "tiny-pe", longer) is None  # a saved run is not one of other settings
    history, _ = train(corpus, "quick", longer)["tiny-pe"]
    assert history["step"].tolist() == [10, 20]
    assert json.loads((models_dir() / "tiny-pe" / "training.json").read_text())["config"]["steps"] == 20


def test_models_saved_before_runs_recorded_their_edition_are_kept_unless_the_settings_match(folders, corpus, monkeypatch):
    train(corpus, "quick")
    record = models_dir() / "tiny-pe" / "training.json"
    saved = json.loads(record.read_text())
    del saved["edition"]
    record.write_text(json.dumps(saved))
    with pytest.raises(BookError, match=r"an edition that did not record its name .*steps 10 there, 20 in the quick edition"):
        train(corpus, "quick", dataclasses.replace(CFG, steps=20))
    no_training(monkeypatch)
    train(corpus, "quick")  # the same settings: reused


def test_a_model_folder_chapter_05_did_not_save_is_never_replaced(folders, corpus):
    folder = models_dir() / "tiny-pe"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    with pytest.raises(BookError, match=r"holds a model that chapter 05 did not save \(no readable training.json\)"):
        train(corpus, "quick")
    assert files(folder) == {"config.json": b"{}"}
    (folder / "training.json").write_text("[1, 2")  # torn
    with pytest.raises(BookError, match=r"no readable training.json"):
        train(corpus, "quick")


def test_a_record_from_older_training_code_is_refused_in_one_line(folders):
    """A training.json whose configuration has a field the code no longer has, from no recorded edition."""
    cfg = dataclasses.replace(CFG)
    (models_dir() / "old").mkdir(parents=True)
    record = {"config": {**dataclasses.asdict(cfg), "removed_field": 1}, "code": "older", "history": [], "track": []}
    (models_dir() / "old" / "training.json").write_text(json.dumps(record))
    with pytest.raises(BookError, match=r"an edition that did not record its name with other settings \(removed_field 1 there, None in the quick edition\)"):
        pretraining.check_free("old", cfg, "quick")


def saved_as(edition: str, configs: dict[str, masked_lm.PretrainConfig]) -> None:
    """Training records as chapter 05 of `edition` leaves them for these runs (no weights: planning reads the records)."""
    for name, cfg in configs.items():
        (models_dir() / name).mkdir(parents=True)
        record = {"config": dataclasses.asdict(cfg), "code": masked_lm.training_code(), "edition": edition, "history": [], "track": []}
        (models_dir() / name / "training.json").write_text(json.dumps(record))


def test_a_build_of_a_profile_copied_from_quick_with_other_steps_stops_before_training(folders):
    quick = chapter_parameters("05_pretraining", "quick")
    _, configs = pretraining.pretraining_runs(quick)
    saved_as("quick", configs)
    before = {name: files(models_dir() / name) for name in configs}
    assert train_ahead.ahead("quick", quick) == {}  # quick's runs are saved: nothing to train ahead
    assert train_ahead.ahead("twin", quick) == {}  # a copy with the same settings shares them
    mine = {**quick, "steps": quick["steps"] + 20}  # the README's "edition of your own", with more steps
    with pytest.raises(BookError) as err:
        train_ahead.ahead("mine", mine)
    assert "\n" not in str(err.value) and str(models_dir() / "quick-roberta-pe") in str(err.value)
    assert f"steps {quick['steps']} there, {mine['steps']} in the mine edition" in str(err.value)
    assert {name: files(models_dir() / name) for name in configs} == before
    renamed = {**mine, "names": "mine-roberta-pe,mine-roberta-nope"}  # what the line says to do: runs of its own
    assert sorted(train_ahead.ahead("mine", renamed)) == sorted(f"05_pretraining:{name}" for name in pretraining.pretraining_runs(renamed)[1])


def test_a_profile_copied_from_quick_names_models_of_its_own(tmp_path, monkeypatch):
    """The rerun page's recipe (copy a profile to profiles/mine.yaml, change it): chapter 05's names in the shipped
    profiles say `{profile}`, so the copy's models, and the chapters that read them, are mine-roberta-*, never quick's."""
    from lib.book.chapter import trained_spec
    from lib.core import profiles

    shipped = profiles.PROFILES
    monkeypatch.setattr(profiles, "PROFILES", tmp_path)
    for name in ("quick", "mine"):
        (tmp_path / f"{name}.yaml").write_text((shipped / "quick.yaml").read_text())
    assert chapter_parameters("05_pretraining", "quick")["names"] == "quick-roberta-pe,quick-roberta-nope"
    assert chapter_parameters("05_pretraining", "mine")["names"] == "mine-roberta-pe,mine-roberta-nope"
    assert trained_spec("chapter05:nope", "mine") == "trained:mine-roberta-nope" and trained_spec("chapter05:pe", "quick") == "trained:quick-roberta-pe"
