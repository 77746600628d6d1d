"""Chapter 09's frozen features ahead of the chapter, a part of one model's task per process, cached where the chapter finds them:

    python -m lib.edition.features --profile default --model mpnet --task imdb [--part scoring] [-p NAME VALUE ...]

The features are the ones chapter 09 would extract with the same profile and values (`supervised.task_data`,
`supervised.features`): every split's pooled vectors and the training tokens' moments, kept in the run cache
(`encode.features`), so the chapter then reads them and only fits its classifiers. A parallel book build runs one such
command per model, task and part as jobs of their own (`planning.AHEAD`).
"""

from __future__ import annotations

from typing import Any

from ..book.chapter import parse_models
from ..core.sources import comma_list, declared_parameters
from ..encode.features import PARTS
from ..encode.models import load_model
from ..errors import cli, require
from ..experiments import supervised, vector_variants
from ..settings import slug
from . import work_ahead

CHAPTER = supervised.CHAPTER.name


def ahead(profile: str, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """One command per model, task and part of the chapter's features (the fitting texts, the scored texts), named
    "09_supervised:<model>-<task>-<part>". `parameters`: the chapter's values as a build plans them."""
    values = {**declared_parameters(CHAPTER), **parameters}
    command = work_ahead.command("lib.edition.features", profile, parameters)
    jobs = [(spec, task, part) for spec in comma_list(values["models"]) for task in comma_list(values["tasks"]) for part in PARTS]
    return {f"{CHAPTER}:{slug(spec)}-{task}-{part}": [*command, "--model", spec, "--task", task, "--part", part] for spec, task, part in jobs}


@cli
def main(argv: list[str] | None = None) -> None:
    parser = work_ahead.parser("lib.edition.features", CHAPTER, __doc__)
    parser.add_argument("--model", required=True, help="a model spec (one of the chapter's models)")
    parser.add_argument("--task", required=True, help="a classification task (one of the chapter's tasks)")
    parser.add_argument(
        "--part", choices=list(PARTS), default=None, help="only the texts the transforms are fitted on, or only the scored ones (default: both)"
    )
    args = parser.parse_args(argv)
    parameters = work_ahead.values(CHAPTER, args)
    tasks = comma_list(parameters["tasks"])
    require(args.task in tasks, f"--task {args.task}: not among the chapter's tasks ({', '.join(tasks)})")
    (spec,) = parse_models(args.model, args.profile)
    data = supervised.task_data(parameters | {"tasks": args.task})[args.task]
    lm = load_model(spec, device=str(parameters["device"]), dtype=str(parameters["dtype"]))
    wanted = vector_variants.requested(str(parameters["variants"]))
    found = supervised.features(lm, args.task, data, wanted, bool(parameters["pool_special"]), [args.part] if args.part else list(PARTS))
    print(f"{lm.name} {args.task}: features of {', '.join(f'{len(v):,} {s}' for s, v in found.vectors.items())} texts cached for chapter 09")


if __name__ == "__main__":
    main()
