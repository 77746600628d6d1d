"""Chapter 13's fine-tuning grid ahead of the chapter, one GLUE task per process, cached where the chapter finds it:

    python -m lib.edition.finetuning --profile default --task sst2 [-p NAME VALUE ...]

The runs are the ones chapter 13 would train with the same profile and values (`isotropy_calibration.grid`), each
kept in the run cache (`finetune.cached_run`), so the chapter then reads them instead of training. A run already cached
is not trained again. A parallel book build runs one such command per task as jobs of their own (`runner.AHEAD`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..book.chapter import parse_models
from ..core.profiles import command_parameters
from ..core.sources import comma_list, declared_parameters
from ..errors import cli, require
from ..experiments.isotropy_calibration import grid, run_grid

CHAPTER = "13_isotropy_calibration"


def ahead(profile: str, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """One command per task of the chapter's grid, named "13_isotropy_calibration:<task>". `parameters`: the chapter's
    values as a build plans them."""
    tasks = comma_list({**declared_parameters(CHAPTER), **parameters}["tasks"])
    command = [sys.executable, "-m", "lib.edition.finetuning", "--profile", profile, "--parameters-json", json.dumps(parameters)]
    return {f"{CHAPTER}:{task}": [*command, "--task", task] for task in tasks}


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.finetuning", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--task", required=True, help="the GLUE task whose runs to train (one of the chapter's tasks)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="a parameter of chapter 13 (VALUE is YAML)")
    parser.add_argument("--parameters-json", default="{}", help=argparse.SUPPRESS)  # a build's planned values (`ahead`)
    args = parser.parse_args(argv)
    parameters = command_parameters(CHAPTER, args.profile, args.parameters_json, args.parameter)
    runs = grid(parse_models(str(parameters["models"]), args.profile), parameters)
    require(args.task in runs.splits, f"--task {args.task}: not among the chapter's tasks ({', '.join(runs.splits)})")
    one = {args.task: runs.splits[args.task]}
    table = run_grid(runs.specs, one, runs.methods, runs.seeds, runs.base, runs.epochs, device=str(parameters["device"]), dtype=str(parameters["dtype"]))
    print(f"{args.task}: {len(table)} fine-tuning runs cached for chapter 13")


if __name__ == "__main__":
    main()
