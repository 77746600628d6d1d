"""Chapter 10's experiment (Biš et al. 2021, §3-4): the input-embedding matrix W drifts in a common direction. Its
singular values and row norms before and after centering, a 2-d view of a sample of rows, and the mean pairwise cosine
computed two ways (brute force over rows, and from the mean unit vector), which must agree."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd

from ..core.checks import positive_int
from ..core.declaration import chapter
from ..core.sources import names
from ..core.store import Writer
from ..encode.models import LoadedModel, load_model
from ..errors import require
from ..measure import geometry, inference, isotropy, vocabulary
from ..measure.transforms import Center
from . import plotting
from .plotting import COLORS
from .verdicts import Claim, Outcome, Tables, decide, outcome
from .wording import span

CHAPTER = chapter("10_common_direction")


def inputs(shifts: str, toy_points: int, plane_points: int, check_rows: int) -> list[float]:
    """The chapter's parameters checked, each bad one stopped with one line; the toy sphere's shifts as numbers."""
    texts = names(shifts, "shifts")
    require(all(s.replace(".", "", 1).isdigit() for s in texts), f"shifts must be comma-separated non-negative numbers, got {shifts!r}")
    positive_int("toy_points", toy_points)
    positive_int("plane_points", plane_points)
    require(isinstance(check_rows, int) and check_rows >= 0, f"check_rows must be 0 (all) or a positive integer, got {check_rows!r}")
    return [float(s) for s in texts]


@dataclass(frozen=True)
class Sphere:
    ball: np.ndarray  # points spread evenly on the unit sphere in 3 dimensions
    clouds: dict[float, np.ndarray]  # the ball shifted along the first axis, by shift
    spectra: dict[float, np.ndarray]  # the singular values of each (uncentered) cloud
    table: pd.DataFrame  # the toy_sphere table


def _spectrum(ball: np.ndarray, shift: float) -> np.ndarray:
    return np.linalg.svd(ball + np.array([shift, 0.0, 0.0]), compute_uv=False)


def toy(shifts: list[float], points: int, seed: int) -> Sphere:
    """Biš et al.'s Fig. 2: `points` on the unit sphere, shifted away from the origin by each shift."""
    ball = np.random.default_rng(seed).normal(size=(points, 3))
    ball /= np.linalg.norm(ball, axis=1, keepdims=True)
    clouds = {s: ball + np.array([s, 0.0, 0.0]) for s in shifts}
    spectra = {s: _spectrum(ball, s) for s in shifts}
    rows = [{"shift": s, **{f"sigma_{i + 1}": v for i, v in enumerate(sv)}, "sigma_1_over_sigma_2": sv[0] / sv[1]} for s, sv in spectra.items()]
    return Sphere(ball, clouds, spectra, pd.DataFrame(rows))


def ratio_vs_formula(sphere: Sphere, extra: float = 8.0) -> pd.DataFrame:
    """σ1/σ2 of the shifted sphere measured and from the formula √(3s² + 1), for its shifts and `extra`."""
    rows = []
    for s in sorted(set(sphere.clouds) | {extra}):
        sv = _spectrum(sphere.ball, s)
        rows.append({"shift": f"{s:g}", "σ1/σ2 measured": sv[0] / sv[1], "√(3s² + 1)": np.sqrt(3 * s * s + 1)})
    return pd.DataFrame(rows)


@dataclass
class MatrixGeometry:
    name: str  # the model's
    views: dict[str, geometry.PlaneView]  # "raw" / "centered": the sampled rows on their top two singular vectors
    sample: np.ndarray  # the sampled row ids
    reference: np.ndarray  # which sampled rows are reference tokens (chapter 11)
    sample_norms: np.ndarray  # raw norms of the sampled rows
    spectra: dict[str, np.ndarray]  # singular values, raw and centered
    norms: dict[str, np.ndarray]  # every row's norm, raw and centered
    summary: dict  # one row of the embedding_matrix table


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n, size=min(size, n), replace=False))


def _matrix(lm: LoadedModel, plane_points: int, check_rows: int, seed: int) -> MatrixGeometry:
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
        lm.name,
        {label: geometry.svd_plane(m[sample]) for label, m in matrices.items()},
        sample,
        np.isin(sample, unused),
        np.linalg.norm(w[sample], axis=1),
        spectra,
        {label: np.linalg.norm(m, axis=1) for label, m in matrices.items()},
        summary,
    )


def run(
    spec: str, *, plane_points: int, check_rows: int, seed: int, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto"
) -> MatrixGeometry:
    """One model: its input-embedding matrix measured (`embedding_matrix` written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    found = _matrix(lm, plane_points, check_rows, seed)
    info = {"name": lm.name, "family": lm.family, "width": found.summary["width"]}
    results.table(EMBEDDING_MATRIX.frame([found.summary]), EMBEDDING_MATRIX, spec, parameters=parameters, model_info=info)
    return found


def summary(runs: dict[str, MatrixGeometry]) -> pd.DataFrame:
    """Every model's row of the embedding_matrix table."""
    return pd.DataFrame([r.summary for r in runs.values()])


WORDS = {  # the tables' columns as the page prints them
    "average_norm_raw": "average length",
    "mean_vector_norm_raw": "length of the mean",
    "ratio_raw": "mean / average length",
    "sigma1_over_sigma2_raw": "σ1/σ2 raw",
    "sigma1_over_sigma2_centered": "σ1/σ2 centered",
    "check_rows": "rows",
    "mean_pairwise_cosine_brute_force": "average cosine, all pairs",
    "mean_pairwise_cosine_from_mean_unit_vector": "from the mean unit vector",
    "shift": "shift",
}


def toy_table(sphere: Sphere) -> pd.DataFrame:
    """The toy sphere's singular values as the page prints them."""
    shown = sphere.table.assign(shift=[f"{v:g}" for v in sphere.table["shift"]])
    return shown.rename(columns=lambda c: re.sub(r"sigma_(\d+)", r"σ\1", c).replace("_over_", "/"))


def drift_table(runs: dict[str, MatrixGeometry]) -> pd.DataFrame:
    """The mean vector and the top of the spectrum, before and after centering."""
    columns = ["model", "vocabulary", "width", "average_norm_raw", "mean_vector_norm_raw", "ratio_raw", "sigma1_over_sigma2_raw", "sigma1_over_sigma2_centered"]
    return summary(runs)[columns].rename(columns=WORDS)


def appendix_check(runs: dict[str, MatrixGeometry]) -> pd.DataFrame:
    """Biš et al.'s Appendix A: the average pairwise cosine brute force and from the mean unit vector, and how far apart
    they are (as text: the gap is at the level of rounding errors)."""
    table = summary(runs)[["model", "check_rows", "mean_pairwise_cosine_brute_force", "mean_pairwise_cosine_from_mean_unit_vector"]]
    gap = (table["mean_pairwise_cosine_brute_force"] - table["mean_pairwise_cosine_from_mean_unit_vector"]).abs()
    return table.assign(difference=[f"{g:.0e}" if g else "0" for g in gap]).rename(columns=WORDS)


def findings(runs: dict[str, MatrixGeometry]) -> list[str]:
    """What our run shows, one line per model."""
    return [
        f"- **{r.model}**: the mean embedding is {r.ratio_raw:.2f} times the average embedding length; σ1/σ2 is "
        f"{r.sigma1_over_sigma2_raw:.2f} before and {r.sigma1_over_sigma2_centered:.2f} after centering; the average pairwise cosine is "
        f"{r.mean_pairwise_cosine_brute_force:.4f} (formula {r.mean_pairwise_cosine_from_mean_unit_vector:.4f})."
        for r in summary(runs).itertuples()
    ]


def random_cosine(width: float) -> float:
    """About the |cosine| of a random direction with a fixed one in `width` dimensions: sqrt(2 / (π · width))."""
    return math.sqrt(2 / (math.pi * width))


def answer(runs: dict[str, MatrixGeometry]) -> list[str]:
    """The chapter's answer: how much of the gap between the first two singular values centering removes, model by
    model (longest mean first), and how closely the top singular direction follows the mean row."""
    t = summary(runs).sort_values("ratio_raw", ascending=False)
    fall = t["sigma1_over_sigma2_raw"] / t["sigma1_over_sigma2_centered"]
    parts = [
        f"{f:.2f} for {r.model} ({'mean ' if i == 0 else ''}{r.ratio_raw:.2f}{' of the average length' if i == 0 else ''})"
        for i, (f, r) in enumerate(zip(fall, t.itertuples()))
    ]
    each = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    if len(t) > 1 and fall.is_monotonic_decreasing:
        first = (
            f"Where the embeddings share a long mean, their large first singular value is that shift, not a cone: subtracting the mean divides σ1/σ2 by {each}."
        )
    else:
        first = f"Subtracting the mean embedding divides σ1/σ2 of the input-embedding matrix by {each}" + (
            ": not in the order of the mean's length." if len(t) > 1 else "."
        )
    top = t["top_direction_mean_cosine"]
    chance = span(f"{random_cosine(t['width'].max()):.2f}", f"{random_cosine(t['width'].min()):.2f}")
    rows = span(f"{t['vocabulary'].min():,}", f"{t['vocabulary'].max():,}")
    second = (
        f"The top singular direction and the mean row have |cosine| {span(f'{top.min():.2f}', f'{top.max():.2f}')} (a random direction: about "
        f"{chance}), measured on all {rows} rows of each matrix, so without sampling error."
    )
    return [first, second]


def ranked_lines(runs: dict[str, MatrixGeometry]) -> list[str]:
    """The models by the length of their mean embedding relative to the average length, and how much centering shrinks σ1/σ2."""
    return [
        f"- **{r.model}**: the mean embedding is {r.ratio_raw:.2f} of the average length; σ1/σ2 {r.sigma1_over_sigma2_raw:.2f} raw → "
        f"{r.sigma1_over_sigma2_centered:.2f} centered ({r.sigma1_over_sigma2_raw / r.sigma1_over_sigma2_centered:.2f}× smaller)."
        for r in summary(runs).sort_values("ratio_raw", ascending=False).itertuples()
    ]


def figure_toy(sphere: Sphere, results: Writer) -> None:
    """Biš et al. Fig. 2: points on a sphere shifted away from the origin (first two coordinates), and their singular values."""
    fig, (left, right) = plotting.grid(2, columns=2, panel_height=3.4)
    for (shift, points), color in zip(sphere.clouds.items(), COLORS):
        left.scatter(points[:, 0], points[:, 1], s=3, alpha=0.4, color=color, linewidths=0)
        right.plot(np.arange(1, len(sphere.spectra[shift]) + 1), sphere.spectra[shift], "-o", color=color, label=f"shift {shift:g}")
    left.scatter([0], [0], marker="X", s=90, color="black")
    right.plot([], [], ls="", marker="X", ms=9, color="black", label="origin")  # the legend's entry for the left panel's cross
    left.set(xlabel="x1", ylabel="x2", title="the ball, shifted along x1", aspect="equal")
    right.set(xlabel="singular value index", ylabel="singular value", title="singular values (not centered)")
    right.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    plotting.legend_above(fig, right)
    t = sphere.table.set_index("shift")
    ratio, second = t["sigma_1_over_sigma_2"], t["sigma_2"]
    alt = (
        f"Shifted by {ratio.index.max():g}, the same ball has a first singular value {ratio.iloc[-1]:.1f} times its second, against "
        f"{ratio.iloc[0]:.2f} times at shift {ratio.index.min():g}; the second stays between {second.min():.1f} and {second.max():.1f}."
    )
    results.figure(fig, "toy_sphere", "A ball of points shifted away from the origin: the shape is unchanged, the singular values are not.", alt=alt)


def _alpha(points: int) -> float:
    """A point's opacity in a scatter of `points` points: faint enough that the dense parts of a large cloud read as denser."""
    return float(np.clip(300 / points, 0.08, 0.6))


def _regions(ax, points: np.ndarray, color: str) -> None:
    """The smallest regions that hold half and 90% of `points` (contours of their kernel density), or the points
    themselves as rings where they are too few or too flat for a density."""
    from scipy.stats import gaussian_kde

    if len(points) < 10 or np.linalg.matrix_rank(np.cov(points.T)) < 2:
        ax.scatter(*points.T, s=14, facecolors="none", edgecolors=color, linewidths=0.6)
        return
    density = gaussian_kde(points.T)
    low, high = ax.get_xlim(), ax.get_ylim()
    x, y = np.meshgrid(np.linspace(*low, 160), np.linspace(*high, 160))
    levels = np.quantile(density(points.T), [0.1, 0.5])  # the density above which 90% and 50% of the points lie
    ax.contour(x, y, density(np.vstack([x.ravel(), y.ravel()])).reshape(x.shape), levels=levels, colors=color, linewidths=[0.9, 1.6])


def _offset(view: geometry.PlaneView) -> float:
    """How far the sampled cloud's centre lies from the origin in the plane, in units of the cloud's spread (the root
    mean square distance of its points from their centre)."""
    centre = view.coords.mean(axis=0)
    return float(np.linalg.norm(centre - view.origin) / np.sqrt(((view.coords - centre) ** 2).sum(axis=1).mean()))


def figure_planes(runs: dict[str, MatrixGeometry], results: Writer) -> None:
    """Each model's sampled rows on the top two singular vectors, raw and centered: faint points (fainter the more there
    are), the reference tokens of chapter 11 as the regions holding half and 90% of them, the origin, and an arrow from
    it to the cloud's centre (the common direction)."""
    fig, axes = plotting.grid(2 * len(runs), columns=2, panel_height=3.0)
    for (name, r), pair in zip(runs.items(), zip(axes[::2], axes[1::2])):
        for ax, (label, view) in zip(pair, r.views.items()):
            ax.scatter(*view.coords.T, s=3, color=COLORS[0], alpha=_alpha(len(view.coords)), linewidths=0, rasterized=True)
            _regions(ax, view.coords[r.reference], COLORS[1])
            centre = view.coords.mean(axis=0)
            ax.annotate("", centre, view.origin, arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 1.3})
            ax.scatter(*view.origin, marker="X", s=70, color="black", edgecolor="white", zorder=3)
            share = 100 * view.explained
            ax.set(title=f"{name}, {label}", xlabel=f"direction 1 ({share[0]:.1f}% of Σσ²)", ylabel=f"direction 2 ({share[1]:.1f}%)")
    for style, label in (  # the legend's entries, drawn on the first panel (`legend_above` takes its entries)
        ({"ls": "", "marker": "o", "ms": 4, "color": COLORS[0]}, "sampled tokens"),
        ({"color": COLORS[1]}, "reference tokens of chapter 11: half and 90% of them"),
        ({"ls": "", "marker": "X", "ms": 8, "color": "black"}, "origin"),
        ({"color": "black", "marker": ">", "ms": 5}, "origin → the cloud's centre"),
    ):
        axes[0].plot([], [], label=label, **style)
    plotting.legend_above(fig, axes[0])
    raw = {name: _offset(r.views["raw"]) for name, r in runs.items()}
    centered = max(_offset(r.views["centered"]) for r in runs.values())
    centered_text = f"at most {centered:.2f} times" if round(centered, 2) else "less than 0.01 times"
    alt = (
        f"Raw, the centre of the sampled cloud lies {min(raw.values()):.2f} ({min(raw, key=raw.get)}) to {max(raw.values()):.2f} "
        f"({max(raw, key=raw.get)}) times the cloud's spread from the origin; centered, {centered_text}: the cloud surrounds the origin."
    )
    caption = "Input embeddings on their top two singular directions, raw and centered; the reference tokens of chapter 11 outlined, the cross the origin."
    results.figure(fig, "embedding_planes", caption, alt=alt)


def figure_spectra(runs: dict[str, MatrixGeometry], results: Writer) -> None:
    """Per model: singular values (normalised by the largest, log scale) and the density of vector norms, raw vs centered."""
    from scipy.stats import gaussian_kde

    fig, axes = plotting.grid(2 * len(runs), columns=2, panel_height=3.0)
    for (name, found), row in zip(runs.items(), zip(axes[::2], axes[1::2])):
        for (variant, s), style in zip(found.spectra.items(), ["-", "--"]):
            row[0].plot(np.arange(1, len(s) + 1), s / s[0], style, label=variant)
            values = found.norms[variant]
            grid = np.linspace(values.min(), values.max(), 300)
            row[1].plot(grid, gaussian_kde(values)(grid), style, label=variant)
        row[0].set(yscale="log", xlabel="singular value index k", ylabel=r"$\sigma_k / \sigma_1$", title=f"{name}: singular values")
        row[1].set(xlabel="length of an embedding", ylabel="density", title=f"{name}: lengths")
        row[0].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5, integer=True))
        row[1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    plotting.legend_above(fig, axes[0])
    alt = "; ".join(
        f"{name}: σ2/σ1 {r.spectra['raw'][1] / r.spectra['raw'][0]:.2f} raw, {r.spectra['centered'][1] / r.spectra['centered'][0]:.2f} centered, "
        f"average length {r.norms['raw'].mean():.2f} raw, {r.norms['centered'].mean():.2f} centered"
        for name, r in runs.items()
    )
    results.figure(
        fig, "spectra_and_norms", "Singular values of the raw and centered embedding matrices, and the distribution of embedding lengths.", alt=alt + "."
    )


EMBEDDING_MATRIX = CHAPTER.table(
    "embedding_matrix",
    "model vocabulary width average_norm_raw mean_vector_norm_raw ratio_raw sigma1_over_sigma2_raw sigma1_over_sigma2_centered "
    "top_direction_mean_cosine check_rows mean_pairwise_cosine_brute_force mean_pairwise_cosine_from_mean_unit_vector reference_tokens",
)
TOY_SPHERE = CHAPTER.table("toy_sphere", "shift sigma_1 sigma_1_over_sigma_2", extra=r"sigma_\d+")  # one column per singular value


@CHAPTER.rule
def spectrum_ratio_collapses(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["sigma1_over_sigma2_raw"] / r["sigma1_over_sigma2_centered"], "the whole matrix")
    text = f"σ1/σ2 {r['sigma1_over_sigma2_raw']:.2f} raw, {r['sigma1_over_sigma2_centered']:.2f} centred: falls {estimate.text(2, '×')}"
    return outcome(decide(estimate, claim.margin), text, estimate)


@CHAPTER.rule
def top_direction_is_mean(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["top_direction_mean_cosine"], "the whole matrix")
    control = f"a random direction in {int(r['width'])} dimensions: |cosine| about {random_cosine(r['width']):.3f}"
    return outcome(decide(estimate, claim.margin), f"|cosine| of WᵀW's top eigenvector with the mean row: {estimate.text(3)}", estimate, control)
