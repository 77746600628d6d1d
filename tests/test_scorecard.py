"""The claims scorecard: the registry is complete and consistent, and verdicts computed from planted result tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from lib.book import scorecard_view
from lib.book.results import Results
from lib.core.sources import chapters
from lib.core.store import CHAPTER, Schema
from lib.edition import front_page
from lib.edition.cache import Entry, digest
from lib.errors import BookError
from lib.experiments import rules, schemas, scorecard, verdicts
from lib.measure import inference

SCHEMAS = {(s.chapter, s.name): s for chapter in chapters() for s in schemas(chapter).values()}
RULES = {name: f for chapter in chapters() for name, f in rules(chapter).items()}


def test_registry_entries_are_complete_and_rules_exist():
    claims = scorecard.claims()
    assert len(claims) >= 20 and len({c.id for c in claims}) == len(claims)
    for c in claims:
        assert c.claim.endswith(".") and c.paper_value and c.section
        if c.untestable is None:
            assert c.rule in RULES and c.reason and c.effect and c.margin is not None
    assert {c.paper for c in claims} == {"luo2021", "luo2021_thesis", "bis2021", "ding2022"}
    assert set(RULES) == {c.rule for c in claims if c.rule}  # no rule without a claim


def _plant(root, model: str, chapter: str, table: str, frame: pd.DataFrame, name: str | None = None, family: str | None = None) -> None:
    """Write a planted table; the declared columns a test does not need are left empty (NaN), so that the scorecard's
    schema check passes and a rule that read any of them would see NaN."""
    declared = SCHEMAS.get((chapter, table))
    if declared is not None:
        frame = frame.reindex(columns=[*declared.columns, *[c for c in frame.columns if c not in declared.columns]])
    else:  # a table no chapter declares (a planted claim's)
        declared = Schema(chapter, table, tuple(frame.columns))
    Results(chapter, "planted", root=root).table(frame, declared, model, {}, {"name": name or model} | ({"family": family} if family else {}))


def test_every_scored_table_has_a_schema_the_experiments_write():
    scored = [c for c in scorecard.claims() if c.untestable is None]
    assert len(scored) >= 20 and not [c.id for c in scored if (c.chapter, c.table) not in SCHEMAS]


REGISTRY = [
    {
        "id": "luo2021/anisotropy",
        "paper": "luo2021",
        "section": "§4.1",
        "claim": "Random tokens have a positive mean cosine.",
        "paper_value": "positive",
        "chapter": "01_anisotropy",
        "table": "anisotropy_by_layer",
        "rule": "anisotropic_in_every_layer",
        "effect": "mean cosine above the centred baseline",
        "margin": 0.1,
        "reason": "clearly positive",
    },
    {
        "id": "bis2021/centering-isotropy",
        "paper": "bis2021",
        "section": "§5.1",
        "claim": "Centering raises I(W).",
        "paper_value": "0.39 → 0.98",
        "chapter": "12_isotropy_word_similarity",
        "table": "isotropy",
        "rule": "centering_raises_isotropy",
        "effect": "I(W) centred minus raw",
        "margin": 0.1,
        "reason": "at least 0.1",
    },
    {
        "id": "ding2022/flow-cost",
        "paper": "ding2022",
        "section": "§4.1",
        "claim": "The flow costs time.",
        "paper_value": "4.2×",
        "chapter": "13_isotropy_calibration",
        "table": "step_times",
        "rule": "flow_costly",
        "effect": "time ratio",
        "margin": 2.0,
        "reason": "twice",
    },
    {"id": "ding2022/translation", "paper": "ding2022", "section": "§4.2", "claim": "BLEU drops.", "paper_value": "3-5", "untestable": "no mBART offline"},
]


def _anisotropy(means: list[float], half: float) -> pd.DataFrame:
    """Chapter 01's table with a centred baseline of 0 and a paired interval of ±half around each mean."""
    means = pd.Series(means)
    return pd.DataFrame(
        {
            "layer": range(len(means)),
            "mean_cosine": means,
            "centered_mean_cosine": 0.0,
            "excess_ci95_low": means - half,
            "excess_ci95_high": means + half,
            "n_pairs": 1000,
        }
    )


@pytest.fixture
def planted(tmp_path):
    registry = tmp_path / "claims.yaml"
    registry.write_text(yaml.safe_dump(REGISTRY, allow_unicode=True))
    root = tmp_path / "results"
    # a claim that holds for one model and fails for another
    _plant(root, "alpha", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.1, 0.3, 0.4], 0.02), "Alpha")
    _plant(root, "beta", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.1, 0.01, -0.02], 0.02))
    # one that does not hold (centering lowers I(W) here), for alpha only
    isotropy = pd.DataFrame({"variant": ["raw", "centered"], "I1": [0.8, 0.75], "I1_sign_low": [0.79, 0.75], "I1_sign_high": [0.81, 0.75]})
    _plant(root, "alpha", "12_isotropy_word_similarity", "isotropy", isotropy, "Alpha")
    # chapter 13 never ran: missing
    return registry, root


def test_verdicts_from_planted_tables(planted):
    registry, root = planted
    card = scorecard.scorecard("planted", root=root, registry=registry).set_index(["claim_id", "model"])
    assert card.loc[("luo2021/anisotropy", "Alpha"), "verdict"] == "holds"
    assert card.loc[("luo2021/anisotropy", "Alpha"), "ours"].startswith("95% intervals paired over 1,000 pairs: layer 1: 0.300 (0.280 to 0.320) → holds")
    assert card.loc[("luo2021/anisotropy", "Alpha"), "estimate"] == pytest.approx(0.3)  # the weakest layer's effect is shown
    assert card.loc[("luo2021/anisotropy", "Alpha"), "margin"] == 0.1 and "centred baseline" in card.loc[("luo2021/anisotropy", "Alpha"), "control"]
    assert card.loc[("luo2021/anisotropy", "beta"), "verdict"] == "does not hold"
    assert card.loc[("bis2021/centering-isotropy", "Alpha"), "verdict"] == "does not hold"
    assert card.loc[("bis2021/centering-isotropy", "Alpha"), "source"] == "planted/alpha/12_isotropy_word_similarity/isotropy.csv"
    assert card.loc[("ding2022/flow-cost", "–"), "verdict"] == "not run"  # a missing table is never guessed
    assert card.loc[("ding2022/translation", "–"), "verdict"] == "not testable" and card.loc[("ding2022/translation", "–"), "ours"] == "no mBART offline"
    assert len(card) == 5


def test_mixed_and_thresholds(planted):
    registry, root = planted
    _plant(root, "gamma", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.5, 0.3, 0.02], 0.01))
    _plant(root, "delta", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.5, 0.12, 0.1], 0.05))
    seconds = {"none": [1.0, 1.0, 1.0], "flow": [1.5, 1.7, 3.0]}  # three interleaved rounds of one step each
    flow = pd.DataFrame([{"method": m, "round": r, "seconds": s} for m, values in seconds.items() for r, s in enumerate(values)])
    _plant(root, "alpha", "13_isotropy_calibration", "step_times", flow, "Alpha")
    card = scorecard.scorecard("planted", root=root, registry=registry).set_index(["claim_id", "model"])
    assert card.loc[("luo2021/anisotropy", "gamma"), "verdict"] == "mixed"  # holds in one layer, not in the other
    assert card.loc[("luo2021/anisotropy", "delta"), "verdict"] == "inconclusive"  # intervals contain the margin
    flow_row = card.loc[("ding2022/flow-cost", "Alpha")]
    geometric = float(np.exp(np.mean(np.log([1.5, 1.7, 3.0]))))
    assert flow_row["verdict"] == "inconclusive" and flow_row["ours"].startswith(f"{geometric:.2f}× (95% interval ")
    assert "geometric mean over 3 interleaved rounds" in flow_row["ours"] and flow_row["low"] < 2.0 < flow_row["high"]


def test_each_verdict_carries_its_verdicts_at_a_smaller_and_a_larger_margin(planted):
    """A layer at 0.13 against the margin 0.1: it holds at 0.05 and does not at 0.2, so the margin decides the verdict;
    layers far above every margin leave it alone."""
    registry, root = planted
    _plant(root, "close", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.12, 0.13], 0.002))
    _plant(root, "clear", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.6, 0.7], 0.002))
    card = scorecard.scorecard("planted", root=root, registry=registry).set_index(["claim_id", "model"])
    close, clear = card.loc[("luo2021/anisotropy", "close")], card.loc[("luo2021/anisotropy", "clear")]
    assert (close["verdict"], close["at_smaller"], close["at_larger"], close["margin_decides"]) == ("holds", "holds", "does not hold", True)
    assert (close["smaller_margin"], close["larger_margin"]) == (0.05, 0.2)
    assert (clear["verdict"], clear["at_smaller"], clear["at_larger"], clear["margin_decides"]) == ("holds", "holds", "holds", False)


def test_the_margins_around_a_claim_scale_its_distance_from_no_effect():
    from lib.experiments.verdicts import Claim

    def claim(**kw):
        return Claim("x/y", "x", "§1", "c", "v", **kw)

    assert claim(margin=0.1).margins_around() == (0.05, 0.2)
    assert claim(margin=1.5, no_effect=1.0).margins_around() == (1.25, 2.0)  # a ratio: its distance from 1
    assert claim(margin=90.0, bound=100.0).margins_around() == (45.0, 95.0)  # a share: at most halfway to 100%
    assert claim(margin=0.1, bound=1.0).margins_around() == (0.05, 0.2)
    assert claim(margin=0.0).margins_around() is None  # a claim about a sign


def test_wic_verdict_is_paired_over_the_same_development_pairs(tmp_path):
    """A 2-point gain on 638 pairs: as two independent accuracies its interval (about ±5.4 points) would contain 0; paired
    over the same pairs, where the variants disagree on only 17 of them (15 to 2), it holds."""
    claim = next(c for c in scorecard.claims() if c.id == "luo2021/wic-clipping")
    frame = pd.DataFrame(
        {
            "variant": ["raw", "clipped"],
            "dev_accuracy_of_that_choice": [60.0, 62.04],
            "dev_pairs": [638, 638],
            "dev_right_only_here": [0, 15],
            "dev_right_only_raw": [0, 2],
            **{f"cross_{c}": 0 for c in ("pairs", "right_only_here", "right_only_raw")},  # no training pairs cross-fitted
            "outlier_layers": "1-5",
        }
    )
    _plant(tmp_path, "m", "07_wic", "best", frame)
    outcome = RULES[claim.rule](verdicts.Tables("planted", root=tmp_path), "m", claim)
    assert outcome.verdict == "holds" and outcome.estimate.value == pytest.approx(100 * 13 / 638)
    assert (outcome.estimate.high - outcome.estimate.low) / 2 < 1.5  # paired: far narrower than the ±5.4 of independent accuracies


def test_holm_turns_weak_verdicts_inconclusive():
    """Twenty verdicts at p = 0.04 each would all hold one by one; corrected together, none does. One at p = 0.001
    survives."""
    card = pd.DataFrame({"paper": "a", "verdict": ["holds"] * 20 + ["does not hold", "holds"], "ours": "x", "p": [0.04] * 20 + [0.001, np.nan]})
    out = verdicts.holm_corrected(card)
    assert (out["verdict"].iloc[:20] == "inconclusive").all() and out["corrected"].iloc[:20].all() and (out["before_holm"].iloc[:20] == "holds").all()
    assert out["tested"].sum() == 21 and not out["corrected"].iloc[20:].any() and (out["ours"] == "x").all()  # no prose added
    assert out["verdict"].iloc[20] == "does not hold" and out["p_holm"].iloc[20] == pytest.approx(0.021)
    assert out["verdict"].iloc[21] == "holds" and np.isnan(out["p_holm"].iloc[21])  # an exact verdict has no p-value
    assert (out["family"].iloc[:21] == 21).all()


def test_holm_corrects_within_each_papers_family():
    """Verdicts of another paper (a model or claim added for it) leave a paper's corrected p-values as they were."""
    one = pd.DataFrame({"paper": "a", "verdict": "holds", "ours": "x", "p": [0.01, 0.02]})
    more = pd.concat([one, pd.DataFrame({"paper": "b", "verdict": "holds", "ours": "y", "p": [0.001] * 30})], ignore_index=True)
    alone, together = verdicts.holm_corrected(one), verdicts.holm_corrected(more)
    assert together["p_holm"].iloc[:2].tolist() == pytest.approx(alone["p_holm"].tolist())
    assert alone["p_holm"].tolist() == pytest.approx([0.02, 0.02])
    assert together["family"].tolist() == [2, 2] + [30] * 30


def test_an_exact_unit_never_enters_holm_as_p_zero():
    """A verdict resting on exact units (whole matrices, every row of a table) has no p-value, also when it is mixed."""
    exact = [verdicts.unit(f"layer {i}", inference.exact(v, "whole"), 0.5) for i, v in enumerate([0.9, 0.1, 0.8])]
    decision = verdicts.aggregate(exact)
    assert decision.verdict == "mixed" and decision.p is None
    sampled = [verdicts.unit("a", inference.mean_t([0.9, 1.0, 0.95], "seeds"), 0.5), verdicts.unit("b", inference.mean_t([0.1, 0.0, 0.05], "seeds"), 0.5)]
    mixed = verdicts.aggregate(sampled)
    # each side needs one of the 2 units: its two-sided p times 2 (the units looked at); the verdict needs both sides
    two_sided = [2 * u.estimate.p(0.5, s) for u, s in zip(sampled, ["above", "below"])]
    assert mixed.verdict == "mixed" and 0 < mixed.p == pytest.approx(max(2 * p for p in two_sided))
    card = verdicts.holm_corrected(pd.DataFrame({"paper": "a", "verdict": ["mixed", "mixed"], "ours": "x", "p": [decision.p, mixed.p]}))
    assert card["tested"].tolist() == [False, True]


def test_a_verdict_resting_on_the_best_unit_pays_for_the_choice():
    units = [verdicts.unit(f"dim {d}", inference.proportion(k, 100, "vectors"), 0.5) for d, k in [(1, 65), (2, 40), (3, 30)]]
    best, decision = verdicts.best_of(units, key=lambda u: u.estimate.value)
    assert best.name == "dim 1" and decision.verdict == "holds"
    assert decision.p == pytest.approx(3 * best.decision.p) and decision.p == pytest.approx(3 * 2 * stats.binomtest(65, 100, 0.5, alternative="greater").pvalue)


def test_bad_registry_entries_are_one_line_errors(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump([{**REGISTRY[0], "rule": "no_such_rule"}]))
    with pytest.raises(BookError, match="has no rule 'no_such_rule'"):
        scorecard.claims(bad)
    bad.write_text(yaml.safe_dump([{k: v for k, v in REGISTRY[0].items() if k != "reason"}]))
    with pytest.raises(BookError, match="needs reason"):
        scorecard.claims(bad)


def test_front_page_summary_counts_the_editions_verdicts(planted, monkeypatch):
    registry, root = planted
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(root))
    assert front_page.scorecard_summary(front_page.scorecard_card(None)) == ""  # before the scorecard chapter has run
    card = scorecard.scorecard("planted", root=root, registry=registry)
    path = Results("14_scorecard", "planted", root=root).table(card, scorecard.SCORECARD, CHAPTER, {})
    record = {"kind": "output", "label": "planted/chapter/14_scorecard/scorecard.csv", "path": str(path), "sha256": digest(str(path))}
    entry = Entry(chapter="14_scorecard", key="k", parts={}, notebook="n", inputs=[], outputs=[record], facts={})
    summary = front_page.scorecard_summary(front_page.scorecard_card(entry))
    assert "This edition tests 4 claims" in summary and "| paper | holds | does not hold | not testable | not run |" in summary
    assert "| Luo, Kulmizev & Mao (2021) | 1 | 1 | 0 | 0 |" in summary and "| Ding et al. (2022) | 0 | 0 | 1 | 1 |" in summary
    matrix = scorecard_view.matrix(card, REGISTRY[0]["paper"], "sec-14-untested")  # chapter 14's first table
    assert REGISTRY[0]["claim"] in matrix and f"(#{scorecard_view.heading_label(REGISTRY[0]['id'])})" in matrix and REGISTRY[0]["id"] not in matrix
    chapter, verified = REGISTRY[0]["chapter"], front_page.scorecard_card(entry)
    verdict = card.loc[card["claim_id"] == REGISTRY[0]["id"], "verdict"].iloc[0]
    box = front_page.findings_box(chapter, verified)  # the line under a chapter's title: verdicts counted, with marks
    assert f"{scorecard_view.MARKS[verdict]} 1 {verdict}" in box and f"<summary-{chapter[:2]}>" in box
    end = front_page.summary(chapter, verified, "", "**This run**: n: 3.")  # the chapter's summary: each claim
    assert REGISTRY[0]["claim"] in end and f"**{verdict}**" in end and f"<{scorecard.claim_label(REGISTRY[0]['id'])}>" in end
    assert end.startswith(f"(summary-{chapter[:2]})=\n## Summary\n\n**Key results**:") and end.rstrip().endswith("**This run**: n: 3.")
    assert front_page.findings_box("14_scorecard", verified) == "" and front_page.findings_box(chapter, None) == ""
    assert "**Key results**:\n\n3 verdicts" in front_page.summary("14_scorecard", verified, "**In this edition.**\n\n3 verdicts", "")
    path.write_text(path.read_text().replace("holds", "does not hold"))  # a table its run did not write: no summary
    assert front_page.scorecard_card(entry) is None and front_page.scorecard_summary(None) == ""


def test_a_model_is_named_by_any_chapter_that_recorded_its_name(planted):
    registry, root = planted
    Results("12_isotropy_word_similarity", "planted", root=root).table(
        pd.DataFrame({"variant": ["raw", "centered"], "I1": [0.5, 0.9]}), Schema("12_isotropy_word_similarity", "isotropy", ("variant", "I1")), "delta", {}
    )
    Results("02_outlier_neurons", "planted", root=root).table(
        pd.DataFrame({"x": [1]}), Schema("02_outlier_neurons", "t", ("x",)), "delta", {}, {"name": "Delta model"}
    )
    tables = verdicts.Tables("planted", root=root)
    assert tables.name("delta", "12_isotropy_word_similarity") == "Delta model"  # its own chapter recorded no name
    assert tables.name("alpha", "12_isotropy_word_similarity") == "Alpha" and tables.name("nobody", "01_anisotropy") == "nobody"


def test_the_weakest_unit_is_the_one_closest_to_failing_in_the_claims_direction():
    """For a claim that an effect is small ("below"), the weakest unit is the largest effect, not the smallest."""
    claim = scorecard.claims()[0]
    below = [verdicts.unit(f"layer {i}", inference.exact(v, "whole"), 0.5, "below") for i, v in enumerate([0.1, 0.4, 0.2])]
    assert verdicts.from_units(below, claim).estimate.value == 0.4
    above = [verdicts.unit(f"layer {i}", inference.exact(v, "whole"), 0.5) for i, v in enumerate([0.9, 0.6, 0.7])]
    assert verdicts.from_units(above, claim).estimate.value == 0.6
    within = [verdicts.unit(f"set {i}", inference.exact(v, "whole"), 1.0, "within") for i, v in enumerate([0.1, -0.8, 0.3])]
    assert verdicts.from_units(within, claim).estimate.value == -0.8


def _units(values: list[float], margin: float = 1.0, se: float = 0.1) -> list:
    return [
        verdicts.unit(f"set {i}", inference.from_interval(v, v - 1.96 * se, v + 1.96 * se, "planted"), margin, of="data sets") for i, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("values", "how", "expected"),
    [
        ([2, 2, 2], "all", "holds"),
        ([2, 2, 0], "all", "mixed"),  # a refuting unit beside holding ones
        ([0, 1, 1], "all", "does not hold"),  # a refuting unit and no holding one: refuted, not inconclusive
        ([1, 1, 1], "all", "inconclusive"),
        ([0, 0, 2], "any", "holds"),
        ([0, 0, 0], "any", "does not hold"),
        ([2, 2, 0], "most", "holds"),
        ([2, 0, 0], "most", "does not hold"),
        ([2, 1, 0], "most", "inconclusive"),
        ([4, -1, 3], "mean", "holds"),  # a set that loses does not refute an average
        ([0.5, 0.4, 0.6], "mean", "does not hold"),
        ([1, 1, 1], "mean", "inconclusive"),
    ],
)
def test_one_aggregation_grammar_decides_every_claim(values, how, expected):
    """`aggregate`: all (a refuting unit refutes, mixed beside holding ones), any (the best unit, paid for), most (a
    majority), mean (the mean effect and its interval): the same rule for every claim."""
    assert verdicts.aggregate(_units(values), how).verdict == expected


def test_the_mean_of_units_carries_their_combined_interval():
    units = _units([4, -1, 3], se=0.5)
    mean = verdicts.mean_estimate(units)
    assert mean.value == pytest.approx(2.0) and (mean.high - mean.low) / 2 == pytest.approx(1.96 * 0.5 * math.sqrt(3) / 3, rel=1e-3)
    assert "mean over 3 data sets" in mean.method
    exact = [verdicts.unit(str(v), inference.exact(v, "whole"), 1.0) for v in (1.0, 3.0)]
    assert verdicts.mean_estimate(exact).exact and verdicts.aggregate(exact, "mean").verdict == "holds"


def test_an_unknown_aggregate_is_a_one_line_error(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump([{**REGISTRY[0], "aggregate": "usually"}]))
    with pytest.raises(BookError, match="aggregate 'usually' is not one of all, any, mean, most"):
        scorecard.claims(bad)


def test_a_claim_about_one_family_is_not_applicable_to_the_other(tmp_path):
    """Luo's position-embedding argmax is RoBERTa's (for BERT the paper says the pattern "does not exist"): a BERT-like
    model is "not applicable", not "does not hold"; a RoBERTa-like one, or one whose family no chapter recorded, is graded."""
    registry = tmp_path / "claims.yaml"
    entry = next(e for e in yaml.safe_load(scorecard.REGISTRY.read_text()) if e["id"] == "luo2021/position-embedding-argmax")
    registry.write_text(yaml.safe_dump([entry]))
    frame = pd.DataFrame({"table": ["position after the first"], "n_rows": [100], "argmax_dim": [5], "argmax_percent": [40.0]})
    for model, family in (("b", "bert"), ("r", "roberta")):
        _plant(tmp_path, model, "03_positional_origin", "embedding_tables", frame, model.upper(), family)
    _plant(tmp_path, "x", "03_positional_origin", "embedding_tables", frame)
    card = scorecard.scorecard("planted", root=tmp_path, registry=registry).set_index("model")
    assert card.loc["B", "verdict"] == verdicts.NOT_APPLICABLE and "about roberta models; this one is bert" in card.loc["B", "ours"]
    assert card.loc["R", "verdict"] == verdicts.FAILS and card.loc["x", "verdict"] == verdicts.FAILS
    registry.write_text(yaml.safe_dump([{**entry, "applies_to": ["gpt"]}]))
    with pytest.raises(BookError, match="applies_to names no known family"):
        scorecard.claims(registry)


def test_a_verdict_on_some_of_many_units_pays_for_looking_at_all_of_them():
    """One failing layer of ten refutes "in every layer" with the smallest p times 10, not times the number that
    failed; "most" of 12 needs the 7th smallest p times 6 (Benjamini & Heller); "any" holds on one unit, paid ×k, and
    does not hold only where every unit does not."""

    def planted(values, se=0.1):
        return [verdicts.unit(f"u{i}", inference.from_interval(v, v - 1.96 * se, v + 1.96 * se, "planted"), 0.0) for i, v in enumerate(values)]

    units = planted([-0.5] + [0.05] * 9)  # one clearly below, nine inconclusive
    refuted = verdicts.aggregate(units, "all")
    assert refuted.verdict == "does not hold" and refuted.p == pytest.approx(min(1, 10 * units[0].decision.p))
    most = planted([1.0 + 0.1 * i for i in range(7)] + [0.0] * 5)
    held = verdicts.aggregate(most, "most")
    seventh = sorted(u.decision.p for u in most if u.decision.verdict == "holds")[6]
    assert held.verdict == "holds" and held.p == pytest.approx(min(1, 6 * seventh))
    assert verdicts.aggregate(planted([0.0, 0.05, 1.0]), "any").verdict == "holds"
    assert verdicts.aggregate(planted([-1.0, 0.05]), "any").verdict == "inconclusive"  # one unit still might hold
    assert verdicts.aggregate(planted([-1.0, -0.8]), "any").verdict == "does not hold"
