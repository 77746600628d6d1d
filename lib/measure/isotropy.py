"""Isotropy of an embedding matrix W (rows are vectors).

- I(W) (Mu & Viswanath 2018; Biš et al. 2021) = I1 of Ding et al. (2022): min_c Z(c) / max_c Z(c),
  Z(c) = Σ_w exp(cᵀw), over the eigenvectors c of WᵀW. I2 (Ding et al., Appendix A): the standard
  deviation of Z(c) over those c divided by their mean. Both are computed from log Z with
  log-sum-exp, so large norms cannot overflow. As in both papers, each eigenvector is one direction;
  an eigen-solver may return either sign, so each is oriented with its largest-magnitude entry positive
  (the convention of scikit-learn's `svd_flip`), which makes the result reproducible. On a shifted
  cloud the sign hardly matters (Z(c) and Z(−c) move the minimum and the maximum alike); taking both
  signs, 2d directions, would roughly square the ratio, so it is not the papers' quantity.
- IsoScore (Rudman et al. 2022) from the `isoscore` package.
- Norm statistics: the average vector length, the length of the mean vector, and their ratio.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..errors import require


def _matrix(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    require(w.ndim == 2 and len(w) > 1 and bool(np.isfinite(w).all()), f"need a finite (n > 1, width) matrix, got shape {w.shape}")
    return w


def eigenvectors(w: np.ndarray) -> np.ndarray:
    """The eigenvectors of WᵀW as columns, each with its largest-magnitude entry positive."""
    vectors = np.linalg.eigh(w.T @ w)[1]
    largest = vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])]
    return vectors * np.where(largest < 0, -1.0, 1.0)


def log_partition(w: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """log Z(c) for c = each eigenvector of WᵀW (see `eigenvectors`): (width,) values."""
    w = _matrix(w)
    directions = eigenvectors(w)
    parts = [logsumexp(w[i : i + chunk] @ directions, axis=0) for i in range(0, len(w), chunk)]
    return logsumexp(np.stack(parts), axis=0)


def partition_measures(w: np.ndarray) -> dict[str, float]:
    """I1 = I(W) in [0, 1] (1 = isotropic) and I2 >= 0 (0 = isotropic) from one pass over Z(c); I2 is the
    population standard deviation over the d directions divided by the mean (Ding et al., App. A)."""
    log_z = log_partition(w)
    z = np.exp(log_z - log_z.max())  # the common scale cancels in both ratios
    return {"I1": float(z.min()), "I2": float(z.std() / z.mean())}


def sign_range(w: np.ndarray) -> tuple[float, float]:
    """The smallest and largest I1 that some choice of the eigenvectors' signs gives: the papers fix no sign, so on a
    cloud far from the origin (a raw embedding matrix) I1 depends on it, and only a difference beyond this range is the
    matrix's and not the convention's. Exact over the 2^d choices: each direction j offers Z(c_j) or Z(−c_j)."""
    w = _matrix(w)
    directions = eigenvectors(w)
    log_z = np.stack([logsumexp(w @ directions, axis=0), logsumexp(-(w @ directions), axis=0)], axis=1)  # (d, 2)
    z = np.exp(log_z - log_z.max())
    small, large = z.min(axis=1), z.max(axis=1)
    # smallest: one direction's smaller value over another direction's larger one
    order = np.argsort(large)[::-1]
    low = min(small[j] / large[order[0] if order[0] != j else order[1]] for j in range(len(z)))
    # largest: for each candidate maximum m, every direction takes its largest value not above m
    high = 0.0
    for m in np.unique(z):
        fits = np.where(z <= m, z, -np.inf).max(axis=1)
        if np.isfinite(fits).all():
            high = max(high, float(fits.min() / m))
    return float(low), high


def isoscore(w: np.ndarray) -> float:
    """IsoScore of the rows of W (1 = isotropic, ~0 = one direction), from the `isoscore` package (v2: rows are points)."""
    try:
        from IsoScore import IsoScore
    except ImportError as err:
        raise ImportError("IsoScore is missing: pip install isoscore==2.0.1 (see requirements.txt)") from err
    return float(IsoScore.IsoScore(_matrix(w).astype(np.float32)))


def norm_stats(w: np.ndarray) -> dict[str, float]:
    """Average row length, length of the mean row, and their ratio."""
    w = _matrix(w)
    mean_norm, avg = float(np.linalg.norm(w.mean(axis=0))), float(np.linalg.norm(w, axis=1).mean())
    return {"average_norm": avg, "mean_vector_norm": mean_norm, "ratio": mean_norm / avg}


def mean_pairwise_cosine(w: np.ndarray, chunk: int = 4096) -> float:
    """Average cosine over all ordered pairs i != j, by brute force in blocks (no n x n matrix in memory)."""
    w = _matrix(w)
    unit = w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    total = sum(float((unit[i : i + chunk] @ unit.T).sum()) for i in range(0, len(unit), chunk))
    n = len(unit)
    return (total - n) / (n * (n - 1))


def cosine_from_mean_unit(w: np.ndarray) -> float:
    """The same average from the mean unit vector: (n² ||μ̂||² − n) / (n (n − 1)) (Biš et al., Appendix A)."""
    w = _matrix(w)
    unit = w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    n, mean = len(unit), unit.mean(axis=0)
    return (n * n * float(mean @ mean) - n) / (n * (n - 1))


def top_direction_alignment(w: np.ndarray) -> float:
    """|cos| between the mean row of W and its top right-singular vector (1: the largest singular value is the common direction)."""
    w = _matrix(w)
    mean = w.mean(axis=0)
    top = np.linalg.eigh(w.T @ w)[1][:, -1]
    return float(abs(top @ mean) / max(np.linalg.norm(mean), np.finfo(np.float64).tiny))
