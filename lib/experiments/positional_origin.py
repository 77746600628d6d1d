"""Chapter 03: where the outlier dimensions come from (position embeddings and the first LayerNorm): its tables,
figure and verdict rules."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.store import declare
from ..encode.collectors import INPUT_STAGE, layer_stage
from ..measure import inference
from ..measure.positional import AFTER_FIRST
from .plotting import COLORS, PAGE_WIDTH
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, best_of, decide, from_units, outcome, rule, unit, units_text


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
        ax.set_title(stage if stage != INPUT_STAGE else "input (before the embedding LayerNorm)", fontsize=10)
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


EMBEDDING_TABLES = declare(
    "03_positional_origin",
    "embedding_tables",
    "table n_rows argmax_dim argmax_percent argmin_dim argmin_percent rows_with_flagged_dim rows_with_flagged_dim_percent",
)


def embedding_tables_view(summary: pd.DataFrame) -> pd.DataFrame:
    """The embedding-table summary as a page prints it: each most frequent dimension with its share of the rows."""

    def share(dims: pd.Series, percents: pd.Series) -> list[str]:
        return ["–" if pd.isna(d) else f"{int(d):,} ({p:.1f}%)" for d, p in zip(dims, percents)]

    return pd.DataFrame(
        {
            "table": summary["table"],
            "rows": summary["n_rows"],
            "most often the maximum: dim (% of rows)": share(summary["argmax_dim"], summary["argmax_percent"]),
            "most often the minimum: dim (% of rows)": share(summary["argmin_dim"], summary["argmin_percent"]),
            "rows with a flagged dimension": share(summary["rows_with_flagged_dim"], summary["rows_with_flagged_dim_percent"]),
        }
    )


PROPAGATION = declare("03_positional_origin", "propagation", "stage dim positions positions_flagged median_z max_abs_z positions_flagged_percent")


LAYERNORM_RANKS = declare("03_positional_origin", "layernorm_ranks", "layer layernorm module param dim sign value rank rank_abs width")


@rule
def position_argmax_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    row = t[t["table"] == AFTER_FIRST]
    if row.empty:
        return Outcome(UNTESTABLE, "the model has no position-embedding table")
    estimate = inference.exact(float(row["argmax_percent"].iloc[0]), f"every one of {int(row['n_rows'].iloc[0])} rows")
    return outcome(decide(estimate, claim.margin), f"dim {int(row['argmax_dim'].iloc[0])} is the maximum of {estimate.value:.1f}% of positions", estimate)


@rule
def propagates_after_first_layernorm(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if t.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to follow")
    stage = t.pivot(index="dim", columns="stage", values="positions_flagged_percent")
    units = [
        unit(f"dim {dim}", inference.exact(stage.loc[dim, layer_stage(0)], f"all {int(t['positions'].iloc[0])} positions"), claim.margin) for dim in stage.index
    ]
    control = "; ".join(f"dim {dim}: flagged at {stage.loc[dim, 'input']:.0f}% of positions before the LayerNorm" for dim in stage.index)
    best, decision = best_of(units, key=lambda u: u.estimate.value)
    return outcome(decision, f"after the first LayerNorm: {units_text(units, 0, '%')}", best.estimate, control)


@rule
def layernorm_top_rank(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    first = t[t["layernorm"] == "embedding"]
    if first.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to rank, or no embedding LayerNorm")
    units = []
    for dim, part in first.groupby("dim"):
        best = part.loc[part["rank"].idxmin()]
        units.append(
            unit(
                f"dim {dim} ({'γ' if best['param'] == 'gamma' else 'β'})", inference.exact(best["rank"], f"rank of {int(best['width'])}"), claim.margin, "below"
            )
        )
    width = int(first["width"].iloc[0])
    control = f"a random dimension ranks in the top {claim.margin:g} of γ or β with probability {2 * claim.margin / width:.1%}"
    return from_units(units, 0, control=control)
