"""The edition's downloads: the PDF and the executed notebooks from the front page, each chapter's result tables from
its page."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

from ..book.markdown import escape
from ..core.store import CHAPTER as CHAPTER_FOLDER
from ..encode.models import reader_name
from ..errors import require
from ..io import write_bytes_if_changed
from .cache import Entry, digest
from .folders import Edition
from .vouching import entries_digest

PDF_NAME, NOTEBOOKS_ZIP = "book.pdf", "notebooks.zip"  # an edition's downloads, linked from its front page
DOWNLOADS = "book/downloads"  # where they are staged, beside the front page


def pdf_stamp(pdf: Path) -> Path:
    """Beside a typeset PDF: the checksum of the chapter runs it was typeset from (`entries_digest`)."""
    return pdf.with_name(pdf.name + ".json")


def stage_downloads(edition: Edition, source: Path, entries: dict[str, Entry]) -> list[str]:
    """Stage the edition's PDF (when `make pdf` has typeset it from the chapter runs the pages show) and a zip of its
    executed chapters (as staged: the student edition's without solutions); the staged names. A PDF typeset from
    other runs is not linked (one line says so)."""
    folder, staged = source / DOWNLOADS, []
    notebooks = sorted((source / "book" / "chapters").glob("*.ipynb"))
    if notebooks:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
            for notebook in notebooks:
                info = zipfile.ZipInfo(f"notebooks/{notebook.name}", date_time=(1980, 1, 1, 0, 0, 0))  # a fixed date: same notebooks, same zip
                bundle.writestr(info, notebook.read_bytes(), zipfile.ZIP_DEFLATED)
        write_bytes_if_changed(folder / NOTEBOOKS_ZIP, buffer.getvalue())
        staged.append(NOTEBOOKS_ZIP)
    pdf = Edition(edition.profile, edition.student)._pages / PDF_NAME
    if pdf.is_file():
        try:
            typeset_from = json.loads(pdf_stamp(pdf).read_text(encoding="utf-8"))["entries"]
        except (OSError, ValueError, KeyError, TypeError):
            typeset_from = None
        if typeset_from == entries_digest(entries):
            write_bytes_if_changed(folder / PDF_NAME, pdf.read_bytes())
            staged.append(PDF_NAME)
        else:
            print(f"{pdf} was typeset from other chapter runs than these pages show; not linked: run `make pdf PROFILE={edition.profile}` again", flush=True)
    if PDF_NAME not in staged:
        (folder / PDF_NAME).unlink(missing_ok=True)  # an earlier staging's copy must not be published either
    return staged


def downloads_line(staged: list[str]) -> str:
    """The front page's links to the edition's downloads."""
    links = {
        PDF_NAME: f"[the whole book as one PDF](downloads/{PDF_NAME})",
        NOTEBOOKS_ZIP: f"[every executed chapter as a notebook (zip)](downloads/{NOTEBOOKS_ZIP})",
    }
    return ("Download " + " and ".join(links[name] for name in staged) + ".\n") if staged else ""


TABLES = "tables"  # beside the staged chapters: the CSV files each page links for download


def stage_tables(source: Path, entry: Entry, profile: str) -> list[str]:
    """Copy the CSV tables a chapter's run wrote next to the staged chapters, each checked to be the file that run wrote;
    their paths relative to the chapter pages."""
    staged = []
    for output in entry.outputs:
        origin = Path(output["path"])
        if output["label"].endswith(".csv"):
            require(
                digest(str(origin)) == output["sha256"],
                f"{origin} is not the table {entry.chapter} wrote in its last run (missing or changed since); "
                f"run `python -m lib.edition.runner --profile {profile} --chapters {entry.chapter}` again",
            )
            relative = f"{TABLES}/{output['label']}"
            write_bytes_if_changed(source / "book" / "chapters" / relative, origin.read_bytes())
            staged.append(relative)
    return staged


def _table_words(table: str) -> str:
    """A staged table's link text: its model (`reader_name` of its folder) and its name in words, "all-MiniLM-L6-v2:
    best layer per data set"; the chapter's tables that are about no one model without one."""
    folder, name = table.split("/")[2], Path(table).stem
    model = reader_name(folder.replace("trained_", "trained:", 1)) if folder != CHAPTER_FOLDER else ""
    return (f"{model}: " if model else "") + re.sub(r"[_-]+", " ", name)


def downloads_cell(tables: list[str]) -> str:
    """The closing section of a chapter page: every result table of its run as a CSV download, named in words."""
    items = "\n".join(f"- {{download}}`{escape(_table_words(t))} <{t}>`" for t in tables)
    return (
        "## Result tables of this page\n\n"
        "The tables and figures above are drawn from these tables, written by the run that produced this page "
        f"(each a CSV file to download):\n\n{items}\n"
    )
