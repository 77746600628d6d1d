"""Exercises and solutions in the chapters: the convention, parameter names, and the student edition's stripping."""

from __future__ import annotations

import re

import jupytext
import nbformat
import pytest

from lib.core import sources
from lib.edition import exercises
from lib.errors import BookError
from lib.settings import REPO_ROOT


@pytest.mark.parametrize("chapter", sources.chapters())
def test_every_chapter_has_two_to_four_exercises_each_with_a_solution(chapter):
    found = exercises.check(chapter)  # labels, solutions one to one, gated cells, declared parameters
    assert 2 <= len(found) <= 4, [e.label for e in found]
    assert all(e.title and e.text for e in found)


def _chapter(tmp_path, monkeypatch, body: str) -> str:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_tiny.py").write_text(
        '# %% [markdown]\n# # Tiny\n\n# %% tags=["parameters"]\nn = 3  # a number\nseed = 0\n\n' + body,
        encoding="utf-8",
    )
    monkeypatch.setattr(sources, "NOTEBOOKS", folder)
    sources.declared_parameters.cache_clear()
    return "01_tiny"


EXERCISE = """# %% [markdown]
# :::{{exercise}} Try it
# :label: {label}
#
# Run `python -m lib.edition.runner --chapters {target} -p {name} 5` and compare.
# :::

# %% [markdown]
# :::{{solution-start}} {label}
# :class: dropdown
# :::

# %%
print("computed")

# %% [markdown]
# The answer.
#
# :::{{solution-end}}
# :::
"""


def test_an_exercise_naming_an_undeclared_parameter_fails(tmp_path, monkeypatch):
    chapter = _chapter(tmp_path, monkeypatch, EXERCISE.format(label="ex-01-try", target="01_tiny", name="n_sentnces"))
    with pytest.raises(BookError, match="exercise ex-01-try names parameter 'n_sentnces', which 01_tiny does not declare"):
        exercises.check(chapter)
    sources.declared_parameters.cache_clear()


def test_a_parameter_of_another_chapter_is_checked_against_that_chapter(tmp_path, monkeypatch):
    assert exercises.parameter_mentions("13_isotropy_calibration", "run `python -m lib.edition.runner --chapters 02_outlier_neurons -p z_threshold 5`") == [
        (("02_outlier_neurons",), "z_threshold")
    ]
    both = "run `python -m lib.edition.runner --chapters 02_outlier_neurons,06_clipping_whitening -p z_threshold 5`"
    assert exercises.parameter_mentions("06_clipping_whitening", both) == [(("02_outlier_neurons", "06_clipping_whitening"), "z_threshold")]
    chapter = _chapter(tmp_path, monkeypatch, EXERCISE.format(label="ex-01-try", target="01_tiny", name="n"))
    assert [e.label for e in exercises.check(chapter)] == ["ex-01-try"]
    sources.declared_parameters.cache_clear()


@pytest.mark.parametrize(
    "body, message",
    [
        (EXERCISE.format(label="ex-02-try", target="01_tiny", name="n"), "must start with 'ex-01-'"),
        (EXERCISE.format(label="ex-01-try", target="01_tiny", name="n").replace("# :::{solution-end}\n# :::\n", ""), "has no solution-end"),
        (EXERCISE.format(label="ex-01-try", target="01_tiny", name="n").replace("{solution-start} ex-01-try", "{solution-start} ex-01-other"), "do not match"),
    ],
)
def test_broken_conventions_are_one_line_errors(tmp_path, monkeypatch, body, message):
    chapter = _chapter(tmp_path, monkeypatch, body)
    with pytest.raises(BookError, match=message):
        exercises.check(chapter)
    sources.declared_parameters.cache_clear()


def test_student_notebooks_keep_exercises_and_lose_solutions():
    cell = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(
        cells=[
            cell("# Title"),
            cell(":::{exercise} A\n:label: ex-01-a\n\nDo it.\n:::"),
            cell(":::{solution-start} ex-01-a\n:class: dropdown\n:::\n\nBecause."),
            nbformat.v4.new_code_cell("print(42)"),
            cell("More of the answer.\n\n:::{solution-end}\n:::"),
            cell("## After the exercises"),
        ]
    )
    stripped = exercises.strip_solutions(nb)
    assert [c.source.splitlines()[0] for c in stripped.cells] == ["# Title", ":::{exercise} A", "## After the exercises"]


@pytest.mark.parametrize("chapter", sources.chapters())
def test_every_chapter_opens_with_front_matter_linking_existing_chapters(chapter):
    title = next(c for c in nbformat.reads(_as_ipynb(chapter), as_version=4).cells if c.cell_type == "markdown").source
    front = title.split(":::{admonition} Before you start", 1)[1].split("\n:::", 1)[0]
    assert "**Overview.**" in front and "**Read or run first.**" in front
    for target in re.findall(r"\{doc\}`([^`]+)`", front):
        assert target in sources.chapters(), f"{chapter} links to {target}, which is not a chapter"


def _as_ipynb(chapter: str) -> str:
    return jupytext.writes(jupytext.read(sources.source_file(chapter)), fmt="ipynb")


def test_the_teaching_guide_places_every_exercise_and_names_only_real_ones():
    guide = (REPO_ROOT / "book" / "teaching.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\{ref\}`(ex-[\w-]+)`", guide))
    labels = {e.label for chapter in sources.chapters() for e in exercises.exercises(chapter)}
    assert named == labels, (sorted(labels - named), sorted(named - labels))


def test_an_exercise_carries_in_latex_the_label_a_reference_to_it_points_at():
    """sphinx-exercise labels exercises `exercise:<label>` in LaTeX, a `{ref}` points at `<document>:<label>`: the PDF
    gets both (lib/edition/latex_labels.py), so the teaching page's plan prints exercise numbers, not "??"."""
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document

    from lib.edition import latex_labels

    class exercise_enumerable_node(nodes.Element):  # noqa: N801 (sphinx-exercise's class name)
        pass

    document = new_document("test", get_default_settings())
    section = nodes.section()
    section += exercise_enumerable_node(label="ex-01-read")
    document += section
    app = SimpleNamespace(
        builder=SimpleNamespace(format="latex"), env=SimpleNamespace(sphinx_exercise_registry={"ex-01-read": {"docname": "book/chapters/01_a"}})
    )
    latex_labels._label_exercises(app, document, "book")
    assert section[0].astext() == "\\phantomsection\\label{\\detokenize{book/chapters/01_a:ex-01-read}}" and section[0]["format"] == "latex"
    html = SimpleNamespace(builder=SimpleNamespace(format="html"), env=app.env)
    before = len(section)
    latex_labels._label_exercises(html, document, "book")
    assert len(section) == before  # the web pages are unchanged


def test_the_pdf_numbers_exercises_by_chapter_as_the_web_does():
    from lib.edition.latex_labels import chapter_numbers

    assert chapter_numbers({"b": (2, 3, 2), "a": (2, 3, 1), "c": (2, 4, 1)}) == {"a": (2, 1), "b": (2, 2), "c": (2, 3)}
