"""Post-hoc transforms of one layer's vectors, fitted on one sample and applied to any other.

- Clip: zero chosen (outlier) dimensions (Luo et al. 2021, §4).
- Whiten: x -> (x - μ) W with W = U Λ^{-1/2} from the SVD of the covariance, optionally
  only the first k components (Su et al. 2021; Luo's thesis §3.2.3).
- Center, ScaledCenter: subtract the mean, or the mean unit vector scaled by each vector's
  norm (Biš et al. 2021, §5.2).
- RemoveTopPCs: center, then remove the projections on the top D principal components
  ("all-but-the-top", Mu & Viswanath 2018, as used by Biš et al.).

scikit-learn style: `fit(x)` returns the fitted object, `transform(x)` returns float64. Whiten
and RemoveTopPCs can also be fitted from a mean and covariance (`fit_moments`), e.g. from
`collectors.LayerStats`, without keeping the vectors. Parameters are float64; transforms are
deterministic (no random state); `save` and `load` persist a fitted transform as .npz.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.linalg import eigh

from ..errors import require
from ..io import write_atomic


def _matrix(x: np.ndarray, width: int | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    require(x.ndim == 2 and len(x) > 0, f"expected a non-empty (n, width) matrix, got shape {x.shape}")
    require(width is None or x.shape[1] == width, f"vectors are {x.shape[1]} wide but the transform was fitted on width {width}")
    require(bool(np.isfinite(x).all()), "the vectors contain NaN or infinite values")
    return x


def _moments(x: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (unbiased) covariance of the rows, for transforms fitted from moments."""
    x = _matrix(x)
    require(len(x) > 1, f"{what} needs at least two vectors")
    return x.mean(axis=0), np.cov(x, rowvar=False)


def _eigen(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors (columns) of a symmetric covariance; equals its SVD."""
    cov = np.asarray(cov, dtype=np.float64)
    require(cov.ndim == 2 and cov.shape[0] == cov.shape[1], f"covariance must be square, got shape {cov.shape}")
    require(bool(np.isfinite(cov).all()), "the covariance contains NaN or infinite values")
    values, vectors = eigh((cov + cov.T) / 2)
    return values[::-1], vectors[:, ::-1]


class Identity:
    """No change (the "raw" variant), as a transform."""

    def fit(self, x: np.ndarray) -> Identity:
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        return _matrix(x)


class Clip:
    """Set the given dimensions to zero."""

    def __init__(self, dims: np.ndarray | list[int], width: int | None = None):
        self.dims = np.unique(np.asarray(dims, dtype=int))
        self.width_: int | None = None
        if width is not None:
            self.fit(np.zeros((1, width)))

    def fit(self, x: np.ndarray) -> Clip:
        x = _matrix(x)
        require(bool(((self.dims >= 0) & (self.dims < x.shape[1])).all()), f"clip dimensions {self.dims.tolist()} must lie in 0..{x.shape[1] - 1}")
        self.width_ = x.shape[1]
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        require(self.width_ is not None, "fit the Clip transform before using it")
        out = _matrix(x, self.width_).copy()
        out[:, self.dims] = 0.0
        return out


class Center:
    """Subtract the mean vector of the fitting sample."""

    def fit(self, x: np.ndarray) -> Center:
        self.mean_ = _matrix(x).mean(axis=0)
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        return _matrix(x, len(self.mean_)) - self.mean_


class ScaledCenter:
    """e(w)' = e(w) - ||e(w)|| μ̂, where μ̂ is the mean of the fitting sample's unit vectors."""

    def fit(self, x: np.ndarray) -> ScaledCenter:
        x = _matrix(x)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        require(bool((norms > 0).all()), "scaled centering needs non-zero vectors")
        self.unit_mean_ = (x / norms).mean(axis=0)
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = _matrix(x, len(self.unit_mean_))
        return x - np.linalg.norm(x, axis=1, keepdims=True) * self.unit_mean_


class Whiten:
    """Whitening with μ and W = U Λ^{-1/2} from the covariance's SVD, keeping the first k components
    (all when k is None). Components whose variance is below rcond × the largest cannot be inverted:
    asking for them is an error that says how many are available, unless drop_null is set, in which
    case they are left out (they carry no variation; e.g. a dimension a LayerNorm gain of ~0 switches
    off) and `dropped_` says how many of the k asked for were left out."""

    def __init__(self, k: int | None = None, rcond: float = 1e-10, drop_null: bool = False):
        require(k is None or (isinstance(k, (int, np.integer)) and k > 0), f"k must be a positive integer or None, got {k!r}")
        self.k, self.rcond, self.drop_null = k, rcond, drop_null

    def fit(self, x: np.ndarray) -> Whiten:
        return self.fit_moments(*_moments(x, "whitening"))

    def fit_moments(self, mean: np.ndarray, cov: np.ndarray) -> Whiten:
        values, vectors = _eigen(cov)
        requested = self.k or len(values)
        require(requested <= len(values), f"k={requested} exceeds the width {len(values)}")
        rank = int((values > self.rcond * max(values[0], 0.0)).sum()) if values[0] > 0 else 0
        require(rank > 0, "the covariance is zero: the vectors do not vary")
        k = min(requested, rank) if self.drop_null else requested
        self.dropped_ = requested - k  # null components asked for (k, or all) but left out
        require(
            k <= rank,
            f"the covariance has only {rank} usable components of {len(values)} (the rest have ~zero variance): "
            f"whiten with k <= {rank}, or fit on more vectors than dimensions",
        )
        self.mean_ = np.asarray(mean, dtype=np.float64)
        self.variances_ = values[:k]
        self.matrix_ = vectors[:, :k] / np.sqrt(values[:k])
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (_matrix(x, len(self.mean_)) - self.mean_) @ self.matrix_


class RemoveTopPCs:
    """Center, then remove the projections on the top n_components principal components."""

    def __init__(self, n_components: int):
        require(isinstance(n_components, (int, np.integer)) and n_components > 0, f"n_components must be a positive integer, got {n_components!r}")
        self.n_components = n_components

    def fit(self, x: np.ndarray) -> RemoveTopPCs:
        return self.fit_moments(*_moments(x, "removing principal components"))

    def fit_moments(self, mean: np.ndarray, cov: np.ndarray) -> RemoveTopPCs:
        _, vectors = _eigen(cov)
        require(self.n_components < vectors.shape[1], f"cannot remove {self.n_components} components from {vectors.shape[1]} dimensions")
        self.mean_ = np.asarray(mean, dtype=np.float64)
        self.components_ = vectors[:, : self.n_components]
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        centered = _matrix(x, len(self.mean_)) - self.mean_
        return centered - (centered @ self.components_) @ self.components_.T


def whitening_from_moments(mean: np.ndarray, covariance: np.ndarray, k: int | None = None) -> list[Whiten]:
    """One Whiten per layer from per-layer means (layers, width) and covariances (layers, width, width), e.g. of
    `LayerStats`, leaving out zero-variance components."""
    require(covariance.shape == (*mean.shape, mean.shape[1]), "mean (layers, width) and covariance (layers, width, width) must match")
    return [Whiten(k, drop_null=True).fit_moments(m, c) for m, c in zip(mean, covariance)]


def whitening_from_vectors(vectors: np.ndarray, k: int | None = None) -> list[Whiten]:
    """One Whiten per layer fitted on vectors (n, layers, width), leaving out zero-variance components."""
    require(vectors.ndim == 3, f"vectors must be (n, layers, width), got shape {vectors.shape}")
    return [Whiten(k, drop_null=True).fit(vectors[:, layer]) for layer in range(vectors.shape[1])]


TRANSFORMS = {cls.__name__: cls for cls in (Identity, Clip, Center, ScaledCenter, Whiten, RemoveTopPCs)}


def save(transform: object, path: str | Path) -> Path:
    """Write a fitted transform's settings and parameters to an .npz file (atomically)."""
    kind = type(transform).__name__
    require(kind in TRANSFORMS, f"cannot save a {kind}; savable transforms: {', '.join(TRANSFORMS)}")
    state = {k: (np.asarray(v) if v is not None else np.asarray(np.nan)) for k, v in vars(transform).items()}
    path = Path(path)
    require(path.suffix == ".npz", f"save a transform to a .npz file, got {path.name}")
    return write_atomic(path, lambda p: np.savez(p, __kind__=np.asarray(kind), **state))


def load(path: str | Path) -> object:
    """Read a transform written by `save`."""
    path = Path(path)
    require(path.is_file(), f"no saved transform at {path}")
    with np.load(path, allow_pickle=False) as data:
        kind = str(data["__kind__"])
        require(kind in TRANSFORMS, f"{path} holds an unknown transform {kind!r}")
        transform = TRANSFORMS[kind].__new__(TRANSFORMS[kind])
        for key in data.files:
            if key != "__kind__":
                value = data[key]
                value = value.item() if value.ndim == 0 else value
                setattr(transform, key, None if isinstance(value, float) and np.isnan(value) else value)
    return transform
