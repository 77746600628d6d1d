"""Evaluation measures shared by the chapters: threshold accuracy (WiC), Spearman (STS) and Pearson (word similarity)."""

from __future__ import annotations

import numpy as np
from scipy.stats import pearsonr, spearmanr

from .errors import require


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


def pearson_x100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Pearson correlation × 100 (scipy), the word-similarity convention of Biš et al."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    require(predicted.shape == gold.shape and len(gold) > 2, "need at least three scored pairs")
    require(bool(np.isfinite(predicted).all()), "similarities contain NaN or infinite values")
    return 100.0 * float(pearsonr(predicted, gold).statistic)
