"""Chapter 02: the outlier neurons of a model's hidden states, found per layer and pooled: its tables, figure and
verdict rules. (The outlier set every chapter that clips uses, detected by the same criterion, is `outlier_set`.)"""

from __future__ import annotations

from dataclasses import replace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.declaration import chapter
from ..encode.collectors import SentenceExtremes
from ..encode.models import LoadedModel
from ..measure import inference, positional
from .outlier_set import OUTLIER_COLUMNS, SOURCE_TABLE
from .plotting import COLORS
from .verdicts import HOLDS, Claim, Outcome, Tables, best_of, decide, from_units, outcome, unit

CHAPTER = chapter("02_outlier_neurons")


def extreme_shares(tables: dict[str, pd.DataFrame]):
    """Per model and layer: % of vectors whose minimum (maximum) is the most frequent such dimension, labelled with
    that dimension where it changes from the layer before (each model's labels on their own side of its line)."""
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.5), sharex=True)
    for ax, kind in zip(axes, ["argmin", "argmax"]):
        for i, ((name, t), color) in enumerate(zip(tables.items(), COLORS)):
            ax.plot(t["layer"], t[f"{kind}_percent"], marker="o", color=color, label=name)
            dims = t[f"{kind}_dim"].astype(int).to_numpy()
            for j, (layer, percent) in enumerate(zip(t["layer"], t[f"{kind}_percent"])):
                if j and dims[j] == dims[j - 1]:
                    continue
                above = i % 2 == 0
                ax.annotate(
                    str(dims[j]),
                    (layer, percent),
                    fontsize=8,
                    color=color,
                    xytext=(0, 5 if above else -6),
                    textcoords="offset points",
                    ha="center",
                    va="bottom" if above else "top",
                )
        word = "minimum" if kind == "argmin" else "maximum"
        ax.set(ylabel="% of vectors", title=f"the dimension that is most often a vector's {word} (labelled where it changes)", ylim=(-9, 108))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_xlabel("layer (0 = embedding output)")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig


EXTREMES_BY_LAYER = CHAPTER.table("extreme_dimensions_by_layer", "layer argmin_dim argmin_percent argmax_dim argmax_percent")


EXTREMES_POOLED = CHAPTER.table("extreme_dimensions_pooled", "kind dim percent n_vectors model spec")


EXTREMES_BY_SENTENCE = CHAPTER.table("extreme_dimensions_by_sentence", "kind dim sentence hits vectors")


def by_sentence(pooled: pd.DataFrame, extremes: SentenceExtremes) -> pd.DataFrame:
    """For each pooled extreme dimension (the most frequent minimum and maximum): per sentence, how many of its
    contextual vectors have their extreme there (`hits`) of how many (`vectors`): the unit the share is resampled by."""
    frames = []
    for r in pooled.itertuples():
        hits, vectors = extremes.counts(r.kind, int(r.dim))
        frames.append(pd.DataFrame({"kind": r.kind, "dim": int(r.dim), "sentence": np.arange(len(hits)), "hits": hits, "vectors": vectors}))
    return EXTREMES_BY_SENTENCE.check(pd.concat(frames, ignore_index=True))


EXTREMES_BY_LAYER_SENTENCE = CHAPTER.table("extreme_dimensions_by_layer_sentence", "kind dim layer sentence hits vectors")


def by_layer_sentence(pooled: pd.DataFrame, extremes: SentenceExtremes, n_layers: int) -> pd.DataFrame:
    """For each pooled extreme dimension: per contextual layer and sentence, how many of the sentence's vectors in that
    layer have their extreme there, of how many: whether the pooled outlier holds the extremes in every layer, the
    sentence being the unit resampled."""
    frames = []
    for r in pooled.itertuples():
        for layer in range(1, n_layers + 1):
            hits, vectors = extremes.in_layer(r.kind, layer, int(r.dim))
            frames.append(pd.DataFrame({"kind": r.kind, "dim": int(r.dim), "layer": layer, "sentence": np.arange(len(hits)), "hits": hits, "vectors": vectors}))
    return EXTREMES_BY_LAYER_SENTENCE.check(pd.concat(frames, ignore_index=True))


OUTLIER_DIMENSIONS = CHAPTER.table("outlier_dimensions", OUTLIER_COLUMNS)


MEAN_VECTORS = CHAPTER.table(SOURCE_TABLE, "layer dim mean")


LAST_LAYERNORM = CHAPTER.table("last_layernorm", "dim layers gamma beta median_abs_gamma median_abs_beta")


def last_layernorm(lm: LoadedModel, detected: pd.DataFrame) -> pd.DataFrame:
    """The last layer's final LayerNorm (its output) on each model-level outlier dimension: γ and β there, beside the
    median |γ| and |β| over all dimensions. Where both are about zero the LayerNorm erases the outlier from the model's
    output, so the last layer has nothing to clip (the clipping claims leave such a layer out)."""
    last = [p for p in positional.layernorms(lm) if p.layer == lm.n_layers][-1]
    model_level = detected[detected["model_outlier"]]
    rows = [
        {
            "dim": int(r.dim),
            "layers": r.layers,
            "gamma": float(last.gamma[int(r.dim)]),
            "beta": float(last.beta[int(r.dim)]),
            "median_abs_gamma": float(np.median(np.abs(last.gamma))),
            "median_abs_beta": float(np.median(np.abs(last.beta))),
        }
        for r in model_level.itertuples()
    ]
    return LAST_LAYERNORM.frame(rows)


def layernorm_finding(name: str, frame: pd.DataFrame, n_layers: int, relative: float = 1e-3) -> str:
    """One line on what the last LayerNorm does to the model's outlier dimensions: erased where both |γ| and |β| are
    below `relative` × the median of all dimensions'."""
    if frame.empty:
        return f"- **{name}**: no model-level outlier dimension, so nothing for the last LayerNorm to erase."
    erased = frame[(frame["gamma"].abs() < relative * frame["median_abs_gamma"]) & (frame["beta"].abs() < relative * frame["median_abs_beta"])]
    values = "; ".join(f"dim {int(r.dim)}: γ {r.gamma:.1e}, β {r.beta:.1e}" for r in frame.itertuples())
    median = f"median |γ| {frame['median_abs_gamma'].iloc[0]:.2f}, |β| {frame['median_abs_beta'].iloc[0]:.2f}"
    if len(erased) == len(frame):
        verdict = f"the last LayerNorm sets every outlier dimension to about zero in layer {n_layers}'s output: nothing stands out there to clip"
    elif len(erased):
        verdict = f"it erases dim{'s' * (len(erased) > 1)} {', '.join(str(int(d)) for d in erased['dim'])} from layer {n_layers}'s output"
    else:
        verdict = f"it keeps the outlier dimensions in layer {n_layers}'s output"
    return f"- **{name}**: last LayerNorm on the outlier dimensions ({values}; {median}): {verdict}."


@CHAPTER.rule
def top_extreme_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    sentences = tables.read(model, claim.chapter, EXTREMES_BY_SENTENCE.name)
    units = []
    for r in t.itertuples():
        own = sentences[(sentences["kind"] == r.kind) & (sentences["dim"] == r.dim)]
        estimate = inference.cluster_share(own["hits"], own["vectors"], "sentences (each with its tokens' vectors in every contextual layer)")
        units.append(unit(f"dim {int(r.dim)} ({'minimum' if r.kind == 'argmin' else 'maximum'})", estimate, claim.margin / 100))
    best, decision = best_of(units, key=lambda u: u.estimate.value)  # the most frequent of the extreme dimensions: p × their number
    dim, kind = best.name.split(" (")
    return outcome(decision, f"{dim} is the {kind.rstrip(')')} of {best.estimate.scaled(100).text(1, '%')}", best.estimate.scaled(100))


@CHAPTER.rule
def extreme_in_every_layer(tables: Tables, model: str, claim: Claim) -> Outcome:
    """The pooled extreme dimension holds the minimum (maximum) of most vectors in every contextual layer, not only
    over all layers together: per layer a bootstrap over sentences; of the pooled minimum and maximum dimension, the one
    that holds in more layers (its p-values doubled for the choice)."""
    t = tables.read(model, claim.chapter, claim.table)
    by_kind = {}
    for (kind, dim), part in t.groupby(["kind", "dim"], sort=False):
        units = [
            unit(
                f"layer {int(layer)}",
                inference.cluster_share(rows["hits"], rows["vectors"], "sentences", seed=int(layer)).scaled(100),
                claim.margin,
                of="layers",
            )
            for layer, rows in part.groupby("layer")
        ]
        by_kind[(kind, int(dim))] = units
    (kind, dim), units = max(by_kind.items(), key=lambda item: (sum(u.decision.verdict == HOLDS for u in item[1]), min(u.estimate.value for u in item[1])))
    decided = from_units(units, claim, 1, "%")
    p = None if decided.p is None else min(1.0, decided.p * len(by_kind))
    word = "minimum" if kind == "argmin" else "maximum"
    return replace(decided, ours=f"dim {dim} as the {word}, per layer: {decided.ours}", p=p)


@CHAPTER.rule
def model_outliers_exist(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    level = t[t["model_outlier"].astype(bool)]
    estimate = inference.exact(len(level), "chapter 02's criterion on its whole sample")
    found = ", ".join(f"{int(r.dim)} (|z| {r.max_abs_z:.0f}, {r.n_layers} layers)" for r in level.itertuples())
    largest = f"largest |z| of a flagged dim {t['max_abs_z'].max():.1f}" if len(t) else "no dim flagged in any layer"
    return outcome(decide(estimate, claim.margin), f"{len(level)} model-level outlier dims" + (f": {found}" if found else f"; {largest}"), estimate)
