"""A chapter reads as its method: prose and a few named calls into its experiment module. No function is defined in a
notebook, every chapter's findings come from its module, and the code outside the parameters cell and the imports
stays within the budget that issue 57 set (40% of the 1,635 lines the chapters held before)."""

from __future__ import annotations

import ast

import pytest

from lib.core.sources import chapters, source_file
from lib.experiments import module_name

BUDGET = 654  # 40% of the chapters' 1,635 code lines before the computation moved into the experiment modules


def _cells(chapter: str) -> list[tuple[str, list[str]]]:
    """The chapter's cells as (header line, body lines), in py:percent order."""
    cells: list[tuple[str, list[str]]] = []
    for line in source_file(chapter).read_text(encoding="utf-8").split("\n"):
        if line.startswith("# %%"):
            cells.append((line, []))
        elif cells:
            cells[-1][1].append(line)
    return cells


def code_lines(chapter: str) -> int:
    """Non-blank lines of code cells other than the parameters cell, leaving out comments and import statements."""
    count = 0
    for header, lines in _cells(chapter):
        if "[markdown]" in header or "parameters" in header:
            continue
        in_import = False
        for line in (raw.strip() for raw in lines):
            if not line or line.startswith("#"):
                continue
            if in_import:
                in_import = ")" not in line
            elif line.startswith(("import ", "from ")):
                in_import = line.endswith("(")
            else:
                count += 1
    return count


@pytest.mark.parametrize("chapter", chapters())
def test_a_chapter_defines_no_function_and_takes_its_findings_from_its_module(chapter):
    tree = ast.parse(source_file(chapter).read_text(encoding="utf-8"))
    defined = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))]
    assert not defined, f"{chapter} defines {[getattr(n, 'name', 'lambda') for n in defined]}: move it into {module_name(chapter)}"
    module = module_name(chapter).rsplit(".", 1)[-1]
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "findings" and ast.unparse(n.func.value) == module
    ]
    assert calls, f"{chapter} does not call {module}.findings(...)"


def test_the_chapters_code_stays_within_its_budget():
    lines = {c: code_lines(c) for c in chapters()}
    assert sum(lines.values()) <= BUDGET, lines


def test_the_count_reads_code_and_leaves_out_imports_comments_and_parameters(tmp_path, monkeypatch):
    from lib.core import sources

    (tmp_path / "01_tiny.py").write_text(
        '# %% [markdown]\n# # Tiny\n\n# %% tags=["parameters"]\nn = 3  # a number\n\n# %%\nimport os\nfrom lib.core import (\n    paper,\n)\n'
        "# a comment\nx = n + 1\n\nprint(x)\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sources, "NOTEBOOKS", tmp_path)
    assert code_lines("01_tiny") == 2
