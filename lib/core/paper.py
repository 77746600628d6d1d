"""The papers' reported numbers, for columns labelled "paper" beside the book's own results."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..provenance import record

_FILE = Path(__file__).with_name("paper_values.yaml")


@lru_cache(maxsize=1)
def values() -> dict[str, Any]:
    """All transcribed values, keyed by paper. Read inside a book build, the file is recorded as the chapter's input: a
    changed value executes again every chapter that shows the papers' numbers."""
    record("data", _FILE, f"papers' values {_FILE.name}")
    return yaml.safe_load(_FILE.read_text())


def name(paper: str) -> str:
    """A paper as a reader names it, its authors (four or more: the first, et al.) and year from its citation:
    name("bis2021") is "Biš, Podkorytov & Liu (2021)", name("ding2022") "Ding et al. (2022)"; an unknown key is
    returned as it is."""
    citation = values().get(paper, {}).get("citation", paper)
    if ")," not in citation:
        return citation
    authors, year = citation.split("),")[0].rsplit(" (", 1)
    if authors.count(",") >= 2:  # four or more authors: the first and "et al."
        authors = authors.split(",")[0] + " et al."
    return f"{authors} ({year})"


def table(paper: str, key: str) -> pd.DataFrame:
    """A list-valued entry as a DataFrame whose value columns are prefixed `paper_`."""
    frame = pd.DataFrame(values()[paper][key])
    return frame.rename(columns={c: f"paper_{c}" for c in frame.columns if c not in {"model"}})


def beside(ours: pd.DataFrame, theirs: pd.DataFrame, on: list[str], spec: str = "spec") -> pd.DataFrame:
    """Our rows (with a model-spec column) and the paper table's rows for the same model (its `model` column is the hub
    id a profile names; it becomes `paper_model`) with the same `on` keys joined on; empty where the paper did not
    study the model."""
    theirs = theirs.rename(columns={"model": "paper_model"})
    return ours.merge(theirs, left_on=[spec, *on], right_on=["paper_model", *on], how="left")
