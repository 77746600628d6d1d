"""Nothing reaches a page that its entries do not vouch for: a hand-edited notebook, a scorecard table without its
chapter's entry, a PDF typeset from other runs, an HTML folder that is not a whole edition, a failed HTML build."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lib.edition import downloads, front_page, publishing, schedule, staging, vouching
from lib.edition.folders import Edition
from lib.errors import BookError
from tests.test_pages import page_book  # noqa: F401  (a fixture)


def staged_front(ed: Edition) -> str:
    source = staging.stage(ed)
    return (source / "book" / "intro.md").read_text()


def tree(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_hand_edited_notebook_is_not_published(page_book, capsys):  # noqa: F811
    notebook = page_book.notebook("01_page")
    text = notebook.read_text()
    notebook.write_text(text.replace("A line that rises.", "A line that falls."))  # a value changed by hand
    source = staging.stage(page_book)
    assert not (source / "book/chapters/01_page.ipynb").exists() and (source / "book/chapters/01_page.md").is_file()
    said = capsys.readouterr().out
    assert "01_page: its executed notebook differs from the one its run recorded (edited or re-run by hand); its page says it was not executed" in said
    notebook.write_text(text)  # the notebook its run wrote: published again
    assert (staging.stage(page_book) / "book/chapters/01_page.ipynb").is_file()


def test_the_front_page_summary_comes_only_from_the_scorecard_chapters_entry(page_book, tmp_path):  # noqa: F811
    planted = tmp_path / "results" / "quick" / "chapter" / front_page.SCORECARD / "scorecard.csv"
    planted.parent.mkdir(parents=True)
    pd.DataFrame({"paper": ["luo2021"], "verdict": ["holds"], "claim_id": ["luo2021/x"]}).to_csv(planted, index=False)
    assert "What holds" not in staged_front(page_book)  # results left by a run that no entry lists: no summary


def test_a_pdf_typeset_from_other_runs_is_not_linked(page_book, capsys):  # noqa: F811
    pdf = page_book.root / downloads.PDF_NAME
    pdf.write_bytes(b"%PDF-1.5 an old book")
    assert "book.pdf" not in staged_front(page_book)  # no stamp: nothing says what it was typeset from
    assert "was typeset from other chapter runs than these pages show; not linked" in capsys.readouterr().out
    runs = vouching.entries_digest(vouching.verified_entries(page_book))
    downloads.pdf_stamp(pdf).write_text(json.dumps({"entries": runs}))
    assert "book.pdf" in staged_front(page_book)
    schedule.build("quick", [("01_page", {"profile": "quick", "n": 4})])  # the chapter runs again: the PDF is stale
    front = staged_front(page_book)
    assert "book.pdf" not in front and not (page_book.source / downloads.DOWNLOADS / downloads.PDF_NAME).exists()


def test_a_failed_html_build_leaves_the_last_good_edition_byte_identical(page_book):  # noqa: F811
    publishing.build_html(page_book)
    publishing.publish(page_book)
    before = tree(page_book.html)
    rerun = staging.REPO_ROOT / "book" / "rerun.md"
    good = rerun.read_text()
    rerun.write_text(good + "\nSee {doc}`no-such-page`.\n")  # a broken reference: Sphinx's warnings are errors
    with pytest.raises(BookError, match="the quick edition's html build failed .*; the last good edition is unchanged"):
        publishing.build_html(page_book)
    assert tree(page_book.html) == before and not page_book.html.with_name("html.new").exists()
    rerun.write_text(good + "\nRun it twice.\n")
    publishing.build_html(page_book)  # the next build starts afresh and shows the change
    assert "Run it twice." in (page_book.html / "book" / "rerun.html").read_text()


def test_publish_takes_only_a_whole_edition_built_from_its_entries(page_book):  # noqa: F811
    html = page_book.html
    html.mkdir(parents=True)
    (html / "index.html").write_text("<p>only a front page</p>")
    with pytest.raises(BookError, match=r"was not built by `make book` from the chapter runs the quick edition's entries list"):
        publishing.publish(page_book)
    publishing.build_html(page_book)
    assert publishing.publish(page_book) == html
    (html / "book" / "chapters" / "01_page.html").unlink()
    with pytest.raises(BookError, match=r"lacks the page of 01_page"):
        publishing.publish(page_book)
    publishing.build_html(page_book)
    schedule.build("quick", [("01_page", {"profile": "quick", "n": 5})])  # new runs since the pages were built
    with pytest.raises(BookError, match="was not built by `make book` from the chapter runs"):
        publishing.publish(page_book)
