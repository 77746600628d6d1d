"""Chapter 05's pre-training runs ahead of the chapter, in one process or under torchrun on many GPUs and nodes:

    python -m lib.edition.train_ahead --profile paper                                   # one process (one GPU or the CPU)
    torchrun --nproc_per_node=8 -m lib.edition.train_ahead --profile paper              # one node, eight GPUs
    torchrun --nnodes=4 --nproc_per_node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 -m lib.edition.train_ahead --profile paper

The runs are the ones chapter 05 would train with the same profile and `-p` values (`pretraining_runs`), each saved
(by rank 0) where the chapter looks for it, so that `make book PROFILE=…` then reuses them. A run already saved with
the same settings and training code is skipped; an interrupted run resumes from its last checkpoint, at any world
size. On several nodes, BOOK_MODELS_DIR, BOOK_CACHE_DIR and BOOK_DATA_DIR must be folders every node sees (a shared
file system): rank 0 fetches the corpus, trains the tokenizer and tokenizes the corpus once, then every rank reads them.
"""

from __future__ import annotations

from typing import Any

from ..core.sources import comma_list, declared_parameters
from ..errors import cli, require
from ..experiments.pretraining import check_free, pretraining_runs, train_unless_saved
from ..settings import models_dir
from ..train import distributed, masked_lm
from . import work_ahead

CHAPTER = "05_pretraining"


def ahead(profile: str, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """The commands that train chapter 05's runs not yet saved with these settings, one process each, named
    "05_pretraining:<run>": a build runs them as jobs of their own before the chapter, which then reuses them (none with
    `retrain`, where the chapter trains again itself). `parameters`: the chapter's values as a build plans them. A run
    that would replace another edition's model stops the build here, in one line (`check_free`)."""
    values = {**declared_parameters(CHAPTER), **parameters}
    if values.get("retrain") is True:
        return {}
    _, configs = pretraining_runs(values)
    todo = [name for name, cfg in configs.items() if masked_lm.saved_run(models_dir() / name, cfg) is None]
    for name in todo:
        check_free(name, configs[name], profile)
    command = work_ahead.command("lib.edition.train_ahead", profile, parameters)
    return {f"{CHAPTER}:{name}": [*command, "--only", name] for name in todo}


@cli
def main(argv: list[str] | None = None) -> None:
    parser = work_ahead.parser("lib.edition.train_ahead", CHAPTER, __doc__)
    parser.add_argument("--micro-batch", type=int, default=None, help="blocks per device per forward pass (gradients accumulate to the global batch)")
    parser.add_argument("--only", default="", help="comma-separated run names (default: every run of the chapter)")
    args = parser.parse_args(argv)
    parameters = work_ahead.values(CHAPTER, args)
    _, configs = pretraining_runs(parameters)
    only = comma_list(args.only)
    unknown = sorted(set(only) - set(configs))
    require(not unknown, f"--only: no run {', '.join(unknown)}; the runs are {', '.join(configs)}")
    here, _ = distributed.start(str(parameters["device"]))
    todo = {name: cfg for name, cfg in configs.items() if (not only or name in only) and masked_lm.saved_run(models_dir() / name, cfg) is None}
    if here.main:
        for name in configs:
            state = "to train" if name in todo else "not asked for" if only and name not in only else "saved with these settings"
            print(f"{name}: {state} ({models_dir() / name})")
    if not todo:
        return
    first = next(iter(todo.values()))  # the runs share corpus, tokenizer and block length
    if here.main:  # rank 0 tokenizes the corpus into the cache first; the others then read it
        corpus = masked_lm.prepare_corpus(first)
    distributed.barrier()
    if not here.main:
        corpus = masked_lm.prepare_corpus(first)
    train_unless_saved(
        todo,
        corpus,
        track_blocks=int(parameters["track_blocks"]),
        device=str(parameters["device"]),
        edition=args.profile,
        micro_batch=args.micro_batch,
        processes=here.size,
        main=here.main,
        barrier=distributed.barrier,
    )


if __name__ == "__main__":
    main()
