"""Small helpers every chapter notebook uses: parameter checks, lists from parameters, displaying tables and text."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd

from ..core import paper
from ..core.checks import positive_int, positive_number, positive_numbers, sample_size, share  # noqa: F401  (`ch.positive_int`, ... in the chapters)
from ..core.profiles import chapter_parameters, config  # noqa: F401  (config: `ch.config` in the chapters)
from ..core.sources import comma_list, declared_parameters, names  # noqa: F401  (names: `ch.names` in the chapters)
from ..datasets.tasks import sst2_sentences  # noqa: F401  (`ch.sst2_sentences` in the chapters)
from ..encode.extraction import truncation_note
from ..encode.models import check_available
from ..errors import require
from ..experiments import plotting
from .markdown import escape
from .output import ANSWER, FINDINGS, Markdown, display
from .results import Results
from .tables import show


def parameters(chapter: str, namespace: Mapping[str, object]) -> dict[str, object]:
    """This run's values of the chapter's parameters (the names its parameters cell declares), as its results record
    them; the profile, the model list and the device are left out (results are filed by profile and model, and the
    device does not change a result)."""
    return {name: namespace[name] for name in declared_parameters(chapter) if name not in ("profile", "models", "device")}


PRETRAINED = {"chapter05:pe": 0, "chapter05:nope": 1}  # chapter 05's two models, by the order of its `names`


def trained_spec(spec: str, profile: str) -> str:
    """`chapter05:pe` / `chapter05:nope` as `trained:<name>`, the name chapter 05 gives that model in this edition (so a
    profile names its trained models once, in chapter 05's section); any other spec as it is."""
    if spec not in PRETRAINED:
        return spec
    run_names = names(chapter_parameters("05_pretraining", profile)["names"], "chapter 05's names")
    require(len(run_names) == 2, f"chapter 05's names must be two model names, got {run_names}")
    return f"trained:{run_names[PRETRAINED[spec]]}"


def parse_models(models: str, profile: str = "default") -> list[str]:
    """Comma-separated model specs from a parameter cell (chapter 05's models by their `chapter05:` aliases), each
    checked to be loadable."""
    specs = [trained_spec(spec, profile) for spec in names(models, "models (e.g. -p models minilm,mpnet)")]
    for spec in specs:
        check_available(spec)
    return specs


def results(chapter: str, profile: str) -> Results:
    """The chapter's Results, with the book's figure style set. Nothing is written yet."""
    plotting.style()
    return Results(chapter, profile)


def begin(chapter: str, profile: str, models: str) -> tuple[list[str], Results]:
    """Check the model list and set the figure style; returns (model specs, the chapter's Results). Nothing is written yet."""
    specs = parse_models(models, profile)
    return specs, results(chapter, profile)


def show_beside_paper(
    ours: pd.DataFrame,
    theirs: pd.DataFrame,
    on: list[str],
    columns: list[str],
    caption: str,
    paper_columns: list[str],
    paper_caption: str,
    precision: int = 1,
    name: str | None = None,
) -> None:
    """Our table with the paper's columns for the same model (`paper.beside`), then the paper's own table. When the paper
    studied none of our models its columns would be empty: they are left out and the caption says so once. `name`
    labels our table (`show`), the paper's is `<name>-paper`."""
    joined = paper.beside(ours, theirs, on)[columns]
    theirs_here = [c for c in columns if c.startswith("paper_")]
    if joined[theirs_here].isna().all().all():
        show(joined.drop(columns=theirs_here), f"{caption} (the paper did not study these models: its numbers are in the next table)", precision, name)
    else:
        show(joined, f"{caption} (– where the paper did not study the model)", precision, name)
    show(theirs[paper_columns], paper_caption, precision, f"{name}-paper" if name else None)


def say(text: str) -> None:
    """Display Markdown computed from results."""
    display(Markdown(text))


Run = TypeVar("Run")


def each_model(run: Callable[..., Run], specs: Sequence[str], **settings: Any) -> dict[str, Run]:
    """`run(spec, **settings)` for each model in turn (one model in memory at a time): the runs by model name."""
    runs = {}
    for spec in specs:
        found = run(spec, **settings)
        runs[found.name] = found
    return runs


def show_each(frames: Mapping[str, pd.DataFrame], caption: str, precision: int = 3, lift: bool = False) -> None:
    """One table per model, each in its model's tab; `{name}` in the caption becomes the model's name, as text (`lift`:
    see `show`)."""
    for name, frame in frames.items():
        show(frame, caption.format(name=escape(name)), precision, tab=name, lift=lift)


def findings(lines: Sequence[str], title: str = "What our run shows") -> None:
    """The chapter's findings, computed from its results (its module's `findings`), as a bold-titled list; with a line on
    the inputs cut at a model's token limit where any was (`extraction.truncation_note`, said once, not per pass)."""
    note = truncation_note()
    display(Markdown(f"**{title}.**\n\n" + "\n".join([*lines, *([f"- {note}"] if note else [])])), metadata={FINDINGS: True})


def answer(sentences: Sequence[str]) -> None:
    """The chapter's answer to its question in two or three sentences computed from its results, with the key numbers
    and how sure they are; the page shows it under the title (`lib.edition.staging` moves it there), the notebook
    where it is called."""
    display(Markdown(" ".join(s.strip() for s in sentences if s.strip())), metadata={ANSWER: True})
