"""Evaluation measures shared by the chapters: threshold accuracy (WiC), Spearman (STS), Pearson (word similarity),
the GLUE task metrics (fine-tuning), t-tests and a paired perplexity ratio (pre-training)."""

from __future__ import annotations

import numpy as np
from scipy.stats import bootstrap, pearsonr, rankdata, spearmanr, ttest_ind
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from ..errors import require


def threshold_accuracies(scores: np.ndarray, labels: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Accuracy of predicting `True` when score > threshold, for each threshold."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    require(scores.shape == labels.shape and scores.ndim == 1 and len(scores) > 0, "need one score per label")
    return ((scores[None, :] > np.asarray(thresholds, dtype=np.float64)[:, None]) == labels[None, :]).mean(axis=1)


def spearman_x100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman rank correlation × 100 (scipy), the STS convention."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    require(predicted.shape == gold.shape and len(gold) > 2, "need at least three scored pairs")
    require(bool(np.isfinite(predicted).all()), "similarities contain NaN or infinite values")
    return 100.0 * float(spearmanr(predicted, gold).statistic)


def pearson_rows_x100(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Pearson correlation × 100 of each row of `predicted` with the same row of `gold` (resamples × items)."""
    x, y = predicted - predicted.mean(axis=1, keepdims=True), gold - gold.mean(axis=1, keepdims=True)
    return 100 * (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))


def spearman_rows_x100(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman correlation × 100 of each row with the same row of `gold`: Pearson of the ranks (ties averaged)."""
    return pearson_rows_x100(rankdata(predicted, axis=1), rankdata(gold, axis=1))


def pearson_x100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Pearson correlation × 100 (scipy), the word-similarity convention of Biš et al."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    require(predicted.shape == gold.shape and len(gold) > 2, "need at least three scored pairs")
    require(bool(np.isfinite(predicted).all()), "similarities contain NaN or infinite values")
    return 100.0 * float(pearsonr(predicted, gold).statistic)


def glue_score(metric: str, gold: np.ndarray, predicted: np.ndarray) -> float:
    """A GLUE metric × 100: accuracy, f1 (positive class 1), matthews (correlation) or pearson (regression);
    scikit-learn / scipy. A constant prediction has Matthews 0 and, for Pearson, NaN (undefined) — as in the paper."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    require(gold.shape == predicted.shape and len(gold) > 0, "need one prediction per gold label")
    if metric == "pearson":
        return float("nan") if np.ptp(predicted) == 0 else 100.0 * float(pearsonr(predicted.astype(float), gold.astype(float)).statistic)
    scorer = {"accuracy": accuracy_score, "f1": f1_score, "matthews": matthews_corrcoef}
    require(metric in scorer, f"unknown GLUE metric {metric!r}; known: accuracy, f1, matthews, pearson")
    return 100.0 * float(scorer[metric](gold.astype(int), predicted.astype(int)))


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of a two-sample t-test (unequal variances) between two sets of runs; NaN when undefined."""
    return _t_test_p(a, b, equal_var=False)


def student_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of Student's two-sample t-test (pooled variance, as Ding et al. use); NaN when undefined."""
    return _t_test_p(a, b, equal_var=True)


def _t_test_p(a: np.ndarray, b: np.ndarray, equal_var: bool) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2 or np.isnan(a).any() or np.isnan(b).any() or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return float("nan")
    return float(ttest_ind(a, b, equal_var=equal_var).pvalue)


def perplexity_ratio(sums_a: np.ndarray, sums_b: np.ndarray, counts: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> tuple[float, float, float]:
    """Perplexity of model b over that of model a on the same blocks (per block: summed token losses and token counts,
    the same masking for both), with a 95% paired bootstrap interval over blocks (scipy's BCa): (ratio, low, high).
    The interval covers the choice of validation blocks, not the randomness of training."""
    sums_a, sums_b, counts = (np.asarray(x, dtype=float) for x in (sums_a, sums_b, counts))
    require(sums_a.shape == sums_b.shape == counts.shape and len(counts) > 1, "need per-block losses of both models on the same blocks")

    def ratio(a: np.ndarray, b: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.exp((b.sum(axis=axis) - a.sum(axis=axis)) / n.sum(axis=axis))

    result = bootstrap((sums_a, sums_b, counts), ratio, paired=True, vectorized=True, n_resamples=n_resamples, rng=np.random.default_rng(seed))
    return float(ratio(sums_a, sums_b, counts)), float(result.confidence_interval.low), float(result.confidence_interval.high)
