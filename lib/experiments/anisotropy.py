"""Chapter 01: how similar the token vectors of one layer are (anisotropy), and whether that is more than a shared
mean: its table, figure and verdict rule."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

from ..core.declaration import chapter
from ..measure import inference
from . import outlier_set
from .plotting import COLORS
from .verdicts import Claim, Outcome, Tables, contextual, from_units, unit

CHAPTER = chapter("01_anisotropy", reads=(outlier_set.CHAPTER,))


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


ANISOTROPY = CHAPTER.table(
    "anisotropy_by_layer", "layer mean_cosine std_cosine ci95_low ci95_high n_pairs centered_mean_cosine excess_ci95_low excess_ci95_high"
)


@CHAPTER.rule
def anisotropic_in_every_layer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = contextual(tables.read(model, claim.chapter, claim.table))
    units = [
        unit(
            f"layer {int(r.layer)}",
            inference.from_interval(
                r.mean_cosine - r.centered_mean_cosine, r.excess_ci95_low, r.excess_ci95_high, f"paired over {int(r.n_pairs):,} pairs", int(r.n_pairs), "pairs"
            ),
            claim.margin,
            of="layers",
        )
        for r in t.itertuples()
    ]
    control = f"centred baseline (same pairs): mean cosine {t['centered_mean_cosine'].min():+.3f} to {t['centered_mean_cosine'].max():+.3f}"
    return from_units(units, claim, control=control)
