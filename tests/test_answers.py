"""Draft tests for the chapters' answers (chapters 01-05): each answer is two or three sentences computed from a planted
run, with its key numbers and how sure they are, and repeats no findings line. (Proposed for tests/test_findings.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd


def test_anisotropy_answer_counts_the_layers_above_zero_and_names_the_peak_with_its_interval():
    from lib.experiments import anisotropy

    table = pd.DataFrame(
        {"layer": [0, 1, 2, 3], "mean_cosine": [0.2, 0.6, 0.9, 0.7], "ci95_low": [0.1, 0.55, 0.85, 0.45], "ci95_high": [0.3, 0.65, 0.95, 0.8], "n_pairs": 1000}
    )
    run = anisotropy.AnisotropyRun("m", {"n_layers": 3, "width": 8, "pca_layer": 3}, table, None, np.array([]), np.array([]), np.array([]))
    lines = anisotropy.answer({"m": run})
    assert len(lines) == 2 and lines[0].startswith("In every contextual layer, token vectors share a direction")
    assert "in 3 of 3 layers of m (1,000 pairs per layer)" in lines[0]
    assert lines[1] == "It peaks at 0.900 (0.850 to 0.950) in layer 2 of m, against the 0.5 the paper reports for RoBERTa-base."
    assert not set(lines) & set(anisotropy.findings({"m": run}))


def test_outlier_neurons_answer_gives_the_share_with_a_sentence_bootstrap_and_the_erased_dimension():
    from lib.experiments import outlier_neurons

    report = SimpleNamespace(
        model_outliers=pd.DataFrame({"dim": [557], "sign": ["-"], "layers": ["1-6"]}),
        pooled=pd.DataFrame({"kind": ["argmin", "argmax"], "dim": [557, 12], "percent": [90.0, 20.0], "n_vectors": [1000, 1000]}),
    )
    sentences = pd.DataFrame({"kind": "argmin", "dim": 557, "sentence": range(50), "hits": 9, "vectors": 10})
    norm = pd.DataFrame({"dim": [557], "layers": ["1-6"], "gamma": [1e-30], "beta": [0.0], "median_abs_gamma": [0.6], "median_abs_beta": [0.02]})
    lines = outlier_neurons.answer({"m": outlier_neurons.OutlierRun("m", {"n_layers": 6}, None, report, norm, sentences)})
    assert lines[0] == "A few dimensions stand far out of the average vector in most layers: 557 in m."
    assert (
        lines[1] == "One dimension holds the extreme value of most vectors: the most frequent is the minimum of 90.0% (90.0 to 90.0%) in m "
        "(dimension 557), 95% intervals over 50 sentences."
    )
    assert lines[2] == "The last LayerNorm zeroes 557 in m, erasing it from the output."


def test_pretraining_answer_gives_the_ratio_over_seeds_and_the_outliers_with_and_without():
    from lib.experiments import pretraining

    gap = pd.DataFrame({"ratio_without_over_with": [2.0, 8.0], "ratio_low_95": [1.5, 6.0], "ratio_high_95": [2.5, 9.0]})
    summary = pd.DataFrame(
        {
            "seed": [10, 10, 11, 11],
            "position_embeddings": [True, False, True, False],
            "model_outliers": [1, 0, 0, 0],
            "top_extreme_percent": [80.0, 30.0, 70.0, 40.0],
            "tokens_seen_millions": 2.0,
        }
    )
    first, second = pretraining.answer(gap, summary)
    assert first.startswith("At this scale position embeddings do not measurably change the validation perplexity: without them it is 4.00 times")
    assert "(geometric mean, 95% interval" in first and "over 2 seeds), against 82 times in the paper." in first
    assert second.startswith("After 2.0 M tokens of training per run, a model-level outlier formed in 1 of 2 runs with position embeddings and 0 of 2 without")
    assert "75.0% of vectors with them and 35.0% without, on average (difference 40.0 points" in second


def test_positional_origin_answer_says_which_position_table_carries_an_outlier_and_how_far_it_spreads():
    from lib.experiments import positional_origin
    from lib.measure.positional import AFTER_FIRST

    summary = pd.DataFrame({"table": [AFTER_FIRST], "n_rows": [511], "rows_with_flagged_dim_percent": [99.8], "argmax_dim": [588], "argmax_percent": [99.8]})
    criteria = pd.DataFrame(
        {"dim": [588, 3], "flagged": [True, False], "gamma_met": [2, 0], "gamma_layers": [10, 10], "beta_met": [12, 0], "beta_layers": [12, 12]}
    )
    spread = pd.DataFrame({"dim": 588, "stage": ["input", "layer 0", "layer 1", "layer 2"], "positions_flagged_percent": [100.0, 0.0, 95.0, 99.0]})
    view = SimpleNamespace(summary=summary)
    run = positional_origin.OriginRun("m", "s", {}, 10.0, np.array([588]), ["+"], pd.DataFrame(), view, pd.DataFrame(), criteria, spread, None, [])
    assert positional_origin.answer({"m": run}) == [
        "The position table already carries an outlier in m (dimension 588 is the maximum of 99.8% of its 511 rows after the first).",
        "An outlier dimension's gain or bias is among the paper's top ones in the first LayerNorm of 12 of 12 layers of m, and from the embedding "
        "LayerNorm on one stands out at 90% or more of the positions in 2 of 3 layers.",
    ]


def test_scorecard_answer_counts_each_claim_once_by_where_it_stands():
    from lib.experiments import scorecard
    from lib.experiments.verdicts import FAILS, HOLDS, INCONCLUSIVE, UNTESTABLE

    rows = [
        ("luo2021/a", "m1", True, HOLDS),
        ("luo2021/a", "m2", True, HOLDS),
        ("luo2021/b", "m1", True, HOLDS),
        ("luo2021/b", "m2", True, FAILS),
        ("bis2021/c", "m1", True, FAILS),
        ("bis2021/d", "m1", True, INCONCLUSIVE),
        ("bis2021/e", "–", False, UNTESTABLE),
    ]
    card = pd.DataFrame(rows, columns=["claim_id", "model", "on_model", "verdict"]).assign(paper=lambda d: d["claim_id"].str.split("/").str[0])
    first, second = scorecard.answer(card)
    assert first == (
        "This edition tests 5 claims of the papers on 2 models: 1 hold on every model they were decided on, 1 on some, 1 on none; "
        "1 stay inconclusive at this edition's sample sizes and 1 cannot be tested here."
    )
    assert second == (
        "Claims that hold on at least one model, per paper: Luo, Kulmizev & Mao (2021) 2 of 2 (on none: 0); Biš, Podkorytov & Liu (2021) 0 of 3 (on none: 1)."
    )
