"""Chapter 09's experiment: linear classifiers on frozen sentence vectors (Luo et al. 2021, §4.4, Table 3), one per
task, variant and layer. The classifier is the paper's W (optionally with a bias), fitted to convergence as a logistic
regression with the L2 strength chosen on the development sample (`probe.fit_classifier`); the transforms are fitted on
the training texts (and further unlabelled training texts up to n_fit), never on the development or test texts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..encode.collectors import LayerStats, SentenceMeans
from ..encode.extraction import extract
from ..encode.models import LoadedModel
from ..train import probe
from . import variants as variants_
from .outlier_set import OutlierSet
from .schemas import FROZEN_ACCURACY, FROZEN_BEST

Split = tuple[list[str], np.ndarray]  # texts and integer labels (-1: unlabelled)


def classify(
    variants: variants_.Variants, vectors: dict[str, np.ndarray], labels: dict[str, np.ndarray], task: str, fit_texts: int, bias: bool
) -> pd.DataFrame:
    """Development and test accuracy (%) of a classifier fitted on the training vectors, for every variant and layer."""

    def score(transform, layer: int, variant: str) -> dict:
        x = {split: transform(v[:, layer]).astype(np.float32) for split, v in vectors.items()}
        model = probe.fit_classifier(x["train"], labels["train"], x["dev"], labels["dev"], bias=bias)
        return {
            "task": task,
            "dev_accuracy": 100 * model.dev_accuracy[model.c],
            "test_accuracy": 100 * model.accuracy(x["test"], labels["test"]),
            "C": model.c,
            "converged": model.converged,
            "clipped_dims": len(variants.clipped_dims(layer)) if variant == "clipped" else 0,
            "whitening_fit_texts": fit_texts,
        }

    table = variants.score(score, desc=f"{task} classifiers")
    return FROZEN_ACCURACY.check(table[list(FROZEN_ACCURACY.columns)])


def run_task(
    lm: LoadedModel,
    task: str,
    splits: dict[str, Split],
    outlier_set: OutlierSet,
    wanted: list[str],
    bias: bool = False,
    pool_special: bool = True,
    protocol: str = "model",
) -> pd.DataFrame:
    """Pool every split once; fit the variants on the training texts plus the unlabelled `fit` texts (token moments
    for "whitened", pooled vectors for "whitened-sentences"); score every variant and layer."""
    stats = LayerStats(covariance="whitened" in wanted)
    pooled = {}
    for split, (texts, _) in splits.items():
        if texts:
            pooled[split] = SentenceMeans(len(texts), include_special=pool_special)
            extract(lm, texts, [pooled[split]] + ([stats] if split in ("train", "fit") else []), desc=f"{lm.name} {task} {split}")
    vectors = {split: p.result() for split, p in pooled.items()}
    fit_vectors = np.concatenate([vectors["train"]] + ([vectors.pop("fit")] if "fit" in vectors else []))
    fitted = variants_.fit(wanted, outlier_set, protocol, token_stats=stats, sentence_vectors=fit_vectors)
    labels = {split: y for split, (_, y) in splits.items() if split != "fit"}
    return classify(fitted, vectors, labels, task, len(fit_vectors), bias)


def best(table: pd.DataFrame, model: str, spec: str) -> pd.DataFrame:
    """Per task and variant: the best test accuracy over layers (the paper's number) and the test accuracy of the layer
    with the best development accuracy."""
    rows = []
    for (task, variant), part in table.groupby(["task", "variant"], sort=False):
        top, chosen = part.loc[part["test_accuracy"].idxmax()], part.loc[part["dev_accuracy"].idxmax()]
        rows.append(
            {
                "model": model,
                "spec": spec,
                "task": task,
                "variant": variant,
                "best_test": top["test_accuracy"],
                "best_test_layer": int(top["layer"]),
                "test_at_best_dev_layer": chosen["test_accuracy"],
                "best_dev_layer": int(chosen["layer"]),
            }
        )
    return FROZEN_BEST.frame(rows)
