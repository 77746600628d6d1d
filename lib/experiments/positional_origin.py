"""Chapter 03: where the outlier dimensions come from (position embeddings and the first LayerNorm): its tables,
figure and verdict rules."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core import paper
from ..core.checks import positive_int
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets.tasks import sst2_sentences
from ..encode.collectors import INPUT_STAGE, LayerStats, PositionProfile
from ..encode.extraction import extract
from ..encode.models import load_model
from ..measure import inference, outliers, positional
from ..measure.outliers import descending_ranks
from ..measure.positional import AFTER_FIRST, LayerNormParameters
from . import figure_kinds, outlier_set, plotting
from .verdicts import HOLDS, UNTESTABLE, Claim, Decision, Outcome, Tables, aggregate, best_of, decide, outcome, unit, units_text

CHAPTER = chapter("03_positional_origin", reads=(outlier_set.CHAPTER,))


def propagation(z: np.ndarray, stages: list[str], dims: list[int], threshold: float):
    """One panel per stage, two to a row at the page's width: robust z of each outlier dimension in the average vector
    at each position (a colour per dimension, as in `figure_kinds.marked_vectors`); one legend above the panels."""
    fig, axes = plotting.grid(len(stages), columns=2, panel_height=2.6, sharex=True, sharey=True)
    positions = np.arange(z.shape[1])
    for ax, stage, values in zip(axes, stages, z):
        for (color, marker), d in zip(itertools.cycle(figure_kinds.MARKS), dims):
            ax.plot(positions, values[:, d], f"-{marker}", ms=2.5, lw=1, color=color, label=f"dim {d}")
        ax.axhspan(-threshold, threshold, color="grey", alpha=0.15, lw=0, label=f"|z| < {threshold:g} (not flagged)")
        ax.set_title(STAGE_TITLES.get(stage, stage), fontsize=10)
    fig.supxlabel("position in the sequence", fontsize=10)
    fig.supylabel("robust z", fontsize=10)
    plotting.legend_above(fig, axes[0])
    return fig


STAGE_TITLES = {INPUT_STAGE: "before the embedding LayerNorm", "layer 0": "layer 0 (after the embedding LayerNorm)"}


def layernorm_ranks_alt(name: str, ranks: pd.DataFrame) -> str:
    """What a LayerNorm-ranks figure shows, in words: where each outlier dimension ranks in the top 5 most often."""
    return f"{name}: " + "; ".join(f"dimension {d} is {_top_layernorm(ranks[ranks['dim'] == d])}" for d in dict.fromkeys(ranks["dim"])) + "."


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


def inputs(n_sentences: int, seed: int, max_positions: int) -> list[str]:
    """The chapter's sentences, its parameters checked first."""
    positive_int("max_positions", max_positions)
    return sst2_sentences(n_sentences, seed)


@dataclass(frozen=True)
class OriginRun:
    name: str  # the model's
    spec: str  # how it was loaded
    info: dict  # family, layers, width, tokens, the position-table row of position 0
    z_threshold: float  # chapter 02's criterion
    dims: np.ndarray  # the model-level outlier dimensions (chapter 02's set)
    signs: list[str]  # their signs
    detected: pd.DataFrame  # every flagged dimension (chapter 02's)
    view: positional.PositionView  # the embedding tables
    ranks: pd.DataFrame  # LAYERNORM_RANKS
    criteria: pd.DataFrame  # LAYERNORM_CRITERIA
    spread: pd.DataFrame  # PROPAGATION
    z: np.ndarray  # robust z of every position's average vector, by stage
    stages: list[str]  # the stages: the LayerNorm's input, its output (layer 0), the layers


def run(
    spec: str, sentences: list[str], *, profile: str, max_positions: int, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto"
) -> OriginRun:
    """One model: its embedding tables, every LayerNorm's gains and biases on the outlier dimensions, and the outliers
    followed from the LayerNorm's input through every layer, position by position (five tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    stats = LayerStats(covariance=False)
    layers = tuple(range(lm.n_layers + 1))  # the embedding output and every layer: the paper's "every layer" is tested in all
    with PositionProfile(lm, layers=layers, max_positions=max_positions) as profile_collector:
        extract(lm, sentences, [stats, profile_collector], desc=lm.name)
    reference = outlier_set.outliers_of(lm, spec, profile)
    print(f"outlier set of {reference.describe()}")
    z_threshold, dims, signs = reference.criterion.z_threshold, reference.dims, reference.signs
    view = positional.position_view(lm, z_threshold)
    norms = positional.layernorms(lm)
    ranks = positional.parameter_ranks(norms, dims, signs)
    criteria = layernorm_criteria(norms, dims, signs)
    means = profile_collector.means()
    spread = positional.propagation(means, profile_collector.stages, dims, counts=profile_collector.counts, z_threshold=z_threshold)
    info = {
        "name": lm.name,
        "family": lm.family,
        "n_layers": lm.n_layers,
        "width": lm.width,
        "n_tokens": stats.count,
        "position_offset": view.tables.position_offset,
    }
    for schema, frame in [
        (EMBEDDING_TABLES, view.summary),
        (POSITION_ROWS, view.rows),
        (LAYERNORM_RANKS, ranks),
        (LAYERNORM_CRITERIA, criteria),
        (PROPAGATION, spread),
    ]:
        results.table(frame, schema, spec, parameters=parameters, model_info=info)
    z = np.stack([outliers.robust_z(m) for m in means])
    return OriginRun(lm.name, spec, info, z_threshold, dims, signs, reference.detected, view, ranks, criteria, spread, z, profile_collector.stages)


def outlier_overview(runs: dict[str, OriginRun]) -> pd.DataFrame:
    """Each model's outlier dimensions (with their signs), tokens counted, and the table row position 0 reads."""
    return pd.DataFrame(
        [
            {
                "model": name,
                "outlier dimensions (sign)": ", ".join(f"{d} ({s})" for d, s in zip(r.dims, r.signs)) or "none",
                "tokens": r.info["n_tokens"],
                "row of the position table read by position 0": r.info["position_offset"],
            }
            for name, r in runs.items()
        ]
    )


def figures_position_embeddings(runs: dict[str, OriginRun], results: Writer) -> None:
    """Per model: a few rows of the position-embedding table, its outlier dimensions and the other flagged ones marked."""
    for name, r in runs.items():
        chosen = r.view.example_rows()
        matrix = r.view.matrix(chosen)
        flags = np.abs(outliers.robust_z(matrix)) >= r.z_threshold
        titles = [f"position {p} (row {p + r.info['position_offset']})" for p in chosen]
        fig = figure_kinds.marked_vectors(matrix, flags, titles, r.dims, ylabel="value")
        caption = (
            f"{name}: learned position embeddings of a few positions; the model's outlier dimensions in colour (filled where flagged in that row), "
            "other flagged dimensions grey."
        )
        results.figure(fig, f"position_embeddings_{name}", caption, tab=name, alt=rows_alt(name, chosen, flags, r.dims))


def rows_alt(name: str, positions: list[int], flags: np.ndarray, dims: np.ndarray) -> str:
    """What a figure of position-table rows shows, in numbers: in how many of the rows shown each outlier dimension is
    flagged, and how many other dimensions are."""
    mine = "; ".join(f"dimension {d} is flagged in {int(flags[:, d].sum())} of them" for d in dims) or "the model has no outlier dimension"
    others = int(flags.sum() - flags[:, dims].sum()) if len(dims) else int(flags.sum())
    return f"{name}'s position embeddings at positions {', '.join(map(str, positions))}: {mine}; {others} other flags in these rows."


def embedding_tables(runs: dict[str, OriginRun]) -> dict[str, pd.DataFrame]:
    return {name: embedding_tables_view(r.view.summary) for name, r in runs.items()}


def argmax_beside_paper(runs: dict[str, OriginRun]) -> pd.DataFrame:
    """The most frequent maximum dimension of the position embeddings after the first position, ours and the paper's."""
    ours = pd.concat([r.view.summary.assign(model=name, spec=r.spec) for name, r in runs.items()], ignore_index=True)
    theirs = paper.table("luo2021", "position_argmax").rename(columns={"paper_table": "table"})
    compare = paper.beside(ours[ours["table"] == AFTER_FIRST], theirs[["model", "table", "paper_dim", "paper_percent"]], on=["table"])
    shown = {"argmax_dim": "dimension", "argmax_percent": "% of rows", "paper_dim": "paper: dimension", "paper_percent": "paper: % of rows"}
    return compare[["model", *shown]].rename(columns=shown)


def figures_layernorm_ranks(runs: dict[str, OriginRun], results: Writer) -> None:
    """Per model with outlier dimensions (a tab each): their ranks among every LayerNorm's gains and biases."""
    for name, r in runs.items():
        if len(r.dims):
            caption = f"{name}: rank of each outlier dimension among the LayerNorm gains and biases of every layer (1 = largest)."
            results.figure(figure_kinds.layernorm_ranks(r.ranks), f"layernorm_ranks_{name}", caption, tab=name, alt=layernorm_ranks_alt(name, r.ranks))


def rank_tables(runs: dict[str, OriginRun]) -> dict[str, pd.DataFrame]:
    """Per model: each outlier dimension's rank among every LayerNorm's γ and β (1 = top)."""
    out = {}
    for name, r in runs.items():
        if not len(r.dims):
            out[name] = pd.DataFrame({"note": ["no model-level outlier dimension was detected, so there is nothing to rank"]})
            continue
        wide = r.ranks.pivot_table(index=["layer", "layernorm"], columns=["param", "dim"], values="rank", sort=False)
        wide.columns = [f"{'γ' if p == 'gamma' else 'β'} rank, dim {d}" for p, d in wide.columns]
        out[name] = wide.reset_index().rename(columns={"layernorm": "LayerNorm"})
    return out


def criteria_tables(runs: dict[str, OriginRun]) -> dict[str, pd.DataFrame]:
    """Per model with outlier dimensions: each against the paper's bars in every layer's first LayerNorm, in words."""
    out = {}
    for name, r in runs.items():
        flagged = r.criteria[r.criteria["flagged"]]
        if len(flagged):
            out[name] = pd.DataFrame(
                {
                    "dimension": flagged["dim"],
                    f"γ among the {GAMMA_BAR} largest": [f"{m} of {n} layers" for m, n in zip(flagged["gamma_met"], flagged["gamma_layers"])],
                    f"β among the {BETA_BAR} most extreme": [f"{m} of {n} layers" for m, n in zip(flagged["beta_met"], flagged["beta_layers"])],
                    "a bar in every layer": flagged["meets"],
                }
            )
    return out


def criteria_controls(runs: dict[str, OriginRun]) -> str:
    """The control of the bars: how many never-flagged dimensions clear one of them in every layer."""
    lines = []
    for name, r in runs.items():
        if r.criteria["flagged"].any():
            meets, others = int(r.criteria.loc[~r.criteria["flagged"], "meets"].sum()), int((~r.criteria["flagged"]).sum())
            lines.append(f"- **{name}**: {meets} of {others} never-flagged dimensions clear{'s' * (meets == 1)} one of the bars in every layer.")
    return "\n".join(lines)


def figures_propagation(runs: dict[str, OriginRun], results: Writer) -> None:
    """Per model with outlier dimensions: their robust z by position at the first stages."""
    for name, r in runs.items():
        if len(r.dims):
            fig = propagation(r.z[:FIGURE_STAGES], r.stages[:FIGURE_STAGES], list(r.dims), threshold=r.z_threshold)
            caption = f"{name}: robust z of the outlier dimensions by position and stage (embeddings, LayerNorm, layers)."
            results.figure(fig, f"propagation_{name}", caption, tab=name, alt=propagation_alt(name, r.spread, r.stages[:FIGURE_STAGES], r.z_threshold))


def propagation_alt(name: str, spread: pd.DataFrame, stages: list[str], threshold: float) -> str:
    """What a propagation figure shows, in numbers: the share of positions at which each outlier dimension is flagged, stage by stage."""
    shares = spread[spread["stage"].isin(stages)].pivot(index="dim", columns="stage", values="positions_flagged_percent")[stages]
    return (
        f"{name}: share of positions at which each outlier dimension stands out (|robust z| ≥ {threshold:g}), "
        + ", ".join(STAGE_TITLES.get(s, s) for s in stages)
        + ": "
        + "; ".join(f"dimension {d} " + ", ".join(f"{v:.0f}%" for v in row) for d, row in shares.iterrows())
        + "."
    )


def propagation_tables(runs: dict[str, OriginRun]) -> dict[str, pd.DataFrame]:
    return {name: propagation_view(r.spread) for name, r in runs.items() if len(r.dims)}


def _top_layernorm(ranks: pd.DataFrame, top: int = 5) -> str:
    """The LayerNorm parameter in which a dimension ranks in the top `top` in most layers."""
    best = ranks[ranks["layer"] > 0].assign(top=lambda r: r["rank"] <= top).groupby(["layernorm", "param"])["top"].sum().sort_values(ascending=False)
    (which, param), count = best.index[0], int(best.iloc[0])
    if count == 0:
        return f"in no layer among the top {top} of any LayerNorm's γ or β"
    layers = ranks.query("layernorm == @which and param == @param and layer > 0 and rank <= @top")["layer"].to_numpy()
    symbol = "γ" if param == "gamma" else "β"
    return f"in the top {top} of the {which} LayerNorm's {symbol} in {count} of {ranks['layer'].max()} layers ({outliers.layer_ranges(layers)})"


def _dim_sentence(r: OriginRun, d: int) -> str:
    """Where dimension d ranks among the LayerNorm parameters, and its median z over positions at each stage."""
    z = r.spread[r.spread["dim"] == d].set_index("stage")["median_z"]
    z = z.iloc[[*range(min(3, len(z) - 1)), len(z) - 1]]  # the LayerNorm's input and output, layer 1 and the last layer
    text = f" Dim {d} is {_top_layernorm(r.ranks[r.ranks['dim'] == d])}; its median z over positions is " + ", ".join(
        f"{v:+.1f} ({stage})" for stage, v in z.items()
    )
    last = r.ranks.query("param == 'gamma' and dim == @d").iloc[-1]
    if abs(last["value"]) < 1e-3:
        text += ". The last LayerNorm's gain on it is about zero (|γ| < 0.001): the model switches this dimension off in its output"
    return text + "."


def findings(runs: dict[str, OriginRun]) -> list[str]:
    """What our run shows: per model, the position table's flagged rows and top maximum, and each outlier dimension's
    LayerNorm rank and median z from the LayerNorm's input to the last layer."""
    lines = []
    for name, r in runs.items():
        summary = r.view.summary.set_index("table")
        after = summary.loc[AFTER_FIRST]
        first = r.view.rows.iloc[0]
        flagged = ", ".join(str(first["flagged_dims"]).split())
        text = (
            f"- **{name}**: the position-0 embedding has {first['n_flagged']} flagged dimension{'s' * int(first['n_flagged'] != 1)}"
            f"{f' ({flagged})' if first['n_flagged'] else ''}; "
            f"{after['rows_with_flagged_dim_percent']:.1f}% of the later positions have one, and dimension {int(after['argmax_dim'])} is the maximum of "
            f"{after['argmax_percent']:.1f}% of them (token table: {summary.loc['token', 'rows_with_flagged_dim_percent']:.1f}% of rows flagged)."
        )
        text += "".join(_dim_sentence(r, d) for d in r.dims)
        if not len(r.dims):
            text += " No model-level outlier dimension was detected."
        lines.append(text)
    return lines


def answer(runs: dict[str, OriginRun]) -> list[str]:
    """The chapter's answer: in which models the position table already carries an outlier (its rows after the first,
    every row counted), in how many layers an outlier dimension clears the paper's bar in the first LayerNorm, and in
    how many, from the embedding LayerNorm on, one stands out at nearly every position (`WIDESPREAD`)."""
    carry, clean, bars, spread = [], [], [], []
    for name, r in runs.items():
        after = r.view.summary.set_index("table").loc[AFTER_FIRST]
        rows, share = f"its {int(after['n_rows'])} rows after the first", after["rows_with_flagged_dim_percent"]
        if share > 50:
            carry.append(f"{name} (dimension {int(after['argmax_dim'])} is the maximum of {after['argmax_percent']:.1f}% of {rows})")
        else:
            clean.append(f"{name} ({f'{share:.1f}% of {rows} have' if share else f'none of {rows} has'} a flagged dimension)")
        if not len(r.dims):
            continue
        flagged = r.criteria[r.criteria["flagged"]]
        cleared = np.maximum(flagged["gamma_met"] / flagged["gamma_layers"], flagged["beta_met"] / flagged["beta_layers"])
        best = flagged.loc[cleared.idxmax()]
        met, of = max((int(best["gamma_met"]), int(best["gamma_layers"])), (int(best["beta_met"]), int(best["beta_layers"])), key=lambda m: m[0] / m[1])
        bars.append(f"{met} of {of}{' layers' if not bars else ''} of {name}")
        stage = r.spread.pivot(index="dim", columns="stage", values="positions_flagged_percent")
        layers = [c for c in dict.fromkeys(r.spread["stage"]) if c != INPUT_STAGE]
        spread.append(f"{int((stage[layers] >= WIDESPREAD).sum(axis=1).max())} of {len(layers)}")
    if carry and clean:
        table = f"The position table already carries an outlier in {' and '.join(carry)}, but not in {' and '.join(clean)}."
    elif carry:
        table = f"The position table already carries an outlier in {' and '.join(carry)}."
    else:
        table = f"No position table carries an outlier: {' and '.join(clean)}."
    lines = [table]
    if bars:
        respectively = " respectively" if len(spread) > 1 else ""
        lines.append(
            f"An outlier dimension's gain or bias is among the paper's top ones in the first LayerNorm of {' and '.join(bars)}, and from the "
            f"embedding LayerNorm on one stands out at {WIDESPREAD:g}% or more of the positions in {' and '.join(spread)} layers{respectively}."
        )
    return lines


WIDESPREAD = 90.0  # % of positions at which an outlier dimension counts as standing out "at every position" (the propagation claim's margin)


def offset_lines(runs: dict[str, OriginRun]) -> str:
    """Exercise ex-03-offset: the table row each model's position 0 reads, and why."""
    return (
        "\n".join(f"- **{name}**: position 0 reads row {r.info['position_offset']} of the table." for name, r in runs.items())
        + "\n\nRoBERTa-style models (MPNet among them) count positions from the padding index + 1, so rows 0 and 1 are never "
        "used by real tokens; BERT-style models start at row 0. A list of model types would be wrong for the next architecture; "
        "a forward hook on the position-embedding module sees the ids the model actually uses."
    )


def margin_lines(runs: dict[str, OriginRun]) -> str:
    """Exercise ex-03-sample: how far each model-level outlier's largest robust z lies above the threshold."""
    lines = []
    for name, r in runs.items():
        level = r.detected[r.detected["model_outlier"]]
        if level.empty:
            lines.append(f"- **{name}**: no model-level outlier in this run, so there is nothing to lose.")
            continue
        lines.append(
            f"- **{name}**: "
            + "; ".join(f"dim {o.dim} peaks at |z| = {o.max_abs_z:.1f} ({o.max_abs_z / r.z_threshold:.1f}× the threshold)" for o in level.itertuples())
            + "."
        )
    return (
        "\n".join(lines) + "\n\nA mean over a quarter of the tokens has twice the standard error, so a dimension far above the "
        "threshold stays flagged; one near it may drop out in some layers and, if that takes it below half of the contextual layers, "
        "lose its model-level status."
    )


def top_layernorm_lines(runs: dict[str, OriginRun]) -> str:
    """Exercise ex-03-layernorm: for each outlier dimension, the LayerNorm parameter it ranks in the top 5 of most often."""
    lines = [f"- **{name}**, dim {d}: {_top_layernorm(r.ranks[r.ranks['dim'] == d])}." for name, r in runs.items() for d in r.dims]
    return "\n".join(lines) or "No model-level outlier dimension was detected in this run."
