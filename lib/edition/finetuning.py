"""Chapter 13's fine-tuning grid ahead of the chapter, one GLUE task per process, cached where the chapter finds it:

    python -m lib.edition.finetuning --profile default --task sst2 [-p NAME VALUE ...]

The runs are the ones chapter 13 would train with the same profile and values (`isotropy_calibration.grid`), each
kept in the run cache (`finetune.cached_run`), so the chapter then reads them instead of training. A run already cached
is not trained again. A parallel book build runs one such command per task as jobs of their own (`planning.AHEAD`).
"""

from __future__ import annotations

from typing import Any

from ..book.chapter import parse_models
from ..core.sources import comma_list, declared_parameters
from ..errors import cli, require
from ..experiments import isotropy_calibration
from ..experiments.isotropy_calibration import grid, run_grid
from . import work_ahead

CHAPTER = isotropy_calibration.CHAPTER.name


def ahead(profile: str, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """One command per task of the chapter's grid, named "13_isotropy_calibration:<task>". `parameters`: the chapter's
    values as a build plans them."""
    tasks = comma_list({**declared_parameters(CHAPTER), **parameters}["tasks"])
    command = work_ahead.command("lib.edition.finetuning", profile, parameters)
    return {f"{CHAPTER}:{task}": [*command, "--task", task] for task in tasks}


@cli
def main(argv: list[str] | None = None) -> None:
    parser = work_ahead.parser("lib.edition.finetuning", CHAPTER, __doc__)
    parser.add_argument("--task", required=True, help="the GLUE task whose runs to train (one of the chapter's tasks)")
    args = parser.parse_args(argv)
    parameters = work_ahead.values(CHAPTER, args)
    runs = grid(parse_models(str(parameters["models"]), args.profile), parameters)
    require(args.task in runs.splits, f"--task {args.task}: not among the chapter's tasks ({', '.join(runs.splits)})")
    one = {args.task: runs.splits[args.task]}
    table = run_grid(runs.specs, one, runs.methods, runs.seeds, runs.base, runs.epochs, device=str(parameters["device"]), dtype=str(parameters["dtype"]))
    print(f"{args.task}: {len(table)} fine-tuning runs cached for chapter 13")


if __name__ == "__main__":
    main()
