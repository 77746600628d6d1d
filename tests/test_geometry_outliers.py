"""Anisotropy, PCA views and outlier detection on data whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from lib.errors import BookError
from lib.experiments import anisotropy
from lib.measure import geometry, outliers


def test_pair_cosines_match_a_direct_computation():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(10, 3, 5))
    cos = geometry.pair_cosines(v, 4, seed=2)
    order = np.random.default_rng(2).permutation(10)[:8]
    a, b = v[order[0]], v[order[1]]
    expected = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(cos[0], expected)
    assert cos.shape == (4, 3)


def test_anisotropy_near_zero_for_isotropic_and_high_for_shifted_clouds():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(4000, 2, 64))
    v[:, 1] += 3.0  # layer 1: every vector shifted along the same direction
    table = geometry.anisotropy_table(geometry.pair_cosines(v, 2000, seed=0), geometry.pair_cosines(geometry.centered(v), 2000, seed=0))
    anisotropy.ANISOTROPY.check(table)  # the columns chapter 01 writes and the scorecard reads
    assert abs(table.loc[0, "mean_cosine"]) < 0.01
    assert table.loc[1, "mean_cosine"] > 0.85
    assert (table["ci95_low"] < table["mean_cosine"]).all() and (table["mean_cosine"] < table["ci95_high"]).all()
    # the centred baseline is isotropic in both layers (up to the order-1/n residual of centring on the sample itself);
    # the excess over it is the shift's alone, with a paired interval
    assert (table["centered_mean_cosine"].abs() < 0.01).all()
    assert table.loc[0, "excess_ci95_high"] < 0.001 and table.loc[1, "excess_ci95_low"] > 0.8


def test_too_few_sentences_for_the_pairs_is_a_clear_error():
    with pytest.raises(BookError, match="need 20 sampled tokens"):
        geometry.pair_cosines(np.ones((10, 1, 3)), 10, seed=0)


def test_pca_plane_places_the_origin():
    rng = np.random.default_rng(2)
    centred = geometry.pca_plane(rng.normal(size=(500, 20)))
    shifted = geometry.pca_plane(rng.normal(size=(500, 20)) + 10.0)
    assert np.linalg.norm(centred.origin) < 0.5 and centred.mean_vector_norm_ratio < 0.1
    assert shifted.mean_vector_norm_ratio > 0.9
    assert centred.coords.shape == (500, 2) and 0 < centred.explained.sum() < 1


def test_extreme_dimensions_and_pooling():
    argmin = np.array([[5, 0, 5], [0, 9, 1]])
    argmax = np.array([[2, 8, 0], [10, 0, 0]])
    per_layer = outliers.extreme_dimensions(argmin, argmax, 10)
    assert per_layer["argmin_dim"].tolist() == [0, 1] and per_layer["argmin_percent"].tolist() == [50.0, 90.0]
    assert per_layer["argmax_dim"].tolist() == [1, 0] and per_layer["argmax_percent"].tolist() == [80.0, 100.0]
    pooled = outliers.pooled_extremes(argmin, argmax, 10).set_index("kind")
    assert pooled.loc["argmin", "dim"] == 1 and pooled.loc["argmin", "percent"] == 90.0  # layer 1 only


def test_detect_outliers_finds_planted_dimensions_and_nothing_in_noise():
    rng = np.random.default_rng(3)
    mean = rng.normal(scale=0.05, size=(7, 300))
    mean[1:, 42] -= 3.0  # every contextual layer
    mean[2:4, 7] += 2.0  # two of six layers: flagged, not model-level
    found = outliers.detect_outliers(mean, z_threshold=10, min_layer_share=0.5).set_index("dim")
    assert set(found.index) == {42, 7}
    assert found.loc[42, "model_outlier"] and found.loc[42, "sign"] == "-" and found.loc[42, "layers"] == "1-6"
    assert not found.loc[7, "model_outlier"] and found.loc[7, "n_layers"] == 2
    assert outliers.detect_outliers(rng.normal(size=(5, 300)), z_threshold=10).empty
    assert outliers.flagged(mean, 10)[:, 42].tolist() == [False] + [True] * 6


def test_layer_ranges():
    assert outliers.layer_ranges(np.array([1, 2, 3, 5, 7, 8])) == "1-3, 5, 7-8"
    assert outliers.layer_ranges(np.array([0])) == "0"


def test_detect_outliers_rejects_bad_parameters():
    with pytest.raises(BookError, match="min_layer_share"):
        outliers.detect_outliers(np.zeros((3, 4)), min_layer_share=0)


def test_analyse_gathers_chapter_02s_tables():
    mean = np.random.default_rng(0).normal(size=(4, 30))
    mean[1:, 7] += 40.0  # a model-level outlier in every contextual layer
    lo = np.zeros((4, 30), dtype=int)
    hi = np.zeros((4, 30), dtype=int)
    lo[:, 3], hi[:, 7] = 90, 100
    report = outliers.analyse(mean, lo, hi, 100, z_threshold=10.0, min_layer_share=0.5)
    assert report.model_outliers["dim"].tolist() == [7] and report.flags[1:, 7].all() and not report.flags[0, 7]
    assert report.extremes["argmax_dim"].tolist() == [7] * 4 and report.extremes["argmin_percent"].tolist() == [90.0] * 4
    pooled = report.pooled.set_index("kind")
    assert pooled.loc["argmax", "dim"] == 7 and pooled.loc["argmax", "n_vectors"] == 300


def test_clip_flags_follow_the_papers_two_protocols():
    rng = np.random.default_rng(0)
    means = rng.normal(size=(5, 40))  # layer 0 = embedding output, 4 contextual layers
    means[1:, 7] = 80.0  # flagged in every contextual layer: a model-level outlier
    means[2, 11] = -90.0  # flagged in one layer only
    model = outliers.clip_flags(means, 10.0, 0.5, "model")
    assert model[:, 7].all() and model.sum() == 5  # dim 7 in every layer, the embedding output included
    layer = outliers.clip_flags(means, 10.0, 0.5, "layer")
    np.testing.assert_array_equal(layer, outliers.flagged(means, 10.0))
    assert layer[2, 11] and not layer[0, 7]
    with pytest.raises(BookError, match="clip must be one of model, layer"):
        outliers.clip_flags(means, 10.0, 0.5, "every")
