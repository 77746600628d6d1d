"""The shape of lib: layers that import only downwards, the edition code on top and imported by nothing in lib, and a
cache that executes again only the chapters whose code changed (a chapter's figure: that chapter; a rule: that chapter
and the scorecard; the verdict logic: the scorecard alone)."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
import yaml

from lib.core.sources import chapters, source_file
from lib.edition import cache
from lib.settings import REPO_ROOT

# bottom to top; a module may import its own layer and those below it
LAYERS = ["base", "core", "datasets", "encode", "measure", "train", "experiments", "book", "edition"]


def _layer(module: str) -> str:
    """lib.measure.outliers -> measure; lib.settings -> base."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "base"


def _modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    """lib.measure.outliers -> its file, for every module under root/lib (a package by its __init__.py)."""
    return {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p for p in sorted((root / "lib").rglob("*.py"))}


def _imports(root: Path = REPO_ROOT) -> list[tuple[str, str, int]]:
    """(importing module, imported lib module, line) for every import statement in lib, those inside functions too;
    `from package import name` is package.name when that is a module."""
    modules, found = _modules(root), []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                found += [(module, f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target, node.lineno) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(module, a.name, node.lineno) for a in node.names]
    return [(m, t, line) for m, t, line in found if t == "lib" or t.startswith("lib.")]


def _module_graph(root: Path = REPO_ROOT) -> dict[str, set[str]]:
    """Each lib module -> the lib modules it imports, less its own packages (importing it runs their __init__ first)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, t, _ in _imports(root):
        if t in modules and t != m and not m.startswith(t + "."):
            graph[m].add(t)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """The nodes of one loop in graph, in order ([] when there is none)."""
    path: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str]:
        if node in path:
            return path[path.index(node) :]
        if node in done:
            return []
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if loop := visit(nxt):
                return loop
        path.pop()
        done.add(node)
        return []

    return next((loop for node in sorted(graph) if (loop := visit(node))), [])


def test_every_lib_module_belongs_to_a_layer():
    base = {p.stem for p in (REPO_ROOT / "lib").glob("*.py")}
    assert base == {"__init__", "settings", "errors", "io", "processes", "provenance", "codehash", "codegraph"}  # the base: no package, no layer above
    assert {p.name for p in (REPO_ROOT / "lib").iterdir() if p.is_dir() and (p / "__init__.py").is_file()} == set(LAYERS) - {"base"}


def test_no_import_goes_up_a_layer():
    upward = [f"{m} (line {line}) imports {t}" for m, t, line in _imports() if LAYERS.index(_layer(t)) > LAYERS.index(_layer(m))]
    assert not upward, "\n".join(upward)


def test_packages_form_no_loop_and_the_edition_is_imported_by_nothing_below_it():
    graph: dict[str, set[str]] = {}
    for m, t, _ in _imports():
        if _layer(m) != _layer(t):
            graph.setdefault(_layer(m), set()).add(_layer(t))
    assert not (loop := _cycle(graph)), f"import loop through {' -> '.join(loop)}"
    assert not [m for m, t, _ in _imports() if _layer(t) == "edition" and _layer(m) != "edition"]
    for chapter in chapters():  # chapters call the layers below the edition, never the edition itself
        assert not re.search(r"^(from|import) lib\.edition", source_file(chapter).read_text(encoding="utf-8"), re.M), chapter


def test_no_module_imports_itself_through_others():
    loop = _cycle(_module_graph())
    assert not loop, f"import cycle: {' -> '.join(loop + loop[:1])}"


def test_the_cycle_finder_reports_a_loop_planted_in_one_package(tmp_path):
    shutil.copytree(REPO_ROOT / "lib", tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    # one import at the top, the other inside a function, as fetch's of release was
    for module, planted in (("glove", "from . import wikipedia\n"), ("wikipedia", "\n\ndef _planted():\n    from . import glove\n")):
        with open(tmp_path / f"lib/datasets/{module}.py", "a", encoding="utf-8") as file:
            file.write(planted)
    assert sorted(_cycle(_module_graph(tmp_path))) == ["lib.datasets.glove", "lib.datasets.wikipedia"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of lib to edit, and the keys of every chapter computed on it."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO_ROOT / "lib", root / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _keys(root: Path) -> dict[str, str]:
    return {c: cache.key(cache.key_parts(source_file(c), {}, root)) for c in chapters()}


def _executed_after(root: Path, file: str, old: str, new: str) -> list[str]:
    """The chapters whose key changes when `old` becomes `new` in one file of the copy (restored afterwards)."""
    before = _keys(root)
    path = root / file
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    try:
        after = _keys(root)
    finally:
        path.write_text(text, encoding="utf-8")
    return sorted(c for c in after if after[c] != before[c])


def test_editing_a_figure_executes_its_chapter_only(tree):
    assert _executed_after(tree, "lib/experiments/pretraining.py", "panel_height=3.4)", "panel_height=3.5)") == ["05_pretraining"]
    assert _executed_after(tree, "lib/experiments/outlier_neurons.py", "ylim=(-9, 108)", "ylim=(-9, 110)") == ["02_outlier_neurons"]


def test_editing_a_rule_executes_its_chapter_and_the_scorecard(tree):
    changed = _executed_after(tree, "lib/experiments/sts.py", 'gaps.values()), "data sets")', 'gaps.values()), "data sets (edited)")')  # a rule
    assert changed == ["08_sts", "14_scorecard"]


def test_the_verdict_logic_counts_for_the_scorecard_only(tree):
    assert _executed_after(
        tree, "lib/experiments/verdicts.py", "return Decision(INCONCLUSIVE, None, direction)", "return Decision(INCONCLUSIVE, 1.0, direction)"
    ) == ["14_scorecard"]


def test_the_clipping_protocol_executes_only_the_chapters_that_read_outliers(tree):
    changed = _executed_after(tree, "lib/measure/outliers.py", "\ndef ", "\ndef _planted():\n    pass\n\n\ndef ")
    assert "10_common_direction" not in changed and "13_isotropy_calibration" not in changed and "07_wic" in changed


def test_a_docstring_or_comment_executes_nothing(tree):
    assert _executed_after(tree, "lib/experiments/sts.py", '"""', '"""Edited. ') == []


def test_a_planted_claim_needs_the_registry_one_module_and_its_test(tmp_path, monkeypatch):
    """A new claim: one registry entry, one rule registered in its chapter's module, one planted table."""
    import pandas as pd

    from lib.experiments import anisotropy, scorecard, verdicts
    from lib.measure import inference

    from .test_scorecard import _plant

    def planted_rule(tables, model, claim):
        t = tables.read(model, claim.chapter, claim.table)
        estimate = inference.exact(float(t["mean_cosine"].max()), "planted")
        return verdicts.outcome(verdicts.decide(estimate, claim.margin), f"max mean cosine {estimate.value:.2f}", estimate)

    entry = {"id": "planted/claim", "paper": "luo2021", "section": "§0", "claim": "A planted claim.", "paper_value": "none"}
    entry |= {"chapter": "01_anisotropy", "table": "anisotropy_by_layer", "rule": "planted_rule", "effect": "max", "margin": 0.5, "reason": "test"}
    registry = tmp_path / "claims.yaml"
    registry.write_text(yaml.safe_dump([entry]))
    with pytest.raises(Exception, match="has no rule 'planted_rule'"):
        scorecard.claims(registry)  # not registered yet
    monkeypatch.setitem(anisotropy.CHAPTER.rules, "planted_rule", planted_rule)
    _plant(tmp_path, "m", "01_anisotropy", "anisotropy_by_layer", pd.DataFrame({"layer": [0, 1], "mean_cosine": [0.2, 0.7]}))
    card = scorecard.scorecard("planted", root=tmp_path, registry=registry)
    assert card[["claim_id", "verdict", "ours"]].values.tolist() == [["planted/claim", "holds", "max mean cosine 0.70"]]
