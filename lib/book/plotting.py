"""Figures with one readable style: labelled axes, legible fonts, colour-blind-safe colours. A figure has no title of
its own where the book gives it a caption (`Results.figure`): panels are titled, the figure is not."""

from __future__ import annotations

import textwrap

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.layout_engine import PlaceHolderLayoutEngine

from ..measure.geometry import PlaneView

COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def style() -> None:
    """Book-wide matplotlib defaults."""
    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.prop_cycle": matplotlib.cycler(color=COLORS),
        }
    )


PAGE_WIDTH = 7.5  # inches: a figure this wide is shown at about the text column's width, so its fonts print at their size


def readable(fig) -> None:
    """Make a finished figure readable at the page's width: every text of a figure wider than `PAGE_WIDTH` scaled by
    its width over it (so that once the page shrinks the figure to the column, labels print at the sizes of `style`),
    the layout fitted again, titles and axis labels that outgrew their panel wrapped (`fit_labels`), then the point
    labels of each panel moved apart (`apart`)."""
    scale = fig.get_figwidth() / PAGE_WIDTH
    if scale > 1:
        for text in fig.findobj(matplotlib.text.Text):
            text.set_fontsize(text.get_fontsize() * scale)
        _layout(fig)
        for _ in range(3):  # wrapping changes the layout, and the layout the room: a few rounds settle it
            if not fit_labels(fig):
                break
            _layout(fig)
    for ax in fig.axes:
        apart([t for t in ax.texts if isinstance(t, matplotlib.text.Annotation) and t.anncoords == "offset points"])


def _layout(fig) -> None:
    engine = fig.get_layout_engine()
    if engine is None or isinstance(engine, PlaceHolderLayoutEngine):  # fig.tight_layout() leaves a placeholder that does nothing
        fig.tight_layout()
    else:
        engine.execute(fig)


def fit_labels(fig) -> bool:
    """Wrap each panel's title and x label that is wider than the panel, and its y label that is taller, onto as many
    lines as it needs (at spaces; never below 8 characters a line), so that it does not run into the neighbouring
    panel. True if any changed."""
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for text, room, along in ((ax.title, box.width, "width"), (ax.xaxis.label, box.width, "width"), (ax.yaxis.label, box.height, "height")):
            size = getattr(text.get_window_extent(renderer), along)
            if text.get_text() and size > room > 0:
                lines = text.get_text().split("\n")
                words = " ".join(lines)
                wrapped = textwrap.fill(words, max(8, int(max(map(len, lines)) * room / size)), break_long_words=False)
                changed |= wrapped != text.get_text()
                text.set_text(wrapped)
    return changed


def apart(labels: list) -> None:
    """Move point labels (annotations placed above or below their point) further out, one step at a time, until none
    overlaps a label placed before it."""
    if not labels:
        return
    labels[0].axes.autoscale_view()  # the axis limits the labels will be drawn in (autoscaling is otherwise lazy)
    renderer = labels[0].figure.canvas.get_renderer()
    placed = []
    for label in labels:
        x, y = label.xyann
        step = 10 if y >= 0 else -10
        for _ in range(8):
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            y += step
            label.xyann = (x, y)
        placed.append(label.get_window_extent(renderer))


def anisotropy_by_layer(tables: dict[str, pd.DataFrame]):
    """One line per model: mean cosine by layer with its 95% interval; layer 0 is the embedding output."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["layer"], t["mean_cosine"], marker="o", color=color, label=name)
        ax.fill_between(t["layer"], t["ci95_low"], t["ci95_high"], color=color, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="layer (0 = embedding output)", ylabel="mean cosine similarity", ylim=(min(-0.05, ax.get_ylim()[0]), 1.0))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend(frameon=False)
    return fig


def plane_views(
    views: dict[str, PlaneView], colour_by: dict[str, np.ndarray], colour_label: str, special: dict[str, np.ndarray], ring_label: str = "special tokens"
):
    """2-D PCA scatter plots, one row per model, coloured by a per-point value; special tokens ringed,
    the origin marked."""
    fig, axes = plt.subplots(len(views), 1, figsize=(7.5, 4.8 * len(views)), squeeze=False)
    for ax, (name, view) in zip(axes[:, 0], views.items()):
        sc = ax.scatter(view.coords[:, 0], view.coords[:, 1], c=colour_by[name], s=7, cmap="viridis", alpha=0.7, linewidths=0)
        ring = special[name]
        ax.scatter(
            view.coords[ring, 0], view.coords[ring, 1], s=30, facecolors="none", edgecolors="black", linewidths=0.6, label=f"{ring_label} ({ring.sum()})"
        )
        ax.scatter(*view.origin, marker="X", s=150, color=COLORS[1], edgecolor="white", zorder=3, label="origin")
        ax.set(
            xlabel=f"component 1 ({100 * view.explained[0]:.1f}% of variance)",
            ylabel=f"component 2 ({100 * view.explained[1]:.1f}%)",
            title=f"{name}: |mean| / mean |x| = {view.mean_vector_norm_ratio:.2f}",
        )
        ax.legend(loc="best", frameon=True, framealpha=0.8)
        fig.colorbar(sc, ax=ax, label=colour_label)
    fig.tight_layout()
    return fig


def vector_panels(vectors: np.ndarray, flags: np.ndarray, panel_titles: list[str], ylabel: str = "mean value", columns: int = 3):
    """Small multiples: one vector per panel (value by dimension), flagged dimensions labelled."""
    n = vectors.shape[0]
    rows = int(np.ceil(n / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.3 * columns, 2.3 * rows), squeeze=False)
    dims = np.arange(vectors.shape[1])
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        ax.plot(dims, vectors[i], lw=0.7, color=COLORS[0])
        for d in np.flatnonzero(flags[i]):
            value = vectors[i, d]
            ax.plot([d], [value], "o", ms=3.5, color=COLORS[1])
            ax.annotate(
                str(d),
                (d, value),
                fontsize=9,
                color=COLORS[1],
                ha="center",
                va="bottom" if value > 0 else "top",
                xytext=(0, 2 if value > 0 else -2),
                textcoords="offset points",
            )
        ax.margins(y=0.25)
        ax.set_title(panel_titles[i], fontsize=10)
        ax.tick_params(labelsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("dimension")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def average_vectors(mean_vectors: np.ndarray, flags: np.ndarray):
    """The average vector of every layer, flagged dimensions labelled."""
    titles = [f"layer {layer}" + (" (embeddings)" if layer == 0 else "") for layer in range(len(mean_vectors))]
    return vector_panels(mean_vectors, flags, titles)


def extreme_shares(tables: dict[str, pd.DataFrame]):
    """Per model and layer: % of vectors whose minimum (maximum) is the most frequent such dimension."""
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.5), sharex=True)
    for ax, kind in zip(axes, ["argmin", "argmax"]):
        for (name, t), color in zip(tables.items(), COLORS):
            ax.plot(t["layer"], t[f"{kind}_percent"], marker="o", color=color, label=name)
            for _, r in t.iterrows():
                ax.annotate(
                    str(int(r[f"{kind}_dim"])),
                    (r["layer"], r[f"{kind}_percent"]),
                    fontsize=8,
                    color=color,
                    xytext=(0, 4),
                    textcoords="offset points",
                    ha="center",
                )
        word = "minimum" if kind == "argmin" else "maximum"
        ax.set(ylabel="% of vectors", title=f"the dimension that is most often a vector's {word} (labelled)", ylim=(0, 108))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_xlabel("layer (0 = embedding output)")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig


def layernorm_ranks(ranks: dict[str, pd.DataFrame]):
    """Per model, γ and β panels: rank of each outlier dimension in each LayerNorm by layer (1 = top, log scale)."""
    fig, axes = plt.subplots(len(ranks), 2, figsize=(11, 3.8 * len(ranks)), squeeze=False)
    styles = {"embedding": "s", "first": "-o", "second": "--^"}
    for row, (name, frame) in zip(axes, ranks.items()):
        width = int(frame["width"].iloc[0])
        for ax, param in zip(row, ["gamma", "beta"]):
            part = frame[frame["param"] == param]
            for color, (dim, by_dim) in zip(COLORS, part.groupby("dim", sort=False)):
                for which, line in by_dim.groupby("layernorm", sort=False):
                    ax.plot(line["layer"], line["rank"], styles.get(which, "-"), color=color, ms=5, label=f"dim {dim} ({line['sign'].iloc[0]}), {which} LN")
            ax.set_yscale("log")
            ax.set_ylim(width * 1.3, 0.8)
            ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.set(
                xlabel="layer (0 = embedding LayerNorm)",
                ylabel=f"rank among {width} (1 = top)",
                title=f"{name}: {'γ (gain)' if param == 'gamma' else 'β (bias), ranked toward the outlier sign'}",
            )
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        row[1].legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def propagation(z: np.ndarray, stages: list[str], dims: list[int], threshold: float):
    """One panel per stage, two to a row at the page's width: robust z of each outlier dimension in the average vector
    at each position."""
    rows = -(-len(stages) // 2)
    fig, axes = plt.subplots(rows, 2, figsize=(PAGE_WIDTH, 2.6 * rows + 0.6), sharex=True, sharey=True, squeeze=False)
    positions = np.arange(z.shape[1])
    for ax, stage, values in zip(axes.flat, stages, z):
        for color, d in zip(COLORS, dims):
            ax.plot(positions, values[:, d], "-o", ms=2.5, lw=1, color=color, label=f"dim {d}")
        ax.axhspan(-threshold, threshold, color="grey", alpha=0.15, lw=0, label=f"|z| < {threshold:g} (not flagged)")
        ax.set_title(stage if stage != "input" else "input (before the embedding LayerNorm)", fontsize=10)
    for ax in axes.flat[len(stages) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("robust z")
    for ax in axes[-1]:
        ax.set_xlabel("position in the sequence")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, frameon=False, loc="lower center", ncol=len(labels))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def probe_accuracy(tables: dict[str, pd.DataFrame]):
    """Position-prediction accuracy by layer, one line per model (test set; dev as a thin dashed line)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["layer"], 100 * t["test_accuracy"], "-o", color=color, label=f"{name} (test)")
        ax.plot(t["layer"], 100 * t["dev_accuracy"], "--", lw=0.8, color=color, label=f"{name} (dev)")
    ax.set(xlabel="layer (0 = embedding output)", ylabel="accuracy (%)", ylim=(0, 102))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend(frameon=False)
    return fig


def contributions_by_layer(tables: dict[str, pd.DataFrame]):
    """Per model: mean contribution by layer of each outlier dimension, of the largest non-outlier neuron, and of all neurons."""
    fig, axes = plt.subplots(len(tables), 1, figsize=(7.5, 3.8 * len(tables)), squeeze=False)
    for ax, (name, t) in zip(axes[:, 0], tables.items()):
        dims = [c for c in t.columns if c.startswith("dim ") and not c.endswith(" rank")]
        for color, col in zip(COLORS[1:], dims):
            ax.plot(t["layer"], t[col], "-o", color=color, label=col + " (outlier)")
        ax.plot(t["layer"], t["top_other"], "-s", color=COLORS[0], label="largest non-outlier neuron")
        for _, r in t.iterrows():
            ax.annotate(
                str(int(r["top_other_dim"])),
                (r["layer"], r["top_other"]),
                fontsize=7,
                color=COLORS[0],
                xytext=(0, -10),
                textcoords="offset points",
                ha="center",
            )
        ax.plot(t["layer"], t["mean_all"], ":", color="black", label="mean of all neurons")
        ax.set(xlabel="layer (0 = embedding output)", ylabel="mean contribution |w·v|", title=f"{name}: contribution to position prediction")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def contribution_heatmaps(maps: dict[str, np.ndarray]):
    """Heatmaps (positions x layers) of mean contribution, one panel per neuron (or summary), shared colour scale."""
    fig, axes = plt.subplots(len(maps), 1, figsize=(7.5, 2.9 * len(maps)), squeeze=False)
    vmax = max(np.nanmax(m) for m in maps.values())
    for ax, (label, m) in zip(axes[:, 0], maps.items()):
        im = ax.imshow(m.T, aspect="auto", origin="lower", cmap="magma", vmin=0, vmax=vmax, interpolation="nearest")
        ax.set(title=label, xlabel="position in the sequence", ylabel="layer")
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.grid(False)
        fig.colorbar(im, ax=ax, label="contribution")
    fig.tight_layout()
    return fig


VARIANT_STYLE = {"raw": ("-o", COLORS[0]), "clipped": ("--s", COLORS[1]), "whitened": (":^", COLORS[2])}


def variants_by_layer(tables: dict[str, pd.DataFrame], metrics: list[str], labels: list[str]):
    """One row per model, one panel per metric: the metric by layer for each variant (raw/clipped/whitened)."""
    fig, axes = plt.subplots(len(tables), len(metrics), figsize=(5.2 * len(metrics), 3.6 * len(tables)), squeeze=False)
    for row, (name, t) in zip(axes, tables.items()):
        for ax, metric, label in zip(row, metrics, labels):
            for variant, part in t.groupby("variant", sort=False):
                style, color = VARIANT_STYLE.get(variant, ("-", None))
                ax.plot(part["layer"], part[metric], style, color=color, ms=4, label=variant)
            ax.axhline(0, color="grey", lw=0.8)
            ax.set(xlabel="layer (0 = embedding output)", ylabel=label, title=f"{name}: {label}")
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        row[0].legend(frameon=False)
    fig.tight_layout()
    return fig


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


def coverage_curves(curves: dict[str, np.ndarray], marks: list[float]):
    """Share of a corpus covered by the k most frequent items (log k), with horizontal marks; and rank-frequency on log-log axes."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    for (name, cov), color in zip(curves.items(), COLORS):
        k = np.arange(1, len(cov) + 1)
        left.plot(k, 100 * cov, color=color, label=name)
        freq = np.diff(np.concatenate([[0.0], cov]))
        right.loglog(k, freq, color=color, label=name)
    for mark in marks:
        left.axhline(100 * mark, color="grey", lw=0.7, ls=":")
    left.set(xscale="log", xlabel="k most frequent items", ylabel="% of the corpus covered", title="coverage")
    right.set(xlabel="rank", ylabel="share of the corpus", title="rank-frequency (log-log)")
    left.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def binned_cosines(tables: dict[str, pd.DataFrame], xlabel: str):
    """Mean cosine between the reference tokens and each bin of the vocabulary, one line per model."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["bin_start"], t["mean_cosine"], "-o", ms=3, color=color, label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel=xlabel, ylabel="mean cosine")
    ax.legend(frameon=False)
    return fig


def grouped_bars(frame: pd.DataFrame, group: str, columns: list[str], labels: list[str], ylabel: str):
    """One panel per model: bars of the given columns for each group (e.g. variant)."""
    models = list(dict.fromkeys(frame["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], models):
        part = frame[frame["model"] == name]
        x = np.arange(len(part))
        width = 0.8 / len(columns)
        for i, (column, label) in enumerate(zip(columns, labels)):
            ax.bar(x + (i - (len(columns) - 1) / 2) * width, part[column], width, label=label, color=COLORS[i])
        ax.set_xticks(x, part[group], rotation=20, ha="right")
        ax.set(title=name, ylabel=ylabel)
        ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def training_curves(histories: dict[str, pd.DataFrame], reference: tuple[str, float] | None = None):
    """Masked-LM training loss and validation perplexity (log scale) by step, one line per run; optionally a
    labelled reference perplexity as a dashed line."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for (name, h), color in zip(histories.items(), COLORS):
        left.plot(h["step"], h["train_loss"], marker="o", ms=3, color=color, label=name)
        right.plot(h["step"], h["valid_perplexity"], marker="o", ms=3, color=color, label=name)
    if reference is not None:
        right.axhline(reference[1], color="grey", ls="--", lw=1, label=f"{reference[0]}: {reference[1]:.0f}")
        right.legend(frameon=False)
    left.set(xlabel="step", ylabel="training loss (mean since last evaluation)", title="Training loss")
    right.set(xlabel="step", ylabel="validation perplexity", yscale="log", title="Validation perplexity (log scale)")
    for axis in (right.yaxis.set_major_formatter, right.yaxis.set_minor_formatter):
        axis(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    left.legend(frameon=False)
    fig.tight_layout()
    return fig


def outlier_track(tracks: dict[str, pd.DataFrame], threshold: float, histories: dict[str, pd.DataFrame] | None = None):
    """Per run (rows) and layer (lines) across checkpoints: robust z of the largest-|mean| dimension (dashed: the
    outlier threshold; black: the position table's mean row, from a history's `pe_top_z`, where it has one), and the
    share of vectors whose maximum lies in the most frequent argmax dimension."""
    fig, axes = plt.subplots(len(tracks), 2, figsize=(11, 3.8 * len(tracks)), squeeze=False, sharex=True)
    cmap = plt.get_cmap("viridis")
    for (left, right), (name, t) in zip(axes, tracks.items()):
        layers = sorted(t["layer"].unique())
        for layer in layers:
            rows = t[t["layer"] == layer]
            color = cmap(layer / max(1, len(layers) - 1))
            left.plot(rows["step"], rows["top_z"].abs(), marker="o", ms=3, color=color, label=f"layer {layer}")
            right.plot(rows["step"], rows["argmax_percent"], marker="o", ms=3, color=color, label=f"layer {layer}")
        handles = [left.axhline(threshold, color="grey", ls="--", lw=1, label=f"outlier threshold ({threshold:g})")]
        top = float(t["top_z"].abs().max())
        table = None if histories is None or "pe_top_z" not in histories[name] else histories[name].dropna(subset=["pe_top_z"])
        if table is not None and len(table):
            handles += left.plot(table["step"], table["pe_top_z"].abs(), color="black", marker="s", ms=3, label="position table (mean row)")
            top = max(top, float(table["pe_top_z"].abs().max()))
        left.set(
            ylabel="|robust z| of top dim",
            ylim=(0, max(threshold, top) * 1.1),
            title=f"{name}: largest |robust z|",
        )
        left.legend(handles=handles, frameon=False, fontsize=8, loc="upper right")
        right.set(ylabel="% of vectors", ylim=(0, 100), title=f"{name}: share in one dimension")
        right.legend(frameon=False, fontsize=8, ncol=2)
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    fig.tight_layout()
    return fig


def calibration_summary(summary: pd.DataFrame, methods: list[str]):
    """Per calibration method: score change vs no calibration by task (mean ± std of the method's runs),
    I1 of W after fine-tuning, and time per epoch relative to no calibration."""
    tasks = list(dict.fromkeys(summary["task"]))
    fig = plt.figure(figsize=(PAGE_WIDTH, 7.5))  # the tasks' bars across the top, isotropy and cost below
    grid = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    width = 0.8 / max(1, len(methods))
    for i, (method, color) in enumerate(zip(methods, COLORS)):
        rows = summary[summary["method"] == method].set_index("task").reindex(tasks)
        x = np.arange(len(tasks)) + (i - (len(methods) - 1) / 2) * width
        axes[0].bar(x, rows["difference"], width, yerr=rows["score_std"], color=color, label=method, capsize=2)
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set_xticks(np.arange(len(tasks)), tasks)
    axes[0].set(ylabel="score − uncalibrated score (points)", title="Task score change (error bar: std over seeds)")
    axes[0].legend(frameon=False, fontsize=8, ncol=min(3, len(methods)), loc="lower left")
    by_method = summary.groupby("method", sort=False)[["I1_mean", "time_ratio"]].mean().reindex(methods)
    positions = np.arange(len(methods))
    axes[1].scatter(positions, by_method["I1_mean"], s=80, color=COLORS[: len(methods)], zorder=3)
    for x, value in zip(positions, by_method["I1_mean"]):
        axes[1].annotate(f"{value:.3f}", (x, value), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=9)
    low = float(np.nanmin(by_method["I1_mean"]))
    axes[1].set(ylabel="I1 of W (1 = isotropic)", title="Isotropy after fine-tuning", ylim=(max(0.0, low - 0.1), 1.02))
    axes[2].bar(positions, by_method["time_ratio"], color=COLORS[: len(methods)])
    axes[2].axhline(1, color="grey", lw=0.8)
    axes[2].set(ylabel="× time per epoch of no calibration", title="Cost")
    for ax in axes[1:]:
        ax.set_xticks(positions, methods, rotation=35, ha="right")
    fig.tight_layout()
    return fig


def spectrum_targets(curves: dict[str, dict[str, np.ndarray]]):
    """Per model: the singular values of W (first curve) and the spectrum-control priors they are pulled towards (log-log)."""
    fig, axes = plt.subplots(1, len(curves), figsize=(5.8 * len(curves), 4.3), squeeze=False)
    for (name, lines), ax in zip(curves.items(), axes[0]):
        for (label, values), style in zip(lines.items(), ["-", "--", ":"]):
            ax.plot(np.arange(1, len(values) + 1), values, style, lw=2, label=label)
        ax.set(xscale="log", yscale="log", xlabel="index k", ylabel="singular value σ_k", title=f"{name}: W and the spectrum priors")
        ax.legend(frameon=False)
    fig.tight_layout()
    return fig
