"""A live copy of every chapter: notebooks made from the chapter sources, and the links that open them online.

- Binder builds the repository with `binder/` (CPU torch, the model packages without their dependencies, this
  package) and runs `binder/install.sh`, which writes `notebooks/<chapter>.ipynb` with `notebooks` below; the
  Binder link opens that notebook in JupyterLab.
- Colab opens notebooks from a GitHub branch: the book's workflow writes the chapters with a first cell that clones
  the repository and installs what a chapter needs (`colab` below) to the branch `COLAB_BRANCH`.

Both links are made from the one repository setting ($BOOK_REPOSITORY, else `repository.url` in `_config.yml`);
without a GitHub repository there are no links.

    python -m lib.edition.launch notebooks          # notebooks/<chapter>.ipynb, for Binder or a local Jupyter
    python -m lib.edition.launch notebooks --student  # notebooks/student/<chapter>.ipynb: without the exercises' solutions
    python -m lib.edition.launch colab DIR [--student]  # DIR/<chapter>.ipynb with the Colab setup cell
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import jupytext
import nbformat
import yaml

from ..core.sources import NOTEBOOKS, chapters, source_file
from ..errors import cli, require
from ..io import write_atomic
from ..settings import REPO_ROOT
from . import exercises

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
COLAB_BRANCH = "colab"
_GITHUB = re.compile(r"^https://github\.com/(?P<slug>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")

COLAB_SETUP = """# Colab only: fetch the book and install what the chapters need (a few minutes, once per session).
# Elsewhere this cell does nothing: run the chapter from a clone after `make env` or `bash binder/install.sh`.
import os
import subprocess
import sys

if "google.colab" in sys.modules:
    if not os.path.isdir("/content/book"):
        subprocess.run(["git", "clone", "--depth", "1", "--branch", {branch!r}, {url!r}, "/content/book"], check=True)
        subprocess.run(["bash", "/content/book/binder/install.sh", "--keep-torch"], check=True)
    os.chdir("/content/book")
    sys.path.insert(0, "/content/book")
    os.environ.setdefault("BOOK_DATA_DIR", "/content/book/data")"""


def repository() -> tuple[str, str] | None:
    """(owner/name, branch) of the book's GitHub repository, or None when none is set."""
    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text(encoding="utf-8")).get("repository", {})
    url = os.environ.get("BOOK_REPOSITORY") or config.get("url") or ""
    match = _GITHUB.match(url.strip())
    return (match["slug"], config.get("branch") or "main") if match else None


STUDENT = "student"  # the folder (Binder) and branch suffix (Colab) of the notebooks without the exercises' solutions


def binder_url(chapter: str, student: bool = False) -> str | None:
    """mybinder.org link that opens the chapter's notebook in JupyterLab (the student's, without solutions)."""
    repo = repository()
    folder = f"notebooks/{STUDENT}" if student else "notebooks"
    return None if repo is None else f"https://mybinder.org/v2/gh/{repo[0]}/{repo[1]}?urlpath=lab/tree/{folder}/{source_file(chapter).stem}.ipynb"


def colab_url(chapter: str, student: bool = False) -> str | None:
    """Colab link to the chapter's notebook on the Colab branch (the student branch: without solutions)."""
    repo = repository()
    branch = f"{COLAB_BRANCH}-{STUDENT}" if student else COLAB_BRANCH
    return None if repo is None else f"https://colab.research.google.com/github/{repo[0]}/blob/{branch}/{source_file(chapter).stem}.ipynb"


def notebook(chapter: str, colab: bool = False, student: bool = False) -> nbformat.NotebookNode:
    """The chapter as a notebook with the book's kernel; for Colab with the setup cell first; for students without the
    exercises' solutions."""
    nb = jupytext.read(source_file(chapter))
    if student:
        exercises.strip_solutions(nb)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata.pop("jupytext", None)
    if colab:
        repo = repository()
        require(repo is not None, "Colab notebooks need the repository: set BOOK_REPOSITORY=https://github.com/OWNER/NAME")
        setup = nbformat.v4.new_code_cell(COLAB_SETUP.format(url=f"https://github.com/{repo[0]}", branch=repo[1]))
        nb.cells.insert(0, setup)
    return nb


def write(folder: Path, colab: bool = False, student: bool = False) -> list[Path]:
    """Write every chapter's notebook into folder."""
    written = []
    for chapter in chapters():
        nb = notebook(chapter, colab, student)
        written.append(write_atomic(folder / f"{chapter}.ipynb", lambda p, nb=nb: nbformat.write(nb, p)))
    return written


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.launch", description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["notebooks", "colab"])
    parser.add_argument("folder", nargs="?", help="where the Colab notebooks go (colab only)")
    parser.add_argument("--student", action="store_true", help="without the exercises' solutions (notebooks: in notebooks/student)")
    args = parser.parse_args(argv)
    if args.what == "notebooks":
        folder = NOTEBOOKS / STUDENT if args.student else NOTEBOOKS
        print(f"wrote {len(write(folder, student=args.student))} notebooks in {folder}")
    else:
        require(args.folder is not None, "give the folder for the Colab notebooks: python -m lib.edition.launch colab DIR")
        print(f"wrote {len(write(Path(args.folder), colab=True, student=args.student))} Colab notebooks in {args.folder}")


if __name__ == "__main__":
    main()
