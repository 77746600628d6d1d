"""Chapter 10's experiment (Biš et al. 2021, §3-4): the input-embedding matrix W drifts in a common direction. Its
singular values and row norms before and after centering, a 2-d view of a sample of rows, and the mean pairwise cosine
computed two ways (brute force over rows, and from the mean unit vector), which must agree."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..encode.models import LoadedModel
from ..measure import geometry, isotropy, vocabulary
from ..measure.transforms import Center


@dataclass
class MatrixGeometry:
    views: dict[str, geometry.PlaneView]  # "raw" / "centered": the sampled rows on their top two singular vectors
    sample: np.ndarray  # the sampled row ids
    reference: np.ndarray  # which sampled rows are reference tokens (chapter 11)
    sample_norms: np.ndarray  # raw norms of the sampled rows
    spectra: dict[str, np.ndarray]  # singular values, raw and centered
    norms: dict[str, np.ndarray]  # every row's norm, raw and centered
    summary: dict  # one row of the embedding_matrix table


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n, size=min(size, n), replace=False))


def measure(lm: LoadedModel, plane_points: int, check_rows: int, seed: int) -> MatrixGeometry:
    """Everything chapter 10 shows of one model's W; check_rows (0 = all) rows for the brute-force pairwise cosine."""
    w = vocabulary.embedding_matrix(lm)
    matrices = {"raw": w, "centered": Center().fit(w).transform(w)}
    sample = _sample(len(w), plane_points, seed)
    unused, how, _ = vocabulary.reference_tokens(lm)
    checked = w if not check_rows or check_rows >= len(w) else w[_sample(len(w), check_rows, seed)]
    spectra = {label: np.linalg.svd(m, compute_uv=False) for label, m in matrices.items()}
    summary = {
        "model": lm.name,
        "vocabulary": len(w),
        "width": w.shape[1],
        **{f"{k}_raw": v for k, v in isotropy.norm_stats(w).items()},
        **{f"sigma1_over_sigma2_{label}": s[0] / s[1] for label, s in spectra.items()},
        "top_direction_mean_cosine": isotropy.top_direction_alignment(w),
        "check_rows": len(checked),
        "mean_pairwise_cosine_brute_force": isotropy.mean_pairwise_cosine(checked),
        "mean_pairwise_cosine_from_mean_unit_vector": isotropy.cosine_from_mean_unit(checked),
        "reference_tokens": how,
    }
    return MatrixGeometry(
        {label: geometry.svd_plane(m[sample]) for label, m in matrices.items()},
        sample,
        np.isin(sample, unused),
        np.linalg.norm(w[sample], axis=1),
        spectra,
        {label: np.linalg.norm(m, axis=1) for label, m in matrices.items()},
        summary,
    )
