"""Anisotropy (average cosine of random token pairs) and low-dimensional views of a vector space."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from ..errors import require


def pair_cosines(vectors: np.ndarray, n_pairs: int, seed: int) -> np.ndarray:
    """Cosine similarity of n_pairs disjoint random pairs of rows, per layer.

    vectors: (n, n_layers, width), one token per sentence (paper protocol: 2,000 sentences, 1,000 pairs).
    Returns (n_pairs, n_layers).
    """
    require(vectors.ndim == 3, "vectors must be (n, layers, width)")
    require(n_pairs > 0, f"number of pairs must be positive, got {n_pairs}")
    require(
        2 * n_pairs <= len(vectors),
        f"{n_pairs} disjoint pairs need {2 * n_pairs} sampled tokens; only {len(vectors)} are available: sample more sentences or ask for fewer pairs",
    )
    order = np.random.default_rng(seed).permutation(len(vectors))[: 2 * n_pairs]
    a = vectors[order[0::2]].astype(np.float64)
    b = vectors[order[1::2]].astype(np.float64)
    norms = np.linalg.norm(a, axis=2) * np.linalg.norm(b, axis=2)
    return np.einsum("pld,pld->pl", a, b) / np.maximum(norms, np.finfo(np.float64).tiny)


def anisotropy_table(cosines: np.ndarray, centered: np.ndarray | None = None) -> pd.DataFrame:
    """Per layer: mean cosine of random pairs, its standard deviation and a 95% normal interval. With `centered`, the
    cosines of the same pairs after each layer's mean vector was subtracted (the isotropic baseline of this sample),
    and a paired 95% interval of the excess of the raw mean cosine over that baseline."""
    n = cosines.shape[0]
    mean, std = cosines.mean(axis=0), cosines.std(axis=0, ddof=1) if n > 1 else np.zeros(cosines.shape[1])
    half = 1.96 * std / np.sqrt(n)
    table = pd.DataFrame(
        {
            "layer": np.arange(cosines.shape[1]),
            "mean_cosine": mean,
            "std_cosine": std,
            "ci95_low": mean - half,
            "ci95_high": mean + half,
            "n_pairs": n,
        }
    )
    if centered is not None:
        excess = cosines - centered
        half = 1.96 * excess.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(cosines.shape[1])
        table = table.assign(
            centered_mean_cosine=centered.mean(axis=0), excess_ci95_low=excess.mean(axis=0) - half, excess_ci95_high=excess.mean(axis=0) + half
        )
    return table


def centered(vectors: np.ndarray) -> np.ndarray:
    """(n, layers, width) vectors minus each layer's mean over the n rows."""
    return vectors - vectors.mean(axis=0, keepdims=True)


@dataclass
class PlaneView:
    """Points projected on their first two principal components, and where the origin lands."""

    coords: np.ndarray  # (n, 2)
    origin: np.ndarray  # (2,)
    explained: np.ndarray  # (2,) explained variance ratio
    mean_norm: float  # length of the mean vector
    mean_vector_norm_ratio: float  # |mean| / average |x|


def pca_plane(points: np.ndarray, seed: int = 0) -> PlaneView:
    """2-D PCA of points (n, width); also projects the origin so a shifted cloud shows its offset."""
    require(points.ndim == 2 and len(points) >= 3, "PCA needs a (n >= 3, width) array of points")
    x = points.astype(np.float64)
    pca = PCA(n_components=2, random_state=seed).fit(x)
    mean = x.mean(axis=0)
    return PlaneView(
        coords=pca.transform(x),
        origin=pca.transform(np.zeros((1, x.shape[1])))[0],
        explained=pca.explained_variance_ratio_,
        mean_norm=float(np.linalg.norm(mean)),
        mean_vector_norm_ratio=float(np.linalg.norm(mean) / np.linalg.norm(x, axis=1).mean()),
    )


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of a[i] and b[i] for every row (float64; 0 for a zero vector)."""
    require(a.shape == b.shape and a.ndim == 2, f"need two (n, width) arrays of the same shape, got {a.shape} and {b.shape}")
    a, b = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("nd,nd->n", a, b) / np.maximum(norms, np.finfo(np.float64).tiny)


def self_similarity(vectors: np.ndarray, groups: np.ndarray) -> float:
    """Ethayarajh (2019): for each group (a word's vectors in different sentences), the mean cosine
    over all pairs of its vectors; then the average over groups. Groups need at least two vectors."""
    return float(word_self_similarities(vectors, groups).mean())


def word_self_similarities(vectors: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each group's self-similarity (`self_similarity` before the average), in the order of the sorted group ids."""
    require(vectors.ndim == 2 and len(vectors) == len(groups), "need (n, width) vectors and one group id per row")
    ids, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    require(bool((sizes >= 2).all()), "every word needs at least two occurrences")
    unit = vectors.astype(np.float64) / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    sums = np.zeros((len(ids), vectors.shape[1]))
    np.add.at(sums, inverse, unit)
    return ((sums**2).sum(axis=1) - sizes) / (sizes * (sizes - 1))  # sum over i != j of u_i . u_j, averaged


def svd_plane(points: np.ndarray) -> PlaneView:
    """Points projected on the top two right singular vectors of the matrix as it is (not centered):
    the view Biš et al. show of an embedding matrix. The origin projects to (0, 0)."""
    require(points.ndim == 2 and len(points) >= 3, "need a (n >= 3, width) array of points")
    x = points.astype(np.float64)
    mean = x.mean(axis=0)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    return PlaneView(
        coords=x @ vt[:2].T,
        origin=np.zeros(2),
        explained=s[:2] ** 2 / (s**2).sum(),
        mean_norm=float(np.linalg.norm(mean)),
        mean_vector_norm_ratio=float(np.linalg.norm(mean) / np.linalg.norm(x, axis=1).mean()),
    )
