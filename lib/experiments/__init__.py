"""The papers' experiments, one module per chapter, above `measure`/`train` and below `book`. A chapter's module owns
everything behind the chapter: the functions that run it, its tables' schemas (`core.store.Schema`), its figures, the
helpers that word its findings, and the rules (`verdicts.rule`) that test its claims. Shared by several chapters:
`outlier_set` (the outlier dimensions by chapter 02's criterion, used by every chapter that clips), `variants` (raw / clipped / whitened
vectors, chapters 06-09), `figure_kinds` (figures drawn by several chapters), `plotting` (style and layout) and
`verdicts` (the verdict logic the rules share).

This file names each chapter's module and finds a schema or rule by chapter; it imports them only when asked, so that
a chapter's cached run depends on its own module, not on every chapter's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from ..core.store import Schema
from ..errors import require

MODULES = {
    "01_anisotropy": "anisotropy",
    "02_outlier_neurons": "outlier_neurons",
    "03_positional_origin": "positional_origin",
    "04_position_probe": "position_probe",
    "05_pretraining": "pretraining",
    "06_clipping_whitening": "clipping_geometry",
    "07_wic": "wic",
    "08_sts": "sts",
    "09_supervised": "frozen",
    "10_common_direction": "common_direction",
    "11_rare_words": "rare_tokens",
    "12_isotropy_word_similarity": "word_geometry",
    "13_isotropy_calibration": "isotropy_calibration",
}


def module(chapter: str) -> ModuleType:
    """The experiment module of a chapter; one line naming the chapters that have one."""
    require(chapter in MODULES, f"chapter {chapter!r} has no experiment module; those that do: {', '.join(MODULES)}")
    return importlib.import_module(f"{__name__}.{MODULES[chapter]}")


def schemas(chapter: str) -> dict[str, Schema]:
    """A chapter's declared tables, by name."""
    return {s.name: s for s in vars(module(chapter)).values() if isinstance(s, Schema) and s.chapter == chapter}


def schema(chapter: str, table: str) -> Schema:
    """The declared schema of a chapter's table; one line when there is none."""
    declared = schemas(chapter)
    require(table in declared, f"no schema for table {chapter}/{table}; declare it in lib/experiments/{MODULES.get(chapter, '?')}.py")
    return declared[table]


def rules(chapter: str) -> dict[str, Callable]:
    """The verdict rules a chapter's module registers (`@verdicts.rule`), by name."""
    return {name: f for name, f in vars(module(chapter)).items() if callable(f) and getattr(f, "is_rule", False)}
