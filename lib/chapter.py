"""Small helpers every chapter notebook uses: parameter checks, model lists, displaying tables and text."""

from __future__ import annotations

import pandas as pd
from IPython.display import Markdown, display

from . import plotting
from .data import sample_sentences
from .errors import require
from .models import check_available
from .results import Results

# Which paper model a hub id corresponds to, so paper columns line up in the `paper` profile.
PAPER_MODEL = {"bert-base-uncased": "bert-base", "bert-base-cased": "bert-base", "roberta-base": "roberta-base"}


def parse_models(models: str) -> list[str]:
    """Comma-separated model specs from a parameter cell, each checked to be loadable."""
    specs = [m.strip() for m in str(models).split(",") if m.strip()]
    require(len(specs) > 0, "no models given: set the `models` parameter, e.g. -p models minilm,mpnet")
    for spec in specs:
        check_available(spec)
    return specs


def positive_int(name: str, value: object) -> int:
    """A parameter that must be a whole number above zero."""
    require(isinstance(value, int) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive integer, got {value!r}")
    return value


def begin(chapter: str, profile: str, models: str) -> tuple[list[str], Results]:
    """Check the model list, set the figure style; returns (model specs, the chapter's Results). Nothing is written yet."""
    plotting.style()
    return parse_models(models), Results(chapter, profile)


def start(chapter: str, profile: str, models: str, n_sentences: int, seed: int) -> tuple[list[str], Results, list[str]]:
    """`begin`, then draw the SST-2 training sentences. Returns (model specs, Results, sentences)."""
    specs, results = begin(chapter, profile, models)
    positive_int("n_sentences", n_sentences)
    sentences = sample_sentences("sst2", "train", n_sentences, seed)
    print(f"{len(sentences):,} SST-2 training sentences (seed {seed}); models: {', '.join(specs)}; results: {results.root}")
    return specs, results, sentences


def show(frame: pd.DataFrame, caption: str, precision: int = 3) -> None:
    """Display a table with a caption and without the index."""
    styled = frame.style.set_caption(caption).format(precision=precision, na_rep="–").hide(axis="index")
    display(styled.set_table_styles([{"selector": "th, td", "props": "padding: 2px 12px; text-align: left;"}]))


def say(text: str) -> None:
    """Display Markdown computed from results."""
    display(Markdown(text))
