"""Nothing reaches a page that its entries do not vouch for: a hand-edited notebook, a scorecard table without its
chapter's entry, a PDF typeset from other runs, an HTML folder that is not a whole edition, a failed HTML build."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from lib.core import sources
from lib.edition import downloads, front_page, publishing, schedule, staging, vouching
from lib.edition.folders import Edition
from lib.errors import BookError
from lib.experiments import scorecard
from lib.settings import results_dir


def staged_front(ed: Edition) -> str:
    source = staging.stage(ed)
    return (source / "book" / "intro.md").read_text()


def tree(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_hand_edited_notebook_is_not_published(own_page_book, capsys):
    notebook = own_page_book.notebook("01_page")
    text = notebook.read_text()
    notebook.write_text(text.replace("A line that rises.", "A line that falls."))  # a value changed by hand
    source = staging.stage(own_page_book)
    assert not (source / "book/chapters/01_page.ipynb").exists() and (source / "book/chapters/01_page.md").is_file()
    said = capsys.readouterr().out
    assert "01_page: its executed notebook differs from the one its run recorded (edited or re-run by hand); its page says it was not executed" in said
    notebook.write_text(text)  # the notebook its run wrote: published again
    assert (staging.stage(own_page_book) / "book/chapters/01_page.ipynb").is_file()


SCORECARD_CHAPTER = """# %% [markdown]
# # A scorecard

# %% tags=["parameters"]
profile = "default"

# %%
import pandas as pd

from lib.book.results import Results
from lib.core.store import CHAPTER, Schema

SCORECARD = Schema("14_scorecard", "scorecard", ("claim_id", "paper", "claim", "model", "on_model", "verdict", "chapter"))  # what the front page reads
verdicts = ["holds", "holds", "does not hold"]
rows = [
    {"claim_id": f"luo2021/{i}", "paper": "luo2021", "claim": f"Claim {i}.", "model": "m", "on_model": True, "verdict": v, "chapter": "13_elsewhere"}
    for i, v in enumerate(verdicts)
]
Results("14_scorecard", profile).table(pd.DataFrame(rows), SCORECARD, CHAPTER, {"profile": profile})
"""


def test_the_front_page_summary_comes_only_from_the_scorecard_chapters_entry(own_page_book, capsys):
    planted = results_dir() / "quick" / "chapter" / front_page.SCORECARD / "scorecard.csv"
    planted.parent.mkdir(parents=True)
    pd.DataFrame({"paper": ["luo2021"], "verdict": ["holds"], "claim_id": ["luo2021/x"]}).to_csv(planted, index=False)
    assert "What holds" not in staged_front(own_page_book)  # results left by a run that no entry lists: no summary
    read = {"claim_id", "paper", "claim", "model", "on_model", "verdict", "chapter"}  # what the front page reads of it
    assert front_page.SCORECARD == "14_scorecard" and read <= set(scorecard.SCORECARD.columns)
    (sources.NOTEBOOKS / f"{front_page.SCORECARD}.py").write_text(SCORECARD_CHAPTER)  # a scorecard chapter whose run writes its table
    sources.declared_parameters.cache_clear()
    schedule.build("quick", [(front_page.SCORECARD, {"profile": "quick"})])
    front = staged_front(own_page_book)
    assert "## What holds, in this edition" in front and "tests 3 claims of the papers on 1 model:" in front  # its entry vouches for it
    assert "| paper | holds | does not hold |" in front and "| Luo, Kulmizev & Mao (2021) | 2 | 1 |" in front
    card = pd.read_csv(planted)
    card.loc[2, "verdict"] = "holds"
    card.to_csv(planted, index=False)  # the table changed since its run
    capsys.readouterr()
    assert "What holds" not in staged_front(own_page_book)
    assert f"{front_page.SCORECARD}: its result quick/chapter/{front_page.SCORECARD}/scorecard.csv has changed since" in capsys.readouterr().out


def test_a_pdf_typeset_from_other_runs_is_not_linked(own_page_book, capsys):
    pdf = own_page_book.root / downloads.PDF_NAME
    pdf.write_bytes(b"%PDF-1.5 an old book")
    assert "book.pdf" not in staged_front(own_page_book)  # no stamp: nothing says what it was typeset from
    assert "was typeset from other chapter runs than these pages show; not linked" in capsys.readouterr().out
    runs = vouching.entries_digest(vouching.verified_entries(own_page_book))
    downloads.pdf_stamp(pdf).write_text(json.dumps({"entries": runs}))
    assert "book.pdf" in staged_front(own_page_book)
    schedule.build("quick", [("01_page", {"profile": "quick", "n": 4})])  # the chapter runs again: the PDF is stale
    front = staged_front(own_page_book)
    assert "book.pdf" not in front and not (own_page_book.source / downloads.DOWNLOADS / downloads.PDF_NAME).exists()


def test_a_failed_html_build_leaves_the_last_good_edition_byte_identical(own_page_book):
    publishing.publish(own_page_book)  # a good edition, built
    before = tree(own_page_book.html)
    rerun = staging.REPO_ROOT / "book" / "rerun.md"
    good = rerun.read_text()
    rerun.write_text(good + "\nSee {doc}`no-such-page`.\n")  # a broken reference: Sphinx's warnings are errors
    with pytest.raises(BookError, match="the quick edition's html build failed .*; the last good edition is unchanged"):
        publishing.build_html(own_page_book)
    assert tree(own_page_book.html) == before and not own_page_book.html.with_name("html.new").exists()
    rerun.write_text(good + "\nRun it twice.\n")
    publishing.build_html(own_page_book)  # the next build starts afresh and shows the change
    assert "Run it twice." in (own_page_book.html / "book" / "rerun.html").read_text()


def test_publish_takes_only_a_whole_edition_built_from_its_entries(own_page_book):
    html = own_page_book.html
    built = html.rename(html.with_name("html.built"))  # the edition as `build_html` left it, put aside
    html.mkdir()
    (html / "index.html").write_text("<p>only a front page</p>")
    with pytest.raises(BookError, match=r"was not built by `make book` from the chapter runs the quick edition's entries list"):
        publishing.publish(own_page_book)
    shutil.rmtree(html)
    built.rename(html)
    assert publishing.publish(own_page_book) == html
    page = html / "book" / "chapters" / "01_page.html"
    text = page.read_bytes()
    page.unlink()
    with pytest.raises(BookError, match=r"lacks the page of 01_page"):
        publishing.publish(own_page_book)
    page.write_bytes(text)
    assert publishing.publish(own_page_book) == html  # whole again
    schedule.build("quick", [("01_page", {"profile": "quick", "n": 5})])  # new runs since the pages were built
    with pytest.raises(BookError, match="was not built by `make book` from the chapter runs"):
        publishing.publish(own_page_book)
