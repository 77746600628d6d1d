"""Chapter 08's experiment: sentence similarity without training (Luo et al. 2021, §4.3; thesis Table 4.2). Each
layer's token vectors are mean-pooled into sentence vectors, a pair is scored by the cosine of its two vectors, and
the score is the Spearman correlation (× 100) with the human scores; the paper reports the best contextual layer.

The transforms are fitted on a training sample (the STS-B training sentences), never on the sentences scored."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core import store
from ..core.declaration import chapter
from ..encode.collectors import LayerStats, SentenceMeans
from ..encode.extraction import extract
from ..encode.models import LoadedModel
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

CHAPTER = chapter("08_sts", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)


@dataclass
class StsRun:
    table: pd.DataFrame  # STS_BY_LAYER
    differences: pd.DataFrame  # STS_DIFFERENCES
    fit_sentences: int
    fit_tokens: int


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


def run(
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
    return StsRun(table, differences, len(fit_sentences), stats.count)


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


STS_BY_LAYER = CHAPTER.table("spearman_by_layer", "dataset variant layer spearman_x100 subset_mean_spearman_x100 n_pairs n_sentences")


STS_DIFFERENCES = CHAPTER.table("paired_differences", "dataset variant baseline difference se n_pairs draws layers")


STS_BEST = CHAPTER.table("best", "model spec dataset variant layer spearman_x100 subset_mean_spearman_x100 embedding_output_spearman_x100")


GLOVE_BASELINE = CHAPTER.table(
    "glove_baseline", "dataset spearman_x100 tokens_in_vocabulary_percent spearman_x100_words_only tokens_in_vocabulary_percent_words_only"
)


def _best_by_set(t: pd.DataFrame) -> pd.DataFrame:
    """Best Spearman per data set and variant, over the contextual layers (as the paper searches); the all-pairs SICK row
    (a second view of SICK) left out."""
    t = t[~t["dataset"].str.contains("all pairs") & (t["layer"] >= 1)]
    return t.groupby(["dataset", "variant"])["spearman_x100"].max().unstack("variant")


def findings(scores: dict[str, tuple[str, pd.DataFrame]], best: pd.DataFrame, baseline: pd.DataFrame, paper_sts: pd.DataFrame) -> list[str]:
    """The chapter's "what our run shows" bullets: per model what clipping and whitening change and how the raw model
    compares with GloVe, then why our GloVe average stays below the published one."""
    lines = []
    for spec, (name, table) in scores.items():
        b = best[best["spec"] == spec].pivot(index="dataset", columns="variant", values="spearman_x100")
        glove_scores = baseline.set_index("dataset")["spearman_x100"]
        per_layer = table.pivot_table(index=["dataset", "layer"], columns="variant", values="spearman_x100")
        touched = per_layer[(per_layer["clipped"] - per_layer["raw"]).abs() > 1e-9]
        changes = "; ".join(
            f"{v} raises it on {int((b[v] > b['raw']).sum())} of {len(b)} (mean change {float((b[v] - b['raw']).mean()):+.2f})" for v in b.columns if v != "raw"
        )
        lines.append(
            f"- **{name}**: clipping changes {len(touched)} of {len(per_layer)} (data set, layer) cells and raises Spearman in "
            f"{int((touched['clipped'] > touched['raw']).sum())} of them. Best contextual layer per data set: {changes}. "
            f"The raw model beats 50-d GloVe on {int((b['raw'] > glove_scores.reindex(b.index)).sum())} of {len(b)} data sets."
        )
    published = paper_sts[paper_sts["model"] == "avg-glove"].set_index("paper_dataset")["paper_spearman_x100"]
    glove_gap = (published - baseline.set_index("dataset")["spearman_x100"]).dropna()
    if len(glove_gap):
        lines.append(
            f"- Average GloVe: {baseline['tokens_in_vocabulary_percent'].min():.1f}-{baseline['tokens_in_vocabulary_percent'].max():.1f}% of the "
            f"lower-cased tokens are in GloVe's vocabulary, so out-of-vocabulary words do not explain the distance to the published "
            f"300-d average (paper column above): {glove_gap.min():.1f} to {glove_gap.max():.1f} points below it. Leaving punctuation out of the "
            f"average changes our score by {float((baseline['spearman_x100_words_only'] - baseline['spearman_x100']).min()):+.1f} to "
            f"{float((baseline['spearman_x100_words_only'] - baseline['spearman_x100']).max()):+.1f} points. What remains is the vectors "
            "themselves: 50 against 300 dimensions, and a corpus the published table does not name."
        )
    return lines


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
