"""Checks a built edition's chapter pages as a reader would see them: Markdown that was printed instead of rendered,
figures whose alternative text is a file path, tables without a number."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

RAW_TABLE = re.compile(r"\|\s*:?-{3,}:?\s*\|")  # a pipe table's rule row, printed as text
CODE = re.compile(r"<(pre|code)\b.*?</\1>", re.DOTALL)  # code shows Markdown on purpose
PATH_LIKE = re.compile(r"^\S*(/\S*|\.(png|jpe?g|svg|pdf|gif))$", re.IGNORECASE)  # one word with a slash or an image suffix


class _Page(HTMLParser):
    """Images with their alt text, and tables with whether their caption carries a number, of one page's article."""

    BOXES = ("admonition", "sd-dropdown")  # the page's box (provenance, parameters) holds reference tables, not results

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str | None] = []
        self.tables: list[bool] = []
        self._in_caption = False
        self._open: list[bool] = []  # per open div/details: is it a box

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("div", "details"):
            self._open.append(any(box in (found.get("class") or "").split() for box in self.BOXES))
        elif tag == "img":
            self.images.append(found.get("alt"))
        elif tag == "table" and not any(self._open):
            self.tables.append(False)
        elif tag == "caption":
            self._in_caption = True
        elif tag == "span" and self._in_caption and "caption-number" in (found.get("class") or "") and self.tables and not any(self._open):
            self.tables[-1] = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("div", "details") and self._open:
            self._open.pop()
        elif tag == "caption":
            self._in_caption = False


def _article(html: str) -> str:
    """The page's main content (the theme's navigation and logo are not the chapter's)."""
    start, end = html.find('<article class="bd-article"'), html.rfind("</article>")
    return html[start:end] if start >= 0 and end > start else html


def problems(html_dir: Path) -> list[str]:
    """Everything on the chapter pages (book/chapters/*.html) a reader should not see, one line each."""
    found = []
    for page in sorted((html_dir / "book" / "chapters").glob("*.html")):
        article = _article(page.read_text(encoding="utf-8", errors="replace"))
        name = page.relative_to(html_dir)
        if RAW_TABLE.search(CODE.sub("", article)):
            found.append(f"{name}: a Markdown table printed as text (computed Markdown must be rendered as MyST)")
        parsed = _Page()
        parsed.feed(article)
        for alt in parsed.images:
            if not alt or PATH_LIKE.search(alt.strip()):
                found.append(f"{name}: a figure whose alternative text is {alt!r}, not words (give it a caption)")
        unnumbered = parsed.tables.count(False)
        if unnumbered:
            found.append(f"{name}: {unnumbered} table(s) without a number (show tables with lib.book.chapter.show)")
    return found
