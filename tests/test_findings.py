"""Each chapter's "What our run shows" comes from its experiment module's `findings`, tested here on planted runs whose
numbers the expected text states."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.experiments import common_direction, rare_words


def test_common_direction_findings_state_the_drift_and_the_appendix_identity():
    summary = {
        "model": "m",
        "ratio_raw": 0.8,
        "sigma1_over_sigma2_raw": 6.0,
        "sigma1_over_sigma2_centered": 1.5,
        "mean_pairwise_cosine_brute_force": 0.61234,
        "mean_pairwise_cosine_from_mean_unit_vector": 0.61236,
    }
    runs = {"m": common_direction.MatrixGeometry("m", {}, np.array([]), np.array([]), np.array([]), {}, {}, summary)}
    (line,) = common_direction.findings(runs)
    assert line == (
        "- **m**: the mean embedding is 0.80 times the average embedding length; σ1/σ2 is 6.00 before and 1.50 after centering; "
        "the average pairwise cosine is 0.6123 (formula 0.6124)."
    )
    assert "(4.00× smaller)" in common_direction.ranked_lines(runs)[0]


def _bins(cosines: list[float], n: int) -> pd.DataFrame:
    return pd.DataFrame({"bin_start": range(0, n * len(cosines), n), "n_tokens": n, "mean_cosine": cosines})


def test_rare_words_findings_compare_frequent_with_rare_tokens_and_give_the_coverage():
    info = {"reference_tokens": "[unused] tokens"}
    run = rare_words.RareTokens("m", np.array([]), {}, _bins([0.1, 0.5], 10), _bins([0.2, 0.3, 0.6], 10), info, np.zeros((1, 1)), np.array([]), np.array([]))
    coverage = pd.DataFrame({"unit": ["whole words"], "items_for_30%": [12], "items_for_50%": [150], "items_for_98%": [9000]})
    lines = rare_words.findings({"m": run}, coverage, 10)
    assert lines[0] == (
        "- **m** (reference: [unused] tokens): mean cosine with the reference tokens 0.20 for the 10 most frequent tokens of our corpus, "
        "0.60 for the rarest full bin; by vocabulary index it ranges from 0.10 to 0.50."
    )
    assert lines[-1] == "Tokens needed for 30% / 50% / 98% of the corpus: whole words: 12 / 150 / 9,000."
    single = rare_words.findings({"m": rare_words.RareTokens(**{**run.__dict__, "by_frequency": _bins([0.2], 10)})}, coverage, 10)
    assert "too few to compare frequent with rare tokens" in single[0]


def test_isotropy_word_similarity_findings_follow_the_variants_in_order():
    from lib.experiments import isotropy_word_similarity as iws

    variants = ["raw", "centered", "centered-scaled", "post-processed"]
    iso = pd.DataFrame({"model": "m", "variant": variants, "I1": [0.1, 0.9, 0.9, 0.99], "IsoScore": [0.2, 0.2, 0.3, 0.4]})
    sim = pd.DataFrame(
        {"model": "m", "benchmark": "b", "variant": variants, "pearson_cosine": [10.0, 20.0, 30.0, 40.0], "pearson_inner_product": 0.0, "pairs_kept": 5}
    )
    runs = {"m": iws.WordRun("m", iso, sim, np.zeros((1, 1)), {})}
    assert iws.findings(runs) == [
        "- **m**: I(W) 0.10 raw → 0.90 centered → 0.990 post-processed; IsoScore 0.200 → 0.200 → 0.400. "
        "Average word-similarity Pearson (cosine) 10.0 raw, 20.0 centered, 30.0 centered-scaled, 40.0 post-processed."
    ]
    assert "I(W) 0.100 raw → 0.900 centered; IsoScore 0.2000 → 0.2000." in iws.centering_lines(runs)


def test_wic_findings_give_each_variant_chosen_on_train_and_scored_on_dev():
    from lib.experiments import wic

    variants = ["raw", "clipped", "whitened", "clipped-random"]
    best = pd.DataFrame(
        {
            "model": "m",
            "variant": variants,
            "layer": [3, 4, 5, 6],
            "threshold": [0.5, 0.6, 0.7, 0.8],
            "train_accuracy": [60.0, 61.0, 62.0, 59.0],
            "dev_accuracy_of_that_choice": [55.0, 56.0, 57.0, 54.0],
            "dev_best_accuracy": [58.0, 58.0, 58.0, 58.0],
        }
    )
    data = wic.WicData(pd.DataFrame(), pd.DataFrame({"x": range(638)}), {"train": 50.0, "dev": 50.0})
    runs = {"m": wic.WicRun(pd.DataFrame(), best, 0, 0, "m")}
    assert wic.findings(runs, data) == [
        "- **m**: best training accuracy 60.0% raw (layer 3, threshold 0.5), 61.0% clipped, 62.0% whitened; chosen on train and scored on dev: "
        "55.0% raw, 56.0% clipped, 57.0% whitened, 54.0% with as many random dimensions zeroed as clipping zeroes (baseline 50.0%)."
    ]
    assert "(3.0 points more)" in wic.optimism_lines(runs, data) and "those 638 pairs" in wic.optimism_lines(runs, data)


def test_supervised_findings_give_each_variant_against_the_raw_vectors():
    from lib.experiments import supervised

    summary = pd.DataFrame({"model": "m", "task": "SST-2", "variant": ["raw", "clipped", "whitened"], "best_test": [80.0, 79.5, 82.25]})
    runs = {"m": supervised.ModelRun("m", pd.DataFrame(), summary, None)}
    assert supervised.findings(runs) == ["- **m, SST-2**: best test accuracy 80.0% raw, 79.5% clipped (-0.5), 82.2% whitened (+2.2)."]


def test_anisotropy_findings_give_the_range_over_the_contextual_layers():
    from lib.experiments import anisotropy

    table = pd.DataFrame({"layer": [0, 1, 2, 3], "mean_cosine": [0.2, 0.6, 0.9, 0.7], "ci95_low": [0.1, 0.55, 0.85, 0.45], "ci95_high": [0.3, 0.65, 0.95, 0.8]})
    run = anisotropy.AnisotropyRun("m", {"n_layers": 3, "width": 8, "pca_layer": 3}, table, None, np.array([]), np.array([]), np.array([]))
    assert anisotropy.findings({"m": run}) == [
        "- **m** (3 layers, 8 dimensions): the embedding output has mean cosine 0.200; across the contextual layers it ranges from 0.600 "
        "(layer 1) to 0.900 (layer 2); 2 of 3 contextual layers lie clearly above 0.5."
    ]
    assert "layer 2 (0.900, band 0.850-0.950) leads layer 3" in anisotropy.layer_order({"m": run})
    assert "the bands do not overlap" in anisotropy.layer_order({"m": run})  # 0.85 above 0.80


def test_clipping_whitening_findings_compare_the_variants_over_the_contextual_layers():
    from lib.experiments import clipping_whitening

    rows = []
    for layer in (0, 1, 2):
        for variant, cosine, ss in [("raw", 0.5, 0.1), ("clipped", 0.3, 0.2), ("clipped-random", 0.49, 0.1), ("whitened", 0.01, 0.3)]:
            rows.append({"layer": layer, "variant": variant, "mean_cosine": cosine + 0.1 * layer, "self_similarity_minus_anisotropy": ss})
    run = clipping_whitening.Geometry(pd.DataFrame(rows), pd.DataFrame(), None, np.array([]), None, 0, "m")
    assert clipping_whitening.findings({"m": run}) == [
        "- **m**: over the contextual layers, mean random-pair cosine 0.650 raw, 0.450 clipped, 0.640 with as many random dimensions zeroed, "
        "0.160 whitened (largest drop from clipping 0.200, layer 1). Self-similarity − anisotropy is higher after clipping than raw in 2 of 2 layers "
        "(mean 0.100 raw, 0.200 clipped, 0.300 whitened)."
    ]


def test_sts_findings_count_the_cells_clipping_changes_and_compare_with_glove():
    from lib.experiments import sts

    table = pd.DataFrame({"dataset": "STS-B", "layer": [1, 1, 2, 2], "variant": ["raw", "clipped"] * 2, "spearman_x100": [50.0, 52.0, 60.0, 60.0]})
    best = pd.DataFrame({"dataset": "STS-B", "variant": ["raw", "clipped"], "spearman_x100": [60.0, 60.5]})
    baseline = pd.DataFrame({"dataset": ["STS-B"], "spearman_x100": [55.0], "tokens_in_vocabulary_percent": [99.0], "spearman_x100_words_only": [55.5]})
    runs = {"m": sts.StsRun(table, pd.DataFrame(), 0, 0, "m", best)}
    lines = sts.findings(runs, baseline)
    assert lines[0] == (
        "- **m**: clipping changes 1 of 2 (data set, layer) cells and raises Spearman in 1 of them. Best contextual layer per data set: "
        "clipped raises it on 1 of 1 (mean change +0.50). The raw model beats 50-d GloVe on 1 of 1 data sets."
    )
    assert "58.02" not in lines[1] and "3.0 to 3.0 points below it" in lines[1]  # the paper's STS-B GloVe average is 58.02


def test_outlier_neurons_findings_name_the_outliers_the_top_share_and_the_quiet_layers():
    from types import SimpleNamespace

    from lib.experiments import outlier_neurons

    report = SimpleNamespace(
        model_outliers=pd.DataFrame({"dim": [557], "sign": ["-"], "layers": ["1-6"]}),
        pooled=pd.DataFrame({"kind": ["argmin", "argmax"], "dim": [557, 12], "percent": [96.6, 20.0], "n_vectors": [1000, 1000]}),
        flags=np.array([[False, False], [True, False], [False, True]]),
    )
    runs = {"m": outlier_neurons.OutlierRun("m", {"n_layers": 2}, None, report, pd.DataFrame())}
    assert outlier_neurons.findings(runs) == [
        "- **m**: model-level outlier dimensions: 557 (-, layers 1-6). Over all contextual layers, dimension 557 is the minimum of 96.6% of vectors. "
        "Layers in which no dimension is flagged: 0."
    ]
    assert "0.0 points below BERT-base's 96.60%" in outlier_neurons.gap_to_paper(runs)


def test_scorecard_findings_count_the_verdicts_and_the_claims_without_one():
    from lib.experiments import scorecard

    card = pd.DataFrame(
        {
            "claim_id": ["a", "a", "b", "c"],
            "paper": ["luo2021", "luo2021", "ding2022", "bis2021"],
            "model": ["m1", "m2", "m1", "–"],
            "on_model": [True, True, True, False],
            "verdict": ["holds", "does not hold", "inconclusive", "not run"],
            "tested": [True, True, True, False],
            "corrected": [False, False, True, False],
            "margin_decides": [False, True, False, False],
        }
    )
    (text,) = scorecard.findings(card)
    assert text.startswith("3 verdicts on 2 claims and 2 models — 1 holds, 0 mixed, 1 does not hold, 1 inconclusive, 0 not testable")
    assert "3 of them rest on a p-value" in text and "Luo, Kulmizev & Mao (2021): 2, Ding et al. (2022): 1" in text
    assert "1 became inconclusive by the correction" in text and "1 of the 3 verdicts would differ" in text
    assert text.endswith("1 claim has none (1 because their chapter has not run in this edition, 0 because the book cannot test them offline at all).")


def test_position_probe_findings_give_the_accuracy_and_the_outlier_ranks():
    from lib.experiments import position_probe

    accuracy = pd.DataFrame({"layer": [0, 1, 2, 3, 4], "test_accuracy": [0.99, 0.98, 0.9, 0.6, 0.4], "converged": [True] * 4 + [False]})
    rows = []
    for probe_kind, ranks in (("paper", [1, 1, 2, 5, 9]), ("centred", [3, 4, 4, 6, 9])):
        for layer, rank in enumerate(ranks):
            rows.append({"layer": layer, "probe": probe_kind, "mean_all": 0.1, "dim 7": 0.5 if rank < 5 else 0.05, "dim 7 rank": rank})
    run = position_probe.ProbeRun(accuracy, None, pd.DataFrame(rows), None, {}, 0, ({}, {}), "m", np.array([7]))
    assert position_probe.findings({"m": run}) == [
        "- **m**: test accuracy 99.0% at the embedding output, 98.0% in layer 1 (the lowest quarter of the depth), 40.0% in the last layer; "
        "the probe had levelled off in 4 of 5 layers. Dim 7 contributes more than the average neuron in 3 of 5 layers and is the top neuron in 2 "
        "(best rank 1); with the centred probe it is the top neuron in 0 (best rank 3)."
    ]
    assert "≥ 90% in layers 0, 1, 2; it first falls below in layer 3 (60.0%)." in position_probe.layers_above({"m": run}, 0.9)


def test_positional_origin_findings_follow_a_dimension_from_the_position_table_to_the_last_layer():
    from types import SimpleNamespace

    from lib.experiments import positional_origin
    from lib.measure.positional import AFTER_FIRST

    summary = pd.DataFrame(
        {"table": [AFTER_FIRST, "token"], "rows_with_flagged_dim_percent": [2.5, 0.1], "argmax_dim": [588, 3], "argmax_percent": [99.8, 5.0]}
    )
    view = SimpleNamespace(summary=summary, rows=pd.DataFrame({"n_flagged": [2], "flagged_dims": ["77 588"]}))
    ranks = pd.DataFrame(
        {"layer": [1, 2, 2], "layernorm": "first", "param": ["beta", "beta", "gamma"], "dim": 588, "rank": [1, 2, 40], "value": [3.0, 2.0, 0.5]}
    )
    spread = pd.DataFrame({"dim": 588, "stage": ["input", "layer 0", "layer 1", "layer 2"], "median_z": [0.5, 1.0, 12.0, 11.0]})
    run = positional_origin.OriginRun("m", "s", {}, 10.0, np.array([588]), ["+"], pd.DataFrame(), view, ranks, pd.DataFrame(), spread, None, [])
    assert positional_origin.findings({"m": run}) == [
        "- **m**: the position-0 embedding has 2 flagged dimensions (77, 588); 2.5% of the later positions have one, and dimension 588 is the "
        "maximum of 99.8% of them (token table: 0.1% of rows flagged). Dim 588 is in the top 5 of the first LayerNorm's β in 2 of 2 layers (1-2); "
        "its median z over positions is +0.5 (input), +1.0 (layer 0), +12.0 (layer 1), +11.0 (layer 2)."
    ]


def test_pretraining_findings_give_each_run_the_position_table_and_the_ratio_over_seeds():
    from types import SimpleNamespace

    from lib.experiments import pretraining
    from lib.measure.positional import AFTER_FIRST

    history = pd.DataFrame({"step": [100, 200], "valid_perplexity": [300.0, 90.0], "tokens_seen": [1e6, 2e6], "seconds": [30.0, 30.0], "pe_top_z": [4.0, 6.0]})
    track = pd.DataFrame({"layer": [1, 1], "step": [100, 200], "top_dim": [5, 5], "top_z": [3.0, 7.5]})
    report = SimpleNamespace(
        model_outliers=pd.DataFrame(columns=["dim", "sign", "layers"]), pooled=pd.DataFrame({"kind": ["argmax"], "dim": [5], "percent": [40.0]})
    )
    runs = {n: pretraining.TrainedRun(n, history, track, {}, None, None, report) for n in ("pe", "nope")}
    configs = {"pe": SimpleNamespace(position_embeddings=True), "nope": SimpleNamespace(position_embeddings=False)}
    setup = pretraining.Setup({10: ("pe", "nope")}, configs, SimpleNamespace(z_threshold=10.0), "quick")
    summary = pd.DataFrame({"table": [AFTER_FIRST], "rows_with_flagged_dim_percent": [12.5], "argmax_dim": [7], "argmax_percent": [30.0]})
    table = pretraining.PositionTable("pe", SimpleNamespace(summary=summary), pd.DataFrame())
    gap = pd.DataFrame({"ratio_without_over_with": [2.0, 8.0], "ratio_low_95": [1.5, 6.0], "ratio_high_95": [2.5, 9.0]})
    lines = pretraining.findings(runs, setup, SimpleNamespace(unigram=400.0), table, gap)
    assert lines[0].startswith("- **pe** (with position embeddings): validation perplexity 300.0 at step 100 → 90.0 at step 200 (2.0 M tokens, 1.0 min).")
    assert "dimension 5 has the largest |mean| (robust z +7.5) and held that place for the last 2 of 2 checkpoints" in lines[0]
    assert (
        lines[2] == "- The PE model's position table: 12.5% of positions after the first have a flagged dimension; dimension 7 is the maximum of 30.0% of them."
    )
    assert "geometric mean over the 2 seeds 4.00× (paper: 354.0 / 4.3 = 82×). Token frequencies alone give 400.0." in lines[3]
    assert "below the unigram perplexity (400) from step 100" in pretraining.onset_lines(runs, setup, SimpleNamespace(unigram=400.0))


def test_isotropy_calibration_findings_put_each_method_beside_the_paper_and_bound_the_steps():
    from lib.experiments import isotropy_calibration

    row = dict(tasks=2, significantly_better=1, significantly_worse=0, undefined_scores=0, I1_output_uncalibrated=0.5, I1_output=0.6, I1_W=0.9)
    ours = pd.DataFrame([{"model": "m", "method": "flow", "mean_difference": 0.5, "time_ratio": 3.0, **row}])
    theirs = pd.DataFrame(
        [{"model": "bert-base-uncased", "method": "flow", "mean_difference": -1.0, "I1_output_uncalibrated": 0.91, "I1_output": 0.92, "time_ratio": 4.2}]
    )
    runs = pd.DataFrame({"task": ["sst2", "rte"], "steps": [40, 60]})
    lines = isotropy_calibration.findings(ours, theirs, runs, lr=1e-3, flow_layers=2, flow_hidden=64)
    assert lines[0] == (
        "- **flow** (m): score change +0.50 points on average over 2 tasks (1 significantly better, 0 significantly worse, 0 undefined); "
        "I1 of the output embeddings 0.500 → 0.600 (of W: 0.900); 3.00× the time per epoch. Paper: bert-base-uncased -1.00, I1 of the output 0.91 → 0.92."
    )
    assert lines[1].startswith("- The flow costs 3.00× the uncalibrated time per epoch here (paper, BERT: 4.2×)")
    assert "took 40-60 optimiser steps" in lines[2] and "~6.0e-02 here" in lines[2]
