"""Execute the chapter sources with papermill under a parameter profile, for the book build.

    python -m lib.runner --profile quick [--chapters 01_anisotropy,02_outlier_neurons]

Each `notebooks/<chapter>.py` (jupytext percent format) is converted to a notebook, executed with
the profile's parameters, and moved to `book/chapters/<chapter>.ipynb` only when it ran without
error. A failing chapter is kept in `<output>/failed/` for inspection, and the command prints one line
and exits with status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jupytext
import papermill
import yaml

from .errors import BookError, cli, require
from .settings import REPO_ROOT

NOTEBOOKS = REPO_ROOT / "notebooks"
PROFILES = REPO_ROOT / "profiles"
OUTPUT = REPO_ROOT / "book" / "chapters"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def chapters() -> list[str]:
    """Chapter names, in book order (file names sort by their number)."""
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def declared_parameters(chapter: str) -> set[str]:
    """Names assigned in a chapter's `parameters` cell."""
    source = NOTEBOOKS / f"{chapter}.py"
    require(source.is_file(), f"no chapter source {source}; chapters are: {', '.join(chapters())}")
    cells = [c for c in jupytext.read(source).cells if "parameters" in c.metadata.get("tags", [])]
    return {m.group(1) for c in cells for m in re.finditer(r"^([A-Za-z_]\w*)\s*=", c.source, re.MULTILINE)}


def profile_parameters(profile: str, chapter: str) -> dict[str, Any]:
    """The profile's `all` parameters (those the chapter declares) overlaid with the chapter's own, plus the profile name."""
    path = PROFILES / f"{profile}.yaml"
    known = sorted(p.stem for p in PROFILES.glob("*.yaml"))
    require(path.is_file(), f"unknown profile {profile!r}; choose one of {', '.join(known)} (files in {PROFILES})")
    spec = yaml.safe_load(path.read_text()) or {}
    shared = {k: v for k, v in spec.get("all", {}).items() if k in declared_parameters(chapter)}
    return {**shared, **spec.get(chapter, {}), "profile": profile}


def run_chapter(chapter: str, parameters: dict[str, Any], output_dir: Path = OUTPUT) -> Path:
    """Execute one chapter; on success the executed notebook replaces output_dir/<chapter>.ipynb."""
    source = NOTEBOOKS / f"{chapter}.py"
    require(source.is_file(), f"no chapter source {source}; chapters are: {', '.join(chapters())}")
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = KERNEL
    output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{chapter}-") as tmp:
        executed_in, executed_out = Path(tmp) / "input.ipynb", Path(tmp) / f"{chapter}.ipynb"
        jupytext.write(notebook, executed_in)
        try:
            papermill.execute_notebook(str(executed_in), str(executed_out), parameters=parameters, kernel_name=KERNEL["name"],
                                       cwd=str(output_dir), log_output=True, progress_bar=False,
                                       # CRITICAL: a kernel stopped after a failed cell logs "KeyboardInterrupt caught" at ERROR level
                                       # on the shared stderr, which would add a second line to the one-line error
                                       extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
        except papermill.PapermillExecutionError as err:
            failed = output_dir / "failed" / executed_out.name
            failed.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(executed_out, failed)
            raise BookError(f"chapter {chapter} failed: {err.ename}: {err.evalue} (executed notebook kept in {failed})") from None
        final = output_dir / f"{chapter}.ipynb"
        staged = output_dir / f".{chapter}.ipynb.tmp"
        shutil.copy(executed_out, staged)
        os.replace(staged, final)
    return final


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--chapters", default="", help="comma-separated chapter names (default: all)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="override a parameter for every chapter run (VALUE is read as YAML)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"folder for executed notebooks (default {OUTPUT})")
    args = parser.parse_args(argv)
    names = [c.strip() for c in args.chapters.split(",") if c.strip()] or chapters()
    overrides = {name: yaml.safe_load(value) for name, value in args.parameter}
    plans = [(name, {**profile_parameters(args.profile, name), **overrides}) for name in names]  # check profiles first
    for var in ("BOOK_DATA_DIR", "BOOK_CACHE_DIR", "BOOK_RESULTS_DIR", "BOOK_MODELS_DIR"):
        if os.environ.get(var):  # the kernels run in book/chapters: make relative settings absolute
            os.environ[var] = str(Path(os.environ[var]).expanduser().resolve())
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    for name, parameters in plans:
        start = time.time()
        print(f"== {name} ({args.profile}): {parameters}", flush=True)
        path = run_chapter(name, parameters, args.output.resolve())
        print(f"== {name}: done in {time.time() - start:.0f} s -> {path}", flush=True)


if __name__ == "__main__":
    main()
