"""A chapter's first screen and its Summary: the answer the chapter computed moves under its title, the scorecard's
verdicts are counted in words, the Summary gives the key results and each claim's deciding number, and the front page
says what holds across the book."""

from __future__ import annotations

import nbformat
import pandas as pd

from lib.book.output import ANSWER, FINDINGS
from lib.edition import front_page, staging


def _notebook() -> nbformat.NotebookNode:
    answer = nbformat.v4.new_output("display_data", data={"text/markdown": "The answer: 3 of 4 layers (95% interval 2 to 4)."}, metadata={ANSWER: True})
    other = nbformat.v4.new_output("display_data", data={"text/markdown": "**What our run shows.**\n\n- a finding"}, metadata={FINDINGS: True})
    cells = [
        nbformat.v4.new_markdown_cell("# A chapter\n\nProse."),
        nbformat.v4.new_code_cell("ch.findings(x)", outputs=[other], metadata={"tags": ["hide-input"]}),
        nbformat.v4.new_code_cell("ch.answer(x)", outputs=[answer], metadata={"tags": ["hide-input"]}),
        nbformat.v4.new_code_cell("both()", outputs=[answer, other]),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_the_answer_is_taken_out_of_its_cells_and_an_emptied_hidden_cell_leaves_the_page():
    nb = _notebook()
    text = staging._lifted(nb, ANSWER)
    assert text == "The answer: 3 of 4 layers (95% interval 2 to 4).\n\nThe answer: 3 of 4 layers (95% interval 2 to 4)."
    assert "remove-cell" in nb.cells[2].metadata["tags"] and nb.cells[2].outputs == []
    assert "remove-cell" not in nb.cells[1].metadata["tags"]  # the findings stay where they are
    assert [o["metadata"] for o in nb.cells[3].outputs] == [{FINDINGS: True}] and "tags" not in nb.cells[3].metadata  # its code stays


def test_parameters_are_shown_by_their_meaning_not_their_identifiers():
    values = {"models": "minilm,mpnet", "max_pairs": 0, "n_fit": 4000, "seed": 0}
    line = staging.measured_text(values, "08_sts")
    assert line.startswith("**This run**: models all-MiniLM-L6-v2, all-mpnet-base-v2; pairs per data set: all; ")
    assert "`" not in line and "max_pairs" not in line and "seed" not in line
    layer = staging.measured_text({"pca_layer": -1, "n_pairs": 1000}, "01_anisotropy")
    assert "hidden state for the PCA view: the last layer" in layer and "disjoint sentence pairs: 1,000 (paper: 1,000)" in layer


def _card() -> pd.DataFrame:
    rows = [
        ("p/a", "luo2021", "Claim A holds.", "m1", "holds", "0.5 (0.4 to 0.6)"),
        ("p/a", "luo2021", "Claim A holds.", "m2", "holds", "0.7 (0.6 to 0.8)"),
        ("p/b", "luo2021", "Claim B.", "m1", "does not hold", "0.1 (0.0 to 0.2)"),
        ("p/b", "luo2021", "Claim B.", "m2", "does not hold", "0.0 (-0.1 to 0.1)"),
        ("p/c", "bis2021", "Claim C.", "m1", "inconclusive", "0.3 (-0.1 to 0.7)"),
        ("p/d", "bis2021", "Claim D.", "", "not testable", ""),
    ]
    card = pd.DataFrame(rows, columns=["claim_id", "paper", "claim", "model", "verdict", "ours"])
    return card.assign(on_model=card["model"] != "", chapter="08_sts")


def test_the_verdicts_are_counted_in_words_and_the_summary_gives_the_numbers():
    card = _card()
    box = front_page.findings_box("08_sts", card)
    assert "4 claims**: ✓ 2 hold · ✗ 2 do not hold · ? 1 inconclusive · n/t 1 not testable" in box
    assert "on 1 claims" not in front_page.findings_box("08_sts", card[card["claim_id"] == "p/a"])
    end = front_page.summary("08_sts", card, "**What our run shows.**\n\n- a finding with 3.2 points", "**This run**: x.")
    assert end.startswith("(summary-08)=\n## Summary\n\n**Key results**:\n\n- a finding with 3.2 points\n\n**The papers' claims tested here**")
    assert "m1: ✓ **holds** (0.5 (0.4 to 0.6))" in end and end.rstrip().endswith("**This run**: x.")


def test_the_front_page_says_what_holds_across_the_book():
    text = front_page.headline(_card())
    assert text.startswith("This edition tests 4 claims of the papers on 2 models: 1 hold on every model they were decided on, 0 on some, 1 on none;")
    assert "1 stay inconclusive" in text and "1 cannot be tested here" in text
    assert "Luo, Kulmizev & Mao (2021): 1 of 2 claims hold on at least one model, among them “Claim A holds”; 1 holds on none, among them “Claim B”." in text
    assert text.count(". ") + 1 == 3  # one sentence overall, one per paper
