"""Isotropy measures on clouds whose answer is known, against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from lib import isotropy
from lib.errors import BookError


@pytest.fixture
def gaussian() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(20000, 10))


def test_isotropic_cloud_is_near_one_and_a_shifted_cloud_far_below(gaussian):
    assert isotropy.i1(gaussian) > 0.9 and isotropy.i2(gaussian) < 0.05
    shifted = gaussian + 3.0
    assert isotropy.i1(shifted) < 1e-3 and isotropy.i2(shifted) > 1.0
    assert isotropy.isoscore(gaussian) > 0.95
    flat = gaussian * np.r_[10.0, np.full(9, 0.01)]
    assert isotropy.isoscore(flat) < 0.05


def test_log_partition_matches_direct_sum_and_survives_large_norms(gaussian):
    small = gaussian[:500] * 0.5
    _, vecs = np.linalg.eigh(small.T @ small)
    direct = [np.log(np.exp(small @ c).sum()) for c in np.concatenate([vecs, -vecs], axis=1).T]
    np.testing.assert_allclose(isotropy.log_partition(small), direct, rtol=1e-10)
    huge = small * 1e3  # exp would overflow without log-sum-exp
    assert np.isfinite(isotropy.log_partition(huge)).all() and 0 <= isotropy.i1(huge) <= 1


def test_norm_stats_and_bad_input():
    w = np.array([[3.0, 4.0], [3.0, -4.0]])
    assert isotropy.norm_stats(w) == {"average_norm": 5.0, "mean_vector_norm": 3.0, "ratio": 0.6}
    with pytest.raises(BookError, match="finite"):
        isotropy.i1(np.array([[np.nan, 1.0], [1.0, 2.0]]))
