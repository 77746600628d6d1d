"""The intervals the scorecard's verdicts rest on, against scipy and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lib.errors import BookError
from lib.experiments import pretraining
from lib.measure import inference


def test_t_interval_over_replicates_is_scipys():
    values = [1.2, 3.5, 2.0]
    est = inference.mean_t(values, "seeds")
    ci = stats.ttest_1samp(values, 0).confidence_interval(0.95)
    assert (est.value, est.low, est.high) == pytest.approx((np.mean(values), ci.low, ci.high))
    with pytest.raises(BookError, match="at least two values"):
        inference.mean_t([1.0], "seeds")


def test_paired_interval_comes_from_the_discordant_items():
    est = inference.paired_proportions(15, 2, 638, "pairs")
    assert est.value == pytest.approx(13 / 638)
    a, b, m = 15.5, 2.5, 640  # Agresti-Min: 0.5 added to each cell
    assert (est.high - est.low) / 2 == pytest.approx(1.959964 * math.sqrt(a + b - (a - b) ** 2 / m) / m, rel=1e-5)
    none = inference.paired_proportions(0, 0, 40, "pairs")  # the variants agree on all 40 items
    assert none.value == 0 and none.low < -0.04 and none.high > 0.04  # 40 items cannot show they always agree
    assert (inference.paired_proportions(0, 0, 4000, "pairs").high - none.high) < 0  # but 4,000 narrow it
    with pytest.raises(BookError, match="do not fit"):
        inference.paired_proportions(60, 50, 100, "pairs")


def test_exact_binomial_and_welch_intervals():
    est = inference.proportion(7, 10, "items")
    ci = stats.binomtest(7, 10).proportion_ci(0.95, method="exact")
    assert (est.low, est.high) == pytest.approx((ci.low, ci.high))
    a, b = np.array([3.0, 3.2, 2.9, 3.1]), np.array([1.0, 1.4, 1.1])
    w = inference.welch(a.mean(), a.std(ddof=1), 4, b.mean(), b.std(ddof=1), 3, "seeds")
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (w.low, w.high) == pytest.approx((ci.low, ci.high))


def test_p_value_is_read_off_the_interval():
    """p < 0.025 one-sided exactly when the 95% interval clears the bound."""
    est = inference.from_interval(1.0, 0.5, 1.5, "planted")
    assert est.p(0.5, "above") == pytest.approx(0.025, rel=1e-3) and est.p(1.5, "below") == pytest.approx(0.025, rel=1e-3)
    assert est.p(0.0, "above") < 0.025 < est.p(0.9, "above")
    assert inference.exact(3.0, "whole").p(1.0, "above") is None


def test_p_values_come_from_the_intervals_own_distribution():
    """A t-interval's p-value is the t-test's, a binomial share's the exact binomial test's (issue: a normal reading
    of them was badly anti-conservative for few seeds or few units)."""
    seeds = [1.2, 3.5, 2.0]
    est = inference.mean_t(seeds, "seeds")
    assert est.p(0.5, "above") == pytest.approx(stats.ttest_1samp(seeds, 0.5, alternative="greater").pvalue)
    assert est.p(4.0, "below") == pytest.approx(stats.ttest_1samp(seeds, 4.0, alternative="less").pvalue)
    share = inference.proportion(6, 6, "layers")
    assert share.p(0.5, "above") == pytest.approx(0.5**6)  # 0.016, not ~1e-5
    assert share.scaled(100).p(50.0, "above") == pytest.approx(0.5**6)  # the same in percent
    assert inference.proportion(3, 10, "items").p(0.5, "below") == pytest.approx(stats.binomtest(3, 10, 0.5, alternative="less").pvalue)
    a, b = np.array([3.0, 3.2, 2.9, 3.1]), np.array([1.0, 1.4, 1.1])
    w = inference.welch(a.mean(), a.std(ddof=1), 4, b.mean(), b.std(ddof=1), 3, "seeds")
    assert w.p(0.0, "above") == pytest.approx(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def test_a_ratio_of_seeds_is_tested_on_the_log_scale():
    """Chapter 05's verdict: the geometric mean ratio over three seeds against 1.5, as a t-test of the log ratios."""
    ratios = np.array([3.96, 3.74, 4.03])
    est = inference.mean_t(np.log(ratios), "seeds").back_transformed("log", "t over 3 seeds (log ratio)")
    assert est.value == pytest.approx(np.exp(np.log(ratios).mean()))
    assert est.p(1.5, "above") == pytest.approx(stats.ttest_1samp(np.log(ratios), math.log(1.5), alternative="greater").pvalue)
    assert 1e-5 < est.p(1.5, "above") < 1e-2  # not the 1e-88 a normal reading of the interval gave


def test_a_mean_of_welch_differences_combines_standard_errors_not_half_widths():
    """Averaging tasks' Welch intervals: the standard errors add in quadrature and one t quantile (Welch-Satterthwaite
    degrees of freedom) widens the result, not each task's own wide quantile (about 1.5 times too wide with few seeds)."""
    a, b = np.array([3.0, 3.2, 2.9]), np.array([1.0, 1.4, 1.1])
    c, d = np.array([0.5, 0.9, 0.7]), np.array([0.2, 0.1, 0.6])
    tasks = [inference.welch(x.mean(), x.std(ddof=1), 3, y.mean(), y.std(ddof=1), 3, "seeds") for x, y in ((a, b), (c, d))]
    mean = inference.mean_of(tasks, "tasks")
    v = [x.var(ddof=1) / 3 + y.var(ddof=1) / 3 for x, y in ((a, b), (c, d))]
    se = math.sqrt(sum(v)) / 2
    df = sum(v) ** 2 / sum(vi**2 / t.df for vi, t in zip(v, tasks))
    assert mean.value == pytest.approx((tasks[0].value + tasks[1].value) / 2)
    assert (mean.high - mean.low) / 2 == pytest.approx(stats.t.ppf(0.975, df) * se)
    quadrature = math.sqrt(sum(((t.high - t.low) / 2) ** 2 for t in tasks)) / 2  # the old combination
    assert (mean.high - mean.low) / 2 < quadrature


def test_holm_matches_the_step_down_rule():
    adjusted = inference.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_spearman_interval_contains_the_estimate_and_narrows_with_n():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = -x + rng.normal(size=200)
    small, large = inference.spearman(x[:8], y[:8], "cells"), inference.spearman(x, y, "cells")
    for est in (small, large, inference.spearman(x[:6], -x[:6], "cells")):
        assert -1 <= est.low <= est.value <= est.high <= 1
    assert large.high < 0 and (large.high - large.low) < (small.high - small.low)
    assert inference.spearman(x[:6], -x[:6], "cells").low < -0.9 < inference.spearman(x[:6], -x[:6], "cells").high  # a perfect rank order of 6 is not certainty


def test_seed_pairs_keep_the_first_seeds_names():
    pairs = pretraining.seed_pairs(["pe", "nope"], 0, 3)
    assert pairs == {0: ("pe", "nope"), 1: ("pe-seed1", "nope-seed1"), 2: ("pe-seed2", "nope-seed2")}


def test_a_cluster_bootstrap_is_wider_than_the_item_binomial_on_clustered_data():
    """Sentences whose tokens go together (all or nothing): the bootstrap over sentences is several times wider than the
    binomial that counts tokens as independent, it contains the share, and its p-values are the resamples beyond the
    bound (never 0)."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 40, size=300)
    hits = np.where(rng.random(300) < 0.6, sizes, 0)  # each sentence: every vector or none
    boot = inference.cluster_share(hits, sizes, "sentences")
    binomial = inference.proportion(int(hits.sum()), int(sizes.sum()), "vectors")
    assert boot.value == pytest.approx(binomial.value)
    assert boot.low <= boot.value <= boot.high
    assert (boot.high - boot.low) > 3 * (binomial.high - binomial.low)
    assert boot.p(0.0, "above") == pytest.approx(1 / (1 + inference.DRAWS))  # no resample at or below 0: the smallest p a bootstrap gives
    assert boot.p(boot.low, "above") == pytest.approx(0.025, abs=0.003)  # the interval's own bound: p at the 2.5% level
    assert inference.cluster_share(hits, sizes, "sentences").replicates == boot.replicates  # seeded
    scaled = boot.scaled(100)
    assert scaled.p(100 * boot.low, "above") == pytest.approx(boot.p(boot.low, "above"))
    independent = inference.cluster_share(rng.binomial(sizes, 0.6), sizes, "sentences")  # no clustering: about the binomial's width
    assert (independent.high - independent.low) == pytest.approx(binomial.high - binomial.low, rel=0.25)


def test_the_sample_that_would_decide_an_inconclusive_estimate():
    """At the size returned, an effect as measured sits (z_0.975 + z_0.8) standard errors from the margin: it is decided
    with 80% power; exact estimates and estimates on the margin have no such size."""
    e = inference.mean_t([0.8, 1.4, 1.1, 0.6, 1.3], "seeds")  # mean 1.04, inconclusive against 1.2
    se = (e.high - e.low) / (2 * stats.t.ppf(0.975, 4))
    n = inference.sample_to_decide(e, 1.2)
    normal = 5 * ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * se / 0.16) ** 2
    assert normal < n < 1.2 * normal  # t with n − 1 degrees of freedom asks a little more than the normal
    df = n - 1
    assert abs(e.value - 1.2) / (se * math.sqrt(5 / n)) >= stats.t.ppf(0.975, df) + stats.t.ppf(0.8, df)
    two = inference.mean_t([0.9, 1.6], "tasks")  # one degree of freedom: the t quantile, not the spread, keeps it undecided
    assert inference.sample_to_decide(two, 0.0) > 2
    normal_share = inference.proportion(52, 100, "sentences")
    assert inference.sample_to_decide(normal_share, 0.5) == pytest.approx(
        100 * ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * (normal_share.high - normal_share.low) / (2 * stats.norm.ppf(0.975)) / 0.02) ** 2
    )
    share = inference.proportion(52, 100, "sentences")
    assert inference.sample_to_decide(share, 0.5) > 100 * (0.04 / 0.02) ** 2  # a margin twice as near needs over four times the sentences
    assert inference.sample_to_decide(inference.exact(0.3, "whole matrix"), 0.2) is None
    assert inference.sample_to_decide(e, e.value) is None
    assert inference.sample_to_decide(inference.mean_t([0.5, 0.7, 0.6], "seeds"), 0.5, "within") > 3


def test_identical_replicates_decide_nothing():
    """Seeds that gave the same number (a run the seed does not change) have an interval of no width: no p-value and no
    verdict, however far the value lies from the margin (it used to read as certain, p = 0)."""
    from lib.experiments import verdicts

    same = inference.welch(2.0, 0.0, 3, 1.0, 0.0, 3, "seeds")
    assert same.unspread and same.p(0.0, "above") is None and "identical" in same.method
    assert verdicts.decide(same, 0.5).verdict == verdicts.INCONCLUSIVE
    assert verdicts.decide(inference.mean_t([4.0, 4.0, 4.0], "seeds"), 1.0).verdict == verdicts.INCONCLUSIVE
    assert verdicts.decide(inference.welch(2.0, 0.1, 3, 1.0, 0.1, 3, "seeds"), 0.5).verdict == verdicts.HOLDS
    assert not inference.exact(1.0, "whole").unspread and not inference.proportion(10, 10, "items").unspread


def test_a_p_value_past_its_method_is_printed_as_a_bound():
    """A normal tail far out is an approximation: printed as a bound with its method, never as "< 1e-300"."""
    from lib.book import scorecard_view

    far = inference.from_interval(10.0, 9.9, 10.1, "planted")
    p = 2 * far.p(0.0, "above")
    assert p < 1e-300
    floor, method = far.p_floor()
    assert scorecard_view.p_text(p, p * 10, floor, method, 10) == "< 1e-09 (normal approximation)"
    assert scorecard_view.p_text(0.00123, 0.0123, floor, method, 10) == "0.012"
    shares = inference.cluster_share([5, 5, 5], [5, 5, 5], "sentences", draws=1999)
    assert shares.p_floor() == (1 / 2000, "1,999 bootstrap resamples")
    # 1/2000 × a family of 30 is 0.015: the bound is rounded up (< 0.1), never down to a false "< 0.01"
    assert scorecard_view.p_text(1 / 2000, 0.012, *shares.p_floor(), 30) == "< 1e-01 (1,999 bootstrap resamples)"
    assert scorecard_view.p_text(10 / 2000, 0.05, *shares.p_floor(), 30) == "0.05"  # an ordinary bootstrap p prints as it is
    assert inference.proportion(7, 10, "items").p_floor()[1] == "exact binomial"
