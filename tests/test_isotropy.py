"""Isotropy measures on clouds whose answer is known, against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from lib.errors import BookError
from lib.measure import isotropy


@pytest.fixture
def gaussian() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(20000, 10))


def test_isotropic_cloud_is_near_one_and_a_shifted_cloud_far_below(gaussian):
    measures = isotropy.partition_measures(gaussian)
    assert measures["I1"] > 0.9 and measures["I2"] < 0.05
    shifted = isotropy.partition_measures(gaussian + 3.0)
    assert shifted["I1"] < 1e-3 and shifted["I2"] > 1.0
    assert isotropy.isoscore(gaussian) > 0.95
    flat = gaussian * np.r_[10.0, np.full(9, 0.01)]
    assert isotropy.isoscore(flat) < 0.05


def test_log_partition_matches_direct_sum_and_survives_large_norms(gaussian):
    small = gaussian[:500] * 0.5
    _, vecs = np.linalg.eigh(small.T @ small)
    direct = [np.log(np.exp(small @ c).sum()) for c in np.concatenate([vecs, -vecs], axis=1).T]
    np.testing.assert_allclose(isotropy.log_partition(small), direct, rtol=1e-10)
    huge = small * 1e3  # exp would overflow without log-sum-exp
    assert np.isfinite(isotropy.log_partition(huge)).all() and 0 <= isotropy.partition_measures(huge)["I1"] <= 1


def test_norm_stats_and_bad_input():
    w = np.array([[3.0, 4.0], [3.0, -4.0]])
    assert isotropy.norm_stats(w) == {"average_norm": 5.0, "mean_vector_norm": 3.0, "ratio": 0.6}
    with pytest.raises(BookError, match="finite"):
        isotropy.partition_measures(np.array([[np.nan, 1.0], [1.0, 2.0]]))


def test_top_direction_alignment_finds_a_planted_common_direction(gaussian):
    direction = np.zeros(10)
    direction[3] = 1.0
    assert isotropy.top_direction_alignment(gaussian + 5.0 * direction) > 0.999
    stretched = (gaussian - gaussian.mean(axis=0)) * np.r_[5.0, np.ones(9)] + 0.1 * direction  # top axis 0, mean along axis 3
    assert isotropy.top_direction_alignment(stretched) < 0.01
    w = np.random.default_rng(1).normal(size=(50, 4)) + 1.0
    v1 = np.linalg.svd(w)[2][0]
    assert isotropy.top_direction_alignment(w) == pytest.approx(abs(v1 @ w.mean(0)) / np.linalg.norm(w.mean(0)), rel=1e-9)
