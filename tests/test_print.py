"""The built edition's PDF as it prints (CI: the quick edition `.ci/run` has just built, named by BOOK_BROWSER_HTML,
its LaTeX beside the html folder): no reference left undefined ("??"), no line or table more than 20 pt wider than
the text, and every exercise numbered as on the web pages."""

from __future__ import annotations

import html as entities
import os
import re
from pathlib import Path

import pytest

from .conftest import unavailable

EDITION = Path(os.environ.get("BOOK_BROWSER_HTML", "/nonexistent")).parent
LATEX = EDITION / "pdf" / "latex"


@pytest.fixture(autouse=True)
def built_pdf() -> None:
    """These tests read a built edition's PDF: skipped without one (failed in CI, which builds it)."""
    if not (LATEX / "book.log").is_file():
        unavailable("BOOK_BROWSER_HTML names no built edition with a PDF: make pdf PROFILE=quick, then BOOK_BROWSER_HTML=_build/quick/html")


def test_no_undefined_reference_and_no_box_far_too_wide():
    log = (LATEX / "book.log").read_text(encoding="utf-8", errors="replace")
    undefined = re.findall(r"LaTeX Warning: (?:Reference|Citation) `([^']+)' on page \d+ undefined", log)
    assert not undefined, f"{len(undefined)} undefined references in the PDF: {sorted(set(undefined))[:10]}"
    wide = [m.group(0)[:200] for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)[^\n]*\n[^\n]*", log) if float(m.group(1)) > 20]
    assert not wide, f"{len(wide)} boxes more than 20 pt wider than the text: {wide[:5]}"


def test_exercises_carry_the_same_numbers_on_the_web_and_in_print():
    web = []
    for page in sorted((EDITION / "html" / "book").glob("**/*.html")):
        found = re.findall(r'<span class="caption-number">Exercise ([\d.]+) </span>\s*\((.*?)\)</p>', page.read_text(encoding="utf-8"))
        web += [(number, entities.unescape(re.sub("<.*?>", "", title))) for number, title in found]
    tex = (LATEX / "book.tex").read_text(encoding="utf-8")
    printed = [(n, re.sub(r"\\sphinxhyphen\{\}", "-", t)) for n, t in re.findall(r"\\begin\{sphinxadmonition\}\{note\}\{Exercise ([\d.]+) \((.*?)\)\}", tex)]
    assert len(web) >= 10, f"{len(web)} exercises found on the web pages"
    assert sorted(n for n, _ in web) == sorted(n for n, _ in printed), (sorted(web)[:5], sorted(printed)[:5])
    assert dict(web) == dict(printed)
