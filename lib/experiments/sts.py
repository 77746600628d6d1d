"""Chapter 08's experiment: sentence similarity without training (Luo et al. 2021, §4.3; thesis Table 4.2). Each
layer's token vectors are mean-pooled into sentence vectors, a pair is scored by the cosine of its two vectors, and
the score is the Spearman correlation (× 100) with the human scores; the paper reports the best contextual layer.

The transforms are fitted on a training sample (the STS-B training sentences), never on the sentences scored."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..core import paper, store
from ..core.checks import positive_int
from ..core.declaration import chapter
from ..core.sources import names
from ..core.store import Writer
from ..datasets import glove
from ..datasets.tasks import STS_LABELS, STS_SETS, sts_pairs, sts_training_sentences, subsample
from ..encode.collectors import LayerStats, SentenceMeans
from ..encode.extraction import extract
from ..encode.models import LoadedModel, load_model
from ..errors import require
from ..measure import geometry, inference, metrics, outliers
from . import outlier_set, vector_variants
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, RAW, WHITENED
from .verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    UNTESTABLE,
    Claim,
    Outcome,
    Tables,
    Unit,
    aggregate,
    decide,
    from_units,
    mean_estimate,
    outcome,
    unit,
    units_text,
)
from .wording import listed, signed, spread

CHAPTER = chapter("08_sts", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)


@dataclass(frozen=True)
class Inputs:
    names: list[str]  # the data sets scored (keys of STS_LABELS)
    wanted: list[str]  # the variants compared
    fit_sentences: list[str]  # STS-B training sentences the transforms are fitted on
    pairs: dict[str, pd.DataFrame]  # the scored pairs, by data set


def inputs(datasets: str, max_pairs: int, n_fit: int, seed: int, variants: str) -> Inputs:
    """The chapter's data: the scored pairs of each data set (all, or max_pairs) and the fitting sentences, every
    parameter checked first."""
    chosen = names(datasets, "datasets", STS_SETS)
    wanted = vector_variants.requested(variants)
    positive_int("n_fit", n_fit)
    fit_sentences = sts_training_sentences(n_fit, seed)
    require(isinstance(max_pairs, int) and max_pairs >= 0, f"max_pairs must be 0 (all) or a positive integer, got {max_pairs!r}")
    pairs = {name: sts_pairs(name) for name in chosen}
    return Inputs(chosen, wanted, fit_sentences, {name: subsample(frame, max_pairs or len(frame), seed) for name, frame in pairs.items()})


def pairs_table(data: Inputs) -> pd.DataFrame:
    return pd.DataFrame([{"data set": STS_LABELS[n], "pairs": len(f), "subsets": ", ".join(sorted(f["subset"].unique()))} for n, f in data.pairs.items()])


def glove_baseline(data: Inputs, results: Writer, parameters: dict) -> pd.DataFrame:
    """Average GloVe 6B 50-d per data set (lower-cased), with and without punctuation tokens, and the share of tokens
    in GloVe's vocabulary (written)."""
    rows = []
    for name, frame in data.pairs.items():
        row = {"dataset": STS_LABELS[name]}
        for label, punctuation in (("", True), ("_words_only", False)):
            a, cover_a = glove.sentence_vectors(frame["sentence1"].tolist(), punctuation)
            b, cover_b = glove.sentence_vectors(frame["sentence2"].tolist(), punctuation)
            row[f"spearman_x100{label}"] = metrics.spearman_x100(geometry.row_cosines(a, b), frame["score"])
            row[f"tokens_in_vocabulary_percent{label}"] = 50 * (cover_a + cover_b)
        rows.append(row)
    baseline = pd.DataFrame(rows)
    results.table(baseline, GLOVE_BASELINE, store.CHAPTER, parameters=parameters, model_info={"name": "GloVe 6B 50-d"})
    return baseline


@dataclass(frozen=True)
class StsRun:
    table: pd.DataFrame  # STS_BY_LAYER
    differences: pd.DataFrame  # STS_DIFFERENCES
    fit_sentences: int
    fit_tokens: int
    name: str = ""  # the model's
    best: pd.DataFrame | None = None  # STS_BEST
    clipping: OutlierSet | None = None  # chapter 02's outlier set, clipped
    by_layer: pd.DataFrame | None = None  # STS_BY_LAYER_DIFFERENCES


@dataclass
class Encoded:
    """Every distinct sentence of the scored sets encoded once: pooled vectors (n, layers, width), and per data set the
    row of each pair's two sentences, the gold scores and the subsets."""

    vectors: np.ndarray
    pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def encode_pairs(lm: LoadedModel, pairs: dict[str, pd.DataFrame], pool_special: bool) -> Encoded:
    """Pool every distinct sentence of the data sets once (a sentence shared by several sets is encoded once)."""
    sentences = pd.unique(pd.concat([f[c] for f in pairs.values() for c in ("sentence1", "sentence2")])).tolist()
    where = {s: i for i, s in enumerate(sentences)}
    pooled = SentenceMeans(len(sentences), include_special=pool_special)
    extract(lm, sentences, [pooled], desc=f"{lm.name}, {len(sentences):,} sentences of {len(pairs)} data sets")
    rows = {
        name: (frame["sentence1"].map(where).to_numpy(), frame["sentence2"].map(where).to_numpy(), frame["score"].to_numpy(), frame["subset"].to_numpy())
        for name, frame in pairs.items()
    }
    return Encoded(pooled.result(), rows)


def spearman_table(variants: vector_variants.Variants, encoded: Encoded, labels: dict[str, str]) -> pd.DataFrame:
    """Spearman × 100 of every data set, variant and layer: pooled over all pairs, and averaged over the set's subsets."""

    def score(transform, layer: int, variant: str) -> list[dict]:
        y = transform(encoded.vectors[:, layer])
        rows = []
        for name, (a, b, gold, subsets) in encoded.pairs.items():
            cos = geometry.row_cosines(y[a], y[b])
            per_subset = [metrics.spearman_x100(cos[subsets == s], gold[subsets == s]) for s in np.unique(subsets) if (subsets == s).sum() > 2]
            rows.append(
                {
                    "dataset": labels[name],
                    "spearman_x100": metrics.spearman_x100(cos, gold),
                    "subset_mean_spearman_x100": np.mean(per_subset) if per_subset else np.nan,
                    "n_pairs": len(a),
                    "n_sentences": len(np.unique(np.concatenate([a, b]))),
                }
            )
        return rows

    table = variants.score(score)
    return STS_BY_LAYER.check(table[list(STS_BY_LAYER.columns)])


def best_layers(table: pd.DataFrame, model: str, spec: str) -> pd.DataFrame:
    """Per data set and variant: the best contextual layer (1…L, as the paper searches), its score pooled over all pairs
    and averaged over the set's subsets, and the embedding output's score (layer 0) beside it."""
    contextual = table[table["layer"] >= 1]
    top = contextual.loc[contextual.groupby(["dataset", "variant"], sort=False)["spearman_x100"].idxmax()]
    layer0 = table[table["layer"] == 0].set_index(["dataset", "variant"])["spearman_x100"]
    top = top.assign(model=model, spec=spec, embedding_output_spearman_x100=[layer0.get((d, v), np.nan) for d, v in zip(top["dataset"], top["variant"])])
    return STS_BEST.check(top[list(STS_BEST.columns)].reset_index(drop=True))


def _score(
    lm: LoadedModel,
    pairs: dict[str, pd.DataFrame],
    labels: dict[str, str],
    fit_sentences: list[str],
    outlier_set: OutlierSet,
    wanted: list[str],
    pool_special: bool = True,
    protocol: str = "model",
) -> StsRun:
    """Fit the variants on the training sentences (token moments and pooled vectors in one pass), then score every set."""
    stats, fit_pooled = LayerStats(covariance=WHITENED in wanted), SentenceMeans(len(fit_sentences), include_special=pool_special)
    extract(lm, fit_sentences, [stats, fit_pooled], desc=f"{lm.name}, {len(fit_sentences):,} training sentences (fit)")
    fitted = vector_variants.fit(wanted, outlier_set, protocol, token_stats=stats, sentence_vectors=fit_pooled.result())
    encoded = encode_pairs(lm, pairs, pool_special)
    table = spearman_table(fitted, encoded, labels)
    differences = paired_differences(fitted, encoded, labels, table, outlier_set.outlier_layers(protocol))
    return StsRun(table, differences, len(fit_sentences), stats.count, by_layer=layer_differences(fitted, encoded, labels))


def run(
    spec: str,
    data: Inputs,
    *,
    profile: str,
    clip: str,
    pool_special: bool,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> StsRun:
    """One model: every variant's Spearman in every layer and data set, the paired differences at the best layers and
    by layer, the best layers (four tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    clipping = outlier_set.outliers_of(lm, spec, profile)
    found = _score(
        lm, data.pairs, STS_LABELS, fit_sentences=data.fit_sentences, outlier_set=clipping, wanted=data.wanted, pool_special=pool_special, protocol=clip
    )
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "fit_tokens": found.fit_tokens, "clipping_set": clipping.describe()}
    results.table(found.table, STS_BY_LAYER, spec, parameters=parameters, model_info=info)
    results.table(found.differences, STS_DIFFERENCES, spec, parameters=parameters, model_info=info)
    results.table(found.by_layer, STS_BY_LAYER_DIFFERENCES, spec, parameters=parameters, model_info=info)
    best = best_layers(found.table, lm.name, spec)
    results.table(best, STS_BEST, spec, parameters=parameters, model_info=info)
    return replace(found, name=lm.name, best=best, clipping=clipping)


def best_of(runs: dict[str, StsRun]) -> pd.DataFrame:
    return pd.concat([r.best for r in runs.values()], ignore_index=True)


def best_tables(runs: dict[str, StsRun], data: Inputs, baseline: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per model: best Spearman × 100 (layer) per data set and variant, with the averaged GloVe score first."""
    order = [STS_LABELS[n] for n in data.names]
    cells = best_of(runs).assign(cell=lambda t: t["spearman_x100"].map("{:.2f}".format) + " (" + t["layer"].astype(str) + ")")
    glove_cells = baseline.set_index("dataset")["spearman_x100"].map("{:.2f}".format)
    out = {}
    for model, of_model in cells.groupby("model", sort=False):
        wide = of_model.pivot_table(index="dataset", columns="variant", values="cell", aggfunc="first", sort=False).reindex(order)
        wide.insert(0, "avg. GloVe 6B 50-d", glove_cells.reindex(order))
        out[model] = wide.rename_axis(index="data set", columns=None).reset_index()
    return out


def layer0_table(runs: dict[str, StsRun], data: Inputs) -> pd.DataFrame:
    """The embedding output's Spearman × 100 per data set (layer 0, not searched by the best-layer tables)."""
    order = [STS_LABELS[n] for n in data.names]
    best = best_of(runs)
    return best.pivot_table(index=["model", "variant"], columns="dataset", values="embedding_output_spearman_x100", aggfunc="first", sort=False)[
        order
    ].reset_index()


def years_table(runs: dict[str, StsRun]) -> pd.DataFrame:
    """STS 2012-2016, raw vectors at the best layer: pooled over a year's pairs and averaged over its subsets."""
    best = best_of(runs)
    years = best[(best["variant"] == "raw") & best["dataset"].str.startswith("STS-1")]
    return years[["model", "dataset", "layer", "spearman_x100", "subset_mean_spearman_x100"]]


def paper_wide(data: Inputs) -> pd.DataFrame:
    """Luo et al.'s Table 2 (and the thesis's Table 4.2), one column per model and variant, cells "score (layer)"."""
    order = [STS_LABELS[n] for n in data.names]
    theirs = paper.table("luo2021", "sts")
    cell = theirs["paper_spearman_x100"].map("{:.2f}".format) + theirs["paper_layer"].map(lambda v: "" if pd.isna(v) else f" ({int(v)})")
    column = theirs["model"].replace({"avg-glove": "avg. GloVe 300-d"}) + theirs["paper_variant"].map(lambda v: "" if v == "baseline" else f" {v}")
    wide = theirs.assign(cell=cell, column=column).pivot_table(index="paper_dataset", columns="column", values="cell", aggfunc="first", sort=False)
    return wide.reindex([c for c in order if c in wide.index]).rename_axis(index="data set", columns=None).reset_index()


def figure_by_layer(runs: dict[str, StsRun], data: Inputs, baseline: pd.DataFrame, results: Writer) -> None:
    """Per model: the raw vectors' Spearman × 100 by layer, averaged over the data sets, against averaged GloVe, and
    each variant's difference from raw with its paired bootstrap 95% interval."""
    sets = [STS_LABELS[n] for n in scored_sets({n: STS_LABELS[n] for n in data.names})]
    levels = {}
    for name, r in runs.items():
        raw = r.table[(r.table["variant"] == RAW) & r.table["dataset"].isin(sets)]
        levels[name] = raw.groupby("layer")["spearman_x100"].mean().rename("value").reset_index()
    glove = float(baseline.set_index("dataset")["spearman_x100"].reindex(sets).mean())
    differences = {name: r.by_layer for name, r in runs.items()}
    fig = vector_variants.differences_by_layer(
        levels, differences, f"Spearman × 100, mean of {len(sets)} sets", "difference from raw (points)", glove, "averaged GloVe 50-d"
    )
    peaks = vector_variants.for_models([(n, f"{v['value'].max():.1f} (layer {int(v.loc[v['value'].idxmax(), 'layer'])})") for n, v in levels.items()])
    alt = (
        f"{vector_variants.differences_text(differences, ' points')} The raw vectors' mean Spearman × 100 peaks at {peaks}, against {glove:.1f} for "
        "averaged GloVe vectors."
    )
    caption = (
        f"Spearman correlation × 100 of cosine similarity with the gold scores, averaged over {len(sets)} data sets, by layer: the raw vectors "
        "(left) and each variant's difference from them with its 95% interval, a bootstrap over the same pairs (right)."
    )
    results.figure(fig, "spearman_by_layer", caption, alt=alt)


def best_vs_last(runs: dict[str, StsRun]) -> pd.DataFrame:
    """Exercise ex-08-layer: for the raw vectors, the best contextual layer against the last layer, per data set."""
    rows = []
    for name, r in runs.items():
        raw = r.table[(r.table["variant"] == "raw") & (r.table["layer"] >= 1)]
        for dataset, part in raw.groupby("dataset", sort=False):
            top = part.loc[part["spearman_x100"].idxmax()]
            last = part[part["layer"] == part["layer"].max()]["spearman_x100"].iloc[0]
            rows.append(
                {
                    "model": name,
                    "dataset": dataset,
                    "best layer": int(top["layer"]),
                    "best": top["spearman_x100"],
                    "last layer": last,
                    "lost": top["spearman_x100"] - last,
                }
            )
    return pd.DataFrame(rows)


def best_vs_last_answer(table: pd.DataFrame) -> str:
    """Exercise ex-08-layer in words, from `best_vs_last`: per model, the winning layers and the points the last layer loses."""
    lines = []
    for name, part in table.groupby("model", sort=False):
        layers = part["best layer"].value_counts()
        last = int((part["lost"] <= 0).sum())
        worst = part.loc[part["lost"].idxmax()]
        lines.append(
            f"- **{name}**: the best raw layer is layer {layers.index[0]} on {layers.iloc[0]} of {len(part)} data sets; the last layer is the best on "
            f"{last}. Always taking the last layer loses {part['lost'].mean():.1f} points on average, at most {worst['lost']:.1f} ({worst['dataset']})."
        )
    return (
        "In this run:\n\n"
        + "\n".join(lines)
        + (
            "\n\nThe best layer is chosen on the very pairs it is scored on, so its score is biased upwards: the loss is an upper bound on what "
            "choosing a layer on held-out pairs would gain."
        )
    )


def spread_at(runs: dict[str, StsRun], n_pairs: int) -> pd.DataFrame:
    """Exercise ex-08-pairs: the 95% interval of each raw last-layer score on n_pairs pairs (Fisher z, SE √(1.06/(n−3)))."""
    rows = []
    for name, r in runs.items():
        last = r.table[(r.table["variant"] == "raw") & (r.table["layer"] == r.table["layer"].max())]
        for row in last.itertuples():
            z, half = np.arctanh(row.spearman_x100 / 100), 1.96 * np.sqrt(1.06 / (n_pairs - 3))
            rows.append(
                {
                    "model": name,
                    "dataset": row.dataset,
                    "pairs now": row.n_pairs,
                    "score": row.spearman_x100,
                    f"95% low at {n_pairs}": 100 * np.tanh(z - half),
                    f"95% high at {n_pairs}": 100 * np.tanh(z + half),
                }
            )
    return pd.DataFrame(rows)


COMPARISONS = ((CLIPPED, RAW), (WHITENED, RAW), (WHITENED, CLIPPED))  # (variant, baseline): the claims' comparisons
DRAWS = 1000  # bootstrap resamples of a data set's pairs


def paired_differences(
    variants: vector_variants.Variants, encoded: Encoded, labels: dict[str, str], table: pd.DataFrame, layers: list[int], seed: int = 0
) -> pd.DataFrame:
    """Per data set and comparison of COMPARISONS, both variants at their best layer among `layers` (those where the
    clipped dimensions are flagged outliers, `OutlierSet.outlier_layers`: a clipping or whitening claim is tested only
    where there is an outlier to remove): the difference of Spearman × 100 and its standard error from a bootstrap over
    the set's pairs (DRAWS resamples, the same pairs for both variants: the pairs are what was sampled). The layers are
    chosen on all pairs, as the paper chooses them. No rows when no layer has such an outlier."""
    if not layers:
        return STS_DIFFERENCES.frame([])
    counted = table[table["layer"].isin(layers)]
    top = counted.loc[counted.groupby(["dataset", "variant"])["spearman_x100"].idxmax()].set_index(["dataset", "variant"])["layer"]
    cache: dict[tuple[str, int], np.ndarray] = {}

    def vectors(variant: str, layer: int) -> np.ndarray:
        if (variant, layer) not in cache:
            cache[(variant, layer)] = variants.transforms[variant][layer].transform(encoded.vectors[:, layer])
        return cache[(variant, layer)]

    rows, rng = [], np.random.default_rng(seed)
    for name, (a, b, gold, _) in encoded.pairs.items():
        label = labels[name]
        wanted = [c for c in COMPARISONS if all(v in variants.transforms for v in c)]
        cos = {v: geometry.row_cosines(vectors(v, int(top[(label, v)]))[a], vectors(v, int(top[(label, v)]))[b]) for c in wanted for v in c}
        reps = {v: [] for v in cos}
        for start in range(0, DRAWS, 100):  # 100 resamples at a time: bounded memory on the largest sets
            picked = rng.integers(0, len(gold), size=(min(100, DRAWS - start), len(gold)))
            g = gold[picked]
            for v, c in cos.items():
                reps[v].append(metrics.spearman_rows_x100(c[picked], g))
        reps = {v: np.concatenate(r) for v, r in reps.items()}
        for variant, baseline in wanted:
            rows.append(
                {
                    "dataset": label,
                    "variant": variant,
                    "baseline": baseline,
                    "difference": metrics.spearman_x100(cos[variant], gold) - metrics.spearman_x100(cos[baseline], gold),
                    "se": float(np.std(reps[variant] - reps[baseline], ddof=1)),
                    "n_pairs": len(gold),
                    "draws": DRAWS,
                    "layers": outliers.layer_ranges(np.asarray(layers)),
                }
            )
    return STS_DIFFERENCES.frame(rows)


LAYER_DRAWS = 100  # bootstrap resamples per data set for the differences by layer (a figure's intervals: standard errors to about 7%)


def scored_sets(labels: dict[str, str]) -> list[str]:
    """The data sets a summary over sets counts: SICK's all-pairs view (a second view of SICK) left out."""
    return [name for name, label in labels.items() if "all pairs" not in label]


def layer_differences(variants: vector_variants.Variants, encoded: Encoded, labels: dict[str, str], seed: int = 0) -> pd.DataFrame:
    """Per variant other than raw and per layer: its Spearman × 100 minus the raw vectors' in that layer, averaged over
    the data sets (`scored_sets`), with a normal 95% interval from a paired bootstrap (each set's pairs resampled
    LAYER_DRAWS times, seeded; the same resamples for every variant and layer)."""
    sets = {name: encoded.pairs[name] for name in scored_sets(labels) if name in encoded.pairs}
    rng = np.random.default_rng(seed)
    picked = {name: rng.integers(0, len(gold), size=(LAYER_DRAWS, len(gold))) for name, (_, _, gold, _) in sets.items()}
    gold_ranks = {name: rankdata(gold[picked[name]], axis=1) for name, (_, _, gold, _) in sets.items()}

    def scores(vectors: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean Spearman × 100 over the sets, and its value in every resample."""
        point, reps = [], []
        for name, (a, b, gold, _) in sets.items():
            cos = geometry.row_cosines(vectors[a], vectors[b])
            point.append(metrics.spearman_x100(cos, gold))
            reps.append(metrics.pearson_rows_x100(rankdata(cos[picked[name]], axis=1), gold_ranks[name]))  # Spearman: the gold ranks computed once
        return float(np.mean(point)), np.mean(reps, axis=0)

    rows = []
    for layer in range(variants.n_layers):
        raw, raw_reps = scores(variants.transforms[RAW][layer].transform(encoded.vectors[:, layer]))
        for variant in [v for v in variants.transforms if v != RAW]:
            value, reps = scores(variants.transforms[variant][layer].transform(encoded.vectors[:, layer]))
            half = inference.Z * float(np.std(reps - raw_reps, ddof=1))
            change = value - raw
            rows.append({"variant": variant, "layer": layer, "difference": change, "low": change - half, "high": change + half})
    return STS_BY_LAYER_DIFFERENCES.frame({**row, "datasets": len(sets), "draws": LAYER_DRAWS} for row in rows)


STS_BY_LAYER = CHAPTER.table("spearman_by_layer", "dataset variant layer spearman_x100 subset_mean_spearman_x100 n_pairs n_sentences")


STS_DIFFERENCES = CHAPTER.table("paired_differences", "dataset variant baseline difference se n_pairs draws layers")


STS_BY_LAYER_DIFFERENCES = CHAPTER.table("differences_by_layer", "variant layer difference low high datasets draws")


STS_BEST = CHAPTER.table("best", "model spec dataset variant layer spearman_x100 subset_mean_spearman_x100 embedding_output_spearman_x100")


GLOVE_BASELINE = CHAPTER.table(
    "glove_baseline", "dataset spearman_x100 tokens_in_vocabulary_percent spearman_x100_words_only tokens_in_vocabulary_percent_words_only"
)


def _once(t: pd.DataFrame) -> pd.DataFrame:
    """The rows of each data set once: SICK's all-pairs view (a second view of SICK) left out."""
    return t[~t["dataset"].str.contains("all pairs")]


def _best_by_set(t: pd.DataFrame) -> pd.DataFrame:
    """Best Spearman per data set and variant, over the contextual layers (as the paper searches), each set once."""
    t = _once(t)
    return t[t["layer"] >= 1].groupby(["dataset", "variant"])["spearman_x100"].max().unstack("variant")


def findings(runs: dict[str, StsRun], baseline: pd.DataFrame) -> list[str]:
    """The chapter's "what our run shows" bullets: per model what clipping and whitening change and how the raw model
    compares with GloVe, then why our GloVe average stays below the published one."""
    lines, paper_sts = [], paper.table("luo2021", "sts")
    for name, run in runs.items():
        table, b = _once(run.table), _once(run.best).pivot(index="dataset", columns="variant", values="spearman_x100")
        glove_scores = baseline.set_index("dataset")["spearman_x100"]
        per_layer = table.pivot_table(index=["dataset", "layer"], columns="variant", values="spearman_x100")
        touched = per_layer[(per_layer["clipped"] - per_layer["raw"]).abs() > 1e-9]
        changes = "; ".join(
            f"{v} raises it on {int((b[v] > b['raw']).sum())} of {len(b)} (mean change {signed(float((b[v] - b['raw']).mean()), 2)})"
            for v in b.columns
            if v != "raw"
        )
        lines.append(
            f"- **{name}**: clipping changes {len(touched)} of {len(per_layer)} (data set, layer) cells and raises Spearman in "
            f"{int((touched['clipped'] > touched['raw']).sum())} of them. Best contextual layer per data set: {changes}. "
            f"The raw model beats 50-d GloVe on {int((b['raw'] > glove_scores.reindex(b.index)).sum())} of {len(b)} data sets."
        )
    published = paper_sts[paper_sts["model"] == "avg-glove"].set_index("paper_dataset")["paper_spearman_x100"]
    glove_gap = (published - baseline.set_index("dataset")["spearman_x100"]).dropna()
    punctuation = baseline["spearman_x100_words_only"] - baseline["spearman_x100"]
    if len(glove_gap):
        lines.append(
            f"- Average GloVe: {baseline['tokens_in_vocabulary_percent'].min():.1f}-{baseline['tokens_in_vocabulary_percent'].max():.1f}% of the "
            f"lower-cased tokens are in GloVe's vocabulary, so out-of-vocabulary words do not explain the distance to the published "
            f"300-d average (paper column above): {glove_gap.min():.1f} to {glove_gap.max():.1f} points below it. Leaving punctuation out of the "
            f"average changes our score by {signed(float(punctuation.min()))} to {signed(float(punctuation.max()))} points. What remains is the vectors "
            "themselves: 50 against 300 dimensions, and a corpus the published table does not name."
        )
    return lines


def answer(runs: dict[str, StsRun], baseline: pd.DataFrame) -> list[str]:
    """The chapter's answer: how much clipping and whitening change Spearman × 100 at each variant's best layer among
    those where the clipped dimensions are outliers, averaged over the data sets with its 95% interval (from the paired
    bootstraps over each set's pairs), on how many sets the change is clear of zero, and the raw vectors' level against
    averaged GloVe."""
    compared = [name for name, r in runs.items() if len(r.differences)]
    per_set, means = {}, {}
    for variant in (CLIPPED, WHITENED):
        for name in compared:
            t = _once(runs[name].differences)
            t = t[(t["variant"] == variant) & (t["baseline"] == RAW)]
            if len(t):
                halves = inference.Z * t["se"]
                per_set[(variant, name)] = [inference.from_interval(d, d - h, d + h, "bootstrap") for d, h in zip(t["difference"], halves)]
                means[(variant, name)] = inference.mean_of(per_set[(variant, name)], "data sets")

    def change(variant: str) -> str:
        return vector_variants.changes_text([(e.value, e.low, e.high) for (v, _), e in means.items() if v == variant])

    def counts(variant: str, up: bool) -> str:
        return " and ".join(str(sum((e.low > 0) if up else (e.high < 0) for e in es)) for (v, _), es in per_set.items() if v == variant)

    raw = {name: _best_by_set(r.table)[RAW] for name, r in runs.items()}
    glove = baseline.set_index("dataset")["spearman_x100"]
    level = (
        f"At their best layer the raw vectors of {listed(list(raw))} already score "
        f"{listed([spread(v, 1) for v in raw.values()])}, on average "
        f"{listed([signed(float((v - glove.reindex(v.index)).mean())) for v in raw.values()])} points against averaged 50-d GloVe vectors."
    )
    if not means:
        return ["No model has a layer where its clipped dimensions are outliers: there is nothing for clipping or whitening to remove.", level]
    sets = len(next(iter(per_set.values())))
    whitened = f", whitening by {change(WHITENED)}" if any(v == WHITENED for v, _ in means) else ""
    per_set_text = "; ".join(
        f"{'clipping' if v == CLIPPED else 'whitening'} is clearly better on {counts(v, True)} of the {sets} and clearly worse on {counts(v, False)}"
        for v in (CLIPPED, WHITENED)
        if any(k == v for k, _ in means)
    )
    return [
        f"Averaged over {sets} data sets, each variant at its best layer where the clipped dimensions are outliers, clipping changes the "
        f"Spearman correlation × 100 of {listed(compared)} by {change(CLIPPED)}{whitened}.",
        f"Set by set, {per_set_text}.",
        level,
    ]


NO_OUTLIER_LAYER = "not testable: the clipped dims are flagged outliers in no layer of this model (nothing for clipping or whitening to remove)"


def compared_layers(tables: Tables, model: str, claim: Claim) -> str:
    """The layers the STS comparisons were made in (where the clipped dims are outliers), "" when none."""
    t = tables.read(model, claim.chapter, STS_DIFFERENCES.name)
    return str(t["layers"].iloc[0]) if len(t) else ""


def per_set_units(tables: Tables, model: str, claim: Claim, comparisons: tuple[tuple[str, str], ...]) -> list:
    """One unit per data set and comparison (variant, baseline): the paired difference of Spearman × 100, both at their
    best layer among those where the clipped dims are outliers, with its bootstrap standard error over the set's pairs
    (normal interval); SICK's all-pairs view left out."""
    t = tables.read(model, claim.chapter, STS_DIFFERENCES.name)
    t = t[~t["dataset"].str.contains("all pairs")]
    units = []
    for variant, baseline in comparisons:
        for r in t[(t["variant"] == variant) & (t["baseline"] == baseline)].itertuples():
            half = inference.Z * r.se
            estimate = inference.from_interval(
                r.difference, r.difference - half, r.difference + half, f"bootstrap over {r.n_pairs:,} pairs", r.n_pairs, "pairs"
            )
            units.append(unit(f"{variant}, {r.dataset}" if len(comparisons) > 1 else r.dataset, estimate, claim.margin, of="data sets"))
    return units


@CHAPTER.rule
def sts_transform_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    """Clipping and whitening each raise STS: each variant decided over its data sets by the claim's statistic (the
    mean gain), then the claim over the two variants (it needs both)."""
    units = per_set_units(tables, model, claim, ((CLIPPED, RAW), (WHITENED, RAW)))
    if not units:
        return Outcome(UNTESTABLE, NO_OUTLIER_LAYER)
    by_variant: dict[str, list[Unit]] = {}
    for u in units:
        by_variant.setdefault(u.name.split(", ")[0], []).append(u)
    variants = [variant_unit(v, us, claim) for v, us in by_variant.items()]
    summary = "; ".join(f"{v.name}: {v.decision.verdict}, {v.estimate.text(2, ' points')} ({sets_count(by_variant[v.name])})" for v in variants)
    weakest = min(variants, key=lambda u: u.clearance)
    where = f"best layers among {compared_layers(tables, model, claim)} (where the clipped dims are outliers)"
    return outcome(aggregate(variants, "all"), f"{where}: {summary}. Per data set: {units_text(units, 2, ' points')}", weakest.estimate)


def variant_unit(name: str, units: list[Unit], claim: Claim) -> Unit:
    """One variant's data sets decided as one unit by the claim's statistic: its mean gain for "mean", else its set
    closest to failing."""
    estimate = mean_estimate(units) if claim.aggregate == "mean" else min(units, key=lambda u: u.clearance).estimate
    return Unit(name, estimate, aggregate(units, claim.aggregate), claim.margin, of="variants")


def sets_count(units: list[Unit]) -> str:
    """How many of the data sets hold, do not hold, are inconclusive: "2 of 7 data sets hold, 5 do not"."""
    counts = {v: sum(u.decision.verdict == v for u in units) for v in (HOLDS, FAILS, INCONCLUSIVE)}
    parts = [f"{counts[HOLDS]} of {len(units)} data sets hold"] + [f"{counts[FAILS]} do not"] * bool(counts[FAILS])
    return ", ".join(parts + [f"{counts[INCONCLUSIVE]} inconclusive"] * bool(counts[INCONCLUSIVE]))


@CHAPTER.rule
def sts_whitening_beats_clipping(tables: Tables, model: str, claim: Claim) -> Outcome:
    units = per_set_units(tables, model, claim, ((WHITENED, CLIPPED),))
    if not units:
        return Outcome(UNTESTABLE, NO_OUTLIER_LAYER)
    decided = from_units(units, claim, 2, " points")
    return replace(decided, ours=f"best layers among {compared_layers(tables, model, claim)} (where the clipped dims are outliers): {decided.ours}")


@CHAPTER.rule
def whitened_beats_glove(tables: Tables, model: str, claim: Claim) -> Outcome:
    """The whitened model's best layer above averaged GloVe on every STS set but STS-12 (the thesis's exception), tested
    as the mean difference over those sets (t over data sets: GloVe has no interval over pairs here), each set beside."""
    glove = tables.read(store.CHAPTER, claim.chapter, GLOVE_BASELINE.name)
    if glove is None:
        return Outcome(NOT_RUN, "no GloVe baseline table")
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))
    if WHITENED not in best:
        return Outcome(NOT_RUN, "no whitened vectors in this run")
    glove = glove.set_index("dataset")["spearman_x100"]
    sets = [d for d in best.index if d in glove.index and d != "STS-12"]
    if len(sets) < 2:
        return Outcome(NOT_RUN, f"{len(sets)} STS sets besides STS-12 scored with GloVe")
    gaps = {d: best.loc[d, WHITENED] - glove[d] for d in sets}
    estimate = inference.mean_t(list(gaps.values()), "data sets")
    per_set = "; ".join(f"{d} {g:+.1f}" for d, g in gaps.items())
    text = f"whitened best layer minus GloVe, mean over {len(sets)} sets (STS-12 left out, as the thesis does): {estimate.text(1, ' points')}; {per_set}"
    return outcome(decide(estimate, claim.margin), text, estimate)


@CHAPTER.rule
def glove_beats_model(tables: Tables, model: str, claim: Claim) -> Outcome:
    glove = tables.read(store.CHAPTER, claim.chapter, GLOVE_BASELINE.name)
    if glove is None:
        return Outcome(NOT_RUN, "no GloVe baseline table")
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))[RAW]
    glove = glove.set_index("dataset")["spearman_x100"]
    years = [d for d in ("STS-12", "STS-13", "STS-14", "STS-15") if d in best.index and d in glove.index]
    if len(years) < 2:
        return Outcome(NOT_RUN, f"STS 2012-2015 scored on {len(years)} sets")
    estimate = inference.mean_t([glove[d] - best[d] for d in years], "data sets")
    wins = [d for d in years if glove[d] > best[d]]
    return outcome(
        decide(estimate, claim.margin),
        f"GloVe minus the model's best layer: {estimate.text(1, ' points')}; GloVe higher on {len(wins)} of {len(years)}",
        estimate,
    )
