"""Building an edition: its HTML (strict Sphinx), its PDF (LaTeX), the external link check and the publish check; the
command line.

    python -m lib.edition --profile quick              # stage and build the HTML
    python -m lib.edition --profile default --publish  # the same, then check the site is ready to upload
    python -m lib.edition --profile quick --student    # the student edition (no solutions) of the quick profile
    python -m lib.edition --profile quick --pdf        # the edition as one PDF
    python -m lib.edition --profile default --linkcheck  # check the pages' external links (weekly, in the workflow)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..core.profiles import profile_parameters
from ..core.sources import chapters
from ..errors import BookError, cli, require
from ..io import sha256, write_atomic
from ..settings import REPO_ROOT
from . import pagecheck
from .downloads import PDF_NAME, pdf_stamp
from .folders import Edition
from .staging import stage
from .vouching import entries_digest, unvouched, verified_entries

HTML_STAMP = ".edition.json"  # in a built edition's HTML: the chapter runs its pages were made from (`entries_digest`), and its files
PUBLISH_ADDS = (".nojekyll",)  # what `publish` adds to a built edition: not the build's, so not in its record


def _read_stamp(html: Path) -> dict:
    """A built edition's stamp; empty when it has none that reads."""
    try:
        stamp = json.loads((html / HTML_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def _site_files(html: Path) -> dict[str, str]:
    """Each file of a built edition (its path in the folder → SHA-256), but the stamp and what `publish` adds."""
    files = sorted(p for p in html.rglob("*") if p.is_file() and p.relative_to(html).as_posix() not in (HTML_STAMP, *PUBLISH_ADDS))
    return {p.relative_to(html).as_posix(): sha256(p) for p in files}


def stamp(html: Path, entries: str) -> None:
    """Stamp a built edition: the chapter runs its pages were made from (`entries_digest`) and each file's digest."""
    record = json.dumps({"entries": entries, "files": _site_files(html)})
    write_atomic(html / HTML_STAMP, lambda p: p.write_text(record, encoding="utf-8"))


def site_difference(html: Path) -> str | None:
    """How a built edition differs from the files its HTML build recorded in the stamp: the first file (by name) that
    differs, was added or is missing; None when it is as built."""
    recorded, present = _read_stamp(html).get("files"), _site_files(html)
    if not isinstance(recorded, dict):
        return f"{html / HTML_STAMP} records no files (a build before files were recorded, or none)"
    for name in sorted(recorded.keys() | present.keys()):
        if name not in present:
            return f"{html / name} is missing (the HTML build wrote it)"
        if name not in recorded:
            return f"{html / name} was added after the HTML build"
        if present[name] != recorded[name]:
            return f"{html / name} differs from the file the HTML build wrote (edited since?)"
    return None


def _undate(folder: Path) -> None:
    """Date every file of folder whose time is in the future (written while the clock was ahead) at 0: Sphinx writes
    a page again when its source or templates are newer than it, which nothing would be until the clock caught up."""
    now = time.time_ns()
    for path in folder.rglob("*"):
        if path.is_file() and path.stat().st_mtime_ns > now:
            os.utime(path, ns=(0, 0))


def _sphinx(edition: Edition, builder: str, out: Path, strict: bool = True) -> int:
    """Stage the edition and run Sphinx's `builder` on it with Jupyter Book's configuration (incremental: unchanged
    pages are not rebuilt); strict, so a warning or a broken reference fails the build. Its exit status. HTML is built
    into a copy beside `out` that replaces it only when the build passed (with the stamp of the runs it shows): a failed
    build leaves the last good edition as it was. The last edition is reused only while its files are those its build
    recorded (`site_difference`): else every page is written again."""
    source = stage(edition)
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "jupyter-book"), "config", "sphinx", str(source)], check=True, stdout=subprocess.DEVNULL)
    whole = builder == "html"
    work = out.with_name(out.name + ".new") if whole else out
    if whole:
        shutil.rmtree(work, ignore_errors=True)
        changed = site_difference(out) if out.is_dir() else None
        if changed:
            print(f"{changed}: every page of the {edition.profile} edition is written again")
        elif out.is_dir():
            shutil.copytree(out, work, symlinks=True)  # Sphinx then rewrites only the pages that changed
            _undate(work)
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
        _sync_static(source / "_static", work / "_static")
        stamp(work, entries_digest(verified_entries(edition)))
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


def _sync_static(staged: Path, built: Path) -> None:
    """Copy into the built _static folder every staged file it lacks or has other bytes for: Sphinx copies static files
    only when some page is out of date, so an edited style sheet alone would otherwise never reach the pages."""
    for path in staged.rglob("*"):
        target = built / path.relative_to(staged)
        if path.is_file() and (not target.is_file() or target.read_bytes() != path.read_bytes()):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


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
    """Check that the built site is ready to upload (its files those its build wrote, relative links, no path of this
    machine in any page) and add the marker GitHub Pages wants for folders that start with an underscore."""
    html = edition.html
    require((html / "index.html").is_file(), f"no {edition.profile} edition in {html}; run `make book PROFILE={edition.profile}` first")
    require(
        _read_stamp(html).get("entries") == entries_digest(verified_entries(edition)),
        f"{html} was not built by `make book` from the chapter runs the {edition.profile} edition's entries list (no stamp, or another one); "
        f"run `make book PROFILE={edition.profile}` again",
    )
    stale = unvouched(edition)
    if stale:
        first, why = next(iter(stale.items()))
        raise BookError(
            f"{len(stale)} chapter(s) of the {edition.profile} edition have a last run that no longer vouches for its page, e.g. {first}: {why}; "
            f"run `python -m lib.edition.runner --profile {edition.profile} --chapters {','.join(stale)}` (or `make book PROFILE={edition.profile}`), "
            "then publish again"
        )
    absent = [c for c in chapters() if not (html / "book" / "chapters" / f"{c}.html").is_file()]
    require(not absent, f"{html} lacks the page of {', '.join(absent[:3])}{' …' if len(absent) > 3 else ''}; run `make book PROFILE={edition.profile}` again")
    changed = site_difference(html)
    require(changed is None, f"{changed}; run `make book PROFILE={edition.profile}` again, which writes the edition's pages afresh")
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
    parser = argparse.ArgumentParser(prog="python -m lib.edition", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--publish", action="store_true", help="after building, check the site is ready to upload")
    parser.add_argument("--student", action="store_true", help="the student edition: exercises without their solutions")
    parser.add_argument("--pdf", action="store_true", help="first typeset the edition as one PDF (needs TeX Live), linked from its front page")
    parser.add_argument("--linkcheck", action="store_true", help="only check the external links of the edition's pages (needs the internet)")
    args = parser.parse_args(argv)
    profile_parameters(args.profile, chapters()[0])  # an unknown profile stops here, before anything is written
    edition = Edition(args.profile, student=args.student)
    with edition.locked("python -m lib.edition"):
        if args.linkcheck:
            print(f"{edition.profile} edition: every external link answers ({linkcheck(edition)})")
            return
        if args.pdf:
            print(f"{edition.profile} edition as a PDF: {build_pdf(edition)}")
        index = build_html(edition)
        print(f"{edition.profile} edition: {index}")
        if args.publish:
            print(f"ready to upload: {publish(edition)} (base URL {os.environ.get('BOOK_BASEURL') or 'not set: set BOOK_BASEURL'})")
