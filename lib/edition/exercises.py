"""Exercises and their solutions in the chapter sources (sphinx-exercise directives in markdown cells).

The convention, checked by `check`:
- an exercise is one `:::{exercise} Title` directive with a `:label: ex-NN-name` (NN = the chapter's number);
- its solution follows as cells gated by `:::{solution-start} LABEL` (the first line of a markdown cell) and
  `:::{solution-end}` (the last lines of a markdown cell), so that code cells between them compute the solution's
  numbers in the chapter's own run;
- a parameter named in an exercise as `-p NAME VALUE` is one the chapter declares (or the chapter named by
  `--chapters` in the same command declares).

The student edition leaves the solution cells out (`strip_solutions`), from the page and from its notebook download.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jupytext
import nbformat

from ..core.sources import declared_parameters, source_file
from ..errors import require

_EXERCISE = re.compile(r"^:::\{exercise\}\s*(?P<title>.*)\n:label:\s*(?P<label>\S+)\n(?P<body>.*?)^:::$", re.M | re.S)
_START = re.compile(r"^:::\{solution-start\}\s*(?P<label>\S+)")
_END = ":::{solution-end}\n:::"
_COMMAND = re.compile(r"`(?P<command>[^`]*-p [^`]*)`")
_PARAMETER = re.compile(r"(?:^|\s)-p\s+(?P<name>[A-Za-z_]\w*)")
_CHAPTERS = re.compile(r"--chapters\s+(?P<chapters>[\w,]+)")


@dataclass(frozen=True)
class Exercise:
    label: str
    title: str
    text: str


def _cells(chapter: str) -> list:
    return jupytext.read(source_file(chapter)).cells


def exercises(chapter: str) -> list[Exercise]:
    """The chapter's exercises, in order."""
    found = []
    for cell in _cells(chapter):
        if cell.cell_type == "markdown":
            found += [Exercise(m["label"], m["title"].strip(), m["body"].strip()) for m in _EXERCISE.finditer(cell.source)]
    return found


def solutions(chapter: str) -> list[str]:
    """Labels of the exercises that have a gated solution, in order."""
    return [m["label"] for cell in _cells(chapter) if cell.cell_type == "markdown" and (m := _START.match(cell.source))]


def parameter_mentions(chapter: str, text: str) -> list[tuple[tuple[str, ...], str]]:
    """(chapters, parameter) for every `-p NAME` inside a backquoted command of an exercise's text; the chapters are the
    ones named by `--chapters` in that command, else this chapter. As for the runner, the parameter goes to those of them
    that declare it."""
    out = []
    for command in (m["command"] for m in _COMMAND.finditer(text)):
        named = _CHAPTERS.search(command)
        targets = tuple(named["chapters"].split(",")) if named else (chapter,)
        out += [(targets, m["name"]) for m in _PARAMETER.finditer(command)]
    return out


def check(chapter: str) -> list[Exercise]:
    """The chapter's exercises, after checking the convention above; one line naming what is wrong otherwise."""
    number = chapter.split("_", 1)[0]
    found = exercises(chapter)
    labels = [e.label for e in found]
    require(len(labels) == len(set(labels)), f"{chapter}: exercise labels repeat: {labels}")
    for exercise in found:
        require(exercise.label.startswith(f"ex-{number}-"), f"{chapter}: exercise label {exercise.label!r} must start with 'ex-{number}-'")
        for targets, name in parameter_mentions(chapter, exercise.text):
            require(
                any(name in declared_parameters(target) for target in targets),
                f"{chapter}: exercise {exercise.label} names parameter {name!r}, which {' nor '.join(targets)} does not declare",
            )
    solved = solutions(chapter)
    require(sorted(solved) == sorted(labels), f"{chapter}: exercises {labels} and solutions {solved} do not match one to one")
    open_label = None
    for cell in _cells(chapter):
        if cell.cell_type != "markdown":
            continue
        start = _START.match(cell.source)
        require(
            ":::{solution-start}" not in cell.source or start is not None,
            f"{chapter}: a solution-start directive must open its markdown cell",
        )
        if start:
            require(open_label is None, f"{chapter}: solution {start['label']} starts inside solution {open_label}")
            open_label = start["label"]
        if ":::{solution-end}" in cell.source:
            require(cell.source.rstrip().endswith(_END), f"{chapter}: a solution-end directive must close its markdown cell")
            require(open_label is not None, f"{chapter}: a solution-end without a solution-start")
            open_label = None
    require(open_label is None, f"{chapter}: solution {open_label} has no solution-end")
    return found


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its solution cells (from each solution-start cell to its solution-end cell, inclusive)."""
    kept, inside = [], False
    for cell in nb.cells:
        starts = cell.cell_type == "markdown" and _START.match(cell.source) is not None
        inside = inside or starts
        if not inside:
            kept.append(cell)
        if inside and cell.cell_type == "markdown" and cell.source.rstrip().endswith(_END):
            inside = False
    nb.cells = kept
    return nb
