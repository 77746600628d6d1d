"""A Sphinx extension for the PDF: an exercise also carries the label that a `{ref}` to it points at.

sphinx-exercise labels an exercise `exercise:<label>` in LaTeX, while Sphinx writes a `{ref}` to it (the teaching page's
plan) as a link to `<document>:<label>`, which no exercise defines: the PDF printed "Exercise ??". This adds that label
beside each exercise (`_config.yml`: `extra_extensions`). The web pages are unchanged.
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


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", _label_exercises)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
