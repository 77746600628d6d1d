"""Outlier neurons: which dimension is most often a vector's minimum or maximum, and which dimensions
of a layer's average vector stand far from the rest (detected, never typed in)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import require


def extreme_dimensions(argmin_counts: np.ndarray, argmax_counts: np.ndarray, n_vectors: int) -> pd.DataFrame:
    """Per layer: the dimension that is most often the minimum (maximum) and the % of vectors for which it is."""
    require(argmin_counts.shape == argmax_counts.shape and n_vectors > 0, "counts must be (layers, width) and n_vectors > 0")
    rows = []
    for layer, (lo, hi) in enumerate(zip(argmin_counts, argmax_counts)):
        rows.append(
            {
                "layer": layer,
                "argmin_dim": int(lo.argmax()),
                "argmin_percent": 100.0 * lo.max() / n_vectors,
                "argmax_dim": int(hi.argmax()),
                "argmax_percent": 100.0 * hi.max() / n_vectors,
            }
        )
    return pd.DataFrame(rows)


def pooled_extremes(argmin_counts: np.ndarray, argmax_counts: np.ndarray, n_vectors: int, layers: slice = slice(1, None)) -> pd.DataFrame:
    """Over the chosen layers together (default: all but the embedding output, as the paper counts),
    the most frequent minimum and maximum dimension and the % of all those vectors."""
    lo, hi = argmin_counts[layers].sum(axis=0), argmax_counts[layers].sum(axis=0)
    total = n_vectors * argmin_counts[layers].shape[0]
    require(total > 0, "no layers selected")
    return pd.DataFrame(
        [
            {"kind": "argmin", "dim": int(lo.argmax()), "percent": 100.0 * lo.max() / total, "n_vectors": total},
            {"kind": "argmax", "dim": int(hi.argmax()), "percent": 100.0 * hi.max() / total, "n_vectors": total},
        ]
    )


def robust_z(mean_vectors: np.ndarray) -> np.ndarray:
    """Per layer, each dimension's distance from the median of the average vector in robust standard
    deviations (1.4826 x median absolute deviation). Shape as mean_vectors: (layers, width)."""
    med = np.median(mean_vectors, axis=1, keepdims=True)
    mad = 1.4826 * np.median(np.abs(mean_vectors - med), axis=1, keepdims=True)
    return (mean_vectors - med) / np.maximum(mad, np.finfo(np.float64).tiny)


def flagged(mean_vectors: np.ndarray, z_threshold: float = 10.0) -> np.ndarray:
    """(layers, width) bool: |robust z| >= z_threshold in that layer's average vector."""
    require(z_threshold > 0, f"z_threshold must be positive, got {z_threshold}")
    return np.abs(robust_z(mean_vectors)) >= z_threshold


def layer_ranges(layers: np.ndarray) -> str:
    """Readable layer list: [1, 2, 3, 5, 7, 8] -> '1-3, 5, 7-8'."""
    parts, start = [], None
    for i, layer in enumerate(layers):
        if start is None:
            start = layer
        if i + 1 == len(layers) or layers[i + 1] != layer + 1:
            parts.append(str(start) if start == layer else f"{start}-{layer}")
            start = None
    return ", ".join(parts)


def descending_ranks(vector: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Rank of vector[d] among all entries, 1 = largest value (ties share the better rank)."""
    dims = np.asarray(dims, dtype=int)
    return (vector[None, :] > vector[dims, None]).sum(axis=1) + 1


def detect_outliers(mean_vectors: np.ndarray, z_threshold: float = 10.0, min_layer_share: float = 0.5) -> pd.DataFrame:
    """Outlier dimensions of a model.

    Criterion: dimension d is an outlier of layer l when |robust z| of d in layer l's average vector
    is at least z_threshold; it is an outlier of the model when that holds in at least
    min_layer_share of the non-input layers. Returns one row per dimension flagged in any layer,
    with the layers, the sign and the largest |z|, and whether it is a model-level outlier.
    """
    require(0 < min_layer_share <= 1, f"min_layer_share must be in (0, 1], got {min_layer_share}")
    z = robust_z(mean_vectors)
    flags = flagged(mean_vectors, z_threshold)
    n_contextual = mean_vectors.shape[0] - 1
    rows = []
    for d in np.flatnonzero(flags.any(axis=0)):
        layers = np.flatnonzero(flags[:, d])
        contextual = int((layers >= 1).sum())
        peak = int(layers[np.argmax(np.abs(z[layers, d]))])
        rows.append(
            {
                "dim": int(d),
                "sign": "+" if z[peak, d] > 0 else "-",
                "max_abs_z": float(abs(z[peak, d])),
                "layers": layer_ranges(layers),
                "n_layers": contextual,
                "model_outlier": n_contextual > 0 and contextual >= min_layer_share * n_contextual,
            }
        )
    columns = ["dim", "sign", "max_abs_z", "layers", "n_layers", "model_outlier"]
    frame = pd.DataFrame(rows, columns=columns).astype({"model_outlier": bool})  # bool even when empty, so it can select rows
    return frame.sort_values(["model_outlier", "max_abs_z"], ascending=[False, False], ignore_index=True)


@dataclass
class OutlierReport:
    """Chapter 02's analysis of one model's per-layer statistics (see `analyse`)."""

    extremes: pd.DataFrame  # per layer: most frequent argmin/argmax dimension and its share
    pooled: pd.DataFrame  # the same over all contextual layers together
    detected: pd.DataFrame  # flagged dimensions, model-level outliers first
    flags: np.ndarray  # (layers, width) bool: flagged in that layer

    @property
    def model_outliers(self) -> pd.DataFrame:
        """Rows of the model-level outlier dimensions."""
        return self.detected[self.detected["model_outlier"]]


CLIP_PROTOCOLS = ("model", "layer")


def clip_flags(mean_vectors: np.ndarray, z_threshold: float, min_layer_share: float, protocol: str) -> np.ndarray:
    """(layers, width) bool: the dimensions clipping zeroes in each layer. "model" (Luo et al. §4.1, their protocol for
    base models): the model-level outlier dimensions of `detect_outliers`, in every layer; "layer" (their Appendix D.1,
    for large models): the dimensions flagged in that layer."""
    require(protocol in CLIP_PROTOCOLS, f"clip must be one of {', '.join(CLIP_PROTOCOLS)}, got {protocol!r}")
    if protocol == "layer":
        return flagged(mean_vectors, z_threshold)
    detected = detect_outliers(mean_vectors, z_threshold, min_layer_share)
    flags = np.zeros(np.shape(mean_vectors), dtype=bool)
    flags[:, detected.loc[detected["model_outlier"], "dim"].to_numpy(dtype=int)] = True
    return flags


def analyse(
    mean: np.ndarray, argmin_counts: np.ndarray, argmax_counts: np.ndarray, n_vectors: int, z_threshold: float, min_layer_share: float
) -> OutlierReport:
    """The outlier analysis of one model from its per-layer mean vectors and extreme counts (e.g. `LayerStats`)."""
    return OutlierReport(
        extreme_dimensions(argmin_counts, argmax_counts, n_vectors),
        pooled_extremes(argmin_counts, argmax_counts, n_vectors),
        detect_outliers(mean, z_threshold, min_layer_share),
        flagged(mean, z_threshold),
    )
