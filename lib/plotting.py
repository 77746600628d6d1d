"""Figures with one readable style: labelled axes, legible fonts, colour-blind-safe colours."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .geometry import PlaneView

COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def style() -> None:
    """Book-wide matplotlib defaults."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 150, "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
        "legend.fontsize": 10, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
        "grid.alpha": 0.3, "axes.prop_cycle": matplotlib.cycler(color=COLORS),
    })


def anisotropy_by_layer(tables: dict[str, pd.DataFrame], title: str = "Average cosine similarity of random token pairs"):
    """One line per model: mean cosine by layer with its 95% interval; layer 0 is the embedding output."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["layer"], t["mean_cosine"], marker="o", color=color, label=name)
        ax.fill_between(t["layer"], t["ci95_low"], t["ci95_high"], color=color, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="layer (0 = embedding output)", ylabel="mean cosine similarity", title=title, ylim=(min(-0.05, ax.get_ylim()[0]), 1.0))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend(frameon=False)
    return fig


def plane_views(views: dict[str, PlaneView], colour_by: dict[str, np.ndarray], colour_label: str,
                special: dict[str, np.ndarray]):
    """2-D PCA scatter plots, one row per model, coloured by a per-point value; special tokens ringed,
    the origin marked."""
    fig, axes = plt.subplots(len(views), 1, figsize=(7.5, 4.8 * len(views)), squeeze=False)
    for ax, (name, view) in zip(axes[:, 0], views.items()):
        sc = ax.scatter(view.coords[:, 0], view.coords[:, 1], c=colour_by[name], s=7, cmap="viridis", alpha=0.7, linewidths=0)
        ring = special[name]
        ax.scatter(view.coords[ring, 0], view.coords[ring, 1], s=30, facecolors="none", edgecolors="black", linewidths=0.6,
                   label=f"special tokens ({ring.sum()})")
        ax.scatter(*view.origin, marker="X", s=150, color=COLORS[1], edgecolor="white", zorder=3, label="origin")
        ax.set(xlabel=f"PC1 ({100 * view.explained[0]:.1f}% of variance)", ylabel=f"PC2 ({100 * view.explained[1]:.1f}%)",
               title=f"{name}: |mean| / mean |x| = {view.mean_vector_norm_ratio:.2f}")
        ax.legend(loc="best", frameon=True, framealpha=0.8)
        fig.colorbar(sc, ax=ax, label=colour_label)
    fig.tight_layout()
    return fig


def average_vectors(mean_vectors: np.ndarray, flags: np.ndarray, title: str, columns: int = 3):
    """Small multiples: the average vector of every layer (value by dimension), flagged dimensions labelled."""
    n = mean_vectors.shape[0]
    rows = int(np.ceil(n / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.3 * columns, 2.3 * rows), squeeze=False)
    dims = np.arange(mean_vectors.shape[1])
    for layer, ax in enumerate(axes.flat):
        if layer >= n:
            ax.axis("off")
            continue
        ax.plot(dims, mean_vectors[layer], lw=0.7, color=COLORS[0])
        for d in np.flatnonzero(flags[layer]):
            value = mean_vectors[layer, d]
            ax.plot([d], [value], "o", ms=3.5, color=COLORS[1])
            ax.annotate(str(d), (d, value), fontsize=9, color=COLORS[1], ha="center", va="bottom" if value > 0 else "top",
                        xytext=(0, 2 if value > 0 else -2), textcoords="offset points")
        ax.set_title(f"layer {layer}" + (" (embeddings)" if layer == 0 else ""), fontsize=10)
        ax.margins(y=0.25)
        ax.tick_params(labelsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("dimension")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean value")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def extreme_shares(tables: dict[str, pd.DataFrame]):
    """Per model and layer: % of vectors whose minimum (maximum) is the most frequent such dimension."""
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.5), sharex=True)
    for ax, kind in zip(axes, ["argmin", "argmax"]):
        for (name, t), color in zip(tables.items(), COLORS):
            ax.plot(t["layer"], t[f"{kind}_percent"], marker="o", color=color, label=name)
            for _, r in t.iterrows():
                ax.annotate(str(int(r[f"{kind}_dim"])), (r["layer"], r[f"{kind}_percent"]), fontsize=8, color=color,
                            xytext=(0, 4), textcoords="offset points", ha="center")
        word = "minimum" if kind == "argmin" else "maximum"
        ax.set(ylabel="% of vectors", title=f"the dimension that is most often a vector's {word} (labelled)", ylim=(0, 108))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_xlabel("layer (0 = embedding output)")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig
