"""Figure kinds that several chapters draw (each chapter's own figures live in its experiment module)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import matplotlib
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


# how a model's outlier dimensions are drawn, in order: colours at least 3:1 against white, then other markers
MARKS = [(color, marker) for marker in "o^sD" for color in (COLORS[1], COLORS[2], COLORS[3], COLORS[7])]


def marked_vectors(vectors: np.ndarray, flags: np.ndarray, titles: list[str], marked: Sequence[int], ylabel: str = "mean value"):
    """Small multiples, one vector per panel (value by dimension): each `marked` dimension (a model's outlier set) in a
    colour of its own (`MARKS`), filled where it is flagged in that panel and open where it is not, the other flagged
    dimensions as grey dots; one legend above the panels names them, so no label on a point runs into another."""
    n = len(vectors)
    fig, axes = plotting.grid(n, columns=2 if n <= 4 else 3, panel_height=2.2)
    dims = np.arange(vectors.shape[1])
    styles = dict(zip((int(d) for d in marked), itertools.cycle(MARKS)))
    for ax, values, flagged, title in zip(axes, vectors, flags, titles):
        ax.plot(dims, values, lw=0.7, color=COLORS[0])
        other = [d for d in np.flatnonzero(flagged) if d not in styles]
        ax.plot(other, values[other], "o", ms=3.5, color="grey", ls="none")
        for d, (color, marker) in styles.items():
            ax.plot([d], [values[d]], marker, ms=6, color=color, mfc=color if flagged[d] else "white", zorder=3)
        ax.margins(y=0.15)
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=8)
    for d, (color, marker) in styles.items():
        axes[0].plot([], [], marker, ms=6, color=color, ls="none", label=f"dim {d}")
    axes[0].plot([], [], "o", ms=3.5, color="grey", ls="none", label="other flagged")
    if styles:
        axes[0].plot([], [], "o", ms=6, color="black", mfc="white", ls="none", label="open: not flagged")
    plotting.legend_above(fig, axes[0])
    fig.supxlabel("dimension", fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    return fig


def average_vectors(mean_vectors: np.ndarray, flags: np.ndarray, marked: Sequence[int]):
    """The average vector of every layer, the model's outlier dimensions marked (`marked_vectors`)."""
    titles = [f"layer {layer}" + (" (embeddings)" if layer == 0 else "") for layer in range(len(mean_vectors))]
    return marked_vectors(mean_vectors, flags, titles, marked)


def average_vectors_alt(name: str, mean_vectors: np.ndarray, flags: np.ndarray, marked: Sequence[int]) -> str:
    """What an average-vectors figure shows, in numbers: in how many layers each marked dimension is flagged and its
    largest |value|, against the median |value| of all dimensions."""
    spikes = [
        f"dimension {d} is flagged in {int(flags[:, d].sum())} of {len(flags)} layers, reaching {float(np.abs(mean_vectors[:, d]).max()):.2f}"
        for d in (int(m) for m in marked)
    ]
    shown = "; ".join(spikes) if spikes else "no dimension stands out in most layers"
    return f"The average vector of each layer of {name}: {shown}, against a median |value| of {float(np.median(np.abs(mean_vectors))):.3f}."


LAYERNORM_STYLES = {"embedding": {"marker": "s", "ls": "none"}, "first": {"marker": "o", "ls": "-"}, "second": {"marker": "^", "ls": "--"}}


def layernorm_ranks(frame: pd.DataFrame):
    """One model's outlier dimensions ranked among every LayerNorm's gains (left) and biases (right), by layer (1 = top,
    log scale): a colour per dimension (as in `marked_vectors`), a line style per LayerNorm; one legend above the panels."""
    fig, axes = plotting.grid(2, columns=2, panel_height=3.4, sharey=True)
    width = int(frame["width"].iloc[0])
    colours = {d: color for d, (color, _) in zip(dict.fromkeys(frame["dim"]), itertools.cycle(MARKS))}
    for ax, param, title in zip(axes, ("gamma", "beta"), ("γ (gain)", "β (bias, toward the outlier's sign)")):
        for (dim, which), line in frame[frame["param"] == param].groupby(["dim", "layernorm"], sort=False):
            ax.plot(line["layer"], line["rank"], color=colours[dim], ms=4, lw=1.2, **LAYERNORM_STYLES.get(which, {}))
        ax.set_yscale("log")
        ax.set_ylim(width * 1.3, 0.8)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set(title=title, xlabel="layer (0 = embedding LayerNorm)")
    axes[0].set_ylabel(f"rank among {width} (1 = top)")
    for dim, color in colours.items():
        axes[0].plot([], [], color=color, lw=2.5, label=f"dim {dim} ({frame.loc[frame['dim'] == dim, 'sign'].iloc[0]})")
    for which, style in LAYERNORM_STYLES.items():
        if which in set(frame["layernorm"]):
            axes[0].plot([], [], color="black", ms=4, **style, label=f"{which} LayerNorm")
    plotting.legend_above(fig, axes[0])
    return fig
