"""Chapter 14's page as MyST, from a small planted card: a verdict matrix per paper whose cells carry the mark and the
number that decided it (blank where a claim was not tested on a model, apart from "not run"), a heading per claim with
its verdicts in words and the evidence folded away, and no claim ids or file names in the visible text."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from lib.book import scorecard_view as view
from lib.experiments import scorecard

from .test_scorecard import REGISTRY, _anisotropy, _plant, planted  # noqa: F401 (a fixture)

NBSP = "\u00a0"
NAMES = {"c1": "one", "c2": "two", "c3": "three", "c4": "four", "c5": "five"}  # claims in words: a figure would end the link early


def _row(claim_id: str, model: str, verdict: str, **values) -> dict:
    """One row of a card as `scorecard.scorecard` writes it; what a test does not set is empty."""
    base = {
        "claim_id": claim_id,
        "paper": "luo2021",
        "section": "§4",
        "claim": f"Claim {NAMES[claim_id.split('/')[1]]} holds.",
        "paper_value": "82%",
        "model": model,
        "on_model": model != scorecard.NO_MODEL,
        "verdict": verdict,
        "ours": "",
        "chapter": "01_anisotropy",
        "table": "anisotropy_by_layer",
        "effect": "mean cosine above the centred baseline",
        "margin": 0.1,
        "estimate": np.nan,
        "low": np.nan,
        "high": np.nan,
        "p": np.nan,
        "p_floor": np.nan,
        "p_method": "",
        "control": "",
        "smaller_margin": 0.05,
        "at_smaller": verdict,
        "larger_margin": 0.2,
        "at_larger": verdict,
        "margin_decides": False,
        "to_decide": np.nan,
        "to_decide_of": "",
        "source": f"planted/{model}/01_anisotropy/anisotropy_by_layer.csv",
        "tested": False,
        "p_holm": np.nan,
        "family": 0,
        "corrected": False,
        "before_holm": verdict,
    }
    return base | values


EXACT = ("estimate", "low", "high")  # a quantity measured on everything: no interval around it
LAYERS = "95% intervals paired over 150 pairs: layer 1: 0.300 (0.280 to 0.320) → holds; layer 2: {second}"


@pytest.fixture
def card() -> pd.DataFrame:
    """Four claims of one paper: c1 on models A (holds in both layers) and B (mixed), c2 on A alone (a share below its
    margin, measured on everything), c3 on B alone (inconclusive, the margin decides it), c4 not run; and one claim of
    another paper that the book cannot test."""
    rows = [
        _row("luo2021/c1", "A", "holds", ours=LAYERS.format(second="0.400 (0.380 to 0.420) → holds"), estimate=0.3, low=0.28, high=0.32),
        _row("luo2021/c1", "B", "mixed", ours=LAYERS.format(second="0.050 (0.030 to 0.070) → does not hold"), estimate=0.05, low=0.03, high=0.07),
        _row("luo2021/c2", "A", "does not hold", ours="dim 7: 45.2%", effect="share (%) of vectors", margin=50.0, **dict.fromkeys(EXACT, 45.2)),
        _row(
            "luo2021/c3",
            "B",
            "inconclusive",
            ours="0.80 (95% interval -0.40 to 2.00)",
            margin=1.0,
            estimate=0.8,
            low=-0.4,
            high=2.0,
            to_decide=312.2,
            to_decide_of="pairs",
            margin_decides=True,
            smaller_margin=0.5,
            at_smaller="holds",
            larger_margin=2.0,
            at_larger="inconclusive",
        ),
        _row("luo2021/c4", scorecard.NO_MODEL, "not run", ours="07_wic has not written best for this profile"),
        _row("ding2022/c5", scorecard.NO_MODEL, "not testable", paper="ding2022", ours="mBART is not available offline"),
    ]
    return pd.DataFrame(rows)


def _cells(matrix: str, claim: str) -> list[str]:
    """The cells of the matrix row whose claim link starts with `claim`."""
    row = next(line for line in matrix.splitlines() if line.startswith(f"| [{claim}"))
    return [c.strip() for c in row.strip("|").split(" | ")]


def _visible(myst: str) -> str:
    """The text a reader sees: without target lines, directive options and the targets of links and roles."""
    text = re.sub(r"^\([^)]*\)=$|^:(name|class|class-container):.*$", "", myst, flags=re.M)
    return re.sub(r"\]\(#[^)]*\)|<[a-z0-9-]+>`", "", text)


def test_the_matrix_gives_each_verdict_its_mark_and_deciding_number(card):
    matrix = view.matrix(card, "luo2021", "sec-untested")
    assert ":name: tbl-14-verdicts-luo2021" in matrix and ":class: book-verdicts" in matrix
    assert matrix.startswith(":::{table} Luo, Kulmizev & Mao (2021): 1 holds, 1 mixed, 1 does not hold, 1 inconclusive, 1 not run\n")  # counted
    assert matrix.splitlines()[4] == "| claim | A | B |"  # only the models the paper's claims were tested on
    c1 = _cells(matrix, "Claim one holds.")
    assert c1[0] == f"[Claim one holds.](#{view.heading_label('luo2021/c1')})"  # linked to its section
    assert c1[1] == f"{{bdg-success}}`✓{NBSP}2{NBSP}of{NBSP}2 layers`" and c1[2] == f"{{bdg-warning}}`◐{NBSP}1{NBSP}of{NBSP}2 layers`"
    c2 = _cells(matrix, "Claim two holds.")
    assert c2[1] == f"{{bdg-danger}}`✗{NBSP}45.2% <{NBSP}50%`" and c2[2] == ""  # blank: c2 was not tested on B; no break in "< 50%"
    c3 = _cells(matrix, "Claim three holds.")
    assert c3[1] == "" and c3[2] == f"{{bdg-secondary}}`?{NBSP}0.8 (−0.4{NBSP}to{NBSP}2.0)`"  # the interval's width to 2 digits; breaks before it
    assert "Claim four" not in matrix  # not run: no row of blanks, but said under the table, apart from "not tested here"
    assert matrix.endswith("1 more claim has no verdict on a model (1 not run): see the {ref}`claims without a verdict <sec-untested>`.")
    assert "| –" not in matrix and "Claim five" not in matrix  # another paper's claim
    legend = view.legend()
    assert all(f"{view.MARKS[v]}` {v}" in legend for v in ("holds", "mixed", "does not hold", "inconclusive", "not testable", "not applicable"))
    assert "blank: not tested on that model" in legend


def test_each_claim_is_a_heading_with_its_verdicts_in_words_and_its_evidence_folded(card):
    page = view.claim_sections(card, "luo2021")
    headings = re.findall(r"^### (.*)$", page, flags=re.M)
    assert headings == ["Claim one holds", "Claim two holds", "Claim three holds"]  # the matrix's order; c4 was not run
    assert f"({view.heading_label('luo2021/c1')})=\n### Claim one holds\n\n::::{{dropdown}} " in page
    said = re.findall(r"^::::\{dropdown\} (.*)$", page, flags=re.M)
    assert said[0] == "{bdg-success}`✓` **A**: holds in all 2 layers · {bdg-warning}`◐` **B**: mixed: holds in 1 of 2 layers, not in 1"
    assert said[1] == "{bdg-danger}`✗` **A**: does not hold: 45.2%, measured on all of it, is below the margin 50%"
    decide = "about 313 pairs would decide it; at 0.5 it would hold"
    assert said[2] == f"{{bdg-secondary}}`?` **B**: inconclusive: 0.80 (−0.40 to 2.00) contains the margin 1; {decide}"
    assert page.count(":::{table}") == 3 and f":name: {scorecard.claim_label('luo2021/c2')}" in page  # the label other chapters link to
    assert page.count("{ref}`↑ This paper's verdicts <tbl-14-verdicts-luo2021>`") == 3
    assert "*Measured in* {doc}`01_anisotropy`." in page  # the chapter by its title
    visible = _visible(page + view.matrix(card, "luo2021", "sec-untested"))
    assert ".csv" not in visible and "luo2021/" not in visible and "anisotropy_by_layer" not in visible


def test_a_verdict_corrected_by_holm_says_what_it_was_alone(card):
    corrected = card.iloc[0].to_dict() | {"verdict": "inconclusive", "corrected": True, "family": 21, "ours": "0.300 (0.280 to 0.320)"}
    assert view.meaning(pd.Series(corrected)) == "inconclusive after the correction for the 21 tests of its paper: alone it would hold (0.300 (0.280 to 0.320))"
    reason = "not testable at this scale: the probe still improved (in layers 1; 2); run longer"
    untestable = card.iloc[0].to_dict() | {"verdict": "not testable", "ours": reason}
    assert view.meaning(pd.Series(untestable)) == "not testable at this scale: the probe still improved"  # the evidence says the rest
    assert view.deciding(pd.Series(untestable)) == ""


def test_a_claims_link_ends_before_its_first_figure():
    assert view._linked("A handful of tokens covers 30% of a corpus.", "x") == "[A handful of tokens covers](#x) 30% of a corpus."
    assert view._linked("Centering raises I(W).", "x") == "[Centering raises I(W).](#x)" and view._linked("1 dim [sic].", "x") == "[1 dim \\[sic\\].](#x)"


@pytest.mark.parametrize(
    ("value", "like", "printed"),
    [(3.0, None, "3"), (1234.0, None, "1,234"), (45.17, None, "45.2"), (-1.5, None, "−1.50"), (-0.00004, 0.5, "0.000"), (0.0123, 0.0123, "0.012")],
)
def test_numbers_are_printed_as_quantities(value, like, printed):
    assert view.number(value, like) == printed


def test_the_planted_tables_verdicts_read_as_layers(planted):  # noqa: F811 (the fixture)
    registry, root = planted
    _plant(root, "gamma", "01_anisotropy", "anisotropy_by_layer", _anisotropy([0.5, 0.3, 0.02], 0.01))
    card = scorecard.scorecard("planted", root=root, registry=registry)
    matrix = view.matrix(card, "luo2021", "sec-untested")
    cells = _cells(matrix, REGISTRY[0]["claim"])
    verdicts = (("success", "✓", 2), ("danger", "✗", 0), ("warning", "◐", 1))
    layers = [f"{{bdg-{colour}}}`{mark}{NBSP}{k}{NBSP}of{NBSP}2 layers`" for colour, mark, k in verdicts]
    assert cells[1:] == layers  # Alpha holds in both layers, beta in neither, gamma in one
    assert "1 more claim" not in view.matrix(card, "bis2021", "x") and view.matrix(card, "ding2022", "x").startswith("2 claims have no verdict on a model")
    assert REGISTRY[0]["id"] not in _visible(view.claim_sections(card, "luo2021"))
