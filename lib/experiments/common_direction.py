"""Chapter 10's experiment (Biš et al. 2021, §3-4): the input-embedding matrix W drifts in a common direction. Its
singular values and row norms before and after centering, a 2-d view of a sample of rows, and the mean pairwise cosine
computed two ways (brute force over rows, and from the mean unit vector), which must agree."""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from ..core.store import declare
from ..encode.models import LoadedModel
from ..measure import geometry, inference, isotropy, vocabulary
from ..measure.transforms import Center
from .plotting import COLORS
from .verdicts import Claim, Outcome, Tables, decide, outcome, rule


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


def toy_sphere(clouds: dict[float, np.ndarray], spectra: dict[float, np.ndarray]):
    """Biš et al. Fig. 2: points on a sphere shifted away from the origin (first two coordinates), and their singular values."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    for (shift, points), color in zip(clouds.items(), COLORS):
        left.scatter(points[:, 0], points[:, 1], s=4, alpha=0.5, color=color, label=f"shift {shift:g}")
        right.plot(np.arange(1, len(spectra[shift]) + 1), spectra[shift], "-o", color=color, label=f"shift {shift:g}")
    left.scatter([0], [0], marker="X", s=120, color="black", label="origin")
    left.set(xlabel="x1", ylabel="x2", title="points on a sphere, shifted along x1", aspect="equal")
    right.set(xlabel="singular value index", ylabel="singular value", title="singular values of the (uncentered) points")
    right.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    left.legend(frameon=False, fontsize=8)
    right.legend(frameon=False)
    fig.tight_layout()
    return fig


def spectra_and_norms(spectra: dict[str, dict[str, np.ndarray]], norms: dict[str, dict[str, np.ndarray]]):
    """Per model: singular values (normalised by the largest, log scale) and the density of vector norms, raw vs centered."""
    from scipy.stats import gaussian_kde

    fig, axes = plt.subplots(len(spectra), 2, figsize=(11, 3.8 * len(spectra)), squeeze=False)
    for (name, spec), row in zip(spectra.items(), axes):
        for (variant, s), style in zip(spec.items(), ["-", "--"]):
            row[0].plot(np.arange(1, len(s) + 1), s / s[0], style, label=variant)
            values = norms[name][variant]
            grid = np.linspace(values.min(), values.max(), 300)
            row[1].plot(grid, gaussian_kde(values)(grid), style, label=variant)
        row[0].set(yscale="log", xlabel="singular value index", ylabel="σ_k / σ_1", title=f"{name}: singular values")
        row[1].set(xlabel="L2 norm of an embedding", ylabel="density", title=f"{name}: norms (kernel density)")
        row[0].legend(frameon=False)
        row[1].legend(frameon=False)
    fig.tight_layout()
    return fig


EMBEDDING_MATRIX = declare(
    "10_common_direction",
    "embedding_matrix",
    "model vocabulary width average_norm_raw mean_vector_norm_raw ratio_raw sigma1_over_sigma2_raw sigma1_over_sigma2_centered "
    "top_direction_mean_cosine check_rows mean_pairwise_cosine_brute_force mean_pairwise_cosine_from_mean_unit_vector reference_tokens",
)


@rule
def spectrum_ratio_collapses(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["sigma1_over_sigma2_raw"] / r["sigma1_over_sigma2_centered"], "the whole matrix")
    text = f"σ1/σ2 {r['sigma1_over_sigma2_raw']:.2f} raw, {r['sigma1_over_sigma2_centered']:.2f} centred: falls {estimate.text(2, '×')}"
    return outcome(decide(estimate, claim.margin), text, estimate)


@rule
def top_direction_is_mean(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["top_direction_mean_cosine"], "the whole matrix")
    control = f"a random direction in {int(r['width'])} dimensions: |cosine| about {math.sqrt(2 / (math.pi * r['width'])):.3f}"
    return outcome(decide(estimate, claim.margin), f"|cosine| of WᵀW's top eigenvector with the mean row: {estimate.text(3)}", estimate, control)
