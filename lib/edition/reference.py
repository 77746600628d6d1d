"""The parameter reference: for every chapter, each parameter with its meaning, its value in the default edition,
in the quick and paper profiles, and the values it accepts, generated from the `parameters` cells and the profiles.

A parameter's meaning is the comment on its line in the cell; the parameters every chapter shares (`profile`,
`models`, `seed`, `device`, `dtype`) have theirs here, in `SHARED_MEANINGS`, unless the cell says more.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

import jupytext

from ..core.profiles import KINDS, profile_parameters
from ..core.sources import declared_parameters, source_file
from ..errors import require
from ..experiments import declaration
from ..settings import DTYPES

SHARED_MEANINGS = {
    "profile": "names the results folder",
    "models": "comma-separated model specs",
    "seed": "seed of every random choice (samples, initialisation, batch order)",
    "device": '"auto" uses CUDA when present',
    "dtype": "floating-point type of the model's weights and activations",
}
SHARED_ALLOWED = {
    "profile": "a name: letters, digits, '.', '_', '-'",
    "models": "comma-separated: minilm, mpnet, chapter05:pe, chapter05:nope (chapter 05's models), trained:NAME, a local folder, a Hugging Face id",
    "device": "auto, cpu, cuda",
    "dtype": ", ".join(DTYPES),
}
_LISTS = ("tasks", "methods", "datasets", "collections")  # comma-separated subsets of the default's names
PROFILES = ("quick", "paper")


def meanings(chapter: str) -> dict[str, str]:
    """Each parameter's meaning: the comment on its lines in the parameters cell, else the shared meaning; a parameter
    with neither is an error naming it, so that no parameter goes undocumented."""
    cell = next(c for c in jupytext.read(source_file(chapter)).cells if "parameters" in c.metadata.get("tags", []))
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(cell.source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    out = {}
    for node in ast.parse(cell.source).body:
        name = node.targets[0].id  # declared_parameters has checked the cell's shape
        said = "; ".join(comments[line] for line in range(node.lineno, node.end_lineno + 1) if line in comments)
        out[name] = said or SHARED_MEANINGS.get(name, "")
        require(bool(out[name]), f"{source_file(chapter).name}: parameter {name!r} has no comment saying what it means; add one on its line")
    return out


def meaning_of(meaning: str, name: str, value: Any) -> str:
    """A setting as a reader reads it: "SST-2 training sentences: 2,000 (paper: 2,000)", "pairs per data set: all"."""
    paper = next((g.split(";")[0] for g in re.findall(r"\(([^()]*)\)", meaning) if g.startswith("paper")), "")
    plain = re.sub(r"\s*\((?:paper|[^()]*:)[^()]*\)", "", meaning)  # without its asides on the paper's value and special values
    depth, cut = 0, len(plain)
    for i, char in enumerate(plain):  # the meaning up to its first ";" or ":" outside parentheses
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ";:":
            cut = i
            break
    head = plain[:cut].strip().removeprefix("comma-separated ")
    head = head if head[:1].isalpha() else name  # '"auto" uses CUDA when present' names no quantity: the parameter's name does
    said = re.search(rf"(?<![\d.-]){re.escape(str(value))}(?: is|:) ([^;,)]+)", meaning)  # "0: all", "-1 is the last layer"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    shown = said.group(1).strip() if said else (f"{value:,}" if isinstance(value, int) else f"{value:g}") if number else str(value)
    return f"{head}: {shown}" + (f" ({paper})" if paper else "")


def allowed(chapter: str, name: str, default: Any) -> str:
    """The values a chapter's parameter accepts, in words."""
    declared = declaration(chapter)
    if declared is not None and name in declared.allowed:  # what its module declares
        return declared.allowed[name]
    if name in SHARED_ALLOWED:
        return SHARED_ALLOWED[name]
    if name in _LISTS:
        return "comma-separated, any of: " + ", ".join(default.split(","))
    return KINDS.get(type(default), "a string")


def reference(chapter: str) -> list[dict[str, Any]]:
    """One row per declared parameter, in the cell's order: name, meaning, default, quick, paper, allowed. A profile
    that does not change a parameter shows None there (it runs the default)."""
    declared, meaning = declared_parameters(chapter), meanings(chapter)
    profiles = {p: profile_parameters(p, chapter) for p in PROFILES}
    rows = []
    for name, default in declared.items():
        row = {"parameter": name, "meaning": meaning[name], "default": default}
        for profile, values in profiles.items():
            row[profile] = values.get(name)
        row["allowed"] = allowed(chapter, name, default)
        rows.append(row)
    return rows


def _value(value: Any) -> str:
    return f"`{value!r}`"


def markdown(chapter: str) -> str:
    """The reference as a definition list, one entry per parameter (it wraps in any column and on paper): its meaning,
    its default, what the quick and paper profiles set where they change it, and the values it accepts."""
    entries = []
    for row in reference(chapter):
        values = [f"default {_value(row['default'])}"] + [f"{p} {_value(row[p])}" for p in PROFILES if row[p] is not None]
        entries.append(f"`{row['parameter']}`\n: {row['meaning']} ({'; '.join(values)}). Allowed: {row['allowed']}.\n")
    return "\n".join(entries)
