"""Chapter 07's experiment: word sense in context (WiC) without training (Luo et al. 2021, §4.2; thesis Table 4.1).

The cosine of the target word's two vectors predicts "same sense" above a threshold; every (layer, threshold) is
scored on the training pairs (the paper's number is the best of them) and on the development pairs. The layer and
threshold chosen on the training pairs are then scored on the development pairs, and for each variant the pairs that
only it or only the raw vectors get right are counted (the discordant pairs of a paired comparison)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core import paper
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets import tasks
from ..encode import words
from ..encode.collectors import LayerStats
from ..encode.models import LoadedModel, load_model
from ..measure import geometry, inference, metrics, outliers
from . import outlier_set, vector_variants
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, CLIPPED_RANDOM, RAW, WHITENED
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, decide, outcome
from .wording import listed, signed

CHAPTER = chapter("07_wic", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)

THRESHOLDS = np.round(np.arange(1, 10) / 10, 1)  # the paper's 0.1, 0.2, …, 0.9
VARIANTS = [RAW, CLIPPED, CLIPPED_RANDOM, WHITENED]


@dataclass(frozen=True)
class WicData:
    train: pd.DataFrame  # the training pairs the layer and threshold are chosen on
    dev: pd.DataFrame  # the development pairs they are scored on
    baseline: dict[str, float]  # always answering "same sense", % by split


def inputs(n_pairs: int, seed: int, specs: list[str]) -> WicData:
    """The WiC pairs: n_pairs training pairs (seeded) and every development pair, announced in one line."""
    train, dev = tasks.subsample(tasks.wic("train"), n_pairs, seed), tasks.wic("dev")
    print(f"WiC: {len(train):,} training pairs, {len(dev):,} development pairs; models: {', '.join(specs)}")
    return WicData(train, dev, {split: 100 * frame["same_sense"].mean() for split, frame in (("train", train), ("dev", dev))})


@dataclass(frozen=True)
class WicRun:
    grid: pd.DataFrame  # WIC_GRID
    best: pd.DataFrame  # WIC_BEST
    fit_tokens: int
    left_out: int  # pairs whose target lies beyond the model's maximum length
    name: str = ""  # the model's
    clipping: OutlierSet | None = None  # the outlier set clipped (chapter 02's)
    by_layer: pd.DataFrame | None = None  # WIC_BY_LAYER


def pair_vectors(lm: LoadedModel, frame: pd.DataFrame, collectors=(), desc: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Target-word vectors of both sentences of every pair: two (n, layers, width) arrays (NaN where the target is cut)."""
    sentences = frame["sentence1"].tolist() + frame["sentence2"].tolist()
    indices = frame["index1"].tolist() + frame["index2"].tolist()
    v = words.word_vectors(lm, sentences, indices, collectors, desc=desc)
    return v[: len(frame)], v[len(frame) :]


def _cosines(transform, pair: tuple[np.ndarray, np.ndarray], layer: int) -> np.ndarray:
    return geometry.row_cosines(transform(pair[0][:, layer]), transform(pair[1][:, layer]))


def accuracy_grid(variants: vector_variants.Variants, splits: dict[str, tuple[np.ndarray, np.ndarray]], labels: dict[str, np.ndarray]) -> pd.DataFrame:
    """Accuracy (%) of every variant, layer, split and threshold."""

    def score(transform, layer: int, variant: str) -> list[dict]:
        rows = []
        for split, pair in splits.items():
            acc = metrics.threshold_accuracies(_cosines(transform, pair, layer), labels[split], THRESHOLDS)
            rows += [{"split": split, "threshold": t, "accuracy": 100 * a} for t, a in zip(THRESHOLDS, acc)]
        return rows

    return WIC_GRID.check(variants.score(score))


def best_settings(
    grid: pd.DataFrame,
    variants: vector_variants.Variants,
    dev: tuple[np.ndarray, np.ndarray],
    dev_labels: np.ndarray,
    model: str,
    spec: str,
    cross: dict[str, np.ndarray],
    layers: list[int],
    outlier_layers: str,
) -> pd.DataFrame:
    """Per variant: the best (layer, threshold) on the training pairs among `layers` (those where the clipped dims are
    outliers, `outlier_layers` in words, "" when there are none and every layer is searched), its development accuracy,
    the best development accuracy of any setting (an optimistic bound), and the development pairs that only this variant
    or only the raw (and only the clipped) vectors get right at their chosen settings: the discordant pairs of paired
    comparisons; the same counts over the training pairs cross-fitted (`cross`: each pair decided by a setting chosen
    without it, among the same layers)."""
    chosen, correct = {}, {}
    for variant, part in grid.groupby("variant", sort=False):
        train = part[(part["split"] == "train") & part["layer"].isin(layers)]
        chosen[variant] = train.loc[train["accuracy"].idxmax()]
        layer, threshold = int(chosen[variant]["layer"]), float(chosen[variant]["threshold"])
        correct[variant] = (_cosines(variants.transforms[variant][layer].transform, dev, layer) > threshold) == dev_labels

    def only(a: str, b: str, decided: dict[str, np.ndarray] = correct) -> int | None:
        return int((decided[a] & ~decided[b]).sum()) if b in decided else None

    rows = [
        {
            "model": model,
            "spec": spec,
            "variant": variant,
            "layer": int(top["layer"]),
            "threshold": float(top["threshold"]),
            "train_accuracy": top["accuracy"],
            "dev_accuracy_of_that_choice": 100 * correct[variant].mean(),
            "dev_best_accuracy": grid[(grid["variant"] == variant) & (grid["split"] == "dev")]["accuracy"].max(),
            "dev_pairs": len(dev_labels),
            "dev_right_only_here": only(variant, RAW),
            "dev_right_only_raw": only(RAW, variant),
            "dev_right_only_here_vs_clipped": only(variant, CLIPPED),
            "dev_right_only_clipped": only(CLIPPED, variant),
            "cross_pairs": len(cross[variant]),
            "cross_accuracy": 100 * cross[variant].mean(),
            "cross_right_only_here": only(variant, RAW, cross),
            "cross_right_only_raw": only(RAW, variant, cross),
            "cross_right_only_here_vs_clipped": only(variant, CLIPPED, cross),
            "cross_right_only_clipped": only(CLIPPED, variant, cross),
            "outlier_layers": outlier_layers,
        }
        for variant, top in chosen.items()
    ]
    return WIC_BEST.frame(rows)


FOLDS = 5  # cross-fitting folds of the training pairs


def cross_fitted(
    variants: vector_variants.Variants, train: tuple[np.ndarray, np.ndarray], labels: np.ndarray, layers: list[int], seed: int = 0
) -> dict[str, np.ndarray]:
    """Per variant, whether each training pair is classified right by the (layer among `layers`, threshold) chosen on
    the other FOLDS − 1 folds (seeded folds): out-of-sample decisions on the training pairs, so that they can join the
    development pairs in a paired comparison."""
    fold = np.random.default_rng(seed).permutation(len(labels)) % FOLDS
    right = {}
    for variant, transforms in variants.transforms.items():
        cos = np.stack([_cosines(transforms[layer].transform, train, layer) for layer in layers])  # (layers, pairs)
        correct = (cos[:, None, :] > THRESHOLDS[None, :, None]) == labels[None, None, :]  # (layers, thresholds, pairs)
        out = np.zeros(len(labels), dtype=bool)
        for k in range(FOLDS):
            held = fold == k
            layer, threshold = np.unravel_index(correct[:, :, ~held].mean(axis=2).argmax(), correct.shape[:2])
            out[held] = correct[layer, threshold, held]
        right[variant] = out
    return right


def layer_differences(variants: vector_variants.Variants, grid: pd.DataFrame, train: tuple[np.ndarray, np.ndarray], labels: np.ndarray) -> pd.DataFrame:
    """Per variant other than raw and per layer: its accuracy on the training pairs at its best threshold there minus
    the raw vectors' at theirs (points), with the paired 95% interval over the pairs (`inference.paired_proportions`)."""
    scored = grid[grid["split"] == "train"]
    best = scored.loc[scored.groupby(["variant", "layer"], sort=False)["accuracy"].idxmax()].set_index(["variant", "layer"])["threshold"]

    def right(variant: str, layer: int) -> np.ndarray:
        return (_cosines(variants.transforms[variant][layer].transform, train, layer) > best[(variant, layer)]) == labels

    rows = []
    for variant in [v for v in variants.transforms if v != RAW]:
        for layer in range(variants.n_layers):
            here, raw = right(variant, layer), right(RAW, layer)
            change = inference.paired_proportions(int((here & ~raw).sum()), int((raw & ~here).sum()), len(labels), "pairs").scaled(100)
            rows.append({"variant": variant, "layer": layer, "difference": change.value, "low": change.low, "high": change.high, "pairs": len(labels)})
    return WIC_BY_LAYER.frame(rows)


def settings_near_best(grid: pd.DataFrame, n_pairs: int) -> pd.DataFrame:
    """Per variant: the best training accuracy, its binomial standard error on n_pairs pairs, and how many (layer,
    threshold) settings lie within two of those standard errors of it (settings a sample of n_pairs could not tell apart)."""
    train = grid[grid["split"] == "train"]
    top = train.groupby("variant", sort=False)["accuracy"].max()
    se = 100 * np.sqrt((top / 100) * (1 - top / 100) / n_pairs)
    near = (train["accuracy"] >= train["variant"].map(top - 2 * se)).groupby(train["variant"], sort=False).sum()
    return pd.DataFrame(
        {"variant": top.index, "best train accuracy": top.to_numpy(), f"SE at {n_pairs} pairs": se.to_numpy(), "settings within 2 SE": near.to_numpy()}
    )


def _choose(lm: LoadedModel, spec: str, train: pd.DataFrame, dev: pd.DataFrame, outlier_set: OutlierSet, protocol: str = "model") -> WicRun:
    """Encode both splits, fit the whitening on the tokens of the training sentences (no labels), score every variant."""
    stats = LayerStats(covariance=True)
    vectors = {"train": pair_vectors(lm, train, [stats], desc=f"{lm.name} train"), "dev": pair_vectors(lm, dev, desc=f"{lm.name} dev")}
    usable = {split: ~np.isnan(a[:, 0, 0]) & ~np.isnan(b[:, 0, 0]) for split, (a, b) in vectors.items()}
    splits = {split: (a[usable[split]], b[usable[split]]) for split, (a, b) in vectors.items()}
    labels = {split: frame["same_sense"].to_numpy()[usable[split]] for split, frame in (("train", train), ("dev", dev))}
    fitted = vector_variants.fit(VARIANTS, outlier_set, protocol, token_stats=stats)
    grid = accuracy_grid(fitted, splits, labels)
    counted = outlier_set.outlier_layers(protocol)  # a clipping claim is tested where there is an outlier to clip
    layers = counted or list(range(lm.n_layers + 1))
    cross = cross_fitted(fitted, splits["train"], labels["train"], layers)
    best = best_settings(grid, fitted, splits["dev"], labels["dev"], lm.name, spec, cross, layers, outliers.layer_ranges(np.asarray(counted)))
    by_layer = layer_differences(fitted, grid, splits["train"], labels["train"])
    return WicRun(grid, best, stats.count, sum(int((~u).sum()) for u in usable.values()), by_layer=by_layer)


def run(spec: str, data: WicData, *, profile: str, clip: str, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> WicRun:
    """One model: every variant's accuracy grid, the best setting chosen on the training pairs and scored on the
    development pairs, each variant's difference from raw by layer (three tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    clipping = outlier_set.outliers_of(lm, spec, profile)
    found = _choose(lm, spec, data.train, data.dev, clipping, clip)
    if found.left_out:
        print(f"{lm.name}: {found.left_out} pairs whose target lies beyond the model's maximum length are left out")
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "fit_tokens": found.fit_tokens, "clipping_set": clipping.describe()}
    results.table(found.grid, WIC_GRID, spec, parameters=parameters, model_info=info)
    results.table(found.best, WIC_BEST, spec, parameters=parameters, model_info=info)
    results.table(found.by_layer, WIC_BY_LAYER, spec, parameters=parameters, model_info=info)
    return replace(found, name=lm.name, clipping=clipping)


def best_of(runs: dict[str, WicRun]) -> pd.DataFrame:
    """Every model's best settings (the WIC_BEST rows)."""
    return pd.concat([r.best for r in runs.values()], ignore_index=True)


DISCORDANT = ["right_only_here", "right_only_raw", "right_only_here_vs_clipped", "right_only_clipped"]
DISCORDANT_WORDS = ["only this variant right", "only raw right", "only this variant right (against clipped)", "only clipped right"]


def choice_table(runs: dict[str, WicRun]) -> pd.DataFrame:
    chosen = best_of(runs)[["model", "variant", "layer", "threshold", "train_accuracy", "dev_accuracy_of_that_choice", "dev_best_accuracy"]]
    return chosen.rename(
        columns={
            "train_accuracy": "best training accuracy (%)",
            "dev_accuracy_of_that_choice": "development accuracy of that choice (%)",
            "dev_best_accuracy": "best development accuracy (%)",
        }
    )


def discordant_table(runs: dict[str, WicRun]) -> pd.DataFrame:
    counts = best_of(runs)[["model", "variant", "dev_pairs", *(f"dev_{c}" for c in DISCORDANT)]]
    return counts.rename(columns={"dev_pairs": "development pairs"} | {f"dev_{c}": w for c, w in zip(DISCORDANT, DISCORDANT_WORDS)})


def cross_table(runs: dict[str, WicRun]) -> pd.DataFrame:
    counts = best_of(runs)[["model", "variant", "cross_pairs", "cross_accuracy", *(f"cross_{c}" for c in DISCORDANT)]]
    return counts.rename(
        columns={"cross_pairs": "training pairs", "cross_accuracy": "accuracy (%)"} | {f"cross_{c}": w for c, w in zip(DISCORDANT, DISCORDANT_WORDS)}
    )


def paper_table() -> pd.DataFrame:
    """Luo et al.'s Table 1 and the thesis's Table 4.1, with the book's variant names."""
    theirs = paper.table("luo2021", "wic").rename(columns={"paper_variant": "variant"})
    return theirs.assign(variant=theirs["variant"].map({"raw": "raw", "clip": "clipped", "whiten": "whitened", "baseline": "baseline"}))


def figure_by_layer(runs: dict[str, WicRun], data: WicData, results: Writer) -> None:
    """Per model: the raw vectors' accuracy by layer (best threshold, training pairs) against always answering "same
    sense", and each variant's difference from raw with its paired 95% interval."""
    levels = {}
    for name, r in runs.items():
        raw = r.grid[(r.grid["split"] == "train") & (r.grid["variant"] == RAW)]
        levels[name] = raw.groupby("layer")["accuracy"].max().rename("value").reset_index()
    differences = {name: r.by_layer for name, r in runs.items()}
    fig = vector_variants.differences_by_layer(
        levels, differences, "accuracy (%)", "difference from raw (points)", data.baseline["train"], "always 'same sense'"
    )
    peaks = vector_variants.for_models([(n, f"{v['value'].max():.1f}% (layer {int(v.loc[v['value'].idxmax(), 'layer'])})") for n, v in levels.items()])
    alt = (
        f"{vector_variants.differences_text(differences, ' points')} The raw vectors peak at {peaks}, against "
        f"{data.baseline['train']:.1f}% for always answering 'same sense'."
    )
    caption = (
        "WiC accuracy on the training pairs at each layer's best threshold: the raw vectors (left) and each variant's difference from them "
        "with its 95% interval, paired over the same pairs (right)."
    )
    results.figure(fig, "accuracy_by_layer", caption, alt=alt)


def findings(runs: dict[str, WicRun], data: WicData) -> list[str]:
    """What our run shows: per model, the best training accuracy per variant and the development accuracy of that choice."""
    lines = []
    for name, part in best_of(runs).groupby("model", sort=False):
        p = part.set_index("variant")
        lines.append(
            f"- **{name}**: best training accuracy {p.loc['raw', 'train_accuracy']:.1f}% raw "
            f"(layer {p.loc['raw', 'layer']}, threshold {p.loc['raw', 'threshold']:.1f}), "
            f"{p.loc['clipped', 'train_accuracy']:.1f}% clipped, {p.loc['whitened', 'train_accuracy']:.1f}% whitened; chosen on train and scored on dev: "
            f"{p.loc['raw', 'dev_accuracy_of_that_choice']:.1f}% raw, {p.loc['clipped', 'dev_accuracy_of_that_choice']:.1f}% clipped, "
            f"{p.loc['whitened', 'dev_accuracy_of_that_choice']:.1f}% whitened, {p.loc['clipped-random', 'dev_accuracy_of_that_choice']:.1f}% with as many "
            f"random dimensions zeroed as clipping zeroes (baseline {data.baseline['dev']:.1f}%)."
        )
    return lines


def answer(runs: dict[str, WicRun], data: WicData) -> list[str]:
    """The chapter's answer: how much clipping and whitening change WiC accuracy when every pair is decided by a layer and
    threshold chosen without it (paired 95% intervals over the development and cross-fitted training pairs), whether
    any change is clear of zero, and the raw vectors' level against always answering "same sense"."""
    best = best_of(runs)
    models = list(dict.fromkeys(best["model"]))
    rows = best.set_index(["model", "variant"])
    changes = {v: [_paired(rows.loc[(m, v)], "right_only_here", "right_only_raw") for m in models] for v in (CLIPPED, WHITENED)}
    clear = [f"{v} for {m} ({signed(e.value)})" for v, es in changes.items() for m, e in zip(models, es) if e.low > 0 or e.high < 0]
    pairs = " or ".join(f"{n:,}" for n in sorted({int(r.dev_pairs + r.cross_pairs) for r in best.itertuples()}))
    raw = listed([f"{rows.loc[(m, RAW), 'dev_accuracy_of_that_choice']:.1f}%" for m in models])
    return [
        f"Scored on pairs that the chosen layer and threshold never saw ({pairs} per model), clipping the outlier dimensions changes the WiC "
        f"accuracy of {listed(models)} by {vector_variants.changes_text([(e.value, e.low, e.high) for e in changes[CLIPPED]], ' points')}; "
        f"whitening by {vector_variants.changes_text([(e.value, e.low, e.high) for e in changes[WHITENED]])}.",
        ("Only " + listed(clear) + " is clear of zero" if clear else "None of these intervals excludes zero")
        + f"; the raw vectors reach {raw} on the {len(data.dev):,} development pairs, against {data.baseline['dev']:.1f}% for always answering "
        "'same sense'.",
    ]


def optimism_lines(runs: dict[str, WicRun], data: WicData) -> str:
    """Exercise ex-07-read: what the training-chosen setting scores on dev against the best dev setting."""
    return (
        "\n".join(
            f"- **{r.model}**, {r.variant}: layer {r.layer}, threshold {r.threshold:g} → development {r.dev_accuracy_of_that_choice:.1f}, "
            f"best development setting {r.dev_best_accuracy:.1f} ({r.dev_best_accuracy - r.dev_accuracy_of_that_choice:.1f} points more)."
            for r in best_of(runs).itertuples()
        )
        + "\n\nThe best development accuracy is chosen on the development pairs themselves, out of "
        f"{len(THRESHOLDS)} thresholds × every layer, so it profits from the noise of those {len(data.dev):,} pairs: it is an upper bound, not a score."
    )


def near_best(runs: dict[str, WicRun], n_pairs: int) -> pd.DataFrame:
    """Exercise ex-07-sample: per model, the settings an n_pairs sample could not tell apart from the best."""
    close = pd.concat([settings_near_best(r.grid, n_pairs).assign(model=name) for name, r in runs.items()], ignore_index=True)
    return close[["model", *close.columns[:-1]]]


WIC_GRID = CHAPTER.table("accuracy_grid", "variant layer split threshold accuracy")


WIC_BY_LAYER = CHAPTER.table("differences_by_layer", "variant layer difference low high pairs")


WIC_BEST = CHAPTER.table(
    "best",
    "model spec variant layer threshold train_accuracy dev_accuracy_of_that_choice dev_best_accuracy dev_pairs dev_right_only_here dev_right_only_raw "
    "dev_right_only_here_vs_clipped dev_right_only_clipped cross_pairs cross_accuracy cross_right_only_here cross_right_only_raw "
    "cross_right_only_here_vs_clipped cross_right_only_clipped outlier_layers",
)


def _paired(row: pd.Series, here: str, there: str) -> inference.Estimate:
    """Accuracy difference (points) over the development pairs and the cross-fitted training pairs together: every
    decision made by a setting chosen without the pair it decides."""
    n = int(row["dev_pairs"] + row["cross_pairs"])
    return inference.paired_proportions(int(row[f"dev_{here}"] + row[f"cross_{here}"]), int(row[f"dev_{there}"] + row[f"cross_{there}"]), n, "pairs").scaled(
        100
    )


def _wic(tables: Tables, model: str, claim: Claim) -> pd.DataFrame:
    return tables.read(model, claim.chapter, claim.table).set_index("variant")


NO_OUTLIER_LAYER = "not testable: the clipped dims are flagged outliers in no layer of this model (nothing for clipping or whitening to remove)"


def _layers(t: pd.DataFrame) -> str:
    """The layers the settings were chosen among, "" when the clipped dims are outliers in none."""
    value = t["outlier_layers"].iloc[0]
    return "" if pd.isna(value) else str(value)


@CHAPTER.rule
def wic_clipping_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _wic(tables, model, claim)
    if not _layers(t):
        return Outcome(UNTESTABLE, NO_OUTLIER_LAYER)
    c = t.loc[CLIPPED]
    estimate = _paired(c, "right_only_here", "right_only_raw")
    raw_acc, clip_acc = t.loc[RAW, "dev_accuracy_of_that_choice"], c["dev_accuracy_of_that_choice"]
    control = f"as many random dims zeroed: {t.loc[CLIPPED_RANDOM, 'dev_accuracy_of_that_choice'] - raw_acc:+.1f} points" if CLIPPED_RANDOM in t.index else ""
    text = (
        f"settings chosen among layers {_layers(t)} (where the clipped dims are outliers): "
        f"development accuracy {raw_acc:.1f} raw, {clip_acc:.1f} clipped; over the {int(c['dev_pairs'])} development and "
        f"{int(c['cross_pairs'])} cross-fitted training pairs: {estimate.text(1, ' points')}"
    )
    return outcome(decide(estimate, claim.margin), text, estimate, control)


@CHAPTER.rule
def wic_whitening_beats_clipping(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _wic(tables, model, claim)
    if not _layers(t):
        return Outcome(UNTESTABLE, NO_OUTLIER_LAYER)
    w = t.loc[WHITENED]
    estimate = _paired(w, "right_only_here_vs_clipped", "right_only_clipped")
    accuracy = t["dev_accuracy_of_that_choice"]
    text = (
        f"settings chosen among layers {_layers(t)}: development accuracy {accuracy['clipped']:.1f} clipped, {accuracy['whitened']:.1f} whitened; "
        f"over the {int(w['dev_pairs'])} development and "
        f"{int(w['cross_pairs'])} cross-fitted training pairs: {estimate.text(1, ' points')}"
    )
    return outcome(decide(estimate, claim.margin), text, estimate)
