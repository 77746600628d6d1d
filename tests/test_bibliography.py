"""The reference list's labels read as the text cites: author-year, accents resolved, shared labels told apart."""

from __future__ import annotations

from pybtex.database import parse_string

from lib.edition.bibliography import AuthorYearLabels, author_year
from lib.settings import REPO_ROOT


def test_labels_are_author_year_with_accents_resolved():
    bib = parse_string((REPO_ROOT / "book" / "references.bib").read_text(encoding="utf-8"), "bibtex")
    assert author_year(bib.entries["luo2021positional"]) == "Luo et al., 2021"
    assert author_year(bib.entries["luo2021thesis"]) == "Luo, 2021"
    assert author_year(bib.entries["bis2021too"]) == "Biš et al., 2021"
    assert author_year(bib.entries["reimers2019sentence"]) == "Reimers & Gurevych, 2019"


def test_two_entries_with_one_label_get_a_and_b():
    bib = parse_string(
        "@misc{a, author = {Smith, Ann}, year = {2020}, title = {One}}\n@misc{b, author = {Smith, Ann}, year = {2020}, title = {Two}}\n"
        "@misc{c, author = {Jones, Bo}, year = {2020}, title = {Three}}",
        "bibtex",
    )
    labels = list(AuthorYearLabels().format_labels(bib.entries.values()))
    assert labels == ["Smith, 2020a", "Smith, 2020b", "Jones, 2020"]
