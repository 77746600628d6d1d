"""Chapter 09's frozen features ahead of the chapter, one (model, task) per process, cached where the chapter finds them:

    python -m lib.edition.features --profile default --model mpnet --task imdb [-p NAME VALUE ...]

The features are the ones chapter 09 would extract with the same profile and values (`frozen.task_data`,
`frozen.features`): every split's pooled vectors and the training tokens' moments, kept in the run cache
(`encode.features`), so the chapter then reads them and only fits its classifiers. A parallel book build runs one such
command per model and task as jobs of their own (`runner.AHEAD`).
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
from ..encode.models import load_model
from ..errors import cli, require
from ..experiments import frozen, vector_variants
from ..settings import slug

CHAPTER = "09_supervised"


def ahead(profile: str, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """One command per model and task of the chapter, named "09_supervised:<model>-<task>". `parameters`: the
    chapter's values as a build plans them."""
    values = {**declared_parameters(CHAPTER), **parameters}
    command = [sys.executable, "-m", "lib.edition.features", "--profile", profile, "--parameters-json", json.dumps(parameters)]
    pairs = [(spec, task) for spec in comma_list(values["models"]) for task in comma_list(values["tasks"])]
    return {f"{CHAPTER}:{slug(spec)}-{task}": [*command, "--model", spec, "--task", task] for spec, task in pairs}


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.features", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--model", required=True, help="a model spec (one of the chapter's models)")
    parser.add_argument("--task", required=True, help="a classification task (one of the chapter's tasks)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="a parameter of chapter 09 (VALUE is YAML)")
    parser.add_argument("--parameters-json", default="{}", help=argparse.SUPPRESS)  # a build's planned values (`ahead`)
    args = parser.parse_args(argv)
    parameters = command_parameters(CHAPTER, args.profile, args.parameters_json, args.parameter)
    tasks = comma_list(parameters["tasks"])
    require(args.task in tasks, f"--task {args.task}: not among the chapter's tasks ({', '.join(tasks)})")
    (spec,) = parse_models(args.model, args.profile)
    data = frozen.task_data(parameters | {"tasks": args.task})[args.task]
    lm = load_model(spec, device=str(parameters["device"]), dtype=str(parameters["dtype"]))
    found = frozen.features(lm, args.task, data, vector_variants.requested(str(parameters["variants"])), bool(parameters["pool_special"]))
    print(f"{lm.name} {args.task}: features of {', '.join(f'{len(v):,} {s}' for s, v in found.vectors.items())} texts cached for chapter 09")


if __name__ == "__main__":
    main()
