"""A Sphinx extension for the PDF's exercises: each carries the label that a `{ref}` to it points at, and the number
the web pages give it.

sphinx-exercise labels an exercise `exercise:<label>` in LaTeX, while Sphinx writes a `{ref}` to it (the teaching page's
plan) as a link to `<document>:<label>`, which no exercise defines: the PDF printed "Exercise ??". This adds that label
beside each exercise (`_config.yml`: `extra_extensions`). In the LaTeX build Sphinx numbers exercises by section
("Exercise 2.3.1", the first of section 2.3), on the web by chapter ("Exercise 2.1"); the PDF gets the web's numbers.
The web pages are unchanged.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

EXERCISES = ("exercise_node", "exercise_enumerable_node")  # sphinx-exercise's node classes


def _label_exercises(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "latex":
        return
    registry = getattr(app.env, "sphinx_exercise_registry", {})
    for node in list(doctree.findall(lambda n: type(n).__name__ in EXERCISES)):
        label = node.get("label")
        home = registry.get(label, {}).get("docname") if label else None
        if home:
            target = f"{home}:{label}"
            node.parent.insert(node.parent.index(node), nodes.raw("", f"\\phantomsection\\label{{\\detokenize{{{target}}}}}", format="latex"))


def chapter_numbers(numbers: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """One chapter's exercise numbers as the web gives them, (chapter, n-th exercise of the chapter), from the numbers
    Sphinx gives them in any section depth: {"a": (2, 3, 1), "b": (2, 3, 2)} → {"a": (2, 1), "b": (2, 2)}."""
    ordered = sorted(numbers.items(), key=lambda item: item[1])
    return {key: (number[0], i) for i, (key, number) in enumerate(ordered, start=1)}


def _number_as_on_the_web(app: Sphinx, env: Any) -> list[str]:
    if app.builder.format == "latex":
        for numbers in env.toc_fignumbers.values():
            if numbers.get("exercise"):
                numbers["exercise"] = chapter_numbers(numbers["exercise"])
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", _label_exercises)
    app.connect("env-get-updated", _number_as_on_the_web, priority=900)  # after Sphinx numbers them (priority 500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
