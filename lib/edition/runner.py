"""Execute the chapter sources with papermill under a parameter profile, for the book build.

    python -m lib.edition.runner --profile quick [--chapters 01_anisotropy,02_outlier_neurons] [-p NAME VALUE ...]

The default edition is what the chapters' `parameters` cells say; a profile (`lib.core.profiles`) lists only the values
it changes. Every value, from a profile or from `-p`, is checked against the chapters' cells (known name, same type as
the cell's value) before anything runs.

Each profile has its own edition (`lib.edition.folders`: `_build/<profile>/…`). A chapter whose source, imported lib code,
parameters, packages, data and model files are unchanged since its last run is reused (`lib.edition.cache`); the others
are converted from `notebooks/<chapter>.py` (jupytext percent format), executed with their parameters, and written to
`_build/<profile>/notebooks/<chapter>.ipynb` only when they ran without error, then their cache entry. An interrupted
run therefore resumes with the chapters still to do. A failing chapter is kept in `notebooks/failed/` for
inspection, and the command prints one line and exits with status 2. `--force` executes every chapter named.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

from ..core.profiles import command_line_values, plan
from ..core.sources import chapters, comma_list
from ..errors import cli, require
from ..settings import REPO_ROOT
from .folders import Edition
from .planning import MAX_JOBS, default_jobs, with_dependents
from .schedule import _execute_one, build


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--chapters", default="", help="comma-separated chapter names (default: all)")
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="set a parameter of the chapters that declare it (VALUE is read as YAML)",
    )
    parser.add_argument(
        "--only",
        action="store_true",
        help="execute the chapters named and no others: chapters that read their results are not looked at (their pages then say they were not executed)",
    )
    parser.add_argument("--force", action="store_true", help="execute the chapters even where nothing they depend on changed")
    parser.add_argument("--plan", action="store_true", help="only say which chapters would be executed, and why")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the profile's sizes by this (0-1], never below the quick profile's: a smoke test of a large profile "
        "(build it into its own folders: BOOK_BUILD_DIR, BOOK_RESULTS_DIR, BOOK_MODELS_DIR)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ["JOBS"]) if os.environ.get("JOBS") else None,
        help=f"chapters executed at once (default $JOBS, else one per CPU core up to {MAX_JOBS} and the chapters named)",
    )
    parser.add_argument("--execute-one", help=argparse.SUPPRESS)  # a worker of --jobs: execute this chapter (the parent holds the lock)
    parser.add_argument("--parameters-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    require(args.jobs is None or args.jobs >= 1, f"--jobs must be at least 1, got {args.jobs}")
    if args.execute_one:
        _execute_one(args.profile, args.execute_one, json.loads(args.parameters_json))
        return
    names = comma_list(args.chapters)
    require(bool(names) or not args.chapters, f"--chapters {args.chapters!r} names no chapter; chapters are: {', '.join(chapters())}")
    names = names or chapters()
    overrides = command_line_values(args.parameter)
    plans = plan(args.profile, names, overrides, args.scale)  # every value checked before anything runs
    if not args.only:
        plans = with_dependents(args.profile, plans, overrides, args.scale)
        extra = [name for name, _ in plans if name not in names]
        if extra:
            print(f"== also {', '.join(extra)}: run before in this edition, they read results of the chapters named (--only: not them)", flush=True)
    jobs = args.jobs or min(default_jobs(), len(plans))
    for var in ("BOOK_DATA_DIR", "BOOK_CACHE_DIR", "BOOK_RESULTS_DIR", "BOOK_MODELS_DIR"):
        if os.environ.get(var):  # the kernels run in the output folder: make relative settings absolute
            os.environ[var] = str(Path(os.environ[var]).expanduser().resolve())
    # the kernels import this checkout's lib, the code the cache keys are made of (lib/__init__.py checks it)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["BOOK_LIB_ROOT"] = str(REPO_ROOT)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    if args.plan:
        build(args.profile, plans, dry_run=True)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated runner ends its workers first (build_parallel)
    edition = Edition(args.profile)
    with edition.locked("python -m lib.edition.runner"):
        forced = frozenset(names) if args.force else False  # the chapters named, not those that read them
        build(args.profile, plans, force=forced, jobs=jobs, timed=args.scale == 1 and not overrides)  # the profile's own times only
    print(f"executed notebooks of the {args.profile} edition: {edition.notebooks}", flush=True)


if __name__ == "__main__":
    main()
