"""What a chapter declares, once, in its experiment module (`lib/experiments/<name>.py` for `notebooks/NN_<name>.py`):
its name, the chapters whose results it reads, the values its parameters accept where the name alone does not say,
its result tables and the verdict rules that test its claims.

    CHAPTER = chapter("08_sts", reads=(outlier_set.CHAPTER,), allowed={"clip": "..."})
    STS_BEST = CHAPTER.table("best", "model spec dataset variant layer spearman_x100")

    @CHAPTER.rule
    def glove_beats_model(tables, folder, claim) -> Outcome: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import require
from .store import Schema

ALL = "all"  # `reads=ALL`: every other chapter (the scorecard)
R = TypeVar("R", bound=Callable)


@dataclass
class Chapter:
    """One chapter's declaration; its tables and rules register on it as its module defines them."""

    name: str
    reads: tuple[str, ...] | str = ()
    allowed: dict[str, str] = field(default_factory=dict)
    tables: dict[str, Schema] = field(default_factory=dict, repr=False)
    rules: dict[str, Callable] = field(default_factory=dict, repr=False)

    def table(self, name: str, columns: str, extra: str | None = None) -> Schema:
        """Declare a result table: its space-separated columns in order, and `extra`, a pattern for columns whose names
        come from the data (one pair per outlier dimension, say)."""
        require(name not in self.tables, f"chapter {self.name} declares its table {name!r} twice")
        self.tables[name] = Schema(self.name, name, tuple(columns.split()), extra)
        return self.tables[name]

    def rule(self, function: R) -> R:
        """Register a function of (tables, model folder, claim) -> Outcome as a verdict rule of this chapter."""
        self.rules[function.__name__] = function
        return function


def chapter(name: str, reads: tuple[str, ...] | str = (), allowed: dict[str, str] | None = None) -> Chapter:
    """A chapter's declaration: `reads`, the chapters whose results it reads (`ALL`: every other one); `allowed`, what
    a parameter accepts where its name does not say (shown in the parameter reference)."""
    require(reads == ALL or isinstance(reads, tuple), f"{name}: reads must be a tuple of chapter names or ALL, got {reads!r}")
    return Chapter(name, reads, dict(allowed or {}))
