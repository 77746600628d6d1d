"""Staging an edition's book source: the hand-written pages, the executed chapters with their notes, figures and tables,
the configuration; files are rewritten only when their content changes, so Sphinx rebuilds only the pages that changed."""

from __future__ import annotations

import ast
import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import yaml

from ..book import figure_labels, tables, tabs
from ..book.chapter import trained_spec
from ..book.markdown import escape
from ..book.output import ANSWER, FINDINGS
from ..core.profiles import profile_parameters
from ..core.sources import chapters, comma_list, declared_parameters
from ..encode.models import reader_name
from ..errors import BookError
from ..io import write_bytes_if_changed, write_if_changed
from ..settings import REPO_ROOT
from . import exercises, launch, reference
from .cache import Entry, digest
from .chapter_notes import all_references, chapter_note, hide_paths, launch_links, shown_value, title
from .costs import chapter_costs, edition_time
from .downloads import PDF_NAME, downloads_cell, downloads_line, stage_downloads, stage_tables
from .folders import Edition
from .front_page import SCORECARD, edition_note, findings_box, scorecard_card, scorecard_summary, summary
from .report import REPORT, build_report
from .vouching import unvouched, verified_entries

SUMMARY_MARKER = "<!-- edition and verdicts -->"  # in the root page (book/intro.md): replaced by the edition note and verdict summary


TIME_MARKER = "<!-- edition time -->"  # in book/rerun.md and book/teaching.md: how long this edition's chapters ran
REFERENCE_MARKER = "<!-- parameter reference -->"  # in book/rerun.md: replaced by every chapter's parameter table
COSTS_MARKER = "<!-- chapter costs -->"  # in book/rerun.md: what each chapter costs in each edition (`chapter_costs`)
REPOSITORY_PLACEHOLDER = "https://github.com/OWNER/REPO"  # in the hand-written pages: the repository's address, when it is set


def _vector_figures(nb: nbformat.NotebookNode, entry: Entry) -> None:
    """Add to every figure output the PDF its run saved (checked to be that run's file), which the LaTeX build prefers
    to the PNG."""
    written = {o["label"]: o for o in entry.outputs}
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            vector = written.get(output.get("metadata", {}).get(figure_labels.KEY, {}).get("pdf"))
            if vector is not None and digest(vector["path"]) == vector["sha256"]:
                output["data"]["application/pdf"] = base64.b64encode(Path(vector["path"]).read_bytes()).decode("ascii")


def _staged_notebook(
    chapter: str,
    notebook: Path,
    entry: Entry,
    profile: str,
    source: Path,
    student: bool = False,
    downloads: list[str] | None = None,
    vector: bool = False,
    findings: str = "",
    card: pd.DataFrame | None = None,
) -> str:
    """The executed notebook with the note and the parameter reference after its title, its figures numbered, its result
    tables linked at the end (without the exercises' solutions in the student edition)."""
    nb = nbformat.read(notebook, as_version=4)
    if student:
        exercises.strip_solutions(nb)
    if vector:
        _vector_figures(nb, entry)
    _as_page_text(nb)
    tables.label_tables(nb, chapter)
    if not vector:  # the pages: a model per tab; print keeps them in sequence, with vector figures
        tabs.group(nb, source / "book" / "chapters" / tabs.FOLDER, write_bytes_if_changed)
    figure_labels.number_figures(nb)
    for cell in nb.cells:  # the parameters cell shows this run's values; papermill's cell that set them is left out
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags:
            cell.source = run_parameters(cell.source, entry.parts.get("parameters", {}))
        if "injected-parameters" in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    if downloads:
        nb.cells.append(nbformat.v4.new_markdown_cell(downloads_cell(downloads), id="result-tables"))  # a fixed id: unchanged pages stay unchanged
    note = chapter_note(chapter, entry, profile, folded_reference=not vector, student=student)
    answer = _lifted(nb, ANSWER)
    opening = (f":::{{container}} book-answer\n{answer}\n:::\n\n" if answer else "") + (
        f":::{{container}} book-opening\n{findings}{launch_links(chapter, student)}:::\n\n" if findings or launch_links(chapter, student) else ""
    )
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            title, _, rest = cell.source.lstrip().partition("\n")
            cell.source = f"{title}\n\n{opening}{rest.lstrip()}"
            break
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(opening, id="page-findings"))
    shown = [o["data"]["text/markdown"] for c in nb.cells for o in c.get("outputs", []) if o.get("metadata", {}).get(FINDINGS)]
    values = declared_parameters(chapter) | entry.parts.get("parameters", {})
    closing = summary(chapter, card, shown[-1] if shown else "", measured_text(values, chapter, profile)) + "\n" + note
    exercises_at = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("## Exercises")), len(nb.cells))
    if downloads and exercises_at == len(nb.cells):
        exercises_at -= 1  # before the result tables' links
    nb.cells.insert(exercises_at, nbformat.v4.new_markdown_cell(closing, id="page-summary"))  # a fixed id: unchanged pages stay unchanged
    return hide_paths(nbformat.writes(nb))


PAGE_TEXT = "page-text"  # the tag of a code cell whose Markdown output is the page's own text (chapter 14's claims, each a section)


def _as_page_text(nb: nbformat.NotebookNode) -> None:
    """Each code cell tagged `PAGE_TEXT` followed by its Markdown outputs as markdown cells of the page, so that their
    headings are sections (in the page's contents and its search); a cell left without outputs is removed from the page
    (myst-nb renders a heading inside an output as a rubric, outside the document's structure)."""
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or PAGE_TEXT not in tags:
            continue
        texts = [o["data"]["text/markdown"] for o in cell.get("outputs", []) if "text/markdown" in o.get("data", {})]
        cell.outputs = [o for o in cell.outputs if "text/markdown" not in o.get("data", {})]
        if not cell.outputs:
            cell.metadata["tags"] = [*tags, "remove-cell"]
        cells += [nbformat.v4.new_markdown_cell(text, id=f"{cell.get('id', 'cell')}-text-{i}") for i, text in enumerate(texts)]
    nb.cells = cells


def _lifted(nb: nbformat.NotebookNode, key: str) -> str:
    """The Markdown of the outputs marked `key` (a chapter's answer: `chapter.answer`), taken out of their cells; a cell
    left without outputs whose input was hidden is removed from the page."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code" or not any(o.get("metadata", {}).get(key) for o in cell.get("outputs", [])):
            continue
        texts += [o["data"]["text/markdown"] for o in cell.outputs if o.get("metadata", {}).get(key)]
        cell.outputs = [o for o in cell.outputs if not o.get("metadata", {}).get(key)]
        tags = cell.get("metadata", {}).get("tags", [])
        if not cell.outputs and ("hide-input" in tags or "remove-input" in tags):
            cell.metadata["tags"] = [*tags, "remove-cell"]
    return "\n\n".join(texts)


SHOWN_SIZES = 6  # "This run" names at most this many settings; the page's box lists them all


def measured_text(parameters: dict[str, Any], chapter: str | None = None, profile: str = "default") -> str:
    """This run's models and its sizes in one sentence, each size by its meaning (the comment on its line in the
    parameters cell); the sizes that differ from the paper profile's first, at most `SHOWN_SIZES` (the box below lists
    every parameter)."""
    specs = [trained_spec(m, profile) for m in comma_list(parameters.get("models", ""))]  # chapter 05's models by their names
    models = f"models {', '.join(escape(reader_name(m)) for m in specs)}" if specs else ""
    numeric = {k: v for k, v in parameters.items() if isinstance(v, int | float) and not isinstance(v, bool) and k != "seed"}
    meaning = reference.meanings(chapter) if chapter else {}
    paper = (declared_parameters(chapter) | profile_parameters("paper", chapter)) if chapter else {}
    ordered = [k for k in numeric if paper.get(k) != numeric[k]] + [k for k in numeric if paper.get(k) == numeric[k]]
    sizes = [reference.meaning_of(meaning.get(k, k), k, numeric[k]) for k in ordered[:SHOWN_SIZES]]
    more = len(ordered) - len(sizes)
    said = "; ".join(part for part in (models, "; ".join(sizes)) if part)
    return f"**This run**: {said}" + (f"; {more} more settings in the box below." if more > 0 else ".") if said else ""


def _literal(value: Any) -> str:
    """A value as the parameters cells write it (strings in double quotes)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def run_parameters(cell: str, run: dict[str, Any]) -> str:
    """A parameters cell as the run used it: each value the run changed (its profile, a `-p`) replaced by the run's,
    with the chapter's default beside it, so that the cell on the page, copied, repeats this run."""
    lines = cell.splitlines()
    for node in reversed(ast.parse(cell).body):
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        name, default = node.targets[0].id, ast.literal_eval(node.value)
        if name not in run or run[name] == default:
            continue
        last = lines[node.end_lineno - 1]
        comment = last[node.end_col_offset :].strip().removeprefix("#").strip()
        shown = shown_value(name, run[name])  # a local model folder by its name: its path is of the machine that ran it
        folders = " (local model folders, named here: give their paths)" if comma_list(shown) != comma_list(run[name]) else ""
        note = f"  # this run{folders}; the chapter's default: {_literal(default)}" + (f". {comment}" if comment else "")
        lines[node.lineno - 1 : node.end_lineno] = [f"{name} = {_literal(shown)}{note}"]
    return "\n".join(lines)


def _without_numbers(text: str) -> str:
    """Exercise text without its references to the chapter's numbered tables and figures, which a page that has not
    been executed does not have."""
    text = re.sub(r"\s*\(\{numref\}`[^`]*`\)", "", text)
    return re.sub(r"\{numref\}`[^`]*`", "the chapter's table or figure", text)


def _placeholder(chapter: str, profile: str, why: str | None = None) -> str:
    """The page of a chapter not executed in this edition (or whose last run no longer vouches for a page: `why`): how
    to execute it, and its exercises (without solutions)."""
    tasks = "".join(f"\n:::{{exercise}} {e.title}\n:label: {e.label}\n\n{_without_numbers(e.text)}\n:::\n" for e in exercises.exercises(chapter))
    state = (
        f"This chapter's last run in the **{profile}** edition is not shown: {why}, so its page could show numbers that no\ncurrent run supports. Run\n"
        if why
        else f"This chapter has not been executed for the **{profile}** edition yet. Run\n"
    )
    return (
        f"# {title(chapter)}\n\n:::{{admonition}} Not executed in this edition\n:class: warning\n"
        + state
        + f"`python -m lib.edition.runner --profile {profile} --chapters {chapter}` (or `make book PROFILE={profile}`).\n:::\n"
        + (f"\n## Exercises\n{tasks}" if tasks else "")
    )


def _config(profile: str, student: bool = False) -> str:
    """The book's `_config.yml` for one edition: its title, base URL and repository buttons."""
    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text(encoding="utf-8"))
    kind = ", ".join(([] if profile == "default" else [f"{profile} edition"]) + (["for students"] if student else []))
    if kind:
        config["title"] = f"{config['title']} ({kind})"
    html = config.setdefault("html", {})
    html["baseurl"] = os.environ.get("BOOK_BASEURL", html.get("baseurl", ""))
    repository = config.setdefault("repository", {})
    repository["url"] = os.environ.get("BOOK_REPOSITORY", repository.get("url", "")).rstrip("/")
    html["use_repository_button"] = html["use_issues_button"] = bool(repository["url"])
    root = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]
    extensions = config.setdefault("sphinx", {}).setdefault("extra_extensions", [])
    extensions.append("lib.edition.source_digests")  # pages read again when their content changed, whatever the clock said
    sphinx = config["sphinx"].setdefault("config", {})
    sphinx["latex_documents"] = [[root, f"{PDF_NAME[:-4]}.tex", config["title"], config["author"], "jupyterBook"]]
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


STATIC = REPO_ROOT / "book" / "static"  # the book's style sheet (html_css_files) and LaTeX stand-ins (latex_additional_files)


def _stage_static(source: Path) -> None:
    """Copy into the edition's _static folder the book's style sheet and the one-file MathJax 3 build (TeX input, SVG
    output, every TeX extension, no fonts to fetch) with its licence, where _config.yml's mathjax_path points."""
    try:
        import mathjax
    except ImportError as err:
        raise BookError("MathJax is missing: pip install django-static-mathjax==3.2.2.1 (it is in requirements.txt)") from err
    root = Path(mathjax.__file__).parent / "static" / "mathjax"
    files = [
        ("mathjax/tex-svg-full.js", root / "es5" / "tex-svg-full.js"),
        ("mathjax/LICENSE", root / "LICENSE"),
        ("book.css", STATIC / "book.css"),
        ("editions.js", STATIC / "editions.js"),
        ("tables.js", STATIC / "tables.js"),
        ("latex/bbm.sty", STATIC / "latex" / "bbm.sty"),
    ]
    for name, origin in files:
        write_bytes_if_changed(source / "_static" / name, origin.read_bytes())


def _stage_chapters(edition: Edition, source: Path) -> dict[str, Entry]:
    """Stage every executed chapter whose notebook is the one its entry records, with its result tables (a placeholder
    page for the others); their cache entries."""
    entries, left_out = verified_entries(edition, say=True), unvouched(edition)
    card = scorecard_card(entries.get(SCORECARD))
    for chapter in chapters():
        staged, placeholder = source / "book" / "chapters" / f"{chapter}.ipynb", source / "book" / "chapters" / f"{chapter}.md"
        entry = entries.get(chapter)
        if entry is not None:
            downloads = stage_tables(source, entry, edition.profile)
            notebook = edition.notebook(chapter)
            box = findings_box(chapter, card)
            page = _staged_notebook(chapter, notebook, entry, edition.profile, source, edition.student, downloads, edition.pdf, box, card)
            write_if_changed(staged, page)
            placeholder.unlink(missing_ok=True)
        else:
            write_if_changed(placeholder, _placeholder(chapter, edition.profile, left_out.get(chapter)))
            staged.unlink(missing_ok=True)
    return entries


def stage(edition: Edition) -> Path:
    """Write the edition's book source: config, table of contents, MathJax, hand-written pages, chapters with their result
    tables, build report."""
    source = edition.source
    _stage_static(source)
    write_if_changed(source / "_config.yml", _config(edition.profile, edition.student))
    write_if_changed(source / "_toc.yml", (REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))
    root_page = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]
    entries = _stage_chapters(edition, source)
    downloads = [] if edition.pdf else stage_downloads(edition, source, entries)
    for page in sorted((REPO_ROOT / "book").rglob("*")):
        relative = page.relative_to(REPO_ROOT)
        if page.is_file() and relative.parts[1] not in ("chapters", "static"):
            text = page.read_text(encoding="utf-8")
            if relative.with_suffix("").as_posix() == root_page:  # the introduction, then this edition and its verdicts
                summary = scorecard_summary(scorecard_card(entries.get(SCORECARD)))
                text = text.replace(SUMMARY_MARKER, f"{edition_note(edition.profile)}\n{downloads_line(downloads)}\n{summary}")
            text = text.replace(REFERENCE_MARKER, all_references()).replace(TIME_MARKER, edition_time(entries, edition.profile))
            text = text.replace(COSTS_MARKER, chapter_costs())
            if repository := launch.repository():
                text = text.replace(REPOSITORY_PLACEHOLDER, f"https://github.com/{repository[0]}")
            write_if_changed(source / relative, text)
    write_if_changed(source / f"{REPORT}.md", build_report(edition, entries))
    return source
