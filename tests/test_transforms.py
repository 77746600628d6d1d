"""Each transform against its definition, computed by brute force with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from lib.errors import BookError
from lib.measure.transforms import Center, Clip, RemoveTopPCs, ScaledCenter, Whiten, whitening_from_moments, whitening_from_vectors


@pytest.fixture
def cloud() -> np.ndarray:
    """Anisotropic data with a large common offset and one outlier dimension."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 12)) @ rng.normal(size=(12, 12)) + 3.0
    x[:, 5] += 40.0
    return x


def test_clip_zeroes_exactly_the_given_dimensions(cloud):
    out = Clip([5, 2, 5]).fit(cloud).transform(cloud)
    assert (out[:, [2, 5]] == 0).all()
    keep = [d for d in range(12) if d not in (2, 5)]
    assert np.array_equal(out[:, keep], cloud[:, keep])
    assert cloud[:, 5].min() > 0  # the input is not modified
    with pytest.raises(BookError, match="must lie in 0..11"):
        Clip([12]).fit(cloud)
    with pytest.raises(BookError, match="fitted on width 12"):
        Clip([1]).fit(cloud).transform(cloud[:, :6])


def test_whitened_covariance_is_the_identity_on_the_fitting_data(cloud):
    white = Whiten().fit(cloud)
    out = white.transform(cloud)
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(np.cov(out, rowvar=False), np.eye(12), atol=1e-8)
    first = Whiten(k=4).fit(cloud).transform(cloud)
    assert first.shape == (2000, 4)
    np.testing.assert_allclose(np.cov(first, rowvar=False), np.eye(4), atol=1e-8)
    np.testing.assert_allclose(np.abs(first), np.abs(out[:, :4]), atol=1e-8)  # the first k components of the full whitening


def test_whitening_from_moments_equals_whitening_from_vectors(cloud):
    direct = Whiten().fit(cloud).transform(cloud[:10])
    moments = Whiten().fit_moments(cloud.mean(axis=0), np.cov(cloud, rowvar=False)).transform(cloud[:10])
    np.testing.assert_allclose(direct, moments, atol=1e-10)


def test_singular_covariance_is_a_clear_error_not_nans():
    rng = np.random.default_rng(1)
    low_rank = rng.normal(size=(500, 3)) @ rng.normal(size=(3, 8))  # rank 3 in 8 dimensions
    with pytest.raises(BookError, match="only 3 usable components of 8.*k <= 3"):
        Whiten().fit(low_rank)
    dropped = Whiten(drop_null=True).fit(low_rank)
    assert dropped.dropped_ == 5 and dropped.transform(low_rank).shape == (500, 3)
    assert Whiten(k=6, drop_null=True).fit(low_rank).dropped_ == 3  # asked for 6, 3 exist
    assert Whiten(k=2, drop_null=True).fit(low_rank).dropped_ == 0
    out = Whiten(k=3).fit(low_rank).transform(low_rank)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(np.cov(out, rowvar=False), np.eye(3), atol=1e-6)
    with pytest.raises(BookError, match="NaN"):
        Whiten().fit(np.full((5, 3), np.nan))


def test_center_and_scaled_center_match_their_formulas(cloud):
    np.testing.assert_allclose(Center().fit(cloud).transform(cloud), cloud - cloud.mean(axis=0))
    unit_mean = np.mean([v / np.linalg.norm(v) for v in cloud], axis=0)
    expected = np.array([v - np.linalg.norm(v) * unit_mean for v in cloud[:50]])
    np.testing.assert_allclose(ScaledCenter().fit(cloud).transform(cloud[:50]), expected, atol=1e-12)
    with pytest.raises(BookError, match="non-zero"):
        ScaledCenter().fit(np.zeros((3, 4)))


def test_remove_top_pcs_matches_brute_force(cloud):
    centered = cloud - cloud.mean(axis=0)
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    top = vt[:2].T
    expected = centered - centered @ top @ top.T
    out = RemoveTopPCs(2).fit(cloud).transform(cloud)
    np.testing.assert_allclose(out, expected, atol=1e-9)
    np.testing.assert_allclose(out @ top, 0, atol=1e-9)  # nothing left along the removed directions
    with pytest.raises(BookError, match="cannot remove 12"):
        RemoveTopPCs(12).fit(cloud)


def test_transforms_are_deterministic(cloud):
    for make in (lambda: Whiten(k=5), lambda: RemoveTopPCs(3), ScaledCenter, Center, lambda: Clip([5])):
        a, b = make().fit(cloud).transform(cloud[:20]), make().fit(cloud).transform(cloud[:20])
        assert np.array_equal(a, b)


def test_whitening_from_moments_equals_the_fit_on_the_vectors(cloud):
    layers = np.stack([cloud, 2 * cloud])
    mean = layers.mean(axis=1)
    cov = np.stack([np.cov(x, rowvar=False) for x in layers])
    from_vectors = whitening_from_vectors(layers.transpose(1, 0, 2))  # (n, layers, width): the same fit from the vectors
    for a, b in zip(whitening_from_moments(mean, cov), from_vectors):
        np.testing.assert_allclose(a.transform(cloud), b.transform(cloud), atol=1e-8)
    np.testing.assert_allclose(np.cov(from_vectors[1].transform(layers[1]), rowvar=False), np.eye(12), atol=1e-8)


def test_fitted_transforms_round_trip_through_a_file(cloud, tmp_path):
    from lib.measure import transforms

    for fitted in (Whiten(k=5).fit(cloud), RemoveTopPCs(2).fit(cloud), ScaledCenter().fit(cloud), Center().fit(cloud), Clip([1, 5]).fit(cloud)):
        path = transforms.save(fitted, tmp_path / f"{type(fitted).__name__}.npz")
        again = transforms.load(path)
        assert type(again) is type(fitted)
        assert np.array_equal(again.transform(cloud[:30]), fitted.transform(cloud[:30]))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary files left
    with pytest.raises(BookError, match="no saved transform"):
        transforms.load(tmp_path / "missing.npz")
