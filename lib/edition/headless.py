"""Execute a chapter without Jupyter: its code cells in order in one namespace, the edition's values assigned right
after its parameters cell (as papermill injects them), figures drawn to files, displays printed. For a machine with
the scientific stack but no notebook tooling (a borrowed GPU: `scripts/gpu_edition.py`); the chapter writes its
tables and figures into the results folder as under the runner, and the book's pages still come from the runner.

    python -m lib.edition.headless 13_isotropy_calibration --profile gpu [--scale 0.01] [-p NAME VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback

from ..core.percent import cells
from ..core.profiles import command_line_values, plan
from ..core.sources import source_file
from ..errors import BookError, cli, require
from ..io import write_atomic


def execute(chapter: str, parameters: dict) -> float:
    """Run the chapter's code cells with `parameters` in place of its parameters cell's values; its wall seconds. A
    failing cell raises BookError naming the cell and the chapter line it starts on."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")  # figures' PDF dates, as under the runner
    source = source_file(chapter)
    code = [c for c in cells(source) if c.kind == "code"]
    require(sum("parameters" in c.tags for c in code) == 1, f"{source.name} must have exactly one cell tagged `parameters`")
    namespace: dict = {"__name__": "__main__"}
    start = time.perf_counter()
    for number, cell in enumerate(code, start=1):
        print(f"--- {chapter}: cell {number}/{len(code)} (line {cell.line})", flush=True)
        try:
            exec(compile("\n" * (cell.line - 1) + cell.source, str(source), "exec"), namespace)  # line numbers as in the source
        except Exception as err:
            traceback.print_exc()
            raise BookError(f"chapter {chapter} failed in cell {number} (line {cell.line}): {type(err).__name__}: {err}") from None
        if "parameters" in cell.tags:
            namespace.update(parameters)
    return time.perf_counter() - start


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.headless", description=__doc__.splitlines()[0])
    parser.add_argument("chapter")
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--scale", type=float, default=1.0, help="the profile's sizes times this (0-1], as the runner's --scale")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="a parameter (VALUE is YAML)")
    parser.add_argument("--seconds-to", help="write {chapter: seconds} as JSON to this file when the chapter succeeds")
    args = parser.parse_args(argv)
    ((chapter, parameters),) = plan(args.profile, [args.chapter], command_line_values(args.parameter), args.scale)
    print(f"== {chapter} ({args.profile}, headless): parameters {parameters}", flush=True)
    seconds = execute(chapter, parameters)
    print(f"== {chapter}: done in {seconds:.0f} s", flush=True)
    if args.seconds_to:
        write_atomic(args.seconds_to, lambda p: p.write_text(json.dumps({chapter: round(seconds, 1)})))


if __name__ == "__main__":
    main()
