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


def _brute_force_i1_i2(w: np.ndarray) -> tuple[float, float]:
    """I1, I2 as the papers write them: one Z(c) per eigenvector of WᵀW (numpy's eig, in its signs), a plain loop."""
    values, vectors = np.linalg.eig(w.T @ w)
    z = []
    for j in range(len(values)):
        c = np.real(vectors[:, j])
        if np.abs(c).max() != c.max():  # the convention of lib.measure.isotropy: largest-magnitude entry positive
            c = -c
        z.append(sum(np.exp(row @ c) for row in w))
    z = np.array(z)
    return z.min() / z.max(), np.sqrt(((z - z.mean()) ** 2).sum() / (len(z) * z.mean() ** 2))


def test_i1_i2_equal_a_loop_over_eigenvectors_one_direction_each():
    w = np.random.default_rng(2).normal(size=(300, 6)) * np.r_[1.0, 0.8, 0.6, 0.5, 0.4, 0.3] + 0.4
    i1, i2 = _brute_force_i1_i2(w)
    measures = isotropy.partition_measures(w)
    assert measures["I1"] == pytest.approx(i1, rel=1e-9) and measures["I2"] == pytest.approx(i2, rel=1e-9)
    assert isotropy.log_partition(w).shape == (6,)


def test_one_sign_i1_hardly_moves_when_an_eigenvector_flips(gaussian):
    """For a cloud x + mu with x ~ N(0, I), Z(c) = n exp(c.mu + 1/2) in expectation: with the top eigenvector along mu,
    the ratio min/max is exp(-|mu|) whichever sign it has, while using both signs gives exp(-2|mu|)."""
    mu = np.zeros(10)
    mu[0] = 1.0
    w = gaussian + mu
    directions = isotropy.eigenvectors(w)
    top = np.abs(directions.T @ mu).argmax()
    z = np.exp(isotropy.log_partition(w))
    flipped = directions.copy()
    flipped[:, top] *= -1
    z_flipped = np.exp(np.array([np.log(np.exp(w @ c).sum()) for c in flipped.T]))
    one_sign, one_sign_flipped = z.min() / z.max(), z_flipped.min() / z_flipped.max()
    assert one_sign == pytest.approx(np.exp(-1.0), rel=0.05) and one_sign_flipped == pytest.approx(np.exp(-1.0), rel=0.05)
    both = np.concatenate([z, z_flipped])
    assert both.min() / both.max() == pytest.approx(np.exp(-2.0), rel=0.1)


def test_isoscore_takes_points_as_rows_exactly():
    """Variance spread equally over k of n dimensions gives IsoScore (k - 1) / (n - 1) (Rudman et al., 2022): 0 for a
    line, 0.5 for a disk in R^3, 1 for the full space. Points as columns would give another number."""
    for n in (3, 10):
        for k in range(1, n + 1):
            points = np.concatenate([np.eye(n)[:k], -np.eye(n)[:k]]) * 2.5 + 7.0  # 2k points; the shift must not matter
            assert isotropy.isoscore(points) == pytest.approx((k - 1) / (n - 1), abs=1e-5)
    disk = np.concatenate([np.eye(3)[:2], -np.eye(3)[:2]])
    assert abs(isotropy.isoscore(disk.T) - 0.5) > 0.2  # the transposed layout is silently different


def test_log_partition_matches_direct_sum_and_survives_large_norms(gaussian):
    small = gaussian[:500] * 0.5
    direct = [np.log(np.exp(small @ c).sum()) for c in isotropy.eigenvectors(small).T]
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


def test_the_sign_range_is_the_extremes_over_every_choice_of_signs():
    """Brute force over the 2^5 sign choices of a shifted cloud's eigenvectors: sign_range returns their smallest and
    largest I1, and the book's convention lies between; a centred cloud's range is narrow."""
    import itertools

    from scipy.special import logsumexp

    rng = np.random.default_rng(3)
    w = rng.normal(size=(400, 5)) * np.array([3.0, 1.0, 1.0, 0.5, 0.5]) + np.array([2.0, -1.0, 0.0, 0.5, 0.0])
    directions = isotropy.eigenvectors(w)
    values = []
    for signs in itertools.product((1.0, -1.0), repeat=5):
        z = np.exp(logsumexp(w @ (directions * np.array(signs)), axis=0))
        values.append(z.min() / z.max())
    low, high = isotropy.sign_range(w)
    assert (low, high) == pytest.approx((min(values), max(values)), rel=1e-9)
    assert low <= isotropy.partition_measures(w)["I1"] <= high
    centred_low, centred_high = isotropy.sign_range(w - w.mean(axis=0))
    assert centred_high - centred_low < (high - low) / 2
