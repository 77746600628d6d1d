"""The experiments layer on planted vectors (exact values) and on tiny models (the whole protocol runs)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from lib.encode.collectors import LayerStats
from lib.encode.extraction import TokenBatch
from lib.errors import BookError
from lib.experiments import (
    clipping_whitening,
    isotropy_word_similarity,
    outlier_neurons,
    outlier_set,
    position_probe,
    rare_words,
    sts,
    supervised,
    vector_variants,
    wic,
)
from lib.measure import transforms

from .conftest import SENTENCES, tiny_model

LAYERS, WIDTH = 3, 16


def stats_of(tokens: np.ndarray) -> LayerStats:
    """LayerStats of planted token vectors (n, layers, width)."""
    stats = LayerStats(covariance=True)
    n = len(tokens)
    stats.update(TokenBatch(torch.as_tensor(tokens.transpose(1, 0, 2), dtype=torch.float32), *(np.zeros(n, dtype=int),) * 3, np.zeros(n, bool), np.arange(n)))
    return stats


def planted_set(dims=(3,), shift=50.0, layers=LAYERS, width=WIDTH, model_layers=None) -> outlier_set.OutlierSet:
    """Average vectors with the given dims far out in every layer (or only in model_layers)."""
    rng = np.random.default_rng(0)
    mean = rng.normal(size=(layers, width))
    for layer in model_layers if model_layers is not None else range(layers):
        mean[layer, list(dims)] += shift
    return outlier_set.OutlierSet("planted", mean, outlier_set.Criterion(10.0, 0.5, 100, 0), "planted")


def test_schema_names_a_missing_and_an_undeclared_column():
    frame = pd.DataFrame({"variant": ["raw"], "layer": [1]})
    with pytest.raises(BookError, match=r"missing \['split', 'threshold', 'accuracy'\], undeclared none"):
        wic.WIC_GRID.check(frame)
    with pytest.raises(BookError, match=r"undeclared \['oops'\]"):
        wic.WIC_GRID.check(frame.assign(split="dev", threshold=0.1, accuracy=50.0, oops=1))
    assert list(wic.WIC_GRID.frame([{"accuracy": 1.0, "threshold": 0.1, "split": "dev", "layer": 0, "variant": "raw"}]).columns) == list(wic.WIC_GRID.columns)
    assert position_probe.PROBE_CONTRIBUTION.check(pd.DataFrame(columns=[*position_probe.PROBE_CONTRIBUTION.columns, "dim 5", "dim 5 rank"])) is not None


def test_outlier_set_reads_chapter_02s_vectors_and_criterion(tmp_path):
    planted = planted_set(dims=(3, 7))
    folder = tmp_path / "ed" / "m" / outlier_set.CHAPTER
    folder.mkdir(parents=True)
    outlier_set.mean_table(planted.mean).to_csv(folder / "mean_vectors.csv", index=False)
    (folder / "meta.json").write_text(json.dumps({"parameters": {"z_threshold": 10.0, "min_layer_share": 0.5, "n_sentences": 123, "seed": 4}}))

    class Model:  # only the shape is read when the table exists
        name, n_layers, width = "m", LAYERS - 1, WIDTH

    found = outlier_set.reference(Model(), "m", "ed", outlier_set.Criterion(99.0, 1.0, 5, 0), root=tmp_path)
    assert found.dims.tolist() == [3, 7] and found.criterion == outlier_set.Criterion(10.0, 0.5, 123, 4)
    np.testing.assert_allclose(found.mean, planted.mean)
    assert "chapter 02's results" in found.source
    Model.width = WIDTH + 1
    with pytest.raises(BookError, match="run chapter 02 again"):
        outlier_set.reference(Model(), "m", "ed", found.criterion, root=tmp_path)


def test_outlier_set_is_recomputed_on_chapter_02s_sample_when_missing(tmp_path, shared_data):
    lm = tiny_model("bert")
    criterion = outlier_set.Criterion(10.0, 0.5, 20, 0)
    found = outlier_set.reference(lm, "tiny", "ed", criterion, root=tmp_path)
    assert found.mean.shape == (lm.n_layers + 1, lm.width) and "recomputed" in found.source
    from lib.datasets.tasks import sample_sentences

    again = outlier_set.statistics(lm, sample_sentences("sst2", "train", 20, 0)).mean
    np.testing.assert_allclose(found.mean, again)


def test_threshold_and_protocol_decide_what_is_clipped():
    found = planted_set(dims=(3,), model_layers=[1, 2])  # flagged in both contextual layers: a model-level outlier
    assert found.dims.tolist() == [3]
    assert found.flags("model")[:, 3].all()  # zeroed in every layer, layer 0 included (the paper's protocol)
    assert found.flags("layer")[:, 3].tolist() == [False, True, True]
    assert found.with_threshold(1e6).dims.tolist() == []


def test_variants_score_every_variant_and_layer_once_with_the_fitted_transforms():
    rng = np.random.default_rng(1)
    tokens = rng.normal(size=(500, LAYERS, WIDTH)) * np.arange(1, WIDTH + 1) + 5.0
    fitted = vector_variants.fit(["raw", "clipped", "whitened", "whitened-sentences"], planted_set(), token_stats=stats_of(tokens), sentence_vectors=tokens)
    seen = fitted.score(lambda t, layer, v: {"mean": float(t(tokens[:, layer]).mean()), "cov": np.cov(t(tokens[:, layer]), rowvar=False)})
    assert list(zip(seen["variant"], seen["layer"])) == [(v, layer) for v in ("raw", "clipped", "whitened", "whitened-sentences") for layer in range(LAYERS)]
    for row in seen[seen["variant"].str.startswith("whitened")].itertuples():  # both whitenings: identity covariance on their fit data
        np.testing.assert_allclose(row.cov, np.eye(WIDTH), atol=1e-4)  # float32 moments, condition number 256
    assert fitted.clipped_dims(0) == [3]
    with pytest.raises(BookError, match="unknown variants"):
        vector_variants.requested("raw,sharpened")
    assert vector_variants.requested("clipped") == ["raw", "clipped"]


def test_clipping_the_planted_common_dimension_removes_the_anisotropy():
    rng = np.random.default_rng(2)
    tokens = rng.normal(size=(400, LAYERS, WIDTH))
    tokens[:, :, 3] += 30.0  # one dimension shared by every token: the cone
    fitted = vector_variants.fit(clipping_whitening.VARIANTS, planted_set(), token_stats=stats_of(rng.normal(size=(400, LAYERS, WIDTH)) + tokens.mean(axis=0)))
    groups = np.repeat(np.arange(40), 10)
    table = clipping_whitening.layer_geometry(fitted, tokens, tokens, groups, 200, 0).set_index(["variant", "layer"])
    assert (table.loc["raw", "mean_cosine"] > 0.95).all()
    assert (table.loc["clipped", "mean_cosine"].abs() < 0.05).all() and (table.loc["whitened", "mean_cosine"].abs() < 0.05).all()
    assert (table.loc["clipped", "clipped_dims"] == "3").all()
    # the control zeroes one random never-flagged dimension and leaves the cone; changes are paired against raw
    control = table.loc["clipped-random"]
    assert (control["mean_cosine"] > 0.95).all() and (control["clipped_dims"] != "3").all() and (table.loc["raw", "change_vs_raw"] == 0).all()
    drop = table.loc["clipped", "change_vs_raw"] - control["change_vs_raw"]
    assert (drop < -0.9).all() and (table.loc["clipped", "change_vs_raw_ci95"] < 0.05).all()
    controls = [vector_variants.fit(["clipped-random"], planted_set(), seed=s) for s in range(1, 6)]
    versus = clipping_whitening.against_random(fitted, controls, tokens, tokens, groups, 200, 0, [1]).set_index("layer")
    assert versus.index.tolist() == list(range(LAYERS)) and (versus["draws"] == 5).all()
    assert versus["outliers_here"].tolist() == [i == 1 for i in range(LAYERS)]  # as the outlier set's layers say
    assert (versus["cosine_drop"] > 0.9).all() and (versus["cosine_drop_ci95"] < 0.05).all()  # the cone goes only with the outlier
    np.testing.assert_allclose(versus["cosine_drop"], (control["change_vs_raw"] - table.loc["clipped", "change_vs_raw"]).to_numpy(), atol=0.02)
    by_z = clipping_whitening.clipped_cosines(planted_set(), tokens, 200, 0)
    assert by_z["dims_zeroed"].tolist() == [1, 1, 1] and (by_z["mean_cosine"].abs() < 0.05).all()


def test_wic_chooses_on_train_and_counts_the_pairs_clipping_wins():
    rng = np.random.default_rng(3)
    n = 200
    same = np.arange(n) % 2 == 0
    a = rng.normal(size=(n, LAYERS, WIDTH))
    b = np.where(same[:, None, None], a, rng.normal(size=(n, LAYERS, WIDTH)))  # same sense: identical vectors
    a[:, :, 3] += 40.0  # the shared outlier makes every raw cosine near 1
    b[:, :, 3] += 40.0
    splits, labels = {"train": (a, b), "dev": (a[:100], b[:100])}, {"train": same, "dev": same[:100]}
    fitted = vector_variants.fit(["raw", "clipped"], planted_set())
    grid = wic.accuracy_grid(fitted, splits, labels)
    assert len(grid) == 2 * LAYERS * 2 * len(wic.THRESHOLDS)
    every = list(range(LAYERS))
    cross = wic.cross_fitted(fitted, splits["train"], labels["train"], every)
    assert cross["clipped"].mean() > 0.95 and cross["raw"].sum() == n // 2  # held-out decisions: clipping gets nearly every pair, raw half
    assert wic.cross_fitted(fitted, splits["train"], labels["train"], every)["raw"].tolist() == cross["raw"].tolist()  # seeded folds
    best = wic.best_settings(grid, fitted, splits["dev"], labels["dev"], "planted", "p", cross, every, "0-2").set_index("variant")
    assert best.loc["clipped", "cross_pairs"] == n and best.loc["clipped", "cross_right_only_here"] == int((cross["clipped"] & ~cross["raw"]).sum()) > 90
    assert best.loc["clipped", "train_accuracy"] == 100.0 and best.loc["clipped", "dev_accuracy_of_that_choice"] == 100.0
    assert best.loc["raw", "train_accuracy"] == 50.0
    assert best.loc["clipped", "dev_right_only_here"] == 50 and best.loc["clipped", "dev_right_only_raw"] == 0  # the 50 different-sense pairs
    assert best.loc["raw", "dev_right_only_here"] == 0
    # the paired counts against the clipped variant: clipped against itself has none, raw loses the same 50 pairs
    assert best.loc["clipped", "dev_right_only_here_vs_clipped"] == 0 and best.loc["raw", "dev_right_only_clipped"] == 50
    only = wic.best_settings(grid, fitted, splits["dev"], labels["dev"], "planted", "p", cross, [2], "2").set_index("variant")
    assert (only["layer"] == 2).all() and (only["outlier_layers"] == "2").all()  # chosen only among the layers named


def test_the_random_control_draws_as_many_never_flagged_dimensions():
    flags = np.zeros((4, 20), dtype=bool)
    flags[:, [3, 7]] = True
    flags[0, :] = False  # a layer with nothing flagged loses nothing
    flags[2, 11] = True  # flagged in one layer only: never drawn
    drawn = vector_variants.random_dims(flags, seed=0)
    assert [len(d) for d in drawn] == [0, 2, 3, 2]
    assert not set(np.concatenate(drawn)) & {3, 7, 11} and drawn[1].tolist() == drawn[3].tolist()
    assert [d.tolist() for d in vector_variants.random_dims(flags, seed=0)] == [d.tolist() for d in drawn]  # seeded
    with pytest.raises(BookError, match="too few never-flagged dimensions"):
        vector_variants.random_dims(np.ones((2, 3), dtype=bool), seed=0)


def test_sts_best_layer_is_contextual_and_layer_0_is_shown_apart():
    rng = np.random.default_rng(4)
    gold = rng.uniform(0, 5, size=60)
    base = rng.normal(size=(60, WIDTH))
    vectors = np.zeros((120, LAYERS, WIDTH))
    away = rng.normal(size=(60, WIDTH))
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    for layer, noise in {0: 0.0, 1: 3.0, 2: 1.0}.items():  # layer 0 noiseless, layer 2 better than layer 1
        vectors[:60, layer] = base
        vectors[60:, layer] = base + (5 - gold)[:, None] * away + noise * rng.normal(size=(60, WIDTH))
    encoded = sts.Encoded(vectors, {"toy": (np.arange(60), np.arange(60, 120), gold, np.array(["a"] * 30 + ["b"] * 30))})
    table = sts.spearman_table(vector_variants.fit(["raw"], planted_set()), encoded, {"toy": "Toy"})
    assert table["n_pairs"].eq(60).all() and table["n_sentences"].eq(120).all()
    best = sts.best_layers(table, "planted", "p").iloc[0]
    scores = table.set_index("layer")["spearman_x100"]
    assert best["layer"] == int(scores.loc[1:].idxmax()) and best["spearman_x100"] == scores.loc[1:].max()
    assert best["embedding_output_spearman_x100"] == scores.loc[0]
    assert scores.loc[0] > scores.loc[1:].max()  # layer 0 would have won the search, and is not the answer


def test_frozen_classifiers_learn_a_planted_label_in_every_variant():
    rng = np.random.default_rng(5)
    labels = {s: rng.integers(0, 2, size=n) for s, n in (("train", 300), ("dev", 100), ("test", 100))}
    vectors = {s: rng.normal(size=(len(y), LAYERS, WIDTH)) + 4.0 * y[:, None, None] * (np.arange(WIDTH) == 5) for s, y in labels.items()}
    fitted = vector_variants.fit(["raw", "clipped", "whitened-sentences"], planted_set(), sentence_vectors=vectors["train"])
    run = supervised.classify(fitted, vectors, labels, "Toy", 300, bias=True)
    table = run.table
    assert len(table) == 3 * LAYERS and (table["test_accuracy"] > 90).all()
    assert table.set_index("variant").loc["clipped", "clipped_dims"].eq(1).all() and table.set_index("variant").loc["raw", "clipped_dims"].eq(0).all()
    for (variant, layer), right in run.correct.items():  # the paired record agrees with the table's accuracy
        row = table[(table["variant"] == variant) & (table["layer"] == layer)]
        assert 100 * right.mean() == pytest.approx(float(row["test_accuracy"].iloc[0]))
    best = supervised.best([run], "planted", "p", [1, 2]).set_index("variant")
    assert set(best.index) == {"raw", "clipped", "whitened-sentences"} and (best["test_at_best_dev_layer"] > 90).all()
    assert (best["test_examples"] == 100).all() and best.loc["raw", ["test_right_only_here", "test_right_only_raw"]].eq(0).all()
    at = table[table["layer"].isin([1, 2])].set_index(["variant", "layer"])
    layer = int(at.loc["raw", "dev_accuracy"].idxmax())  # one layer for both: the raw classifier's best among the outlier layers
    assert (best["paired_layer"] == layer).all()
    gain = (best.loc["clipped", "test_right_only_here"] - best.loc["clipped", "test_right_only_raw"]) / 100
    assert 100 * gain == pytest.approx(at.loc[("clipped", layer), "test_accuracy"] - at.loc[("raw", layer), "test_accuracy"])
    assert supervised.best([run], "planted", "p", [])["paired_layer"].isna().all()  # no outlier layer: nothing paired
    label_clipped = supervised.classify(vector_variants.fit(["clipped"], planted_set(dims=(5,))), vectors, labels, "Toy", 300, bias=True).table
    assert (label_clipped["test_accuracy"] < 70).all()  # the dimension that carries the label is gone


def test_sts_protocol_runs_on_a_tiny_model():
    lm = tiny_model("bert")
    pairs = {"toy": pd.DataFrame({"subset": "a", "sentence1": SENTENCES[:6], "sentence2": SENTENCES[6:], "score": np.arange(6.0)})}
    found = outlier_set.OutlierSet(lm.name, np.zeros((lm.n_layers + 1, lm.width)), outlier_set.Criterion(10.0, 0.5, 1, 0), "planted")
    run = sts._score(lm, pairs, {"toy": "Toy"}, SENTENCES * 4, found, ["raw", "clipped", "whitened", "whitened-sentences"])
    assert len(run.table) == 4 * (lm.n_layers + 1) and np.isfinite(run.table["spearman_x100"]).all()
    raw, clipped = (run.table[run.table["variant"] == v]["spearman_x100"].to_numpy() for v in ("raw", "clipped"))
    np.testing.assert_allclose(raw, clipped)  # nothing to clip: the two are the same vectors
    assert run.fit_tokens > 0 and run.fit_sentences == len(SENTENCES) * 4


def test_clip_of_a_transform_is_the_clip_transform():
    fitted = vector_variants.fit(["clipped"], planted_set(dims=(2, 9)))
    assert isinstance(fitted.transforms["clipped"][1], transforms.Clip) and fitted.clipped_dims(1) == [2, 9]


def test_settings_near_the_best_count_what_a_small_sample_could_not_tell_apart():
    grid = pd.DataFrame(
        {"variant": ["raw"] * 4, "layer": [1, 1, 2, 2], "split": "train", "threshold": [0.1, 0.2, 0.1, 0.2], "accuracy": [70.0, 65.0, 60.0, 69.0]}
    )
    near = wic.settings_near_best(grid, 500).iloc[0]
    se = 100 * np.sqrt(0.7 * 0.3 / 500)  # 2.05 points: 70 and 69 lie within 2 SE, 65 and 60 do not
    assert near["best train accuracy"] == 70.0 and near["SE at 500 pairs"] == pytest.approx(se) and near["settings within 2 SE"] == 2


def test_chapter_11_and_12_tables_have_their_declared_columns():
    from lib.measure import vocabulary

    lm = tiny_model("bert")
    found = rare_words._bins(lm, SENTENCES * 3, bin_size=500, own_corpus=False)
    rare_words.COVERAGE.frame([rare_words.coverage_row("whole words", np.array([5, 3, 1])), found.coverage])
    rare_words.RARE_COSINE.check(found.by_frequency)
    assert len(found.by_frequency_bins(250)) > len(found.by_frequency)
    lm = tiny_model("gpt2")  # BERT's padding row is zero, which scaled centering cannot normalise
    matrices = isotropy_word_similarity.variants(vocabulary.embedding_matrix(lm))
    iso = isotropy_word_similarity.isotropy_table(matrices, lm.name).set_index("variant")
    assert iso.loc["centered", "I1"] > iso.loc["raw", "I1"] and iso.loc["centered", "mean_vector_norm"] < 1e-6
    bench = {"Toy": pd.DataFrame({"word1": ["good", "bad", "film", "dull"], "word2": ["great", "awful", "movie", "boring"], "score": [9.0, 8.0, 7.0, 1.0]})}
    scores, kept = isotropy_word_similarity.word_similarity(lm, matrices, bench)
    assert len(scores) == len(matrices) and (scores["pairs"] == 4).all() and len(kept["Toy"][0]) == scores["pairs_kept"].iloc[0]
    assert list(scores.columns) == list(isotropy_word_similarity.WORD_SIMILARITY.columns)


def test_sts_differences_are_paired_over_pairs_and_shrink_with_them():
    """The clipped-minus-raw difference is computed at each variant's best layer, its bootstrap standard error is
    that of a difference of two correlations on the same resampled pairs (zero when the variants score alike), and it
    shrinks about as 1/sqrt(pairs)."""
    rng = np.random.default_rng(4)

    def encoded(n: int) -> sts.Encoded:
        gold = rng.uniform(0, 5, size=n)
        base, away = rng.normal(size=(n, WIDTH)), rng.normal(size=(n, WIDTH))
        vectors = np.zeros((2 * n, LAYERS, WIDTH))
        for layer in range(LAYERS):
            vectors[:n, layer] = base
            vectors[n:, layer] = base + (5 - gold)[:, None] * away / np.linalg.norm(away, axis=1, keepdims=True) + 2.0 * rng.normal(size=(n, WIDTH))
        return sts.Encoded(vectors, {"toy": (np.arange(n), np.arange(n, 2 * n), gold, np.array(["a"] * n))})

    variants = vector_variants.fit(["raw", "clipped"], planted_set())
    ses = []
    for n in (100, 1600):
        data = encoded(n)
        table = sts.spearman_table(variants, data, {"toy": "Toy"})
        diff = sts.paired_differences(variants, data, {"toy": "Toy"}, table, [1, 2]).set_index(["variant", "baseline"]).loc[("clipped", "raw")]
        best = table[table["layer"].isin([1, 2])].groupby("variant")["spearman_x100"].max()
        assert diff["difference"] == pytest.approx(best["clipped"] - best["raw"]) and diff["layers"] == "1-2"
        assert diff["se"] > 0 and diff["n_pairs"] == n
        ses.append(diff["se"])
    assert 2 < ses[0] / ses[1] < 8  # 16× the pairs: about a quarter of the error
    same = vector_variants.fit(["raw", "clipped"], planted_set(dims=()))  # nothing to clip: the two variants are one
    data = encoded(100)
    table = sts.spearman_table(same, data, {"toy": "Toy"})
    assert sts.paired_differences(same, data, {"toy": "Toy"}, table, [1])["se"].iloc[0] == pytest.approx(0, abs=1e-9)
    assert sts.paired_differences(same, data, {"toy": "Toy"}, table, []).empty  # no layer with an outlier: nothing to compare


def test_clipping_claims_count_only_layers_where_the_clipped_dims_stand_out():
    """A model-level outlier that its last LayerNorm zeroes (as MiniLM's and MPNet's final γ and β do, about 1e-33) is
    clipped there too, but stands out nowhere: that layer is not one a clipping claim can be tested in."""
    found = planted_set(dims=(3,), layers=4, model_layers=[1, 2])
    assert found.dims.tolist() == [3] and found.outlier_layers() == [1, 2]
    assert found.flags("model")[3, 3]  # still zeroed in layer 3, where there is nothing to zero
    assert planted_set(dims=(3,), layers=4, model_layers=[0]).outlier_layers() == []  # only in the input layer: none


def test_minilms_last_layernorm_erases_its_outlier(minilm):
    """The packaged MiniLM's last LayerNorm has γ and β of about 1e-33 on dimension 223, one of its outliers: chapter 02
    says so, and that layer's output has nothing to clip there."""
    detected = pd.DataFrame({"dim": [223, 5], "layers": ["1-5", "2"], "model_outlier": [True, False]})
    frame = outlier_neurons.last_layernorm(minilm, detected)
    assert frame["dim"].tolist() == [223] and abs(frame["gamma"].iloc[0]) < 1e-20 and abs(frame["beta"].iloc[0]) < 1e-20
    assert 0.1 < frame["median_abs_gamma"].iloc[0] < 10
    assert "sets every outlier dimension to about zero in layer 6's output" in outlier_neurons.layernorm_finding("MiniLM", frame, 6)
    kept = frame.assign(gamma=[0.5], beta=[0.1])
    assert "keeps the outlier dimensions" in outlier_neurons.layernorm_finding("MiniLM", kept, 6)
    assert "erases dim 223 from layer 6's output" in outlier_neurons.layernorm_finding("MiniLM", pd.concat([frame, kept.assign(dim=[7])]), 6)
