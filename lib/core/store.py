"""The results store, defined once: where a chapter's tables live, their declared columns, and the model facts and
parameters recorded beside them.

    <results>/<profile>/<model>/<chapter>/<table>.csv   a model's table (model: the slug of its spec)
    <results>/<profile>/<model>/<chapter>/meta.json     that folder's parameters, model facts and table columns
    <results>/<profile>/chapter/<chapter>/<table>.csv   a table of the chapter as a whole, not of one model (the
                                                        scorecard, the GloVe baseline, the trained models compared)
    <results>/<profile>/figures/<chapter>/<name>.png|pdf

A table's columns are declared once, in the experiment module of its chapter (a `Schema`): the experiment builds the
table through it, the chapter writes it through it and the scorecard reads it back through it, so a renamed column
fails a fast test instead of the slow book run.

Inside a book build a chapter sees of the other chapters' results only the files their current runs vouch for
(`provenance.is_vouched`): a folder copied in by hand, or a table whose run no longer vouches for it, is not there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from ..errors import require
from ..provenance import is_vouched
from ..settings import results_dir, slug

META = "meta.json"  # beside a folder's tables: the parameters, model facts and table columns
CHAPTER = "chapter"  # the folder, in place of a model's, of the tables that belong to a chapter as a whole


@dataclass(frozen=True)
class Schema:
    """A result table's chapter, name and columns in order; `extra` is a pattern for columns whose names come from the
    data (e.g. one pair of columns per outlier dimension)."""

    chapter: str
    name: str
    columns: tuple[str, ...]
    extra: str | None = None

    def check(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame, if it has exactly the declared columns (plus any matching `extra`); else one line naming the
        difference."""
        have = [str(c) for c in frame.columns]
        missing = [c for c in self.columns if c not in have]
        unknown = [c for c in have if c not in self.columns and not (self.extra and re.fullmatch(self.extra, c))]
        require(
            not missing and not unknown,
            f"table {self.chapter}/{self.name}: columns differ from its schema (in its chapter's module in lib/experiments): "
            f"missing {missing or 'none'}, undeclared {unknown or 'none'}",
        )
        return frame

    def frame(self, rows: Iterable[dict]) -> pd.DataFrame:
        """A table from rows (dicts), columns in the declared order, checked."""
        frame = pd.DataFrame(list(rows))
        if frame.empty:
            frame = pd.DataFrame(columns=list(self.columns))
        declared = [c for c in self.columns if c in frame.columns]
        return self.check(frame[declared + [c for c in frame.columns if c not in self.columns]])


class Writer(Protocol):
    """What writes one chapter's results (`lib.book.results.Results`), as an experiment module's `run` calls it."""

    def table(self, frame: pd.DataFrame, schema: Schema, model: str, parameters: dict[str, Any], model_info: dict[str, Any] | None = None) -> Path: ...

    def figure(self, fig: Any, name: str, caption: str, tab: str | None = None) -> None: ...


def folder(profile: str, model: str, chapter: str, root: Path | None = None) -> Path:
    """Where a chapter keeps one model's tables (model `CHAPTER`: the chapter's own tables) in one edition."""
    return (root or results_dir()) / profile / slug(model) / chapter


def table_path(profile: str, model: str, chapter: str, table: str, root: Path | None = None) -> Path:
    return folder(profile, model, chapter, root) / f"{slug(table)}.csv"


def models_with(profile: str, chapter: str, table: str, root: Path | None = None) -> list[str]:
    """The folders (models', or `CHAPTER` for the chapter's own) that hold a table (a vouched one, in a build), sorted."""
    return sorted(p.parent.parent.name for p in ((root or results_dir()) / profile).glob(f"*/{chapter}/{slug(table)}.csv") if is_vouched(p))


def meta_path(profile: str, model: str, chapter: str, root: Path | None = None) -> Path:
    return folder(profile, model, chapter, root) / META


def meta(profile: str, model: str, chapter: str, root: Path | None = None) -> dict[str, Any]:
    """What a chapter recorded beside one model's tables (`meta.json`), or {} when it wrote none (none vouched, in a
    build) or it is unreadable."""
    path = meta_path(profile, model, chapter, root)
    if not is_vouched(path):
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def recorded_parameters(profile: str, model: str, chapter: str, root: Path | None = None) -> dict[str, Any]:
    """The parameters a chapter ran with when it wrote one model's tables; one line saying what to do when they cannot
    be read."""
    parameters = meta(profile, model, chapter, root).get("parameters")
    require(isinstance(parameters, dict), f"{meta_path(profile, model, chapter, root)} records no parameters; run {chapter} again or delete that folder")
    return parameters


def model_fact(profile: str, model: str, chapter: str, key: str, root: Path | None = None) -> Any:
    """A fact about a model (`name`, `family`) as a chapter recorded it (this chapter's first, then any other's), or
    None when none did."""
    base = (root or results_dir()) / profile / model
    for recorded in [chapter, *sorted(p.parent.name for p in base.glob("*/meta.json"))]:
        value = (meta(profile, model, recorded, root).get("model_info") or {}).get(key)
        if value:
            return value
    return None


def model_name(profile: str, model: str, chapter: str, root: Path | None = None) -> str:
    """A model's name as a chapter recorded it, else its folder's name."""
    return model_fact(profile, model, chapter, "name", root) or model
