"""Pages in a real browser (Debian's Chromium, headless, driven over DevTools at a laptop's and a real phone's device
metrics; `.ci/run` installs it), each tab and folded solution opened by a click as a reader opens it: no table hides a
column (at 1280 px every table fits the column; on a phone a table too wide is stacked) nor breaks a word or a number
across lines, no page scrolls sideways or runs past its length budget, every figure is legible where it is shown (on a
phone, or once a tap opens it at full size) and no legend covers its other text, no output repeats a line, a chapter's
first paragraph is on a phone's first screen, tab labels are legible in the dark theme, a chapter's text shows no
identifier from the results store, and every cross-reference lands on a heading or caption that says what its text says.

The first tests lay out small books: one with a wide and a narrow table, one with a fault of each kind planted. The
others measure every page of a built edition when BOOK_BROWSER_HTML names its html folder (CI: the quick edition it
has just built)."""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import pkgutil
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from PIL import Image

from lib import experiments
from lib.core import sources
from lib.core.declaration import Chapter
from lib.edition import publishing
from lib.experiments import plotting, scorecard

from . import browser
from .books import PAGE_CHAPTER, book_with_pages
from .conftest import unavailable


@pytest.fixture(autouse=True)
def chromium() -> None:
    """Every test here drives Chromium: skipped without it (failed in CI, which installs it)."""
    if browser.chromium() is None:
        unavailable("Chromium is not installed here: apt install chromium to run them")


WIDE_CHAPTER = PAGE_CHAPTER.replace(
    'tables.show(frame.head(1), "The first model")',
    'tables.show(pd.DataFrame({f"a rather long column name {i}": [123456.789] for i in range(14)}), "Fourteen columns", name="wide")',
)
SMALLEST_TEXT_PX = 9  # the smallest figure text, in px as shown at 1280 px (the page's text is 16 px)
PHONE_SMALLEST_TEXT_PX = 7  # the same at 390 px, unless a tap opens the figure at full size
SHORTEST_FIGURE_PX = (220, 110)  # the least height a figure is shown at, at 1280 px and on a phone
ASPECT = (1 / 1.6, 3.0)  # a figure's width over its height: taller than this a grid of panels is due, wider a flat strip
PHONE_SCREENS = 1  # a chapter's answer ends (without one: its first paragraph starts) within this many phone screens from the top
CHAPTER_PX = 20_000  # the most px a chapter's page is high at 1280 px
SCORECARD_PX = (8_000, 20_000)  # the most px the scorecard's page is high at 1280 and at 390 px: a reader scans it
CHECKS = (  # the kinds of fault, in the order `faults` lists them
    "tab labels",
    "hidden columns",
    "broken words",
    "sideways",
    "figures",
    "figure text on a phone",
    "legend overlaps",
    "repeated output",
    "first paragraph",
    "page length",
    "store identifiers",
    "cross-references",
)


def _breaks(broken: list[str]) -> str:
    """What a table's line breaks split, in words: "breaks 2 words or numbers across lines: '0.0123', 'default'"."""
    return f"breaks {len(broken)} {'word or number' if len(broken) == 1 else 'words or numbers'} across lines: {', '.join(map(repr, broken[:3]))}"


def _hidden_tables(measured: dict) -> list[dict]:
    return [t for t in measured["tables"] if t["hidden"] > 2]


def _illegible_figures(measured: dict, html: Path, phone: bool) -> list[str]:
    """The figures shown too flat, too tall or too short, or with text smaller than `SMALLEST_TEXT_PX` at 1280 px (read
    from the PNG's `plotting.SMALLEST_TEXT` entry, in the image's pixels) once scaled to the width shown."""
    faults = []
    for figure in measured["figures"]:
        (natural_w, natural_h), (shown_w, shown_h) = figure["natural"], figure["shown"]
        name = figure["src"].rsplit("/", 1)[-1]
        if not natural_w or not shown_w:
            faults.append(f"{name}: not shown")
            continue
        if not ASPECT[0] <= natural_w / natural_h <= ASPECT[1]:
            faults.append(f"{name}: {natural_w} × {natural_h}, an aspect of {natural_w / natural_h:.2f} (allowed {ASPECT[0]:.2f}-{ASPECT[1]:.1f})")
        if shown_h < SHORTEST_FIGURE_PX[phone]:
            faults.append(f"{name}: shown {shown_h:.0f} px high (at least {SHORTEST_FIGURE_PX[phone]})")
        smallest = _entry(html, figure, plotting.SMALLEST_TEXT)
        if not phone and smallest is not None and float(smallest) * shown_w / natural_w < SMALLEST_TEXT_PX:
            faults.append(f"{name}: its smallest text is shown {float(smallest) * shown_w / natural_w:.1f} px high (at least {SMALLEST_TEXT_PX})")
    return faults


def _entry(html: Path, figure: dict, key: str) -> str | None:
    """A text entry of a figure's PNG (`Results.figure` writes them); None for an image without it."""
    with Image.open(html / figure["src"].lstrip("/")) as image:
        return image.text.get(key)


def small_on_a_phone(measured: dict, html: Path) -> list[str]:
    """The figures whose smallest text (the PNG's `plotting.SMALLEST_TEXT`) is shown under `PHONE_SMALLEST_TEXT_PX` on
    a phone, unless the figure links to its own image (tables.js: a tap opens it at full size) and its text is that big
    there."""
    faults = []
    for figure in measured["figures"]:
        smallest = _entry(html, figure, plotting.SMALLEST_TEXT) if figure["natural"][0] and figure["shown"][0] else None
        if smallest is None:
            continue
        shown = float(smallest) * figure["shown"][0] / figure["natural"][0]
        opens = figure["link"] == figure["src"] and float(smallest) >= PHONE_SMALLEST_TEXT_PX
        if shown < PHONE_SMALLEST_TEXT_PX and not opens:
            name = figure["src"].rsplit("/", 1)[-1]
            faults.append(f"{name}: its smallest text is shown {shown:.1f} px high (at least {PHONE_SMALLEST_TEXT_PX}) and no tap opens it at full size")
    return faults


def overlapping_legends(measured: dict, html: Path) -> list[str]:
    """The figures where a legend covers another legend, or a title, axis label or tick label (the boxes `Results.figure`
    records in the PNG's `plotting.TEXT_BOXES` entry, in the image's pixels)."""
    faults = []
    for src in dict.fromkeys(f["src"] for f in measured["figures"]):
        entry = _entry(html, {"src": src}, plotting.TEXT_BOXES)
        boxes = json.loads(entry) if entry else []
        covered = []
        for i, legend in enumerate(boxes):
            for j, other in enumerate(boxes):
                if legend["kind"] == "legend" and j != i and not (other["kind"] == "legend" and j < i) and _overlap(legend["box"], other["box"]):
                    covered.append(f"{other['kind']} {other['text']!r}" if other["text"] else "another legend")
        if covered:
            faults.append(f"{src.rsplit('/', 1)[-1]}: a legend covers {', '.join(covered[:4])}{' and more' if len(covered) > 4 else ''}")
    return faults


def _overlap(a: list[float], b: list[float]) -> bool:
    """Whether two boxes [left, top, right, bottom] share more than a pixel each way."""
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


def length_budget(page: str) -> tuple[float, float]:
    """The most px a page may be high at 1280 px and at 390 px: the scorecard's `SCORECARD_PX`, a chapter's `CHAPTER_PX`
    at 1280 px; any other page has none."""
    if page.endswith(f"chapters/{scorecard.CHAPTER.name}.html"):
        return SCORECARD_PX
    return (CHAPTER_PX, math.inf) if "/chapters/" in page else (math.inf, math.inf)


@functools.cache
def result_columns() -> frozenset[str]:
    """The column names with an underscore that the chapters' result tables declare (their schemas: `CHAPTER.table`
    in lib/experiments)."""
    columns = set()
    for module in pkgutil.iter_modules(experiments.__path__):
        declared = getattr(importlib.import_module(f"{experiments.__name__}.{module.name}"), "CHAPTER", None)
        if isinstance(declared, Chapter):
            columns |= {c for schema in declared.tables.values() for c in schema.columns if "_" in c}
    return frozenset(columns)


@functools.cache
def store_identifiers() -> re.Pattern:
    """What names things in the results store and has no place in a reader's text: a claim id (`<paper>/<name>`, the
    papers of the claims registry), a `.csv` file name, and a result table's column name (`result_columns`)."""
    papers = {claim["paper"] for claim in yaml.safe_load(scorecard.REGISTRY.read_text(encoding="utf-8"))}
    claim = rf"\b(?:{'|'.join(map(re.escape, sorted(papers)))})/[\w-]+"
    column = rf"(?<![\w/.-])(?:{'|'.join(map(re.escape, sorted(result_columns(), key=len, reverse=True)))})(?!\w)"
    return re.compile(rf"{claim}|[\w./-]*\w\.csv\b|{column}")


def identifiers_shown(texts: list[str]) -> list[str]:
    """Each identifier of the results store (`store_identifiers`) in the reader's text, once, with where it stands."""
    found: dict[str, str] = {}
    for text in texts:
        for match in store_identifiers().finditer(text):
            found.setdefault(match.group(0), text[max(0, match.start() - 40) : match.end() + 40])
    return [f"{name!r} in “{around}”" for name, around in found.items()]


STOPWORDS = frozenset("a an and as at by for from in into its of on or see the this to with".split())


def _words(text: str) -> set[str]:
    """A text's words for comparing a link with its target: lower case, their first five letters, small words left out."""
    return {w[:5] for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOPWORDS}


def _numbers(text: str) -> list[tuple[int, ...]]:
    """The numbers a text says ("Table 4.2", "chapter 02": (4, 2), (2,))."""
    return [tuple(int(p) for p in n.split(".")) for n in re.findall(r"\d+(?:\.\d+)*", text)]


def misleading_links(links: list[dict]) -> list[str]:
    """The internal links (`Browser.load`'s `links`) whose target is not there, or whose heading or caption does not
    say what the link says: a link that gives a number ("Table 4.2", "chapter 02") lands on a target of that number;
    any other shares a word with the target's heading or caption or with the title of its page."""
    faults = []
    for link in links:
        said, title, number = _numbers(link["text"]), link["title"], _numbers(link["number"] or "")
        if not link["found"]:
            faults.append(f"link {link['text']!r} leads to {link['href']}, which is not there")
        elif title is not None and said and number:
            if number[0] not in said:
                faults.append(f"link {link['text']!r} leads to {link['number']} {title!r} ({link['href']})")
        elif title is not None and not _words(link["text"]) & _words(" ".join([title, *link["around"][:1], *link["around"][-1:]])):
            faults.append(f"link {link['text']!r} leads to {title!r} ({link['href']})")
    return faults


def repeated_lines(outputs: list[str]) -> list[str]:
    """Output lines that say the same thing more than once on a page: equal once numbers are masked (a training log's
    steps, one warning per model), blank lines and table rules aside."""
    masked = Counter(re.sub(r"\d+(\.\d+)?", "#", line.strip()) for text in outputs for line in text.splitlines() if re.search(r"[A-Za-z]{3}", line))
    return [line for line, n in masked.items() if n > 1]


def faults(page: str, base: str, html: Path, window: browser.Browser) -> dict[str, list[str]]:
    """Every fault of one page by kind (`CHECKS`): at 1280 px (light and dark) and at 390 px."""
    url, found = base + page, {check: [] for check in CHECKS}
    for dark in (True, False):
        laptop = window.load(url, browser.LAPTOP, dark=dark)
        theme = "dark" if dark else "light"
        found["tab labels"] += [f"{page} ({theme}): tab {t['label']!r} at {t['contrast']:.1f}:1, below 4.5:1" for t in laptop["tabs"] if t["contrast"] < 4.5]
    phone = window.load(url, browser.PHONE)
    budget = length_budget(page)
    for measured, width, most in ((laptop, browser.LAPTOP[0], budget[0]), (phone, browser.PHONE[0], budget[1])):
        found["hidden columns"] += [f"{page}: at {width} px table {t['caption']!r} hides {t['hidden']} px" for t in _hidden_tables(measured)]
        found["broken words"] += [f"{page}: at {width} px table {t['caption']!r} {_breaks(t['broken'])}" for t in measured["tables"] if t["broken"]]
        found["figures"] += [f"{page}: at {width} px {fault}" for fault in _illegible_figures(measured, html, phone=measured is phone)]
        if measured["height"] > most:
            found["page length"].append(f"{page}: {measured['height']:,} px long at {width} px (at most {most:,})")
    if phone["page"] > 0:
        found["sideways"].append(f"{page}: scrolls {phone['page']} px sideways at 390 px, past the window: {phone['wide']}")
    found["figure text on a phone"] += [f"{page}: at 390 px {fault}" for fault in small_on_a_phone(phone, html)]
    found["legend overlaps"] += [f"{page}: {fault}" for fault in overlapping_legends(laptop, html)]
    found["repeated output"] += [f"{page}: prints {line!r} more than once" for line in repeated_lines(laptop["outputs"])]
    if "/chapters/" in page:  # a chapter's page, or the scorecard's
        if phone.get("answer") is not None:  # the chapter's answer, whole, on a phone's first screen
            if phone["answer"] > PHONE_SCREENS * browser.PHONE[1]:
                found["first paragraph"].append(f"{page}: its answer ends {phone['answer']:.0f} px down at 390 px, past the first screen")
        elif phone["prose"] is not None and phone["prose"] > PHONE_SCREENS * browser.PHONE[1]:
            found["first paragraph"].append(f"{page}: its first paragraph starts {phone['prose']:.0f} px down at 390 px, past the first screen")
        found["store identifiers"] += [f"{page}: shows {shown}" for shown in identifiers_shown(laptop["text"])]
    found["cross-references"] += [f"{page}: {fault}" for fault in misleading_links(laptop["links"])]
    return found


def _checked(page: str, base: str, html: Path, window: browser.Browser) -> list[str]:
    """Every fault of one page (`faults`), in one list."""
    return [fault for kind in faults(page, base, html, window).values() for fault in kind]


def test_a_wide_table_fits_or_says_it_scrolls_and_stacks_on_a_phone(tmp_path, monkeypatch):
    edition = book_with_pages(tmp_path, monkeypatch, WIDE_CHAPTER)
    try:
        publishing.build_html(edition)
    finally:
        sources.declared_parameters.cache_clear()
    with browser.serve(edition.html) as base, browser.Browser() as window:
        url = base + "book/chapters/01_page.html"
        laptop = {t["caption"].split(" ", 2)[-1]: t for t in window.load(url, browser.LAPTOP)["tables"]}
        assert laptop["Fourteen columns"]["hidden"] > 20 and laptop["Fourteen columns"]["cue"]  # it scrolls, and says so
        assert not laptop["Scores of the models (✓ ◐ ≥)"]["cue"]  # a table that fits carries no cue
        phone = window.load(url, browser.PHONE)
        wide = {t["caption"].split(" ", 2)[-1]: t for t in phone["tables"]}["Fourteen columns"]
        assert wide["stacked"] and wide["hidden"] <= 2 and phone["page"] <= 0  # stacked rows: nothing hidden, nothing sideways
        assert len(window.load(url, browser.LAPTOP, dark=True)["tabs"]) == 2
        found = _checked("book/chapters/01_page.html", base, edition.html, window)
    assert len(found) == 1 and "Fourteen columns' hides" in found[0], found  # the test of the built edition fails on that table


PLANTED_CHAPTER = """# %% [markdown]
# # A chapter with faults
#
# Prose that names the claim luo2021/anisotropy, the file scores.csv and the column COLUMN; it points to the
# [parameter reference](planted-target), to [Table 9.9](tbl-01-scores) and, rightly, to {numref}`tbl-01-scores`.
#
# (planted-target)=
# ## Publishing
#
# :::{exercise} Run it again
# :label: ex-01-again
#
# Run `python -m lib.edition.runner --chapters 01_page -p out luo2021/anisotropy.csv` and compare.
# :::

# %% tags=["parameters"]
profile = "default"

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, display

from lib.book import tables
from lib.book.results import Results

# luo2021/anisotropy and scores.csv in code: not the reader's text
tables.show(pd.DataFrame({"model": ["tiny model"], "mean": [0.5]}), "Scores", name="scores")
display(HTML('<table class="table" style="table-layout: fixed; width: 5rem"><caption>A narrow table</caption>'
             '<tbody><tr><td style="overflow-wrap: anywhere">0.0123456789012</td></tr></tbody></table>'))
fig, ax = plt.subplots(figsize=(7.5, 3))
ax.plot([0, 1], label="first")
ax.plot([1, 0], label="second")
ax.set_xlabel("layer")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), ncols=2)
Results("01_page", profile).figure(fig, "legend", "A legend over the axis label.")
print("\\n".join(str(i) for i in range(1500)))  # a page longer than a chapter's budget

# %%
for model in ("model a", "model b"):
    tables.show(pd.DataFrame({f"a long column name {i}": [1.5] for i in range(7)}), f"{model}: its row", tab=model)
"""
PLANTED_PAGE = "book/chapters/01_page.html"


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    """A book of one chapter with a fault of each kind planted (`PLANTED_CHAPTER`, naming a result column), built once:
    its page's faults by kind ("as built") and its measurements on a phone ("phone"); then its faults with the book's
    tables.js stripped of what marks a table again when its tab opens and of the links that open a figure at full size
    ("stripped")."""
    if browser.chromium() is None:
        unavailable("Chromium is not installed here: apt install chromium to run them")
    with pytest.MonkeyPatch.context() as patch:
        edition = book_with_pages(tmp_path_factory.mktemp("planted"), patch, PLANTED_CHAPTER.replace("COLUMN", min(result_columns())))
        publishing.build_html(edition)
        html = edition.html
    sources.declared_parameters.cache_clear()
    with browser.serve(html) as base, browser.Browser() as window:
        found = {"as built": faults(PLANTED_PAGE, base, html, window), "phone": window.load(base + PLANTED_PAGE, browser.PHONE)}
    script = html / "_static" / "tables.js"
    built = script.read_text(encoding="utf-8")
    stripped = re.sub(r'.*addEventListener\("change".*\n', "", built).replace("  zoomableFigures();\n", "")
    assert len(stripped) < len(built) - len("  zoomableFigures();\n"), "tables.js no longer has the lines this test strips"
    script.write_text(stripped, encoding="utf-8")
    with browser.serve(html) as base, browser.Browser() as window:  # a new browser: nothing cached
        found["stripped"] = faults(PLANTED_PAGE, base, html, window)
    return found


def test_a_table_in_a_tab_is_measured_when_its_tab_is_clicked(planted):
    tabs = {t["caption"].split(" ", 2)[-1]: t for t in planted["phone"]["tables"] if t["tab"]}
    assert tabs["model b: its row"]["stacked"] and tabs["model b: its row"]["hidden"] <= 2  # tables.js marked it when it opened
    assert not planted["as built"]["hidden columns"]
    (hidden,) = planted["stripped"]["hidden columns"]  # marked only at load, while its tab was closed: 0 px wide
    assert "at 390 px table" in hidden and "model b: its row' hides" in hidden


def test_a_number_broken_across_lines_is_found(planted):
    broken = planted["as built"]["broken words"]  # at 1280 and at 390 px
    assert len(broken) == 2 and all("table 'A narrow table' breaks 1 word or number across lines: '0.0123456789012'" in f for f in broken), broken


def test_a_legend_over_an_axis_label_is_found(planted):
    (fault,) = planted["as built"]["legend overlaps"]
    assert "a legend covers" in fault and "label 'layer'" in fault


def test_small_figure_text_on_a_phone_is_found_unless_a_tap_opens_the_figure(planted):
    assert not planted["as built"]["figure text on a phone"]  # tables.js links the figure to its image
    (fault,) = planted["stripped"]["figure text on a phone"]
    assert "no tap opens it at full size" in fault


def test_a_page_past_its_length_budget_is_found(planted):
    (fault,) = planted["as built"]["page length"]
    assert "px long at 1280 px (at most 20,000)" in fault
    assert length_budget(f"book/chapters/{scorecard.CHAPTER.name}.html") == SCORECARD_PX and length_budget("book/rerun.html") == (math.inf, math.inf)


def test_identifiers_of_the_results_store_in_the_reader_text_are_found(planted):
    shown = re.findall(r"shows '([^']+)'", "\n".join(planted["as built"]["store identifiers"]))
    assert sorted(shown) == sorted(["luo2021/anisotropy", "scores.csv", min(result_columns())])  # not in code, nor the exercise's command


def test_a_link_that_lands_on_another_heading_is_found(planted):
    assert [fault.split(": ", 1)[1] for fault in planted["as built"]["cross-references"]] == [
        "link 'parameter reference' leads to 'Publishing' (#planted-target)",
        "link 'Table 9.9' leads to Table 1.1 'Scores' (#tbl-01-scores)",
    ]


def test_a_numbered_link_lands_on_its_number_and_any_other_on_its_words():
    def link(text: str, title: str, number: str | None = None) -> dict:
        return {"text": text, "href": "#x", "found": True, "title": title, "number": number, "around": [title, "A page"]}

    assert not misleading_links([link("Table 4.2", "Scores", "Table 4.2"), link("chapter 02", "Outlier neurons", "2."), link("summary", "Summary")])
    assert len(misleading_links([link("Fig. 3.1", "A line", "Fig. 3.2"), link("the parameter reference", "Publishing")])) == 2
    assert misleading_links([{"text": "gone", "href": "#gone", "found": False, "title": None, "number": None, "around": []}])


def test_repeated_lines_are_found_with_their_numbers_masked():
    log = "epoch 1: loss 2.31\nepoch 2: loss 1.97\n"
    assert repeated_lines([log]) == ["epoch #: loss #"]
    assert repeated_lines(["278 of 2000 inputs were truncated", "9 of 500 inputs were truncated"]) == ["# of # inputs were truncated"]
    assert repeated_lines(["one line\n---\n\nanother line"]) == []


def test_every_page_of_the_built_edition():
    if not os.environ.get("BOOK_BROWSER_HTML"):
        unavailable("BOOK_BROWSER_HTML names no built edition: make book PROFILE=quick, then BOOK_BROWSER_HTML=_build/quick/html")
    html = Path(os.environ["BOOK_BROWSER_HTML"])
    pages = sorted(p.relative_to(html).as_posix() for p in html.glob("book/**/*.html"))
    assert len(pages) >= 15, f"{html} holds {len(pages)} pages: not a built edition"
    with browser.serve(html) as base, browser.Browser() as window:
        by_kind = [faults(page, base, html, window) for page in pages]
    found = [fault for page in by_kind for listed in page.values() for fault in listed]
    assert not found, f"{len(found)} faults a reader would meet:\n" + "\n".join(found)
