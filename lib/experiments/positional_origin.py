"""Chapter 03: where the outlier dimensions come from (position embeddings and the first LayerNorm): its tables,
figure and verdict rules."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.declaration import chapter
from ..encode.collectors import INPUT_STAGE
from ..measure import inference
from ..measure.outliers import descending_ranks
from ..measure.positional import AFTER_FIRST, LayerNormParameters
from . import outlier_set
from .plotting import COLORS, PAGE_WIDTH
from .verdicts import HOLDS, UNTESTABLE, Claim, Decision, Outcome, Tables, aggregate, best_of, decide, outcome, unit, units_text

CHAPTER = chapter("03_positional_origin", reads=(outlier_set.CHAPTER,))


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


EMBEDDING_TABLES = CHAPTER.table(
    "embedding_tables",
    "table n_rows argmax_dim argmax_percent argmin_dim argmin_percent rows_with_flagged_dim rows_with_flagged_dim_percent",
)
# one row per position of the position embedding table: its flagged dimensions and extremes
POSITION_ROWS = CHAPTER.table("position_embedding_rows", "position table_row n_flagged flagged_dims max_abs_z argmin_dim argmax_dim")


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


PROPAGATION = CHAPTER.table("propagation", "stage dim positions positions_flagged median_z max_abs_z positions_flagged_percent")


LAYERNORM_RANKS = CHAPTER.table("layernorm_ranks", "layer layernorm module param dim sign value rank rank_abs width")


GAMMA_BAR, GAMMA_SHARE = 6, 10 / 12  # BERT-base: its outlier's γ "among the top-6 largest values for the first ten layers' first LN" (of 12)
BETA_BAR = 2  # RoBERTa-base: its outlier's β in the first LN "among the top-2 largest values for all layers"


def layernorm_criteria(norms: list[LayerNormParameters], dims: np.ndarray, signs: list[str]) -> pd.DataFrame:
    """Every dimension of the width against the paper's two bars in each layer's first (post-attention) LayerNorm: in
    how many of the first GAMMA_SHARE of the layers its γ is among the GAMMA_BAR largest, and in how many of all layers
    its β is among the BETA_BAR most extreme (in the outlier's direction for a model-level outlier, in either for the
    others); `meets`: one of the two in every layer it covers. `flagged` marks the model's outlier dimensions."""
    first = [ln for ln in norms if ln.which == "first"]
    columns = "dim flagged gamma_layers gamma_met beta_layers beta_met meets".split()
    if not first:
        return pd.DataFrame(columns=columns)
    width, covered = len(first[0].gamma), max(1, math.ceil(len(first) * GAMMA_SHARE - 1e-9))
    every = np.arange(width)
    gamma_met = sum(descending_ranks(ln.gamma, every) <= GAMMA_BAR for ln in first[:covered])
    largest = sum(descending_ranks(ln.beta, every) <= BETA_BAR for ln in first)
    smallest = sum(descending_ranks(-ln.beta, every) <= BETA_BAR for ln in first)
    direction = dict(zip((int(d) for d in dims), signs))
    either = np.maximum(largest, smallest)
    beta_met = np.array([largest[d] if direction.get(d) == "+" else smallest[d] if direction.get(d) == "-" else either[d] for d in every])
    frame = pd.DataFrame({"dim": every, "flagged": np.isin(every, list(direction)), "gamma_layers": covered, "gamma_met": gamma_met})
    frame = frame.assign(beta_layers=len(first), beta_met=beta_met)
    return frame.assign(meets=(frame["gamma_met"] == covered) | (frame["beta_met"] == len(first)))[columns]


LAYERNORM_CRITERIA = CHAPTER.table("layernorm_criteria", "dim flagged gamma_layers gamma_met beta_layers beta_met meets")


@CHAPTER.rule
def position_argmax_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    row = t[t["table"] == AFTER_FIRST]
    if row.empty:
        return Outcome(UNTESTABLE, "the model has no position-embedding table")
    estimate = inference.exact(float(row["argmax_percent"].iloc[0]), f"every one of {int(row['n_rows'].iloc[0])} rows")
    return outcome(decide(estimate, claim.margin), f"dim {int(row['argmax_dim'].iloc[0])} is the maximum of {estimate.value:.1f}% of positions", estimate)


FIGURE_STAGES = 4  # stages drawn in the propagation figure: the LayerNorm's input, layer 0 (its output), layers 1 and 2


def propagation_view(spread: pd.DataFrame) -> pd.DataFrame:
    """The propagation table as the page shows it: one row per stage (in order), one column per outlier dimension, the
    % of positions at which it is flagged."""
    order = list(dict.fromkeys(spread["stage"]))
    view = spread.pivot(index="stage", columns="dim", values="positions_flagged_percent").reindex(order)
    return view.rename(columns=lambda d: f"dim {d}").rename_axis(columns=None).reset_index()


@CHAPTER.rule
def propagates_after_first_layernorm(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if t.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to follow")
    stage = t.pivot(index="dim", columns="stage", values="positions_flagged_percent")
    layers = [c for c in dict.fromkeys(t["stage"]) if c != "input"]  # layer 0 (after the embedding LayerNorm) and every layer after it
    positions = int(t["positions"].iloc[0])
    per_dim = {
        dim: [unit(layer, inference.exact(stage.loc[dim, layer], f"all {positions} positions"), claim.margin) for layer in layers] for dim in stage.index
    }
    best = max(per_dim, key=lambda d: (sum(u.decision.verdict == HOLDS for u in per_dim[d]), min(u.estimate.value for u in per_dim[d])))
    units, decision = per_dim[best], aggregate(per_dim[best], claim.aggregate)
    weakest = min(units, key=lambda u: u.estimate.value)
    met = sum(u.decision.verdict == HOLDS for u in units)
    text = (
        f"dim {best}: flagged at ≥ {claim.margin:g}% of the {positions} positions in {met} of {len(units)} layers (0 = after the embedding LayerNorm); "
        f"lowest {weakest.estimate.value:.0f}% ({weakest.name})"
    )
    others = [f"dim {d}: {sum(u.decision.verdict == HOLDS for u in us)} of {len(us)}" for d, us in per_dim.items() if d != best]
    if others:
        text += "; " + ", ".join(others)
    control = "; ".join(f"dim {dim}: flagged at {stage.loc[dim, 'input']:.0f}% of positions before the LayerNorm" for dim in stage.index)
    return outcome(Decision(decision.verdict, None), text, weakest.estimate, control)


@CHAPTER.rule
def layernorm_top_rank(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    flagged, others = t[t["flagged"].astype(bool)], t[~t["flagged"].astype(bool)]
    if flagged.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension, or no LayerNorm after attention in the layers")
    units = []
    for r in flagged.itertuples():
        gamma, beta = 100 * r.gamma_met / r.gamma_layers, 100 * r.beta_met / r.beta_layers
        by_gamma = f"γ top {GAMMA_BAR} in {r.gamma_met} of the first {r.gamma_layers} layers"
        better = by_gamma if gamma >= beta else f"β top {BETA_BAR} in {r.beta_met} of {r.beta_layers} layers"
        units.append(unit(f"dim {r.dim} ({better})", inference.exact(max(gamma, beta), "of the layers; whole parameter vectors"), claim.margin))
    best, decision = best_of(units, key=lambda u: u.estimate.value)
    control = f"{int(others['meets'].sum())} of {len(others)} never-flagged dimensions clear the same bar in every layer"
    embedding = tables.read(model, claim.chapter, LAYERNORM_RANKS.name)
    first = embedding[embedding["layernorm"] == "embedding"] if embedding is not None else embedding
    if first is not None and len(first):
        control += "; the embedding LayerNorm (a second row, not scored): " + ", ".join(
            f"dim {r.dim} {'γ' if r.param == 'gamma' else 'β'} rank {r.rank}" for r in first.sort_values("rank").drop_duplicates("dim").itertuples()
        )
    return outcome(decision, f"each layer's first LayerNorm: {units_text(units, 0, '%')}", best.estimate, control)
