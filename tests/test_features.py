"""Chapter 09's frozen features: extracted once into the run cache (`encode.features`), ahead of the chapter by
`lib.edition.features`, and read back unchanged."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from lib import provenance
from lib.encode import features as feature_cache
from lib.encode.collectors import LayerStats, SentenceMeans
from lib.encode.extraction import extract
from lib.errors import BookError
from lib.experiments import supervised

TEXTS = {
    "train": ["a fine film.", "a dull, tired plot that never moves.", "the cast is wonderful"],
    "fit": ["nothing happens for two hours", "warm and funny"],
    "test": ["i would watch it again", "no."],
}


def test_features_come_back_from_the_cache_as_extracted_and_change_with_their_texts(minilm, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path))
    first = feature_cache.task_features(minilm, "Toy", TEXTS, moments=True)
    pooled, stats = {s: SentenceMeans(len(t)) for s, t in TEXTS.items()}, LayerStats(covariance=True)
    for split, texts in TEXTS.items():
        extract(minilm, texts, [pooled[split]] + ([stats] if split in ("train", "fit") else []))
    for split in TEXTS:  # the same batches in the same order: the same floats
        np.testing.assert_array_equal(first.vectors[split], pooled[split].result())
    np.testing.assert_array_equal(first.moments.mean, stats.mean)
    np.testing.assert_array_equal(first.moments.covariance(), stats.covariance())
    assert first.vectors["train"].shape == (3, minilm.n_layers + 1, minilm.width)

    def no_extraction(*args, **kwargs):
        raise AssertionError("cached features were extracted again")

    monkeypatch.setattr(feature_cache, "extract", no_extraction)
    monkeypatch.setenv(provenance.ENV, str(tmp_path / "provenance.jsonl"))
    again = feature_cache.task_features(minilm, "Toy", TEXTS, moments=True)
    records = provenance.read(tmp_path / "provenance.jsonl")
    assert [r["kind"] for r in records] == ["reused", "reused"] and all(r["path"].endswith(".npz") for r in records)  # the two parts
    for split in TEXTS:
        np.testing.assert_array_equal(again.vectors[split], first.vectors[split])
    np.testing.assert_array_equal(again.moments.covariance(), first.moments.covariance())
    scored = feature_cache.task_features(minilm, "Toy", {**TEXTS, "train": ["another training text"]}, moments=True, parts=["scoring"])
    assert list(scored.vectors) == ["test"] and scored.moments is None  # the scored part alone: cached, whatever was fitted
    for changed in ({**TEXTS, "test": ["i would watch it again", "yes."]}, TEXTS | {"fit": []}):
        with pytest.raises(AssertionError, match="extracted again"):
            feature_cache.task_features(minilm, "Toy", changed, moments=True)
    with pytest.raises(AssertionError, match="extracted again"):
        feature_cache.task_features(minilm, "Toy", TEXTS, moments=True, include_special=False)
    with pytest.raises(BookError, match=r"splits \['validation'\]: not among the splits"):
        feature_cache.task_features(minilm, "Toy", {"validation": ["a"]}, moments=False)
    assert len(list(tmp_path.glob("features/*.npz"))) == 2 and not list(tmp_path.glob("features/.*"))  # no temporary file left


def test_a_task_extracted_ahead_is_what_chapter_09_then_reads(tmp_path, monkeypatch, shared_data):
    """One command per model and task (`ahead`); the chapter's samples and features of that task then come from the
    cache, and the samples refuse sizes the chapter would refuse."""
    import json

    from lib.core.profiles import chapter_parameters, plan
    from lib.edition import features
    from lib.encode.models import load_model
    from lib.settings import REPO_ROOT

    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    sizes = {"n_train": {"sst2": 6, "sst5": 6}, "n_dev": {"sst2": 4, "sst5": 4}, "n_test": {"sst2": 4, "sst5": 4}, "n_fit": {"sst2": 6, "sst5": 9}}
    changes = {"models": "minilm", "tasks": "sst2,sst5", **sizes, "device": "cpu", "dtype": "float32"}
    ((_, params),) = plan("quick", ["09_supervised"], changes)
    commands = features.ahead("quick", params)
    assert list(commands) == [f"09_supervised:minilm-{task}-{part}" for task in ("sst2", "sst5") for part in ("fitting", "scoring")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for part, texts in (("fitting", "6 train, 3 fit"), ("scoring", "4 dev, 4 test")):
        done = subprocess.run(commands[f"09_supervised:minilm-sst5-{part}"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and f"sst5: features of {texts} texts cached" in done.stdout, done.stderr[-3000:]
    values = {**chapter_parameters("09_supervised", "quick"), **json.loads(json.dumps(params))}  # as the command reads them
    data = supervised.task_data(values)
    assert list(data) == ["sst2", "sst5"] and [len(data["sst5"][s][0]) for s in ("train", "dev", "test", "fit")] == [6, 4, 4, 3]
    monkeypatch.setattr(feature_cache, "extract", lambda *a, **k: pytest.fail("features extracted ahead were extracted again"))
    lm = load_model("minilm", device="cpu", dtype="float32")
    found = supervised.features(lm, "sst5", data["sst5"], ["raw", "whitened"], bool(values["pool_special"]))
    assert found.vectors["fit"].shape == (3, lm.n_layers + 1, lm.width) and found.moments.mean.shape == (lm.n_layers + 1, lm.width)
    with pytest.raises(BookError, match="need an entry for every task"):
        supervised.task_data({**values, "n_fit": {"sst2": 6}})
    bad = subprocess.run([*commands["09_supervised:minilm-sst2-fitting"][:-3], "imdb"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "--task imdb: not among the chapter's tasks (sst2, sst5)" in bad.stderr
