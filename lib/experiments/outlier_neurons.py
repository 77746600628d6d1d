"""Chapter 02: the outlier neurons of a model's hidden states, found per layer and pooled: its tables, figure and
verdict rules. (The outlier set every chapter that clips uses, detected by the same criterion, is `outlier_set`.)"""

from __future__ import annotations

from dataclasses import dataclass, replace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core import paper
from ..core.checks import positive_number, share
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets.tasks import sst2_sentences
from ..encode.collectors import LayerStats, SentenceExtremes
from ..encode.models import LoadedModel, load_model
from ..measure import inference, outliers, positional
from ..measure.outliers import OutlierReport
from . import figure_kinds, outlier_set, plotting
from .outlier_set import OUTLIER_COLUMNS, SOURCE_TABLE
from .plotting import COLORS
from .verdicts import HOLDS, Claim, Outcome, Tables, best_of, decide, from_units, outcome, unit

CHAPTER = chapter("02_outlier_neurons")


def extreme_shares(tables: dict[str, pd.DataFrame]):
    """Per model and layer: % of vectors whose minimum (maximum) is the most frequent such dimension, labelled with
    that dimension where it changes from the layer before (each model's labels on their own side of its line); one
    legend above the panels."""
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.5), sharex=True, layout="constrained")
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
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
                )
        ax.set(ylabel="% of vectors", title=f"most often a vector's {EXTREME[kind]}", ylim=(-9, 108))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_xlabel("layer (0 = embedding output)")
    plotting.legend_above(fig, axes[0])
    return fig


EXTREME = {"argmin": "minimum", "argmax": "maximum"}  # a result table's kind of extreme, in words

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


def erased(frame: pd.DataFrame, relative: float = 1e-3) -> pd.DataFrame:
    """The rows of a LAST_LAYERNORM table whose dimension the last LayerNorm erases from the model's output: both |γ| and
    |β| below `relative` × the median of all dimensions'."""
    return frame[(frame["gamma"].abs() < relative * frame["median_abs_gamma"]) & (frame["beta"].abs() < relative * frame["median_abs_beta"])]


def layernorm_finding(name: str, frame: pd.DataFrame, n_layers: int) -> str:
    """One line on what the last LayerNorm does to the model's outlier dimensions: which it erases (`erased`)."""
    if frame.empty:
        return f"- **{name}**: no model-level outlier dimension, so nothing for the last LayerNorm to erase."
    gone = erased(frame)

    def value(v: float) -> str:
        return "≈ 0" if abs(v) < 1e-3 else f"{v:.2f}"

    values = "; ".join(f"dim {int(r.dim)}: γ {value(r.gamma)}, β {value(r.beta)}" for r in frame.itertuples())
    median = f"median |γ| {frame['median_abs_gamma'].iloc[0]:.2f}, |β| {frame['median_abs_beta'].iloc[0]:.2f}"
    if len(gone) == len(frame):
        verdict = f"the last LayerNorm sets every outlier dimension to about zero in layer {n_layers}'s output: nothing stands out there to clip"
    elif len(gone):
        verdict = f"it erases dim{'s' * (len(gone) > 1)} {', '.join(str(int(d)) for d in gone['dim'])} from layer {n_layers}'s output"
    else:
        verdict = f"it keeps the outlier dimensions in layer {n_layers}'s output"
    return f"- **{name}**: last LayerNorm on the outlier dimensions ({values}; {median}): {verdict}."


def layernorm_view(frame: pd.DataFrame) -> pd.DataFrame:
    """A LAST_LAYERNORM table as the page shows it: γ and β in words, a value that rounds to zero as 0 (not −0)."""
    shown = frame.rename(columns={"layers": "flagged in layers", "gamma": "γ", "beta": "β", "median_abs_gamma": "median |γ|", "median_abs_beta": "median |β|"})
    numbers = ["γ", "β", "median |γ|", "median |β|"]
    return shown.assign(**{c: shown[c].round(4) + 0.0 for c in numbers})


def inputs(n_sentences: int, seed: int, z_threshold: float, min_layer_share: float) -> list[str]:
    """The chapter's sentences (the sample every chapter that clips reads the outliers of), its criterion checked first."""
    positive_number("z_threshold", z_threshold)
    share("min_layer_share", min_layer_share)
    return sst2_sentences(n_sentences, seed)


@dataclass(frozen=True)
class OutlierRun:
    name: str  # the model's
    info: dict  # layers, width, tokens counted
    stats: LayerStats  # per layer: the average vector and the extreme counts
    report: OutlierReport  # the flagged dimensions, the extremes, pooled and by layer
    last_norm: pd.DataFrame  # LAST_LAYERNORM
    by_sentence: pd.DataFrame | None = None  # EXTREMES_BY_SENTENCE: the pooled extremes per sentence, the unit resampled


def run(
    spec: str, sentences: list[str], *, z_threshold: float, min_layer_share: float, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto"
) -> OutlierRun:
    """One model: every token vector of the sentences counted per layer (average vector, which dimension is each vector's
    minimum and maximum), the outlier criterion applied, and the last LayerNorm on the outliers (seven tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    per_sentence = SentenceExtremes()
    st = outlier_set.statistics(lm, sentences, also=[per_sentence])
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "n_tokens": st.count}
    report = outliers.analyse(st.mean, st.argmin_counts, st.argmax_counts, n_vectors=st.count, z_threshold=z_threshold, min_layer_share=min_layer_share)
    report.pooled = report.pooled.assign(model=lm.name, spec=spec)
    last_norm = last_layernorm(lm, report.detected)
    sentences_table = by_sentence(report.pooled, per_sentence)
    for schema, frame in [
        (EXTREMES_BY_LAYER, report.extremes),
        (EXTREMES_POOLED, report.pooled),
        (EXTREMES_BY_SENTENCE, sentences_table),  # the unit the scorecard resamples
        (EXTREMES_BY_LAYER_SENTENCE, by_layer_sentence(report.pooled, per_sentence, lm.n_layers)),
        (OUTLIER_DIMENSIONS, report.detected),
        (MEAN_VECTORS, outlier_set.mean_table(st.mean)),  # the reference every chapter that clips reads
        (LAST_LAYERNORM, last_norm),
    ]:
        results.table(frame, schema, spec, parameters=parameters, model_info=info)
    return OutlierRun(lm.name, info, st, report, last_norm, sentences_table)


def figures_average_vectors(runs: dict[str, OutlierRun], z_threshold: float, results: Writer) -> None:
    """Per model (a tab each): the average vector of every layer, its outlier dimensions and the other flagged ones marked."""
    for name, r in runs.items():
        caption = (
            f"{name}: the average token vector of every layer ({r.stats.count:,} tokens); the outlier dimensions of the model in colour (filled "
            f"where |robust z| ≥ {z_threshold:g} in that layer), other flagged dimensions grey."
        )
        marked = r.report.model_outliers["dim"].astype(int).tolist()
        fig = figure_kinds.average_vectors(r.stats.mean, r.report.flags, marked)
        alt = figure_kinds.average_vectors_alt(name, r.stats.mean, r.report.flags, marked)
        results.figure(fig, f"average_vectors_{name}", caption, tab=name, alt=alt)


def figure_extreme_shares(runs: dict[str, OutlierRun], results: Writer) -> None:
    fig = extreme_shares({name: r.report.extremes for name, r in runs.items()})
    caption = (
        "The share of token vectors whose minimum (maximum) lies in the most frequent dimension, by layer and model; labelled where that dimension changes."
    )
    peaks = []
    for name, r in runs.items():
        t = r.report.extremes
        for kind in EXTREME:
            top = t.loc[t[f"{kind}_percent"].idxmax()]
            peaks.append(f"{name}'s {EXTREME[kind]}: dimension {int(top[f'{kind}_dim'])}, {top[f'{kind}_percent']:.1f}% in layer {int(top['layer'])}")
    results.figure(
        fig, "extreme_dimension_shares", caption, alt="The largest share of vectors one dimension holds the extreme of, per model: " + "; ".join(peaks) + "."
    )


def extremes_view(extremes: pd.DataFrame) -> pd.DataFrame:
    """An EXTREMES_BY_LAYER table as the page shows it: the kind of extreme in words."""
    return extremes.rename(
        columns={
            "argmin_dim": "minimum: dimension",
            "argmin_percent": "minimum: % of vectors",
            "argmax_dim": "maximum: dimension",
            "argmax_percent": "maximum: % of vectors",
        }
    )


def pooled_of(runs: dict[str, OutlierRun]) -> pd.DataFrame:
    """Every model's pooled extremes, the kind of extreme in words (as `paper_dims`)."""
    return pd.concat([r.report.pooled for r in runs.values()], ignore_index=True).replace({"kind": EXTREME})


def paper_dims() -> pd.DataFrame:
    """Luo et al.'s §2: the dimension that is most often the minimum (maximum) in BERT-base and RoBERTa-base."""
    return paper.table("luo2021", "outlier_dims").rename(columns={"paper_kind": "kind"}).replace({"kind": EXTREME})


def findings(runs: dict[str, OutlierRun]) -> list[str]:
    """What our run shows: per model, its model-level outliers, the pooled extreme share and the layers with no flag."""
    lines = []
    for name, r in runs.items():
        report = r.report
        dims = ", ".join(f"{o.dim} ({o.sign}, layers {o.layers})" for o in report.model_outliers.itertuples()) or "none"
        best = report.pooled.loc[report.pooled["percent"].idxmax()]
        quiet = [str(layer) for layer, row in enumerate(report.flags) if not row.any()]
        lines.append(
            f"- **{name}**: model-level outlier dimensions: {dims}. Over all contextual layers, dimension {best['dim']} is the "
            f"{EXTREME[best['kind']]} of {best['percent']:.1f}% of vectors. "
            f"Layers in which no dimension is flagged: {', '.join(quiet) or 'none'}."
        )
    return lines


def answer(runs: dict[str, OutlierRun]) -> list[str]:
    """The chapter's answer: the dimensions that stand out in most layers, whether one holds the extreme of most vectors
    (the largest pooled share, with its 95% interval from a bootstrap over sentences), and which of them the last
    LayerNorm erases."""
    found, shares, gone, most, some = [], [], [], True, False
    for name, r in runs.items():
        level = r.report.model_outliers["dim"].astype(int).tolist()
        found.append(f"{', '.join(map(str, level)) or 'none'} in {name}")
        best = r.report.pooled.loc[r.report.pooled["percent"].idxmax()]
        rows = r.by_sentence[(r.by_sentence["kind"] == best["kind"]) & (r.by_sentence["dim"] == best["dim"])]
        share = inference.cluster_share(rows["hits"], rows["vectors"], "sentences").scaled(100)
        shares.append(f"the {EXTREME[best['kind']]} of {share.text(1, '%', method=False)} in {name} (dimension {int(best['dim'])})")
        most &= share.low > 50
        some |= share.high > 50
        gone += [f"{int(d)} in {name}" for d in erased(r.last_norm)["dim"]]
    verdict = "One dimension holds" if most else "Whether one dimension holds" if some else "No single dimension holds"
    sentences = next(iter(runs.values())).by_sentence["sentence"].nunique()
    lines = [
        f"A few dimensions stand far out of the average vector in most layers: {'; '.join(found)}."
        if any(len(r.report.model_outliers) for r in runs.values())
        else "No dimension stands far out of the average vector in most layers of any model.",
        f"{verdict} the extreme value of most vectors{' differs by model' if some and not most else ''}: the most frequent is "
        f"{' and '.join(shares)}, 95% intervals over {sentences:,} sentences.",
    ]
    if gone:
        lines.append(f"The last LayerNorm zeroes {' and '.join(gone)}, erasing {'it' if len(gone) == 1 else 'them'} from the output.")
    return lines


def layernorm_lines(runs: dict[str, OutlierRun]) -> str:
    return "\n".join(layernorm_finding(name, r.last_norm, r.info["n_layers"]) for name, r in runs.items())


def gap_to_paper(runs: dict[str, OutlierRun]) -> str:
    """Exercise ex-02-read: each model's largest pooled extreme share against BERT-base's 96.60% (paper)."""
    lines = []
    for name, r in runs.items():
        best = r.report.pooled.loc[r.report.pooled["percent"].idxmax()]
        lines.append(
            f"- **{name}**: dimension {best['dim']} is the {EXTREME[best['kind']]} of {best['percent']:.1f}% "
            f"of {int(best['n_vectors']):,} contextual vectors, {96.60 - best['percent']:.1f} points below BERT-base's 96.60% (paper)."
        )
    return (
        "\n".join(lines)
        + "\n\nThe paper's model runs with `-p models bert-base-uncased` (online once); the pooled table then shows its share beside the paper's."
    )


def flags_at(runs: dict[str, OutlierRun], thresholds: tuple[float, ...], min_layer_share: float) -> pd.DataFrame:
    """Exercise ex-02-threshold: dimensions flagged in some layer, and model-level outliers, at each threshold."""
    rows = []
    for name, r in runs.items():
        for t in thresholds:
            flagged = outliers.detect_outliers(r.stats.mean, t, min_layer_share)
            rows.append(
                {"model": name, "threshold": f"{t:g}", "flagged in some layer": len(flagged), "model-level outliers": int(flagged["model_outlier"].sum())}
            )
    return pd.DataFrame(rows)


def robust_vs_plain(runs: dict[str, OutlierRun], z_threshold: float) -> pd.DataFrame:
    """Exercise ex-02-robust: (layer, dimension) cells flagged by the robust and by the plain z-score."""
    rows = []
    for name, r in runs.items():
        mean = r.stats.mean
        plain = (mean - mean.mean(axis=1, keepdims=True)) / mean.std(axis=1, keepdims=True)
        rows.append(
            {
                "model": name,
                "flags, robust z": int((abs(outliers.robust_z(mean)) >= z_threshold).sum()),
                "flags, plain z": int((abs(plain) >= z_threshold).sum()),
                "largest plain |z|": float(abs(plain).max()),
            }
        )
    return pd.DataFrame(rows)


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
