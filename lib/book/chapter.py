"""Small helpers every chapter notebook uses: parameter checks, lists from parameters, displaying tables and text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd
from IPython.display import Markdown, display

from ..datasets.tasks import sample_sentences
from ..encode.models import check_available
from ..errors import require
from . import paper, plotting
from .results import Results
from .sources import declared_parameters


def names(value: object, what: str, allowed: Iterable[str] | None = None) -> list[str]:
    """The items of a comma-separated parameter (e.g. `tasks = "sst2,imdb"`), in order; at least one, each
    among `allowed` when given."""
    items = [item.strip() for item in str(value).split(",") if item.strip()]
    require(len(items) > 0, f"{what} is empty: give one or more comma-separated names")
    if allowed is not None:
        known = list(allowed)
        unknown = [item for item in items if item not in known]
        require(not unknown, f"{what}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(known)}")
    return items


def parameters(chapter: str, namespace: Mapping[str, object]) -> dict[str, object]:
    """This run's values of the chapter's parameters (the names its parameters cell declares), as its results record
    them; the profile, the model list and the device are left out (results are filed by profile and model, and the
    device does not change a result)."""
    return {name: namespace[name] for name in declared_parameters(chapter) if name not in ("profile", "models", "device")}


def parse_models(models: str) -> list[str]:
    """Comma-separated model specs from a parameter cell, each checked to be loadable."""
    specs = names(models, "models (e.g. -p models minilm,mpnet)")
    for spec in specs:
        check_available(spec)
    return specs


def positive_int(name: str, value: object) -> int:
    """A parameter that must be a whole number above zero."""
    require(isinstance(value, int) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive integer, got {value!r}")
    return value


def positive_number(name: str, value: object) -> float:
    """A parameter that must be a number above zero."""
    require(isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive number, got {value!r}")
    return value


def positive_numbers(name: str, value: object) -> list[float]:
    """A parameter of comma-separated numbers above zero (e.g. `"1,0.25"`); an empty string gives none."""
    items = [item.strip() for item in str(value).split(",") if item.strip()]
    numbers = []
    for item in items:
        try:
            numbers.append(float(item))
        except ValueError:
            numbers.append(float("nan"))
    require(all(n > 0 for n in numbers), f"parameter {name} must be comma-separated positive numbers, got {value!r}")
    return numbers


def share(name: str, value: object) -> float:
    """A parameter that must be a number in (0, 1]."""
    require(isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1, f"parameter {name} must be in (0, 1], got {value!r}")
    return value


def begin(chapter: str, profile: str, models: str) -> tuple[list[str], Results]:
    """Check the model list and set the figure style; returns (model specs, the chapter's Results). Nothing is written yet."""
    plotting.style()
    return parse_models(models), Results(chapter, profile)


def sst2_sentences(n: int, seed: int) -> list[str]:
    """A seeded sample of SST-2 training sentences (the corpus of most Luo et al. measurements), announced in one line."""
    positive_int("n_sentences", n)
    sentences = sample_sentences("sst2", "train", n, seed)
    print(f"{len(sentences):,} SST-2 training sentences (seed {seed})")
    return sentences


LATEX_SPECIAL = str.maketrans({c: f"\\{c}" for c in "&%$#_{}"} | {"~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"})


def show(frame: pd.DataFrame, caption: str, precision: int = 3) -> None:
    """Display a table with a caption and without the index, as HTML (the book's pages), plain text (a notebook read
    as text) and LaTeX (a PDF made from the notebook)."""
    styled = frame.style.set_caption(caption).format(precision=precision, na_rep="–").hide(axis="index")
    html = styled.set_table_styles([{"selector": "th, td", "props": "padding: 2px 12px; text-align: left;"}]).to_html()
    latex = (
        frame.style.format(precision=precision, na_rep="–", escape="latex")
        .format_index(escape="latex", axis=1)
        .hide(axis="index")
        .set_caption(caption.translate(LATEX_SPECIAL))
        .to_latex(hrules=True)
    )
    plain = caption + "\n" + styled.data.to_string(index=False, na_rep="–", float_format=lambda v: f"{v:.{precision}f}")
    display({"text/html": html, "text/latex": latex, "text/plain": plain}, raw=True)


def show_beside_paper(
    ours: pd.DataFrame, theirs: pd.DataFrame, on: list[str], columns: list[str], caption: str, paper_columns: list[str], paper_caption: str, precision: int = 1
) -> None:
    """Our table with the paper's columns for the same model (`paper.beside`), then the paper's own table."""
    show(paper.beside(ours, theirs, on)[columns], f"{caption} (– where the paper did not study the model)", precision)
    show(theirs[paper_columns], paper_caption, precision)


def say(text: str) -> None:
    """Display Markdown computed from results."""
    display(Markdown(text))
