"""Chapter 09's experiment: linear classifiers on frozen sentence vectors (Luo et al. 2021, §4.4, Table 3), one per
task, variant and layer. The classifier is the paper's W (optionally with a bias), fitted to convergence as a logistic
regression with the L2 strength chosen on the development sample (`probe.fit_classifier`); the transforms are fitted on
the training texts (and further unlabelled training texts up to n_fit), never on the development or test texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core import paper
from ..core.declaration import chapter
from ..core.sources import names
from ..core.store import Writer
from ..datasets.tasks import CLASSIFICATION_TASKS, classification_splits, unlabelled_texts
from ..encode.features import PARTS, Features, task_features
from ..encode.models import LoadedModel, load_model
from ..errors import require
from ..measure import inference
from ..train import probe
from . import outlier_set, vector_variants
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, RAW, WHITENED
from .verdicts import NOT_RUN, UNTESTABLE, Claim, Outcome, Tables, from_units, unit
from .wording import listed, signed

CHAPTER = chapter("09_supervised", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)

Split = tuple[list[str], np.ndarray]  # texts and integer labels (-1: unlabelled)


@dataclass
class TaskRun:
    table: pd.DataFrame  # FROZEN_ACCURACY
    correct: dict[tuple[str, int], np.ndarray]  # (variant, layer) -> which test examples its classifier gets right


def classify(
    variants: vector_variants.Variants, vectors: dict[str, np.ndarray], labels: dict[str, np.ndarray], task: str, fit_texts: int, bias: bool
) -> TaskRun:
    """Development and test accuracy (%) of a classifier fitted on the training vectors, for every variant and layer,
    and which test examples each gets right (for paired comparisons)."""
    correct = {}

    def score(transform, layer: int, variant: str) -> dict:
        x = {split: transform(v[:, layer]).astype(np.float32) for split, v in vectors.items()}
        model = probe.fit_classifier(x["train"], labels["train"], x["dev"], labels["dev"], bias=bias)
        correct[(variant, layer)] = model.predict(x["test"]) == labels["test"]
        return {
            "task": task,
            "dev_accuracy": 100 * model.dev_accuracy[model.c],
            "test_accuracy": 100 * model.accuracy(x["test"], labels["test"]),
            "C": model.c,
            "converged": model.converged,
            "clipped_dims": len(variants.clipped_dims(layer, variant)),
            "whitening_fit_texts": fit_texts,
        }

    table = variants.score(score, desc=f"{task} classifiers")
    return TaskRun(FROZEN_ACCURACY.check(table[list(FROZEN_ACCURACY.columns)]), correct)


def task_data(parameters: Mapping[str, Any]) -> dict[str, dict[str, Split]]:
    """Chapter 09's samples by task, from its parameters (its cell's namespace, or the values a build plans for it),
    each checked: train, dev and test, and `fit`, the unlabelled training texts that with the training sample make the
    n_fit texts the whitening is fitted on. The chapter and its extraction ahead (`lib.edition.features`) both call this."""
    tasks = names(parameters["tasks"], "tasks", CLASSIFICATION_TASKS)
    sizes = {name: parameters[name] for name in ("n_train", "n_dev", "n_test", "n_fit")}
    for table in sizes.values():
        require(isinstance(table, dict) and set(tasks) <= set(table), f"n_train, n_dev, n_test and n_fit need an entry for every task ({', '.join(tasks)})")
    seed, data = int(parameters["seed"]), {}
    for task in tasks:
        splits = classification_splits(task, sizes["n_train"][task], sizes["n_dev"][task], n_test=sizes["n_test"][task], seed=seed)
        extra = max(0, sizes["n_fit"][task] - len(splits["train"][0]))
        unlabelled = unlabelled_texts(task, extra, splits["train"][0] + splits["dev"][0] + splits["test"][0], seed=seed) if extra else []
        data[task] = splits | {"fit": (unlabelled, np.full(len(unlabelled), -1))}
    return data


def features(
    lm: LoadedModel, task: str, splits: dict[str, Split], wanted: list[str], pool_special: bool = True, parts: Sequence[str] = tuple(PARTS)
) -> Features:
    """Every split pooled once, and the fitting texts' token moments when token whitening is wanted, from the run
    cache when a build extracted them ahead of the chapter (`encode.features`; `parts`: only these)."""
    texts = {split: list(t) for split, (t, _) in splits.items()}
    return task_features(lm, CLASSIFICATION_TASKS[task], texts, moments=WHITENED in wanted, include_special=pool_special, parts=parts)


def _task(
    lm: LoadedModel,
    task: str,
    splits: dict[str, Split],
    outlier_set: OutlierSet,
    wanted: list[str],
    bias: bool = False,
    pool_special: bool = True,
    protocol: str = "model",
) -> TaskRun:
    """Fit the variants on the training texts plus the unlabelled `fit` texts (token moments for WHITENED, pooled
    vectors for WHITENED_SENTENCES); score every variant and layer. task: a key of CLASSIFICATION_TASKS."""
    found = features(lm, task, splits, wanted, pool_special)
    vectors = dict(found.vectors)
    fit_vectors = np.concatenate([vectors["train"]] + ([vectors.pop("fit")] if "fit" in vectors else []))
    fitted = vector_variants.fit(wanted, outlier_set, protocol, token_stats=found.moments, sentence_vectors=fit_vectors)
    labels = {split: y for split, (_, y) in splits.items() if split != "fit"}
    return classify(fitted, vectors, labels, CLASSIFICATION_TASKS[task], len(fit_vectors), bias)


def best(runs: list[TaskRun], model: str, spec: str, layers: list[int]) -> pd.DataFrame:
    """Per task and variant: the best test accuracy over layers (the paper's number), the test accuracy of the layer
    with the best development accuracy, and the paired comparison with the raw vectors at one common layer (`paired_layer`:
    the raw classifier's best development layer among `layers`, those where the clipped dimensions are outliers, so that
    a difference is clipping's and not a change of layer): the test examples only this variant or only the raw vectors
    get right there. Without such a layer the paired columns are empty."""
    rows = []
    for run in runs:
        for (task, variant), part in run.table.groupby(["task", "variant"], sort=False):
            top, chosen = part.loc[part["test_accuracy"].idxmax()], part.loc[part["dev_accuracy"].idxmax()]
            raw = run.table[(run.table["task"] == task) & (run.table["variant"] == RAW) & run.table["layer"].isin(layers)]
            row = {
                "model": model,
                "spec": spec,
                "task": task,
                "variant": variant,
                "best_test": top["test_accuracy"],
                "best_test_layer": int(top["layer"]),
                "test_at_best_dev_layer": chosen["test_accuracy"],
                "best_dev_layer": int(chosen["layer"]),
            }
            if len(raw):
                layer = int(raw.loc[raw["dev_accuracy"].idxmax(), "layer"])
                here, base = run.correct[(variant, layer)], run.correct[(RAW, layer)]
                row |= {"paired_layer": layer, "test_examples": len(here)}
                row |= {"test_right_only_here": int((here & ~base).sum()), "test_right_only_raw": int((base & ~here).sum())}
            rows.append(row)
    return FROZEN_BEST.check(pd.DataFrame(rows).reindex(columns=list(FROZEN_BEST.columns)))


def layer_differences(runs: list[TaskRun]) -> pd.DataFrame:
    """Per task, variant other than raw and layer: its test accuracy minus the raw vectors' at the same layer (points),
    with the paired 95% interval over the test examples (`inference.paired_proportions`)."""
    rows = []
    for run in runs:
        for (variant, layer), here in run.correct.items():
            if variant != RAW:
                raw = run.correct[(RAW, layer)]
                change = inference.paired_proportions(int((here & ~raw).sum()), int((raw & ~here).sum()), len(raw), "test examples").scaled(100)
                rows.append(
                    {"task": run.table["task"].iloc[0], "variant": variant, "layer": layer, "difference": change.value, "low": change.low, "high": change.high}
                    | {"examples": len(raw)}
                )
    return FROZEN_BY_LAYER.frame(rows)


def samples_table(data: dict[str, dict[str, Split]]) -> pd.DataFrame:
    """Examples used per task: classes, the three samples and the texts whitening is fitted on."""
    return pd.DataFrame(
        [
            {
                "task": CLASSIFICATION_TASKS[t],
                "classes": len(np.unique(d["train"][1])),
                **{s: len(d[s][0]) for s in ("train", "dev", "test")},
                "whitening fitted on": len(d["train"][0]) + len(d["fit"][0]),
            }
            for t, d in data.items()
        ]
    )


@dataclass(frozen=True)
class ModelRun:
    name: str  # the model's
    table: pd.DataFrame  # FROZEN_ACCURACY: every task, variant and layer
    summary: pd.DataFrame  # FROZEN_BEST
    clipping: OutlierSet  # chapter 02's outlier set, clipped
    by_layer: pd.DataFrame | None = None  # FROZEN_BY_LAYER


def run(
    spec: str,
    data: dict[str, dict[str, Split]],
    *,
    profile: str,
    wanted: list[str],
    bias: bool,
    pool_special: bool,
    clip: str,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> ModelRun:
    """One model: a classifier per task, variant and layer on its frozen sentence vectors (features a parallel build
    extracted ahead come from the cache), the best accuracies and each variant's difference from raw by layer (three
    tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    clipping = outlier_set.outliers_of(lm, spec, profile)
    tasks = [_task(lm, t, data[t], outlier_set=clipping, wanted=wanted, bias=bias, pool_special=pool_special, protocol=clip) for t in data]
    table = pd.concat([task.table for task in tasks], ignore_index=True)
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "clipping_set": clipping.describe()}
    results.table(table, FROZEN_ACCURACY, spec, parameters=parameters, model_info=info)
    summary = best(tasks, lm.name, spec, clipping.outlier_layers(clip))
    results.table(summary, FROZEN_BEST, spec, parameters=parameters, model_info=info)
    by_layer = layer_differences(tasks)
    results.table(by_layer, FROZEN_BY_LAYER, spec, parameters=parameters, model_info=info)
    return ModelRun(lm.name, table, summary, clipping, by_layer)


def summary_of(runs: dict[str, ModelRun]) -> pd.DataFrame:
    return pd.concat([r.summary for r in runs.values()], ignore_index=True)


def summary_table(runs: dict[str, ModelRun]) -> pd.DataFrame:
    """The best accuracies per model, task and variant, with column names in words (the paired counts behind the
    comparison with raw are in the result table, not on the page, where they would widen it past the column)."""
    return (
        summary_of(runs)
        .drop(columns=["spec", "test_examples", "test_right_only_here", "test_right_only_raw"], errors="ignore")
        .rename(
            columns={
                "best_test": "best test accuracy",
                "best_test_layer": "its layer",
                "test_at_best_dev_layer": "test accuracy at the best development layer",
                "best_dev_layer": "best development layer",
                "paired_layer": "layer compared with raw",
                "test_examples": "test examples",
                "test_right_only_here": "only this variant right",
                "test_right_only_raw": "only raw right",
            }
        )
    )


def convergence_note(runs: dict[str, ModelRun]) -> str:
    """How many classifiers converged, and how often the weakest L2 strength was chosen."""
    fits, weakest = pd.concat([r.table for r in runs.values()]), max(probe.DEFAULT_CS)
    return (
        f"{int(fits['converged'].sum())} of {len(fits)} classifiers (one per model, task, variant and layer, at the L2 strength "
        f"chosen on the development sample) converged; the chosen strength was the weakest one tried (C = {weakest:g}) "
        f"for {int((fits['C'] == weakest).sum())} of them."
    )


def paper_table() -> pd.DataFrame:
    """Luo et al.'s Table 3 with the book's task and variant names."""
    theirs = paper.table("luo2021", "supervised").rename(columns={"paper_task": "task"})
    return theirs.assign(variant=theirs["paper_variant"].map({"raw": "raw", "clip": "clipped"}))


def figures_by_layer(runs: dict[str, ModelRun], data: dict[str, dict[str, Split]], results: Writer) -> None:
    """Per task: the raw vectors' test accuracy by layer against always answering the test sample's most frequent class,
    and each variant's difference from raw with its paired 95% interval, by model."""
    for key, splits in data.items():
        task, labels = CLASSIFICATION_TASKS[key], splits["test"][1]
        majority = 100 * np.bincount(labels).max() / len(labels)
        levels = {}
        for name, r in runs.items():
            raw = r.table[(r.table["task"] == task) & (r.table["variant"] == RAW)]
            levels[name] = raw[["layer", "test_accuracy"]].rename(columns={"test_accuracy": "value"})
        differences = {name: r.by_layer[r.by_layer["task"] == task] for name, r in runs.items()}
        fig = vector_variants.differences_by_layer(
            levels, differences, f"{task} test accuracy (%)", "difference from raw (points)", majority, "most frequent class"
        )
        peaks = vector_variants.for_models([(n, f"{v['value'].max():.1f}% (layer {int(v.loc[v['value'].idxmax(), 'layer'])})") for n, v in levels.items()])
        alt = (
            f"{vector_variants.differences_text(differences, ' points')} The raw vectors peak at {peaks}, against {majority:.1f}% for "
            f"always answering the most frequent class of {task}."
        )
        caption = (
            f"{task}: test accuracy of a logistic-regression classifier on each layer's sentence vectors: the raw vectors (left) and each variant's "
            f"difference from them with its 95% interval, paired over the same {len(labels):,} test examples (right)."
        )
        results.figure(fig, f"accuracy_by_layer_{task}", caption, alt=alt)


def findings(runs: dict[str, ModelRun]) -> list[str]:
    """What our run shows: per model and task, the best test accuracy of each variant against the raw vectors'."""
    lines = []
    for (name, task), part in summary_of(runs).groupby(["model", "task"], sort=False):
        p = part.set_index("variant")["best_test"]
        others = ", ".join(f"{p[v]:.1f}% {v} ({signed(p[v] - p['raw'])})" for v in p.index if v != "raw")
        lines.append(f"- **{name}, {task}**: best test accuracy {p['raw']:.1f}% raw, {others}.")
    return lines


def answer(runs: dict[str, ModelRun]) -> list[str]:
    """The chapter's answer: what clipping and whitening change in test accuracy at one layer per model and task (the raw
    classifier's choice on the development sample, among the layers where the clipped dimensions are outliers), where the
    paired 95% interval over the test examples excludes zero, beside the largest change the paper reports."""
    compared = summary_of(runs).dropna(subset=["paired_layer"])
    if CLIPPED not in compared["variant"].values:
        return ["Clipping was not compared with the raw vectors: it was not run, or no model has a layer where its clipped dimensions are outliers."]
    changes = {
        (r.variant, r.model, r.task): inference.paired_proportions(
            int(r.test_right_only_here), int(r.test_right_only_raw), int(r.test_examples), "examples"
        ).scaled(100)
        for r in compared.itertuples()
        if r.variant != RAW
    }

    def change(variant: str) -> str:
        mine = {(m, t): e for (v, m, t), e in changes.items() if v == variant}
        clear = [f"{t} with {m} ({signed(e.value)}, {signed(e.low)} to {signed(e.high)})" for (m, t), e in mine.items() if e.low > 0 or e.high < 0]
        values = [e.value for e in mine.values()]
        where = f"only for {listed(clear)}" if clear else "for none of them"
        span = f"{signed(min(values))} to {signed(max(values))} points"
        return f"{span} across the {len(mine)} pairs of model and task, its paired 95% interval clear of zero {where}"

    theirs = paper_table().pivot_table(index=["model", "task"], columns="variant", values="paper_accuracy_percent")
    widths = [e.high - e.low for (v, _, _), e in changes.items() if v == CLIPPED]
    examples = sorted({int(n) for n in compared["test_examples"]})
    lines = [f"At one layer per model and task, chosen on the development sample, clipping changes test accuracy by {change(CLIPPED)}."]
    if WHITENED in compared["variant"].values:
        lines.append(f"Whitening changes it by {change(WHITENED)}.")
    lines.append(
        f"Luo et al. report clipping changes of at most {float((theirs[CLIPPED] - theirs[RAW]).abs().max()):.1f} points; our intervals are "
        f"{min(widths):.1f} to {max(widths):.1f} points wide ({examples[0]:,} to {examples[-1]:,} test examples)."
    )
    return lines


def dev_choice_gaps(runs: dict[str, ModelRun], wanted: list[str]) -> pd.DataFrame:
    """Exercise ex-09-read: each variant's test accuracy at its dev-chosen layer, minus the raw vectors'."""
    chosen = summary_of(runs).pivot_table(index=["model", "task"], columns="variant", values="test_at_best_dev_layer", sort=False)
    return chosen[wanted[1:]].sub(chosen["raw"], axis=0).add_suffix(" − raw").reset_index()


def chosen_strengths(runs: dict[str, ModelRun]) -> pd.DataFrame:
    """Exercise ex-09-regularisation: the inverse L2 strength C chosen on the development sample, over layers."""
    fits = pd.concat([r.table.assign(model=name) for name, r in runs.items()], ignore_index=True)
    chosen = fits.groupby(["model", "task", "variant"], sort=False)["C"].agg(["median", "min", "max"]).reset_index()
    return chosen.rename(columns={"median": "median C", "min": "smallest C", "max": "largest C"})


FROZEN_ACCURACY = CHAPTER.table("accuracy_by_layer", "task variant layer dev_accuracy test_accuracy C converged clipped_dims whitening_fit_texts")


FROZEN_BY_LAYER = CHAPTER.table("differences_by_layer", "task variant layer difference low high examples")


FROZEN_BEST = CHAPTER.table(
    "best",
    "model spec task variant best_test best_test_layer test_at_best_dev_layer best_dev_layer paired_layer test_examples test_right_only_here "
    "test_right_only_raw",
)


@CHAPTER.rule
def supervised_clipping_small(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table).set_index(["task", "variant"])
    tasks = list(dict.fromkeys(t.index.get_level_values("task")))
    if CLIPPED not in t.index.get_level_values("variant"):
        return Outcome(NOT_RUN, "no clipped classifiers")
    accuracy = tables.read(model, claim.chapter, "accuracy_by_layer")
    if accuracy is not None and (accuracy.loc[accuracy["variant"] == CLIPPED, "clipped_dims"] == 0).all():
        return Outcome(UNTESTABLE, "nothing is clipped in this model (no model-level outlier dimension): the two classifiers are the same")
    units = []
    for task in tasks:
        r = t.loc[(task, CLIPPED)]
        if pd.isna(r["paired_layer"]):
            return Outcome(UNTESTABLE, "the clipped dims are flagged outliers in no layer of this model: no layer to compare clipped and raw at")
        estimate = inference.paired_proportions(int(r["test_right_only_here"]), int(r["test_right_only_raw"]), int(r["test_examples"]), "test examples")
        units.append(unit(f"{task} (layer {int(r['paired_layer'])})", estimate.scaled(100), claim.margin, "within", of="tasks"))
    return from_units(units, claim, 1, " points")
