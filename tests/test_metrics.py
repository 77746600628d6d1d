"""Threshold accuracy, Spearman and the paired perplexity ratio against direct computation and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from lib.errors import BookError
from lib.measure import metrics
from lib.measure.metrics import spearman_x100, threshold_accuracies


def test_threshold_accuracy_counts_predictions():
    scores = np.array([0.05, 0.35, 0.55, 0.95])
    labels = np.array([False, False, True, True])
    acc = threshold_accuracies(scores, labels, np.array([0.1, 0.5, 0.9]))
    assert acc.tolist() == [0.75, 1.0, 0.75]
    with pytest.raises(BookError):
        threshold_accuracies(scores, labels[:3], np.array([0.5]))


def test_spearman_matches_pearson_of_ranks_including_ties():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 6, 200).astype(float)  # many ties, as in STS gold scores
    pred = gold + rng.normal(scale=2.0, size=200)
    expected = 100 * np.corrcoef(rankdata(pred), rankdata(gold))[0, 1]
    assert spearman_x100(pred, gold) == pytest.approx(expected)
    assert spearman_x100(gold, gold) == pytest.approx(100.0)
    with pytest.raises(BookError, match="NaN"):
        spearman_x100(np.array([1.0, np.nan, 2.0]), np.array([1.0, 2.0, 3.0]))


def test_glove_sentence_vectors_average_known_words():
    from lib.datasets import glove

    index, matrix = glove.vectors()
    assert matrix.shape == (400000, 50) and index["the"] == 0
    out, coverage = glove.sentence_vectors(["The cat, zzzqqqxx.", "zzzqqqxx"])
    expected = matrix[[index["the"], index["cat"], index[","], index["."]]].mean(axis=0)
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
    assert (out[1] == 0).all() and coverage == pytest.approx(4 / 6)
    words, word_coverage = glove.sentence_vectors(["The cat, zzzqqqxx.", "zzzqqqxx"], punctuation=False)
    np.testing.assert_allclose(words[0], matrix[[index["the"], index["cat"]]].mean(axis=0), rtol=1e-6)
    assert word_coverage == pytest.approx(2 / 4)


def test_pearson_matches_numpy():
    from lib.measure.metrics import pearson_x100

    rng = np.random.default_rng(1)
    a, b = rng.normal(size=50), rng.normal(size=50)
    assert pearson_x100(a, a + b) == pytest.approx(100 * np.corrcoef(a, a + b)[0, 1])


def test_perplexity_ratio_is_exp_of_the_loss_gap_with_an_interval_around_it():
    rng = np.random.default_rng(0)
    counts = rng.integers(5, 15, size=400).astype(float)
    sums_a = counts * rng.normal(4.0, 0.3, size=400)
    sums_b = sums_a + counts * rng.normal(0.1, 0.05, size=400)  # b is worse by 0.1 nats per token on average
    ratio, low, high = metrics.perplexity_ratio(sums_a, sums_b, counts, n_resamples=2000)
    assert ratio == pytest.approx(np.exp((sums_b.sum() - sums_a.sum()) / counts.sum()))
    assert low < ratio < high and 1.0 < low and high < np.exp(0.12)
    # paired: a shared per-block difficulty does not widen the interval
    shift = counts * rng.normal(0, 2.0, size=400)
    again = metrics.perplexity_ratio(sums_a + shift, sums_b + shift, counts, n_resamples=2000)
    assert again[0] == pytest.approx(ratio) and again[2] - again[1] == pytest.approx(high - low, rel=0.2)
    with pytest.raises(BookError):
        metrics.perplexity_ratio(sums_a, sums_b[:-1], counts)


def test_row_correlations_equal_scipys_row_by_row():
    """The resampling helpers: each row's Pearson and Spearman (ties averaged) × 100 as scipy computes them one row at a time."""
    from scipy.stats import pearsonr, spearmanr

    rng = np.random.default_rng(0)
    gold = rng.integers(0, 6, size=(4, 50)).astype(float)  # ties, as in rated similarity
    predicted = gold + rng.normal(size=(4, 50))
    np.testing.assert_allclose(metrics.pearson_rows_x100(predicted, gold), [100 * pearsonr(p, g).statistic for p, g in zip(predicted, gold)], rtol=1e-10)
    np.testing.assert_allclose(metrics.spearman_rows_x100(predicted, gold), [100 * spearmanr(p, g).statistic for p, g in zip(predicted, gold)], rtol=1e-10)
