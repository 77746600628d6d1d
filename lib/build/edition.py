"""One edition of the book per profile: where it lives, how its book source is staged, built and published.

    _build/<profile>/notebooks/<chapter>.ipynb   executed chapters (a failed one is kept in notebooks/failed/)
    _build/<profile>/cache/<chapter>.json        what the chapter's last execution depended on (`lib.build.cache`)
    _build/<profile>/build.json                  what the last runs did with each chapter (executed or reused, why)
    _build/<profile>/source/                     the staged book source, generated: edit `book/` and `notebooks/`
    _build/<profile>/html/                       the edition (open html/index.html, or upload the folder)
    _build/<profile>/student/{source,html}/      the student edition: the same chapters without exercise solutions

Staging copies the hand-written pages, adds to each executed chapter a short note (profile, parameters that differ
from the chapter's defaults, commit, link to the build report) and writes the build report page. Files are rewritten
only when their content changes, so Sphinx rebuilds only the pages that changed.

    python -m lib.build.edition --profile quick            # stage and build the HTML
    python -m lib.build.edition --profile default --publish  # the same, then check the site is ready to upload
    python -m lib.build.edition --profile quick --student  # the student edition (no solutions) of the quick profile
    python -m lib.build.edition --profile default --linkcheck  # check the pages' external links (weekly, in the workflow)
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import yaml
from filelock import FileLock, Timeout

from ..book import figures, paper, scorecard, tables, tabs
from ..datasets.pins import SOURCES
from ..errors import BookError, cli, require
from ..io import write_atomic
from ..settings import REPO_ROOT, build_dir, cache_dir, data_dir, models_dir, results_dir
from . import exercises, launch, pagecheck, reference
from .cache import Entry, digest
from .profiles import profile_parameters
from .sources import chapters, declared_parameters, source_file

REPORT = "book/build_report"
SUMMARY_MARKER = "<!-- edition and verdicts -->"  # in the root page (book/intro.md): replaced by the edition note and verdict summary
REFERENCE_MARKER = "<!-- parameter reference -->"  # in book/rerun.md: replaced by every chapter's parameter table
_PROFILE_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Edition:
    """The folders of one profile's edition; two profiles never share a path. The student edition of a profile shares
    its executed chapters and builds its own source and HTML, without the exercises' solutions."""

    profile: str
    student: bool = False
    pdf: bool = False  # the source the PDF is typeset from (figures as vector PDFs): _build/<profile>[/student]/pdf

    def __post_init__(self) -> None:
        require(bool(_PROFILE_NAME.fullmatch(self.profile)), f"profile name {self.profile!r} must be letters, digits, '.', '_' or '-'")

    @property
    def root(self) -> Path:
        return build_dir() / self.profile

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def _pages(self) -> Path:
        pages = self.root / "student" if self.student else self.root
        return pages / "pdf" if self.pdf else pages

    @property
    def latex(self) -> Path:
        return self._pages / "latex"

    @property
    def source(self) -> Path:
        return self._pages / "source"

    @property
    def html(self) -> Path:
        return self._pages / "html"

    @property
    def doctrees(self) -> Path:
        return self._pages / "doctrees"

    @property
    def status_file(self) -> Path:
        return self.root / "build.json"

    def notebook(self, chapter: str) -> Path:
        return self.notebooks / f"{chapter}.ipynb"

    def entry(self, chapter: str) -> Path:
        return self.cache / f"{chapter}.json"

    def running(self, chapter: str) -> Path:
        """The fresh folder a chapter being executed writes its results into ($BOOK_RESULTS_STAGING)."""
        return self.root / "running" / chapter

    @contextmanager
    def locked(self, what: str) -> Iterator[None]:
        """Hold this edition's lock (one writer per edition: the runner and the page builder); a second writer stops with
        one line naming the holder."""
        holder = self.root / ".lock-holder"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(self.root / ".lock", timeout=0)
            lock.acquire()
        except Timeout:
            try:
                who = holder.read_text(encoding="utf-8").strip()
            except OSError:
                who = "another process"
            raise BookError(f"the {self.profile} edition is being written by {who}; wait for it to finish (or stop it), then run again") from None
        except OSError as err:
            raise BookError(f"cannot write the build folder {self.root} ({err.strerror}); make it writable or set BOOK_BUILD_DIR") from None
        try:
            holder.write_text(f"{what} (pid {os.getpid()}, since {now()})\n", encoding="utf-8")
            yield
        finally:
            holder.unlink(missing_ok=True)
            lock.release()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """What the last runs did with each chapter: status (executed/reused), reason, seconds, at."""
        try:
            return json.loads(self.status_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def set_status(self, chapter: str, status: str, reason: str, seconds: float) -> None:
        """Record what a run did with a chapter (the runner and its workers write it: one at a time)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / ".status.lock"):
            statuses = self.statuses()
            statuses[chapter] = {"status": status, "reason": reason, "seconds": round(seconds, 1), "at": now()}
            write_atomic(self.status_file, lambda p: p.write_text(json.dumps(statuses, indent=1, sort_keys=True)))


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def commit() -> dict[str, Any]:
    """The checkout's commit and whether it has uncommitted changes (`unknown` outside a git checkout)."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": False}
    return {"commit": sha, "dirty": bool(dirty.strip())}


def _commit_text(facts: dict[str, Any]) -> str:
    sha = facts.get("commit", "unknown")
    return f"`{sha[:10]}`" + (" with uncommitted changes" if facts.get("dirty") else "")


def _write_bytes_if_changed(path: Path, data: bytes) -> None:
    """Write bytes unless the file already holds them."""
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, lambda p: p.write_bytes(data))


def _write_if_changed(path: Path, text: str) -> None:
    """Write text unless the file already holds it (an unchanged file keeps its time, so Sphinx skips it)."""
    _write_bytes_if_changed(path, text.encode("utf-8"))


def changed_parameters(chapter: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a run that differ from the chapter's parameters cell (the profile name left out)."""
    declared = declared_parameters(chapter)
    return {k: v for k, v in parameters.items() if k != "profile" and declared.get(k) != v}


def _hide_paths(text: str) -> str:
    """A text with this machine's folders replaced by their setting's name, for pages that are published."""
    folders = [
        (results_dir(), "$BOOK_RESULTS_DIR"),
        (models_dir(), "$BOOK_MODELS_DIR"),
        (cache_dir(), "$BOOK_CACHE_DIR"),
        (data_dir(), "$BOOK_DATA_DIR"),
        (Path(sys.prefix), "<python>"),
        (Path(sys.base_prefix), "<python>"),
        (REPO_ROOT, "<repository>"),
        (Path.home(), "~"),
    ]
    for folder, name in sorted(folders, key=lambda f: -len(str(f[0]))):  # the longest first: the venv is inside the repository
        text = text.replace(str(folder), name)
    return text


def run_times(chapter: str) -> str:
    """The chapter's last measured wall time in each of the default and quick editions built on this machine."""
    times = []
    for profile in ("default", "quick"):
        entry = Entry.load(Edition(profile).entry(chapter))
        if entry is not None:
            times.append(f"{_duration(entry.facts['seconds'])} in the {profile} edition")
    return ", ".join(times)


def chapter_note(chapter: str, entry: Entry, profile: str, folded_reference: bool = True, student: bool = False) -> str:
    """The one box at the top of an executed chapter: how this page was made (edition, date, commit, run time, models
    measured, parameters changed), with the chapter's parameter reference folded inside (not in print: the PDF has
    every chapter's reference in its re-run chapter, and LaTeX cannot break a long table inside a box)."""
    facts = entry.facts
    changed = changed_parameters(chapter, entry.parts["parameters"])
    settings = ", ".join(f"`{k} = {v!r}`" for k, v in changed.items()) if changed else "none"
    return (
        "::::{admonition} How this page was made\n:class: note\n"
        f"**{profile.capitalize()} edition**, executed {facts['finished'][:16].replace('T', ' ')} UTC at commit {_commit_text(facts)}; "
        f"run time on the machine that built it: {run_times(chapter) or _duration(facts['seconds'])}. {models_caveat(chapter, entry)}"
        f"Parameters changed from the chapter's defaults: {settings}; the data and model files it read, with their "
        f"checksums, are in the {{ref}}`build report <build-{chapter}>`.{_launch_links(chapter, student)}\n\n"
        + (parameters_dropdown(chapter) if folded_reference else "")
        + "::::\n"
    )


def models_caveat(chapter: str, entry: Entry) -> str:
    """A sentence for the page's box when the chapter measured other models than the papers (the paper profile's
    `models`); empty otherwise."""
    declared = declared_parameters(chapter)
    if "models" not in declared:
        return ""
    ran, theirs = (
        [m.strip() for m in str(value).split(",") if m.strip()]
        for value in (entry.parts["parameters"].get("models", declared["models"]), profile_parameters("paper", chapter).get("models", declared["models"]))
    )
    if set(ran) == set(theirs):
        return ""
    return (
        f"**Not the papers' models**: it measures {', '.join(f'`{m}`' for m in ran)}; the papers measured "
        f"{', '.join(f'`{m}`' for m in theirs)}. Columns headed *paper* hold their numbers on their models, for comparison, "
        "not as our result (the `paper` profile runs this chapter on their models). "
    )


def _launch_links(chapter: str, student: bool = False) -> str:
    """Links that open the chapter as a live notebook, for students without the solutions (none without a GitHub
    repository setting)."""
    binder, colab, repo = launch.binder_url(chapter, student), launch.colab_url(chapter, student), launch.repository()
    if repo is None:
        return ""
    source = f"https://github.com/{repo[0]}/blob/{repo[1]}/notebooks/{chapter}.py"
    return f" Run it yourself: [on Binder]({binder}) (CPU), [on Colab]({colab}) (GPU), or from its [source]({source}) (see {{doc}}`../rerun`)."


PDF_NAME, NOTEBOOKS_ZIP = "book.pdf", "notebooks.zip"  # an edition's downloads, linked from its front page
DOWNLOADS = "book/downloads"  # where they are staged, beside the front page


def pdf_stamp(pdf: Path) -> Path:
    """Beside a typeset PDF: the checksum of the chapter runs it was typeset from (`entries_digest`)."""
    return pdf.with_name(pdf.name + ".json")


def _stage_downloads(edition: Edition, source: Path, entries: dict[str, Entry]) -> list[str]:
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
        _write_bytes_if_changed(folder / NOTEBOOKS_ZIP, buffer.getvalue())
        staged.append(NOTEBOOKS_ZIP)
    pdf = Edition(edition.profile, edition.student)._pages / PDF_NAME
    if pdf.is_file():
        try:
            typeset_from = json.loads(pdf_stamp(pdf).read_text(encoding="utf-8"))["entries"]
        except (OSError, ValueError, KeyError, TypeError):
            typeset_from = None
        if typeset_from == entries_digest(entries):
            _write_bytes_if_changed(folder / PDF_NAME, pdf.read_bytes())
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


def edition_note(profile: str) -> str:
    """The line on the front page that says which edition this is."""
    described = {
        "default": "the published edition: the offline models at the chapters' own sample sizes",
        "quick": "tiny samples that check every chapter runs; its numbers are noisy and not for reading",
        "paper": "the papers' models and sample sizes",
    }
    what = described.get(profile, f"parameters from `profiles/{profile}.yaml`")
    return (
        f":::{{admonition}} The {profile} edition\n:class: note\nThis is the **{profile}** edition of the book ({what}). "
        "Each chapter says when and how it was executed; the {doc}`build report <build_report>` lists times, parameters "
        "and the checksums of every data file and model it read.\n:::\n"
    )


SCORECARD = "14_scorecard"  # the chapter whose table the front page summarises


def scorecard_summary(entry: Entry | None) -> str:
    """The front page's summary of the scorecard chapter's verdicts, from the table its entry lists and checked against
    the checksum recorded there; empty without an entry (the chapter has not run, or its notebook was changed) or when
    the table is no longer the one its run wrote (with one line saying so)."""
    record = next((o for o in entry.outputs if o["label"].endswith(f"/{SCORECARD}/scorecard.csv")), None) if entry else None
    if record is None:
        return ""
    if digest(record["path"]) != record["sha256"]:
        print(f"{record['path']} is not the table chapter {SCORECARD} wrote in its last run; the front page shows no verdict summary", flush=True)
        return ""
    card = pd.read_csv(record["path"])
    counts = card.groupby(["paper", "verdict"]).size().unstack("verdict", fill_value=0)
    columns = [v for v in scorecard.VERDICTS if v in counts.columns]
    lines = ["| paper | " + " | ".join(columns) + " |", "|:---" + "|---:" * len(columns) + "|"]
    lines += [f"| {paper.name(key)} | " + " | ".join(str(int(row[c])) for c in columns) + " |" for key, row in counts.iterrows()]
    return (
        "## What holds, in this edition\n\n"
        f"The {{doc}}`scorecard <chapters/14_scorecard>` lists {card['claim_id'].nunique()} claims of the papers and tests those it can on "
        "the models of this edition, from the chapters' result tables. Verdicts per paper, one per claim and model "
        "(a claim the book cannot test offline, or has not run, counts once):\n\n" + "\n".join(lines) + "\n\n"
    )


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def slowest_cells(notebook: Path, n: int = 3) -> list[dict[str, Any]]:
    """The n code cells of an executed notebook that took longest (papermill records each cell's duration), each with
    the heading of its section and its first line."""
    cells, section = [], ""
    for cell in nbformat.read(notebook, as_version=4).cells:
        lines = [line for line in cell.source.splitlines() if line.strip()]
        if cell.cell_type == "markdown":
            section = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), section)
        seconds = cell.get("metadata", {}).get("papermill", {}).get("duration")
        if cell.cell_type == "code" and seconds is not None:
            cells.append({"seconds": float(seconds), "section": section, "first_line": lines[0] if lines else ""})
    return sorted(cells, key=lambda c: -c["seconds"])[:n]


def _title(chapter: str) -> str:
    for line in source_file(chapter).read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    return chapter


def parameters_dropdown(chapter: str) -> str:
    """The chapter's parameter reference, folded, for the box at the top of its page."""
    return (
        ":::{dropdown} Parameters of this chapter\n"
        "Set them with `-p NAME VALUE` (see {doc}`How to re-run this book <../rerun>`); an empty quick or paper cell "
        "keeps the default.\n\n" + reference.markdown(chapter) + ":::\n"
    )


def _all_references() -> str:
    return "\n".join(f"### {_title(c)} (`{c}`)\n\n{reference.markdown(c)}" for c in chapters())


TABLES = "tables"  # beside the staged chapters: the CSV files each page links for download


def _stage_tables(source: Path, entry: Entry, profile: str) -> list[str]:
    """Copy the CSV tables a chapter's run wrote next to the staged chapters, each checked to be the file that run wrote;
    their paths relative to the chapter pages."""
    staged = []
    for output in entry.outputs:
        origin = Path(output["path"])
        if output["label"].endswith(".csv"):
            require(
                digest(str(origin)) == output["sha256"],
                f"{origin} is not the table {entry.chapter} wrote in its last run (missing or changed since); "
                f"run `python -m lib.build.runner --profile {profile} --chapters {entry.chapter}` again",
            )
            relative = f"{TABLES}/{output['label']}"
            _write_bytes_if_changed(source / "book" / "chapters" / relative, origin.read_bytes())
            staged.append(relative)
    return staged


def downloads_cell(tables: list[str]) -> str:
    """The closing section of a chapter page: every result table of its run as a CSV download."""
    items = "\n".join(f"- {{download}}`{t.split('/')[2]}/{t.split('/')[-1]} <{t}>`" for t in tables)
    return (
        "## Result tables of this page\n\n"
        "The tables and figures above are drawn from these files, written by the run that produced this page "
        f"(one folder per model; CSV):\n\n{items}\n"
    )


def _vector_figures(nb: nbformat.NotebookNode, entry: Entry) -> None:
    """Add to every figure output the PDF its run saved (checked to be that run's file), which the LaTeX build prefers
    to the PNG."""
    written = {o["label"]: o for o in entry.outputs}
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            vector = written.get(output.get("metadata", {}).get(figures.KEY, {}).get("pdf"))
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
) -> str:
    """The executed notebook with the note and the parameter reference after its title, its figures numbered, its result
    tables linked at the end (without the exercises' solutions in the student edition)."""
    nb = nbformat.read(notebook, as_version=4)
    if student:
        exercises.strip_solutions(nb)
    if vector:
        _vector_figures(nb, entry)
    tables.label_tables(nb, chapter)
    if not vector:  # the pages: a model per tab; print keeps them in sequence, with vector figures
        tabs.group(nb, source / "book" / "chapters" / tabs.FOLDER, _write_bytes_if_changed)
    figures.number_figures(nb)
    for cell in nb.cells:  # papermill's cell with this run's parameters: the box at the top says what changed
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            cell.metadata["tags"] = [*cell.metadata["tags"], "remove-cell"]
    if downloads:
        nb.cells.append(nbformat.v4.new_markdown_cell(downloads_cell(downloads), id="result-tables"))  # a fixed id: unchanged pages stay unchanged
    note = chapter_note(chapter, entry, profile, folded_reference=not vector, student=student)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            title, _, rest = cell.source.lstrip().partition("\n")
            cell.source = f"{title}\n\n{note}\n{rest.lstrip()}"
            break
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note, id="page-note"))
    return _hide_paths(nbformat.writes(nb))


def _without_numbers(text: str) -> str:
    """Exercise text without its references to the chapter's numbered tables and figures, which a page that has not
    been executed does not have."""
    text = re.sub(r"\s*\(\{numref\}`[^`]*`\)", "", text)
    return re.sub(r"\{numref\}`[^`]*`", "the chapter's table or figure", text)


def _placeholder(chapter: str, profile: str) -> str:
    """The page of a chapter not executed in this edition: how to execute it, and its exercises (without solutions)."""
    tasks = "".join(f"\n:::{{exercise}} {e.title}\n:label: {e.label}\n\n{_without_numbers(e.text)}\n:::\n" for e in exercises.exercises(chapter))
    return (
        f"# {_title(chapter)}\n\n:::{{admonition}} Not executed in this edition\n:class: warning\n"
        f"This chapter has not been executed for the **{profile}** edition yet. Run\n"
        f"`python -m lib.build.runner --profile {profile} --chapters {chapter}` (or `make book PROFILE={profile}`).\n:::\n"
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
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
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
        ("latex/bbm.sty", STATIC / "latex" / "bbm.sty"),
    ]
    for name, origin in files:
        _write_bytes_if_changed(source / "_static" / name, origin.read_bytes())


def verified_entries(edition: Edition, say: bool = False) -> dict[str, Entry]:
    """The cache entries of the chapters whose executed notebook is the one their run recorded; a notebook edited or
    re-run by hand since is left out (with one line each, when say)."""
    entries = {}
    for chapter in chapters():
        entry, notebook = Entry.load(edition.entry(chapter)), edition.notebook(chapter)
        if entry is None or not notebook.is_file():
            continue
        if digest(str(notebook)) != entry.notebook:
            if say:
                print(
                    f"{chapter}: its executed notebook differs from the one its run recorded (edited or re-run by hand); it is not published: "
                    f"run `python -m lib.build.runner --profile {edition.profile} --chapters {chapter}` again",
                    flush=True,
                )
            continue
        entries[chapter] = entry
    return entries


def entries_digest(entries: dict[str, Entry]) -> str:
    """One checksum of the chapter runs an edition's pages (or PDF) are made from: each chapter's cache key and notebook."""
    runs = sorted((chapter, entry.key, entry.notebook) for chapter, entry in entries.items())
    return hashlib.sha256(json.dumps(runs).encode()).hexdigest()


def _stage_chapters(edition: Edition, source: Path) -> dict[str, Entry]:
    """Stage every executed chapter whose notebook is the one its entry records, with its result tables (a placeholder
    page for the others); their cache entries."""
    entries = verified_entries(edition, say=True)
    for chapter in chapters():
        staged, placeholder = source / "book" / "chapters" / f"{chapter}.ipynb", source / "book" / "chapters" / f"{chapter}.md"
        entry = entries.get(chapter)
        if entry is not None:
            downloads = _stage_tables(source, entry, edition.profile)
            notebook = edition.notebook(chapter)
            _write_if_changed(staged, _staged_notebook(chapter, notebook, entry, edition.profile, source, edition.student, downloads, edition.pdf))
            placeholder.unlink(missing_ok=True)
        else:
            _write_if_changed(placeholder, _placeholder(chapter, edition.profile))
            staged.unlink(missing_ok=True)
    return entries


def stage(edition: Edition) -> Path:
    """Write the edition's book source: config, table of contents, MathJax, hand-written pages, chapters with their result
    tables, build report."""
    source = edition.source
    _stage_static(source)
    _write_if_changed(source / "_config.yml", _config(edition.profile, edition.student))
    _write_if_changed(source / "_toc.yml", (REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))
    root_page = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]
    entries = _stage_chapters(edition, source)
    downloads = [] if edition.pdf else _stage_downloads(edition, source, entries)
    for page in sorted((REPO_ROOT / "book").rglob("*")):
        relative = page.relative_to(REPO_ROOT)
        if page.is_file() and relative.parts[1] not in ("chapters", "static"):
            text = page.read_text(encoding="utf-8")
            if relative.with_suffix("").as_posix() == root_page:  # the introduction, then this edition and its verdicts
                summary = scorecard_summary(entries.get(SCORECARD))
                text = text.replace(SUMMARY_MARKER, f"{edition_note(edition.profile)}\n{downloads_line(downloads)}\n{summary}")
            text = text.replace(REFERENCE_MARKER, _all_references())
            _write_if_changed(source / relative, text)
    _write_if_changed(source / f"{REPORT}.md", build_report(edition, entries))
    return source


def build_report(edition: Edition, entries: dict[str, Entry]) -> str:
    """The build report page: per chapter, how long it took, whether this build reused it, what it read."""
    statuses = edition.statuses()
    lines = [
        f"# Build report: the {edition.profile} edition\n",
        "Every chapter of this edition was executed by the code of the commit named beside it; a chapter is executed "
        "again only when its source, the library code it imports, its parameters, the packages, or the data and model "
        "files it read have changed (see *How to re-run this book*). Times are wall-clock seconds on the machine that "
        "built the edition. Each data file a chapter read links to the file at the public commit it is fetched from.\n",
        "## Chapters\n",
        "| chapter | last build | wall time | CPU threads | executed (UTC) | commit |",
        "|---|---|---|---|---|---|",
    ]
    total, dirty, reasons, slow = 0.0, False, [], ["| chapter | slowest cell | in section |", "|---|---|---|"]
    for chapter in chapters():
        entry, status = entries.get(chapter), statuses.get(chapter, {})
        if status.get("status") in ("executed", "failed"):
            reasons.append(f"{chapter} ({status['status']}: {status['reason']})")
        if entry is None:
            lines.append(f"| {chapter} | {'failed' if status.get('status') == 'failed' else 'not executed'} | – | – | – | – |")
            continue
        facts = entry.facts
        total += float(facts["seconds"])
        dirty = dirty or bool(facts.get("dirty"))
        sha = f"`{facts.get('commit', 'unknown')[:7]}`" + ("\\*" if facts.get("dirty") else "")
        when = facts["finished"][5:16].replace("T", " ")
        slowest = (slowest_cells(edition.notebook(chapter), 1) or [{"seconds": 0.0, "section": ""}])[0]
        threads = facts.get("threads", "–")
        lines.append(f"| {{ref}}`{chapter} <build-{chapter}>` | {status.get('status', '–')} | {_duration(facts['seconds'])} | {threads} | {when} | {sha} |")
        slow.append(f"| {chapter} | {_duration(slowest['seconds'])} | {_table_text(slowest['section'])} |")
    lines.append(f"\nExecuting every chapter once took {_duration(total)} in all (the sum of the wall times above).")
    if reasons:
        lines.append("Executed by the last build, and why: " + "; ".join(reasons) + ".")
    if dirty:
        lines.append("\n\\* executed from a checkout with uncommitted changes to tracked files.")
    lines += ["\n## Where the time goes\n", "The code cell of each chapter that took longest (papermill times every cell), and the section it belongs to.\n"]
    lines += slow
    for chapter, entry in entries.items():
        lines += [f"\n({'build-' + chapter})=", f"## {chapter}\n"]
        values = {**declared_parameters(chapter), **entry.parts["parameters"]}
        changed = changed_parameters(chapter, entry.parts["parameters"])
        lines += ["| parameter | value in this edition | chapter default |", "|---|---|---|"]
        lines += [
            f"| `{k}` | `{_table_text(repr(v))}`{' (changed)' if k in changed else ''} | `{_table_text(repr(declared_parameters(chapter).get(k)))}` |"
            for k, v in values.items()
        ]
        reads = [i for i in entry.inputs if i["kind"] in ("data", "model")]
        if reads:
            lines += ["\n| read | what | SHA-256 |", "|---|---|---|"]
            lines += [f"| {i['kind']} | {_what(i['label'])} | `{i['sha256'][:16]}…` |" for i in reads]
        lines += [f"\nWrote {len(entry.outputs)} result files (tables and figures) under `$BOOK_RESULTS_DIR/{edition.profile}/`."]
    if entries:
        environment = next(iter(entries.values())).parts["environment"]
        lines += ["\n## Software\n", "| package | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in environment.items()]
    return "\n".join(lines) + "\n"


def _what(label: str) -> str:
    """What a chapter read, as code; a pinned data file linked to the file at the public commit it is fetched from."""
    text, source = f"`{_table_text(_hide_paths(label))}`", SOURCES.get(label)
    return f"[{text}]({source.page})" if source else text


def _table_text(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")[:120]


HTML_STAMP = ".edition.json"  # in a built edition's HTML: the chapter runs its pages were made from (`entries_digest`)


def _sphinx(edition: Edition, builder: str, out: Path, strict: bool = True) -> int:
    """Stage the edition and run Sphinx's `builder` on it with Jupyter Book's configuration (incremental: unchanged
    pages are not rebuilt); strict, so a warning or a broken reference fails the build. Its exit status. HTML is built
    into a copy beside `out` that replaces it only when the build passed (with the stamp of the runs it shows): a failed
    build leaves the last good edition as it was."""
    source = stage(edition)
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "jupyter-book"), "config", "sphinx", str(source)], check=True, stdout=subprocess.DEVNULL)
    whole = builder == "html"
    work = out.with_name(out.name + ".new") if whole else out
    if whole:
        shutil.rmtree(work, ignore_errors=True)
        if out.is_dir():
            shutil.copytree(out, work, symlinks=True)  # Sphinx then rewrites only the pages that changed
    done = subprocess.run(
        [str(bin_dir / "sphinx-build"), "-b", builder, "-W", "-n", "--keep-going", "-q", "-d", str(edition.doctrees), str(source), str(work)], cwd=source
    )
    if strict and done.returncode != 0:
        if whole:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(edition.doctrees, ignore_errors=True)  # they describe the failed pages: the next build starts afresh
        raise BookError(
            f"the {edition.profile} edition's {builder} build failed (messages above); the last good edition is unchanged; the staged source is in {source}"
        )
    if whole:
        (work / HTML_STAMP).write_text(json.dumps({"entries": entries_digest(verified_entries(edition))}), encoding="utf-8")
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        work.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    return done.returncode


def linkcheck(edition: Edition) -> Path:
    """Check every external link on the edition's pages (Sphinx's linkcheck builder); the report's path, or one line
    naming the broken links."""
    out = edition.root / "linkcheck"
    shutil.rmtree(out, ignore_errors=True)
    _sphinx(edition, "linkcheck", out, strict=False)
    report = out / "output.json"
    require(report.is_file(), f"the {edition.profile} edition's link check did not run (messages above)")
    results = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines() if line.strip()]
    broken = [r for r in results if r["status"] == "broken"]
    shown = "; ".join(f"{r['uri']} on {r['filename']} ({str(r['info'])[:80]})" for r in broken[:5])
    require(not broken, f"{len(broken)} broken external link(s): {shown}{'; …' if len(broken) > 5 else ''} (all in {report})")
    return report


def build_html(edition: Edition) -> Path:
    """The edition's HTML (`_sphinx`); its front page."""
    _sphinx(edition, "html", edition.html)
    return edition.html / "index.html"


TEX_TOOLS = ("latexmk", "xelatex")  # Debian: texlive-xetex texlive-latex-extra texlive-fonts-recommended fonts-freefont-otf latexmk


def build_pdf(edition: Edition) -> Path:
    """Typeset the edition as one PDF (Sphinx's LaTeX writer, XeLaTeX through latexmk; figures as the vector PDFs their
    runs saved) and keep it where the HTML build links it; its path."""
    missing = [tool for tool in TEX_TOOLS if shutil.which(tool) is None]
    require(not missing, f"{', '.join(missing)} not found: install TeX Live (see the README, 'The book as a PDF'), then run `make pdf` again")
    typeset = Edition(edition.profile, edition.student, pdf=True)
    runs = entries_digest(verified_entries(typeset))
    _sphinx(typeset, "latex", typeset.latex)
    log = typeset.latex / "latexmk.log"
    with open(log, "w", encoding="utf-8") as out:
        done = subprocess.run(
            ["make", "-C", str(typeset.latex), "all-pdf", "LATEXMKOPTS=-interaction=nonstopmode -halt-on-error"], stdout=out, stderr=subprocess.STDOUT
        )
    pdf = typeset.latex / PDF_NAME
    require(
        done.returncode == 0 and pdf.is_file(),
        f"LaTeX could not typeset the {edition.profile} edition; the first error is in {log} (search for a line starting with '!')",
    )
    target = Edition(edition.profile, edition.student)._pages / PDF_NAME
    pdf_stamp(target).unlink(missing_ok=True)  # from here until the new stamp, the PDF vouches for nothing
    write_atomic(target, lambda p: shutil.copyfile(pdf, p))
    write_atomic(pdf_stamp(target), lambda p: p.write_text(json.dumps({"entries": runs}), encoding="utf-8"))
    return target


def publish(edition: Edition) -> Path:
    """Check that the built site is ready to upload (relative links, no path of this machine in any page) and add
    the marker GitHub Pages wants for folders that start with an underscore."""
    html = edition.html
    require((html / "index.html").is_file(), f"no {edition.profile} edition in {html}; run `make book PROFILE={edition.profile}` first")
    try:
        built_from = json.loads((html / HTML_STAMP).read_text(encoding="utf-8"))["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        built_from = None
    require(
        built_from == entries_digest(verified_entries(edition)),
        f"{html} was not built by `make book` from the chapter runs the {edition.profile} edition's entries list (no stamp, or another one); "
        f"run `make book PROFILE={edition.profile}` again",
    )
    absent = [c for c in chapters() if not (html / "book" / "chapters" / f"{c}.html").is_file()]
    require(not absent, f"{html} lacks the page of {', '.join(absent[:3])}{' …' if len(absent) > 3 else ''}; run `make book PROFILE={edition.profile}` again")
    leaks = [str(REPO_ROOT), str(Path.home())]
    for page in sorted(p for p in html.rglob("*") if p.suffix in (".html", ".ipynb", ".md", ".txt")):  # pages and their downloads
        text = page.read_text(encoding="utf-8", errors="replace")
        for leak in leaks:
            require(leak not in text, f"{page.relative_to(html)} contains the local path {leak}; the site would expose this machine's folders")
        require("file://" not in text, f"{page.relative_to(html)} links to a local file (file://); links must be relative")
    unreadable = pagecheck.problems(html)
    require(not unreadable, f"{len(unreadable)} problem(s) on the pages: " + "; ".join(unreadable[:5]) + ("; …" if len(unreadable) > 5 else ""))
    (html / ".nojekyll").touch()
    return html


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.build.edition", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--publish", action="store_true", help="after building, check the site is ready to upload")
    parser.add_argument("--student", action="store_true", help="the student edition: exercises without their solutions")
    parser.add_argument("--pdf", action="store_true", help="first typeset the edition as one PDF (needs TeX Live), linked from its front page")
    parser.add_argument("--linkcheck", action="store_true", help="only check the external links of the edition's pages (needs the internet)")
    args = parser.parse_args(argv)
    profile_parameters(args.profile, chapters()[0])  # an unknown profile stops here, before anything is written
    edition = Edition(args.profile, student=args.student)
    with edition.locked("python -m lib.build.edition"):
        if args.linkcheck:
            print(f"{edition.profile} edition: every external link answers ({linkcheck(edition)})")
            return
        if args.pdf:
            print(f"{edition.profile} edition as a PDF: {build_pdf(edition)}")
        index = build_html(edition)
        print(f"{edition.profile} edition: {index}")
        if args.publish:
            print(f"ready to upload: {publish(edition)} (base URL {os.environ.get('BOOK_BASEURL') or 'not set: set BOOK_BASEURL'})")


if __name__ == "__main__":
    main()
