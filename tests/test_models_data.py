"""Model specs and data sets: real models, real files, and clear one-line errors for bad input."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from lib import settings
from lib.datasets import registry, tasks
from lib.encode import models
from lib.encode.collectors import LayerStats, SentenceMeans
from lib.encode.extraction import extract
from lib.errors import BookError
from lib.settings import pick_device


def test_minilm_facts_are_read_from_the_model(minilm):
    assert (minilm.n_layers, minilm.width, minilm.max_length) == (6, 384, 512)
    st = LayerStats(covariance=False)
    extract(minilm, ["a short sentence"], [st], progress=False)
    assert st.n_layers == minilm.n_layers + 1  # embedding output plus every layer


def test_mpnet_is_assembled_once(monkeypatch):
    first = models.mpnet_path()
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(models, "sha256", lambda *_: pytest.fail("re-assembled although the cache was complete"))
    assert models.mpnet_path() == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert models.resolve("mpnet") == (str(first), "all-mpnet-base-v2")


def test_local_folder_spec_loads_a_saved_model(tmp_path):
    from .conftest import tiny_model

    lm = tiny_model("bert")
    lm.model.save_pretrained(tmp_path)
    lm.tokenizer.save_pretrained(tmp_path)
    again = models.load_model(str(tmp_path), device="cpu")
    ids = torch.tensor([[101, 2023, 102]])
    assert torch.allclose(again.model(ids).last_hidden_state, lm.model(ids).last_hidden_state)
    assert again.n_layers == 3 and again.width == 32


@pytest.mark.parametrize("spec", ["no-such-model-xyz", "trained:never-trained", "  "])
def test_unknown_model_is_one_clear_line(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path))
    with pytest.raises(BookError) as err:
        models.load_model(spec)
    message = str(err.value)
    assert "\n" not in message and ("minilm, mpnet" in message or "chapter 05" in message)


def test_layer_index_checks_the_model(minilm):
    assert models.layer_index(minilm, -1) == 6 and models.layer_index(minilm, 0) == 0
    with pytest.raises(BookError, match=r"hidden states are 0\.\.6"):
        models.layer_index(minilm, 7)


def test_device_choice():
    assert pick_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(BookError, match="CUDA is not available"):
            pick_device("cuda")


def test_auto_dtype_keeps_float32_weights_and_uses_bf16_only_where_native(monkeypatch):
    cpu = torch.device("cpu")
    assert settings.autocast_precision("float32", cpu) == "none"
    assert settings.autocast_precision("auto", cpu) == ("bfloat16" if settings.native_bf16(cpu) else "none")
    monkeypatch.setattr(settings, "native_bf16", lambda device: False)
    assert settings.autocast_precision("auto", cpu) == "none"
    assert settings.torch_dtype("auto") == torch.float32
    with pytest.raises(BookError, match="unknown dtype"):
        settings.autocast_precision("bf16", cpu)


def test_bf16_autocast_moves_pooled_minilm_vectors_only_slightly(minilm):
    """bf16 keeps 8 significant bits (relative rounding 2^-9 per product); through six layers the mean-pooled vectors stay
    within 1% of their largest coordinate and their cosines within 0.0005: the size of effect `dtype: auto` trades for speed."""
    sentences = ["A short sentence about a film.", "Another one, rather longer, about the same film and its actors.", "Fine."]
    pooled = {}
    for precision in ("none", "bfloat16"):
        means = SentenceMeans(len(sentences))
        extract(replace(minilm, precision=precision), sentences, [means], progress=False)
        pooled[precision] = means.result()
    exact, fast = pooled["none"], pooled["bfloat16"]
    assert 0 < np.abs(fast - exact).max() < 0.01 * np.abs(exact).max()
    cos = (fast * exact).sum(-1) / np.linalg.norm(fast, axis=-1) / np.linalg.norm(exact, axis=-1)
    assert cos.min() > 0.9995


def test_sst2_splits_have_the_published_sizes(shared_data):
    sizes = {split: len(registry.load("sst2", split)) for split in ("train", "dev", "test")}
    assert sizes == {"train": 67349, "dev": 872, "test": 1821}
    train = registry.load("sst2", "train")
    assert set(train["label"]) == {0, 1} and not train["sentence"].str.endswith(" ").any()


def test_sampling_is_seeded(shared_data):
    a = tasks.sample_sentences("sst2", "train", 50, seed=4)
    assert a == tasks.sample_sentences("sst2", "train", 50, seed=4)
    assert a != tasks.sample_sentences("sst2", "train", 50, seed=5)
    with pytest.raises(BookError, match="positive integer"):
        tasks.sample_sentences("sst2", "train", 0, seed=0)
    everything = tasks.sample_sentences("sst2", "dev", 10_000, seed=0)  # the policy: a sample larger than the split is all of it
    assert len(everything) == 872 and sorted(everything) == sorted(registry.load("sst2", "dev")["sentence"])


def test_a_measurement_sample_avoids_the_selection_sample(shared_data):
    """Chapters 01 and 06 measure on sentences chapter 02 did not select the outliers on (`avoid`: that sample's size
    and seed): with the same seed, a plain sample shares sentences with the selection sample; avoiding it, none."""
    selection = set(tasks.sample_sentences("sst2", "train", 20_000, seed=0))
    assert set(tasks.sample_sentences("sst2", "train", 3000, seed=0)) & selection
    apart = tasks.sample_sentences("sst2", "train", 3000, seed=0, avoid=(20_000, 0))
    assert len(apart) == 3000 and not set(apart) & selection
    assert apart == tasks.sample_sentences("sst2", "train", 3000, seed=0, avoid=(20_000, 0))  # seeded


def test_missing_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(BookError, match="does not exist; set BOOK_DATA_DIR"):
        registry.load("sst2", "train")


def test_missing_file_names_where_it_is_published(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path))
    with pytest.raises(BookError, match=r"missing file .*sentiment-dev; run `make data` to fetch it from robertoviegas/SimCSE@a0d98a5:.*sentiment-dev"):
        registry.load("sst2", "dev")


def test_corrupted_file_fails_its_checksum(shared_data, tmp_path, monkeypatch):
    (tmp_path / "sst2").mkdir()
    copy = tmp_path / "sst2" / "sentiment-dev"
    shutil.copy(shared_data / "sst2" / "sentiment-dev", copy)
    with open(copy, "r+b") as f:
        f.seek(100)
        f.write(b"X")
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path))
    with pytest.raises(BookError, match="corrupted") as err:
        registry.load("sst2", "dev")
    assert "\n" not in str(err.value)


def test_unknown_data_set_and_split():
    with pytest.raises(BookError, match="unknown data set .qqp.; known: .*sst2"):
        registry.load("qqp", "train")
    with pytest.raises(BookError, match="no split 'validation'"):
        registry.verified_path("sst2", "validation")


def test_data_check_command_reports_a_corrupted_file_in_one_line(shared_data, tmp_path):
    import subprocess
    import sys

    (tmp_path / "sst2").mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(shared_data / "sst2" / f"sentiment-{split}", tmp_path / "sst2")
    with open(tmp_path / "sst2" / "sentiment-test", "a") as f:
        f.write("an extra line\t1\n")
    done = subprocess.run(
        [sys.executable, "-m", "lib.datasets", "check", "sst2"], capture_output=True, text=True, env={**os.environ, "BOOK_DATA_DIR": str(tmp_path)}
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "sst2 test" in done.stderr and "it is published at robertoviegas/SimCSE@" in done.stderr


def test_new_loaders_count_what_the_releases_hold(shared_data):

    assert len(tasks.wic("train")) == 5428 and len(tasks.wic("dev")) == 638
    assert tasks.wic("train")["same_sense"].mean() == 0.5
    counts = {name: len(tasks.sts_pairs(name)) for name in tasks.STS_SETS}
    assert counts == {"stsb": 1379, "sick": 4906, "sickall": 9840, "sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186}
    assert tasks.sts_pairs("sts12")["score"].between(0, 5).all()
    assert [len(registry.load("sst5", s)) for s in ("train", "dev", "test")] == [8544, 1101, 2210]
    assert set(registry.load("sst5", "dev")["label"]) == {0, 1, 2, 3, 4}
    splits = tasks.classification_splits("imdb", 30, 10, 20, seed=1)
    assert [len(splits[s][0]) for s in ("train", "dev", "test")] == [30, 10, 20]
    assert not set(splits["train"][0]) & set(splits["dev"][0])  # dev is carved from train, disjoint
    assert set(np.unique(splits["test"][1])) <= {0, 1}
    assert splits["train"][0] == tasks.classification_splits("imdb", 30, 10, 20, seed=1)["train"][0]


def test_word_similarity_and_corpus_loaders(shared_data):

    counts = {name: len(tasks.word_similarity(name)) for name in tasks.WORD_SIMILARITY}
    assert counts == {"simlex": 999, "men": 3000, "ws353_sim": 203, "ws353_rel": 252, "rw": 2034}
    men = tasks.word_similarity("men")
    assert men.iloc[0].tolist() == ["sun", "sunlight", 50.0]  # natural form: the -n suffix is gone
    assert not men["word1"].str.contains(r"-[nvj]$").any()
    docs = tasks.corpus_documents(("brown",))
    assert len(docs) == 500 and "/AT" not in docs[0] and docs[0].startswith("The Fulton County Grand Jury")
    with pytest.raises(BookError, match="no corpus files"):
        tasks.corpus_documents(("wikipedia",))


def test_one_sampling_policy_for_rows_and_tables():
    rng = np.random.default_rng(0)
    assert sorted(tasks.draw(rng, 5, 99).tolist()) == [0, 1, 2, 3, 4]  # more than there is: all of it
    assert len(set(tasks.draw(np.random.default_rng(0), 100, 10).tolist())) == 10
    frame = pd.DataFrame({"x": range(20)})
    assert tasks.subsample(frame, 20, seed=0) is frame and tasks.subsample(frame, 500, seed=0) is frame
    part = tasks.subsample(frame, 5, seed=0)
    assert len(part) == 5 and part.index.tolist() == list(range(5)) and part.equals(tasks.subsample(frame, 5, seed=0))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(BookError, match="positive integer"):
            tasks.subsample(frame, bad, seed=0)
        with pytest.raises(BookError, match="positive integer"):
            tasks.draw(rng, 10, bad)
