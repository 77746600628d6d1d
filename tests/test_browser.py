"""Pages in a real browser (Debian's Chromium, headless; `.ci/run` installs it): a table wider than the text column says
that it scrolls, a phone never scrolls a page sideways, and tab labels are legible in the dark theme.

The first test lays out a small book with a wide and a narrow table. The second measures every page of a built
edition when BOOK_BROWSER_HTML names its html folder (CI: the quick edition it has just built)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.core import sources
from lib.edition import publishing

from . import browser
from .test_pages import PAGE_CHAPTER, book_with_pages

pytestmark = pytest.mark.skipif(browser.chromium() is None, reason="Chromium is not installed here (apt install chromium; CI installs it)")

WIDE_CHAPTER = PAGE_CHAPTER.replace(
    'tables.show(frame.head(1), "The first model")',
    'tables.show(pd.DataFrame({f"a rather long column name {i}": [123456.789] for i in range(14)}), "Fourteen columns", name="wide")',
)


def _checked(url: str) -> int:
    """The page at 1280 px (light and dark) and 390 px: every table either fits or carries the scroll cue, the phone
    page does not scroll sideways, every tab label has a contrast of at least 4.5:1 (WCAG AA). Returns how many of
    its tables scroll at 1280 px."""
    scrolling = 0
    for dark in (False, True):
        laptop = browser.measure(url, 1280, dark=dark)
        hidden = [t for t in laptop["tables"] if t["hidden"] > 20 and not t["cue"]]
        assert not hidden, f"{url}: tables hide columns without the scroll cue: {hidden}"
        scrolling = sum(t["hidden"] > 20 for t in laptop["tables"])
        faint = [t for t in laptop["tabs"] if t["contrast"] < 4.5]
        assert not faint, f"{url} ({'dark' if dark else 'light'}): tab labels below 4.5:1: {faint}"
    phone = browser.measure(url, 390)
    assert phone["page"] <= 0, f"{url}: scrolls {phone['page']} px sideways at 390 px, past the window: {phone['wide']}"
    return scrolling


def test_a_wide_table_shows_its_cue_and_a_phone_page_fits(tmp_path, monkeypatch):
    edition = book_with_pages(tmp_path, monkeypatch, WIDE_CHAPTER)
    try:
        publishing.build_html(edition)
    finally:
        sources.declared_parameters.cache_clear()
    with browser.serve(edition.html) as base:
        url = base + "book/chapters/01_page.html"
        _checked(url)
        tables = {t["caption"].split(" ", 2)[-1]: t for t in browser.measure(url, 1280)["tables"]}
        assert tables["Fourteen columns"]["hidden"] > 20 and tables["Fourteen columns"]["cue"]  # it scrolls, and says so
        assert not tables["Scores of the models (✓ ◐ ≥)"]["cue"]  # a table that fits carries no cue
        assert len(browser.measure(url, 1280, dark=True)["tabs"]) == 2


@pytest.mark.skipif(not os.environ.get("BOOK_BROWSER_HTML"), reason="BOOK_BROWSER_HTML names no built edition")
def test_every_page_of_the_built_edition():
    html = Path(os.environ["BOOK_BROWSER_HTML"])
    pages = sorted(p.relative_to(html).as_posix() for p in html.glob("book/**/*.html"))
    assert len(pages) >= 15, f"{html} holds {len(pages)} pages: not a built edition"
    with browser.serve(html) as base:
        scrolling = {page: n for page in pages if (n := _checked(base + page))}
    assert sum(scrolling.values()) <= 5, f"more than a handful of tables scroll at 1280 px: {scrolling}"  # the others fit the column
