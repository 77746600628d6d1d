"""The papers' experiments, one module per chapter, above `measure`/`train` and below `book`. A chapter's module owns
everything behind the chapter: the functions that run it, its tables' schemas (`core.store.Schema`), its figures, the
helpers that word its findings, and the rules (`@CHAPTER.rule`) that test its claims. Shared by several chapters:
`outlier_set` (the outlier dimensions by chapter 02's criterion, used by every chapter that clips), `variants` (raw / clipped / whitened
vectors, chapters 06-09), `figure_kinds` (figures drawn by several chapters), `plotting` (style and layout) and
`verdicts` (the verdict logic the rules share); `scorecard` is chapter 14's module.

A chapter `NN_<name>` has its module `<name>.py`, which declares the chapter once (`CHAPTER = chapter(...)`,
`lib.core.declaration`): the chapters it reads, its parameters' allowed values, its tables and its rules. This file
finds a declaration by chapter; it imports the module only when asked, so that a chapter's cached run depends on its
own module, not on every chapter's.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

from ..core.declaration import Chapter
from ..core.store import Schema
from ..errors import require


def module_name(chapter: str) -> str:
    """The experiment module of chapter `NN_<name>`: `lib.experiments.<name>`."""
    return f"{__name__}.{chapter.split('_', 1)[-1]}"


def declaration(chapter: str) -> Chapter | None:
    """The chapter's declaration (`CHAPTER` in its experiment module); None for a chapter without a module of its name
    (the tests' tiny books)."""
    name = module_name(chapter)
    if importlib.util.find_spec(name) is None:
        return None
    declared = getattr(importlib.import_module(name), "CHAPTER", None)
    path = name.replace(".", "/") + ".py"
    require(isinstance(declared, Chapter) and declared.name == chapter, f"{path} must declare its chapter: CHAPTER = chapter({chapter!r}, ...)")
    return declared


def schemas(chapter: str) -> dict[str, Schema]:
    """A chapter's declared tables, by name."""
    declared = declaration(chapter)
    return dict(declared.tables) if declared else {}


def schema(chapter: str, table: str) -> Schema:
    """The declared schema of a chapter's table; one line when there is none."""
    declared = schemas(chapter)
    require(table in declared, f"no schema for table {chapter}/{table}; declare it in {module_name(chapter).replace('.', '/')}.py")
    return declared[table]


def rules(chapter: str) -> dict[str, Callable]:
    """The verdict rules a chapter's module registers (`@CHAPTER.rule`), by name."""
    declared = declaration(chapter)
    return dict(declared.rules) if declared else {}
