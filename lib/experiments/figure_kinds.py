"""Figure kinds that several chapters draw (each chapter's own figures live in its experiment module)."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..measure.geometry import PlaneView
from . import plotting
from .plotting import COLORS


def plane_views(
    views: dict[str, PlaneView], colour_by: dict[str, np.ndarray], colour_label: str, special: dict[str, np.ndarray], ring_label: str = "special tokens"
):
    """2-D PCA scatter plots, two panels to a row, coloured by a per-point value; special tokens ringed (thin rings, so
    the cloud shows through), the origin marked."""
    fig, axes = plotting.grid(len(views), columns=2, panel_height=3.3)
    for ax, (name, view) in zip(axes, views.items()):
        sc = ax.scatter(view.coords[:, 0], view.coords[:, 1], c=colour_by[name], s=5, cmap="viridis", alpha=0.7, linewidths=0)
        ring = special[name]
        rings = {"s": 16, "facecolors": "none", "edgecolors": COLORS[3], "linewidths": 0.5, "alpha": 0.8}
        ax.scatter(view.coords[ring, 0], view.coords[ring, 1], label=f"{ring_label} ({ring.sum()})", **rings)
        ax.scatter(*view.origin, marker="X", s=90, color=COLORS[1], edgecolor="white", zorder=3, label="origin")
        ax.set(
            xlabel=f"PC 1 ({100 * view.explained[0]:.1f}% of variance)",
            ylabel=f"PC 2 ({100 * view.explained[1]:.1f}%)",
            title=f"{name}\n|mean| / mean |x| = {view.mean_vector_norm_ratio:.2f}",
        )
        fig.colorbar(sc, ax=ax, label=colour_label if len(views) == 1 else None, shrink=0.9)
    plotting.legend_above(fig, axes[0])
    if len(views) > 1:
        fig.supxlabel(f"colour: {colour_label}", fontsize=10)
    return fig


def vector_panels(vectors: np.ndarray, flags: np.ndarray, panel_titles: list[str], ylabel: str = "mean value", columns: int = 3):
    """Small multiples: one vector per panel (value by dimension), flagged dimensions labelled."""
    n = vectors.shape[0]
    columns = min(columns, 2 if n <= 4 else 3)  # a row of three panels or fewer would be a flat strip
    fig, axes = plotting.grid(n, columns=columns, panel_height=2.2)
    dims = np.arange(vectors.shape[1])
    for i, ax in enumerate(axes):
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
    fig.supxlabel("dimension", fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    return fig


def average_vectors(mean_vectors: np.ndarray, flags: np.ndarray):
    """The average vector of every layer, flagged dimensions labelled."""
    titles = [f"layer {layer}" + (" (embeddings)" if layer == 0 else "") for layer in range(len(mean_vectors))]
    return vector_panels(mean_vectors, flags, titles)


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
