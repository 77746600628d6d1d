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


def plane_views(views: dict[str, PlaneView], colour_by: dict[str, np.ndarray], colour_label: str):
    """Side-by-side 2-D PCA scatter plots, coloured by a per-point value, with the origin marked."""
    fig, axes = plt.subplots(1, len(views), figsize=(5.2 * len(views), 4.6), squeeze=False)
    for ax, (name, view) in zip(axes[0], views.items()):
        sc = ax.scatter(view.coords[:, 0], view.coords[:, 1], c=colour_by[name], s=6, cmap="viridis", alpha=0.7, linewidths=0)
        ax.scatter(*view.origin, marker="X", s=120, color="#D55E00", edgecolor="white", zorder=3, label="origin")
        ax.set(xlabel=f"PC1 ({100 * view.explained[0]:.1f}% of variance)", ylabel=f"PC2 ({100 * view.explained[1]:.1f}%)",
               title=f"{name}\n|mean| / mean |x| = {view.mean_vector_norm_ratio:.2f}")
        ax.legend(loc="best", frameon=False)
        fig.colorbar(sc, ax=ax, label=colour_label, shrink=0.85)
    fig.tight_layout()
    return fig


def average_vectors(mean_vectors: np.ndarray, outliers: pd.DataFrame, title: str, columns: int = 4):
    """Small multiples: the average vector of every layer (value by dimension), detected outliers labelled."""
    n = mean_vectors.shape[0]
    rows = int(np.ceil(n / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.4 * rows), sharex=True, squeeze=False)
    dims = np.arange(mean_vectors.shape[1])
    for layer, ax in enumerate(axes.flat):
        if layer >= n:
            ax.axis("off")
            continue
        ax.plot(dims, mean_vectors[layer], lw=0.7, color=COLORS[0])
        flagged = outliers[outliers["layers"].str.split().apply(lambda ls, l=layer: str(l) in ls)] if len(outliers) else outliers
        for d in flagged["dim"]:
            ax.annotate(str(d), (d, mean_vectors[layer, d]), fontsize=8, color=COLORS[1], ha="center",
                        va="bottom" if mean_vectors[layer, d] > 0 else "top")
            ax.plot([d], [mean_vectors[layer, d]], "o", ms=3, color=COLORS[1])
        ax.set_title(f"layer {layer}" + (" (embeddings)" if layer == 0 else ""), fontsize=10)
        ax.margins(y=0.2)
    for ax in axes[-1]:
        ax.set_xlabel("dimension")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean value")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def extreme_shares(tables: dict[str, pd.DataFrame]):
    """Per model and layer: % of vectors whose minimum (maximum) is the most frequent such dimension."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, kind in zip(axes, ["argmin", "argmax"]):
        for (name, t), color in zip(tables.items(), COLORS):
            ax.plot(t["layer"], t[f"{kind}_percent"], marker="o", color=color, label=name)
            for _, r in t.iterrows():
                ax.annotate(str(int(r[f"{kind}_dim"])), (r["layer"], r[f"{kind}_percent"]), fontsize=7, color=color,
                            xytext=(0, 4), textcoords="offset points", ha="center")
        word = "minimum" if kind == "argmin" else "maximum"
        ax.set(xlabel="layer (0 = embedding output)", title=f"most frequent {word} dimension (labelled)", ylim=(0, 105))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[0].set_ylabel("% of vectors")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig
