"""Chapter 12's experiment (Biš et al. 2021, §5): the input-embedding matrix W raw, centered, scaled-centered and
post-processed (all-but-the-top with D = ceil(d/100)); the isotropy of each (Table 1) and its word-similarity scores
(Table 2: Pearson × 100 of cosine and of inner product with the human scores, pairs of single-token words)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core import paper
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets import tasks
from ..encode.models import LoadedModel, load_model
from ..measure import inference, isotropy, metrics, transforms, vocabulary
from . import plotting
from .plotting import COLORS
from .verdicts import FAILS, HOLDS, INCONCLUSIVE, UNTESTABLE, Claim, Outcome, Tables, from_units, unit
from .wording import signed, spread

CHAPTER = chapter("12_isotropy_word_similarity")

RAW, CENTERED, CENTERED_SCALED, POST_PROCESSED = "raw", "centered", "centered-scaled", "post-processed"  # W's variants


def variants(w: np.ndarray) -> dict[str, np.ndarray]:
    """W and its post-processed versions, fitted on W itself (the paper's protocol)."""
    d = math.ceil(w.shape[1] / 100)
    return {
        RAW: w,
        CENTERED: transforms.Center().fit(w).transform(w),
        CENTERED_SCALED: transforms.ScaledCenter().fit(w).transform(w),
        f"{POST_PROCESSED} (D={d})": transforms.RemoveTopPCs(d).fit(w).transform(w),
    }


def isotropy_table(matrices: dict[str, np.ndarray], model: str) -> pd.DataFrame:
    """I1 = I(W), I2, IsoScore and norm statistics of every variant, and the range of I1 the eigenvectors' signs allow
    (`isotropy.sign_range`)."""
    rows = [
        {
            "model": model,
            "variant": v,
            **isotropy.partition_measures(m),
            **dict(zip(("I1_sign_low", "I1_sign_high"), isotropy.sign_range(m))),
            "IsoScore": isotropy.isoscore(m),
            **isotropy.norm_stats(m),
        }
        for v, m in matrices.items()
    ]
    return ISOTROPY.frame(rows)


def pair_scores(m: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """The inner product and the cosine of the pairs of rows (a, b) of one matrix."""
    x, y = m[a], m[b]
    inner = np.einsum("nd,nd->n", x, y)
    return {"inner product": inner, "cosine": inner / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))}


def similarity_scores(matrices: dict[str, np.ndarray], a: np.ndarray, b: np.ndarray, gold: np.ndarray) -> pd.DataFrame:
    """Pearson × 100 of the cosine and the inner product of the pairs (rows a, b) with gold, per variant; NaN when fewer
    than three pairs are kept."""
    rows = []
    for variant, m in matrices.items():
        scores = pair_scores(m, a, b)
        inner, cosine = scores["inner product"], scores["cosine"]
        enough = len(gold) >= 3
        rows.append(
            {
                "variant": variant,
                "pearson_cosine": metrics.pearson_x100(cosine, gold) if enough else np.nan,
                "pearson_inner_product": metrics.pearson_x100(inner, gold) if enough else np.nan,
            }
        )
    return pd.DataFrame(rows)


def word_similarity(lm: LoadedModel, matrices: dict[str, np.ndarray], benchmarks: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """Scores of every benchmark and variant, and each benchmark's kept pairs (token ids a, b and gold scores)."""
    frames, kept = [], {}
    for label, frame in benchmarks.items():
        a, b = vocabulary.single_token_ids(lm, frame["word1"].tolist()), vocabulary.single_token_ids(lm, frame["word2"].tolist())
        keep = (a >= 0) & (b >= 0)
        kept[label] = (a[keep], b[keep], frame["score"][keep].to_numpy())
        scores = similarity_scores(matrices, *kept[label])
        frames.append(scores.assign(model=lm.name, benchmark=label, pairs=len(frame), pairs_kept=int(keep.sum())))
    table = pd.concat(frames, ignore_index=True)
    return WORD_SIMILARITY.check(table[list(WORD_SIMILARITY.columns)]), kept


def grouped_bars(frame: pd.DataFrame, group: str, columns: list[str], labels: list[str], ylabel: str):
    """One panel per model, two to a row: bars of the given columns for each group (e.g. variant); one legend above."""
    models = list(dict.fromkeys(frame["model"]))
    fig, axes = plotting.grid(len(models), columns=2, panel_height=3.4, sharey=True)
    width = 0.8 / len(columns)
    for ax, name in zip(axes, models):
        part = frame[frame["model"] == name]
        x = np.arange(len(part))
        for i, (column, label) in enumerate(zip(columns, labels)):
            ax.bar(x + (i - (len(columns) - 1) / 2) * width, part[column], width, label=label, color=COLORS[i])
        ax.set_xticks(x, part[group], rotation=30, ha="right")
        ax.set(title=name, ylabel=ylabel)
        ax.yaxis.set_tick_params(labelleft=True)  # every panel keeps its scale, also in the second column
    plotting.legend_above(fig, axes[0])
    return fig


def benchmarks() -> dict[str, pd.DataFrame]:
    """The word-similarity benchmarks, by their printed name, as released (pairs and gold scores)."""
    return {tasks.WORD_SIMILARITY[name]: tasks.word_similarity(name) for name in tasks.WORD_SIMILARITY}


def benchmarks_table(labelled: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": name, "pairs": len(frame)} for name, frame in labelled.items()])


@dataclass(frozen=True)
class WordRun:
    name: str  # the model's
    isotropy: pd.DataFrame  # the isotropy table
    similarity: pd.DataFrame  # the word_similarity table
    matrix: np.ndarray  # W, kept for the exercises
    pair_ids: dict  # per benchmark, the kept pairs' token ids and gold scores
    differences: pd.DataFrame | None = None  # the paired_differences table


def run(spec: str, labelled: dict[str, pd.DataFrame], *, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> WordRun:
    """One model: its input-embedding matrix in four variants, their isotropy and word similarity (three tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    w = vocabulary.embedding_matrix(lm)
    matrices = variants(w)
    scores, pair_ids = word_similarity(lm, matrices, labelled)
    iso = isotropy_table(matrices, lm.name)
    differences = paired_differences(matrices, pair_ids, lm.name)
    results.table(iso, ISOTROPY, spec, parameters=parameters)
    results.table(scores, WORD_SIMILARITY, spec, parameters=parameters)
    results.table(differences, WORD_DIFFERENCES, spec, parameters=parameters)
    return WordRun(lm.name, iso, scores, w, pair_ids, differences)


def isotropy_of(runs: dict[str, WordRun]) -> pd.DataFrame:
    return pd.concat([r.isotropy for r in runs.values()], ignore_index=True)


WORDS = {  # the tables' columns as the page prints them
    "I1_sign_low": "I1 low",
    "I1_sign_high": "I1 high",
    "average_norm": "average length",
    "mean_vector_norm": "mean's length",
    "ratio": "mean / average",
    "pearson_cosine": "cosine",
    "pearson_inner_product": "inner product",
    "paper_label": "model",
    "paper_I_W": "I(W) raw",
    "paper_I_Wc": "centered",
    "paper_I_Wr": "post-processed",
    "paper_avg_norm": "average length",
    "paper_mean_norm": "length of the mean",
    "paper_mean_norm_over_avg_norm": "mean / average length",
    "paper_method": "variant",
    "paper_cossim": "cosine",
    "paper_inner_product": "inner product",
}


def isotropy_view(runs: dict[str, WordRun]) -> pd.DataFrame:
    """The isotropy table as the page prints it (the mean's length over the average length, which the two lengths
    give, only in the result table: beside them it would widen the page past its column)."""
    return isotropy_of(runs).drop(columns="ratio").rename(columns=WORDS)


def paper_table(key: str) -> pd.DataFrame:
    """One of Biš et al.'s tables this chapter shows, its columns in words."""
    return paper.table("bis2021", key).drop(columns="model").rename(columns=WORDS)


def similarity_of(runs: dict[str, WordRun]) -> pd.DataFrame:
    return pd.concat([r.similarity for r in runs.values()], ignore_index=True)


def kept_table(runs: dict[str, WordRun]) -> pd.DataFrame:
    """Pairs kept per benchmark and model (both words single tokens)."""
    sim = similarity_of(runs)
    return sim[sim["variant"] == "raw"].pivot(index="benchmark", columns="model", values="pairs_kept").reset_index()


def average_table(runs: dict[str, WordRun]) -> pd.DataFrame:
    """Average Pearson × 100 over the benchmarks, per model and variant (the papers' Table 2 statistic)."""
    return similarity_of(runs).groupby(["model", "variant"], sort=False)[["pearson_cosine", "pearson_inner_product"]].mean().reset_index()


def average_view(runs: dict[str, WordRun]) -> pd.DataFrame:
    """The average table as the page prints it."""
    return average_table(runs).rename(columns=WORDS)


def cosine_table(runs: dict[str, WordRun]) -> pd.DataFrame:
    """Pearson × 100 with cosine, per benchmark."""
    return similarity_of(runs).pivot_table(index=["model", "variant"], columns="benchmark", values="pearson_cosine", sort=False).reset_index()


def figure_word_similarity(runs: dict[str, WordRun], results: Writer) -> None:
    fig = grouped_bars(
        average_table(runs), "variant", ["pearson_cosine", "pearson_inner_product"], labels=["cosine", "inner product"], ylabel="average Pearson × 100"
    )
    caption = "Average Pearson × 100 of the word-similarity benchmarks for each variant of the embedding matrix, with cosine and inner product."
    average = average_table(runs)
    alt = "Average Pearson × 100 with cosine, " + "; ".join(
        f"{name}: " + ", ".join(f"{r.variant} {r.pearson_cosine:.1f}" for r in part.itertuples()) for name, part in average.groupby("model", sort=False)
    )
    results.figure(fig, "word_similarity", caption, alt=alt + ".")


def findings(runs: dict[str, WordRun]) -> list[str]:
    """What our run shows: per model, isotropy and average word similarity along the variants."""
    average, lines = average_table(runs), []
    for name, part in isotropy_of(runs).groupby("model", sort=False):
        p = part.set_index("variant")
        s = average[average["model"] == name].set_index("variant")
        lines.append(
            f"- **{name}**: I(W) {p['I1'].iloc[0]:.2f} raw → {p['I1'].iloc[1]:.2f} centered → {p['I1'].iloc[3]:.3f} post-processed; "
            f"IsoScore {p['IsoScore'].iloc[0]:.3f} → {p['IsoScore'].iloc[1]:.3f} → {p['IsoScore'].iloc[3]:.3f}. Average word-similarity Pearson (cosine) "
            f"{s['pearson_cosine'].iloc[0]:.1f} raw, {s['pearson_cosine'].iloc[1]:.1f} centered, {s['pearson_cosine'].iloc[2]:.1f} centered-scaled, "
            f"{s['pearson_cosine'].iloc[3]:.1f} post-processed."
        )
    return lines


def centering_lines(runs: dict[str, WordRun]) -> str:
    """Exercise ex-12-read: I(W) and IsoScore before and after centering, and why only one of them moves."""
    lines = []
    for name, part in isotropy_of(runs).groupby("model", sort=False):
        p = part.set_index("variant")
        lines.append(
            f"- **{name}**: I(W) {p.loc['raw', 'I1']:.3f} raw → {p.loc['centered', 'I1']:.3f} centered; "
            f"IsoScore {p.loc['raw', 'IsoScore']:.4f} → {p.loc['centered', 'IsoScore']:.4f}."
        )
    return (
        "\n".join(lines) + "\n\nI(W) sums exp(cᵀw) over the rows, so a common shift of every row changes it directly. IsoScore is computed "
        "from the covariance matrix, from which the mean has already been subtracted: centering leaves the covariance, and so IsoScore, "
        "exactly as it was."
    )


def top_pc_removal(run: WordRun) -> pd.DataFrame:
    """Exercise ex-12-d: average word similarity (cosine) after removing the top D principal components, for D = 2
    (Biš et al.'s released code) and D = ⌈d/100⌉ (the post-processed variant)."""
    w, rows = run.matrix, []
    for n_components in sorted({2, math.ceil(w.shape[1] / 100)}):
        m = {f"D={n_components}": transforms.RemoveTopPCs(n_components).fit(w).transform(w)}
        values = pd.concat([similarity_scores(m, *kept) for kept in run.pair_ids.values()])["pearson_cosine"].dropna()
        rows.append({"D": n_components, "average Pearson × 100 (cosine)": values.mean() if len(values) else np.nan, "benchmarks": len(values)})
    return pd.DataFrame(rows)


ISOTROPY = CHAPTER.table("isotropy", "model variant I1 I1_sign_low I1_sign_high I2 IsoScore average_norm mean_vector_norm ratio")


WORD_SIMILARITY = CHAPTER.table("word_similarity", "model benchmark variant pairs pairs_kept pearson_cosine pearson_inner_product")


WORD_DIFFERENCES = CHAPTER.table("paired_differences", "model benchmark contrast difference se pairs_kept draws")
DRAWS = 1000  # bootstrap resamples of a benchmark's pairs


def contrasts(names: list[str]) -> dict[str, tuple[tuple[str, str, str], ...]]:
    """The claims' comparisons among W's variants `names`, each a signed sum of (variant, similarity) scores: a label
    → ((sign, variant, "cosine" | "inner product"), …)."""
    post = next((v for v in names if v.startswith(POST_PROCESSED)), None)
    out = {f"{CENTERED} − {RAW}": (("+", CENTERED, "cosine"), ("-", RAW, "cosine"))}
    if CENTERED_SCALED in names:
        out[f"{CENTERED_SCALED} − {CENTERED}"] = (("+", CENTERED_SCALED, "cosine"), ("-", CENTERED, "cosine"))
    if post:
        out[f"{post} − {RAW}"] = (("+", post, "cosine"), ("-", RAW, "cosine"))
        gain = (("+", post, "inner product"), ("-", RAW, "inner product"), ("-", post, "cosine"), ("+", RAW, "cosine"))
        out[f"{post} − {RAW}: inner product gain − cosine gain"] = gain
    return out


def paired_differences(matrices: dict[str, np.ndarray], kept: dict[str, tuple], model: str, seed: int = 0) -> pd.DataFrame:
    """Per benchmark and contrast (`contrasts`): the difference of Pearson × 100 and its standard error from a bootstrap
    over the benchmark's kept pairs (the same resampled pairs for every variant: the pairs are what was sampled)."""
    rows, rng = [], np.random.default_rng(seed)
    for label, (a, b, gold) in kept.items():
        if len(gold) < 3:
            continue
        scores = {(variant, kind): v for variant, m in matrices.items() for kind, v in pair_scores(m, a, b).items()}
        picked = rng.integers(0, len(gold), size=(DRAWS, len(gold)))
        full = {k: metrics.pearson_x100(v, gold) for k, v in scores.items()}
        reps = {k: metrics.pearson_rows_x100(v[picked], gold[picked]) for k, v in scores.items()}
        for name, terms in contrasts(list(matrices)).items():
            sign = [1.0 if s == "+" else -1.0 for s, _, _ in terms]
            value = sum(w * full[(v, m)] for w, (_, v, m) in zip(sign, terms))
            spread = sum(w * reps[(v, m)] for w, (_, v, m) in zip(sign, terms))
            rows.append(
                {
                    "model": model,
                    "benchmark": label,
                    "contrast": name,
                    "difference": value,
                    "se": float(np.std(spread, ddof=1)),
                    "pairs_kept": len(gold),
                    "draws": DRAWS,
                }
            )
    return WORD_DIFFERENCES.frame(rows)


@CHAPTER.rule
def centering_raises_isotropy(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table).set_index("variant")
    raw, centred = t.loc[RAW], t.loc[CENTERED]
    low, high = centred["I1_sign_low"] - raw["I1_sign_high"], centred["I1_sign_high"] - raw["I1_sign_low"]  # over every sign convention
    verdict = HOLDS if low > claim.margin else FAILS if high < claim.margin else INCONCLUSIVE
    estimate = inference.Estimate(centred["I1"] - raw["I1"], low, high, "the whole matrix; the range the eigenvectors' signs allow")
    text = (
        f"I(W) {raw['I1']:.3f} raw ({raw['I1_sign_low']:.3f} to {raw['I1_sign_high']:.3f} over sign conventions), {centred['I1']:.3f} centred "
        f"({centred['I1_sign_low']:.3f} to {centred['I1_sign_high']:.3f}): a rise of {low:.3f} to {high:.3f}"
    )
    return Outcome(verdict, text, estimate, None)


MIN_PAIRS = 100  # a benchmark with fewer single-token pairs in a vocabulary is not counted (see `_word_gain`)
MIN_BENCHMARKS = 3  # the papers average five benchmarks: a mean over fewer than three is not their statistic


def benchmark_gains(t: pd.DataFrame, start: str, inner: bool = False) -> tuple[dict[str, inference.Estimate], pd.DataFrame]:
    """From a paired_differences table: per benchmark that keeps at least MIN_PAIRS pairs, the contrast whose label
    starts with `start` (with `inner`: the inner-product-minus-cosine one), a difference of Pearson × 100 with its
    bootstrap interval over the benchmark's pairs; and the rows of the benchmarks left out for fewer pairs."""
    t = t[t["contrast"].str.startswith(start) & (t["contrast"].str.contains("inner product") == inner) & t["se"].notna()]
    gains = {
        r.benchmark: inference.from_interval(
            r.difference, r.difference - inference.Z * r.se, r.difference + inference.Z * r.se, f"bootstrap over {r.pairs_kept} pairs", r.pairs_kept, "pairs"
        )
        for r in t[t["pairs_kept"] >= MIN_PAIRS].itertuples()
    }
    return gains, t[t["pairs_kept"] < MIN_PAIRS]


def _word_gain(tables: Tables, model: str, claim: Claim, start: str, inner: bool = False) -> Outcome:
    """Per benchmark, the contrast whose label starts with `start` (`benchmark_gains`): one verdict per benchmark,
    combined. A benchmark with fewer than MIN_PAIRS pairs whose words are single tokens of the model is left out: its
    interval (±10-50 points at the 29-423 pairs a 4,096-token vocabulary keeps) is wider than any effect the paper
    reports, and the paper's benchmarks have 203-3,000 pairs; with fewer than MIN_BENCHMARKS left (Biš et al. average
    five) the claim is not testable at this scale."""
    gains, small = benchmark_gains(tables.read(model, claim.chapter, WORD_DIFFERENCES.name), start, inner)
    if len(gains) < MIN_BENCHMARKS:
        few = "; ".join(f"{r.benchmark} {int(r.pairs_kept)}" for r in small.itertuples())
        return Outcome(
            UNTESTABLE,
            f"not testable at this scale: {len(gains)} benchmark{'' if len(gains) == 1 else 's'} {'keeps' if len(gains) == 1 else 'keep'} at least "
            f"{MIN_PAIRS} pairs of single-token words in this vocabulary"
            f"{f' (pairs kept: {few})' if few else ''}; a model with a larger vocabulary (the packaged ones, or longer pre-training) would test it",
        )
    units = [unit(name, e, claim.margin, of="benchmarks") for name, e in gains.items()]
    decided = from_units(units, claim, 2, " points")
    if len(small):
        left = ", ".join(f"{r.benchmark} ({int(r.pairs_kept)} pairs)" for r in small.itertuples())
        decided = replace(decided, ours=f"{decided.ours}; left out, under {MIN_PAIRS} pairs: {left}")
    return decided


def answer(runs: dict[str, WordRun]) -> list[str]:
    """The chapter's answer: how far centering raises I(W) (over every sign convention), and whether the more isotropic
    variants score better on word similarity: per variant, the change of the average Pearson over the benchmarks
    (their paired differences averaged, with its interval; one model: its value, several: their range)."""
    iso = isotropy_of(runs).set_index("variant")
    raw, centred = iso.loc[[RAW]], iso.loc[[CENTERED]]  # a frame: one row per model
    least = float((centred["I1_sign_low"].to_numpy() - raw["I1_sign_high"].to_numpy()).min())
    sentences = [
        f"Centering {'raises' if least > 0 else 'changes'} the isotropy I(W) of the input-embedding matrix (1 = isotropic): "
        f"{spread(raw['I1'], 2)} raw, {spread(centred['I1'], 2)} centered, by at least {least:.3f} whatever the eigenvectors' signs (whole matrices)."
    ]
    gains, untested, dropped = {"post-processing": [], "centering": []}, [], False
    for name, r in runs.items():
        found = {what: benchmark_gains(r.differences, start)[0] for what, start in (("post-processing", POST_PROCESSED), ("centering", f"{CENTERED} − {RAW}"))}
        if min(map(len, found.values())) < MIN_BENCHMARKS:
            untested.append(name)
            continue
        dropped |= len(found["centering"]) < r.differences["benchmark"].nunique()  # the table's average holds it, the answer not
        for what, per_benchmark in found.items():
            gains[what].append(inference.mean_of(list(per_benchmark.values()), "benchmarks"))
    if gains["centering"]:
        estimates = [e for es in gains.values() for e in es]
        lead = (
            "The more isotropic matrices do not score measurably better on word similarity"
            if all(e.low <= 0 <= e.high for e in estimates)
            else "The more isotropic matrices score better on word similarity"
            if all(e.low > 0 for e in estimates)
            else "Word similarity does not follow isotropy consistently"
        )
        changes = [
            f"by {signed(es[0].value, 2)} ({signed(es[0].low, 2)} to {signed(es[0].high, 2)})"
            if len(es) == 1
            else f"by {spread([e.value for e in es], 2, sign=True)} ({sum(e.low > 0 or e.high < 0 for e in es)} of {len(es)} intervals clear of zero)"
            for es in gains.values()
        ]
        tested = [n for n in runs if n not in untested]
        sentences.append(
            f"{lead}: post-processing changes the average Pearson × 100 {changes[0]} and centering {changes[1]} in "
            f"{tested[0] if len(tested) == 1 else f'{len(tested)} models'} (95% intervals, bootstrap over word pairs"
            + (f"; the benchmarks keeping at least {MIN_PAIRS} pairs)" if dropped else ")")
            + (f"; {' and '.join(untested)} {'keeps' if len(untested) == 1 else 'keep'} too few single-token pairs to tell." if untested else ".")
        )
    else:
        sentences.append(f"Whether word similarity follows cannot be told here: no model keeps {MIN_PAIRS} single-token pairs in {MIN_BENCHMARKS} benchmarks.")
    return sentences


@CHAPTER.rule
def postprocessing_helps(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, POST_PROCESSED)


@CHAPTER.rule
def centering_helps_words(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, f"{CENTERED} − {RAW}")


@CHAPTER.rule
def scaled_beats_centering(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, f"{CENTERED_SCALED} − {CENTERED}")


@CHAPTER.rule
def inner_product_gains_more(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, POST_PROCESSED, inner=True)
