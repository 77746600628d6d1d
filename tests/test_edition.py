"""Editions: cache keys, reuse and resumption of chapter runs, staging of the book source, publishing checks."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml

from lib import codegraph, codehash, provenance
from lib.core import profiles, sources
from lib.edition import cache, chapter_notes, costs, publishing, reference, report, schedule, staging, vouching
from lib.edition.cache import Entry
from lib.edition.folders import Edition
from lib.errors import BookError
from lib.settings import REPO_ROOT
from tests.books import book_of


def _package(root: Path) -> Path:
    """A small `lib` package: a imports b (relatively), c stands alone, pkg/d imports a."""
    files = {
        "lib/__init__.py": '"""root"""\n',
        "lib/a.py": "from .b import helper\n",
        "lib/b.py": "def helper():\n    return 1\n",
        "lib/c.py": "x = 1\n",
        "lib/pkg/__init__.py": "",
        "lib/pkg/d.py": "from ..a import helper\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_lib_dependencies_follow_imports_only(tmp_path):
    root = _package(tmp_path)
    deps = lambda source: {str(p.relative_to(root)) for p in codegraph.lib_dependencies(source, root)}
    assert deps("import lib.a\n") == {"lib/__init__.py", "lib/a.py", "lib/b.py"}
    assert deps("from lib.pkg import d\nimport numpy\n") == {"lib/__init__.py", "lib/pkg/__init__.py", "lib/pkg/d.py", "lib/a.py", "lib/b.py"}
    assert deps("from lib import c\n") == {"lib/__init__.py", "lib/c.py"}
    # the real chapters: fine-tuning code reaches chapter 13 but not chapter 01
    real = lambda chapter: {p.name for p in codegraph.lib_dependencies(sources.source_file(chapter).read_text())}
    assert "finetune.py" in real("13_isotropy_calibration") and "finetune.py" not in real("01_anisotropy")
    assert "masked_lm.py" in real("05_pretraining") and "runner.py" not in real("05_pretraining")


def test_key_changes_with_each_dependency_and_not_otherwise(tmp_path, monkeypatch):
    root = _package(tmp_path)
    source = root / "chapter.py"
    source.write_text("# %% [markdown]\n# # Title\n\n# %%\nimport lib.a\n")
    base = cache.key(cache.key_parts(source, {"n": 1}, root))
    assert cache.key(cache.key_parts(source, {"n": 1}, root)) == base  # deterministic
    (root / "lib/c.py").write_text("x = 2\n")  # a module the chapter does not import
    assert cache.key(cache.key_parts(source, {"n": 1}, root)) == base
    (root / "lib/b.py").write_text('"""Docstring."""\n\n\ndef helper():  # a comment\n    """Says one."""\n    return 1\n')  # not code
    assert cache.key(cache.key_parts(source, {"n": 1}, root)) == base
    assert cache.key(cache.key_parts(source, {"n": 2}, root)) != base  # a parameter
    (root / "lib/b.py").write_text("def helper():\n    return 2\n")  # imported through lib.a
    changed_lib = cache.key(cache.key_parts(source, {"n": 1}, root))
    assert changed_lib != base
    source.write_text(source.read_text().replace("# # Title", "# # Another title"))  # prose only
    assert cache.key(cache.key_parts(source, {"n": 1}, root)) not in (base, changed_lib)
    parts = cache.key_parts(source, {"n": 1}, root)
    parts["environment"] = {**parts["environment"], "torch": "0.0"}  # another package version
    assert cache.key(parts) != cache.key(cache.key_parts(source, {"n": 1}, root))
    current = cache.key(cache.key_parts(source, {"n": 1}, root))
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path / "elsewhere"))  # results go to a new folder: fill it
    assert cache.key(cache.key_parts(source, {"n": 1}, root)) != current


def _entry(tmp_path: Path, parts: dict, notebook: Path, inputs: list[dict], outputs: list[dict]) -> Entry:
    return Entry("01_x", cache.key(parts), parts, cache.digest(str(notebook)), cache.with_digests(inputs), cache.with_digests(outputs), {"seconds": 1})


def test_stale_names_what_changed(tmp_path):
    root = _package(tmp_path)
    source, notebook, data, result = root / "ch.py", tmp_path / "ch.ipynb", tmp_path / "data.txt", tmp_path / "table.csv"
    source.write_text("import lib.a\n")
    for path, text in [(notebook, "{}"), (data, "a\n"), (result, "x\n")]:
        path.write_text(text)
    parts = cache.key_parts(source, {"n": 1}, root)
    reads, writes = [{"kind": "data", "path": str(data), "label": "data.txt"}], [{"kind": "output", "path": str(result), "label": "table.csv"}]
    entry = _entry(tmp_path, parts, notebook, reads, writes)
    assert cache.stale(entry, parts, notebook) is None
    assert cache.stale(None, parts, notebook) == "no earlier run"
    assert cache.stale(entry, cache.key_parts(source, {"n": 2}, root), notebook) == "changed: parameter n"
    (root / "lib/b.py").write_text("y = 3\n")
    assert cache.stale(entry, cache.key_parts(source, {"n": 1}, root), notebook) == "changed: lib/b.py"
    data.write_text("b\n")
    assert cache.stale(entry, parts, notebook) == "data data.txt changed"
    data.write_text("a\n")
    assert cache.stale(entry, parts, notebook) is None  # content, not time, decides
    result.unlink()
    assert cache.stale(entry, parts, notebook) == "output table.csv missing"
    result.write_text("x\n")
    notebook.write_text('{"cells": []')  # a partial notebook
    assert cache.stale(entry, parts, notebook) == "executed notebook missing or changed"


def test_code_digest_counts_code_only():
    code = "def f(x):\n    return x + 1\n"
    assert codehash.code_digest(code) == codehash.code_digest('"""Module."""\n# note\ndef f(x):  # add one\n    """Doc."""\n\n    return x + 1\n')
    assert codehash.code_digest(code) != codehash.code_digest(code.replace("+ 1", "+ 2"))
    assert codehash.code_digest('def f():\n    """only a docstring"""\n') == codehash.code_digest("def f():\n    pass\n")


def test_digest_of_folders_and_names(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    first = cache.digest(str(folder))
    (folder / "weights.bin").write_bytes(b"\0\1")
    assert cache.digest(str(folder)) != first
    assert cache.digest("bert-base-uncased") == "name:bert-base-uncased"  # a hub id is its own digest
    assert cache.digest(str(tmp_path / "gone")) is None


@pytest.mark.parametrize("text", ["", "{", '{"version": 1, "chapter": "x"}', '{"version": 99}', "[]", '"text"'])
def test_corrupt_or_partial_entries_are_ignored(tmp_path, text):
    path = tmp_path / "entry.json"
    path.write_text(text)
    assert Entry.load(path) is None
    assert cache.stale(Entry.load(path), {}, tmp_path / "nb.ipynb") == "no earlier run"


def test_entries_round_trip(tmp_path):
    entry = Entry("01_x", "k", {"source": "s"}, "n", [], [], {"seconds": 2.5})
    entry.save(tmp_path / "e.json")
    assert Entry.load(tmp_path / "e.json") == entry
    assert [p.name for p in tmp_path.iterdir()] == ["e.json"]  # no temporary file left


def test_profiles_never_share_a_path(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path))
    paths = {}
    for profile in ("quick", "default", "paper", "quick-2"):
        ed = Edition(profile)
        mine = [ed.notebooks, ed.cache, ed.source, ed.html, ed.status_file, ed.notebook("01_anisotropy"), ed.entry("01_anisotropy")]
        for other, theirs in paths.items():
            assert not any(a == b or b in a.parents or a in b.parents for a in mine for b in theirs), (profile, other)
        paths[profile] = mine
    with pytest.raises(BookError, match="profile name '../x' must be"):
        Edition("../x")


def test_provenance_records_only_inside_a_build(tmp_path, monkeypatch):
    monkeypatch.delenv(provenance.ENV, raising=False)
    provenance.record("data", tmp_path)  # outside a build: nothing, no error
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv(provenance.ENV, str(log))
    provenance.record("data", tmp_path / "a.txt", "a")
    provenance.record("data", tmp_path / "a.txt", "a")
    provenance.record("model", "bert-base-uncased")
    with open(log, "a") as f:
        f.write('{"kind": "out')  # a kernel killed mid-line
    assert provenance.read(log) == [
        {"kind": "data", "path": str(tmp_path / "a.txt"), "label": "a", "sha256": "missing"},
        {"kind": "model", "path": "bert-base-uncased", "label": "bert-base-uncased", "sha256": "name:bert-base-uncased"},
    ]


CHAPTER = """# %% [markdown]
# # Tiny chapter {n}
#
# Prose of chapter {n}.

# %% tags=["parameters"]
profile = "default"
n = 3  # a number the chapter writes

# %%
from pathlib import Path

import pandas as pd

from lib import codegraph, codehash, provenance
from lib.book.results import Results
from lib.core.store import Schema

data = Path({data!r})
provenance.record("data", data, "tiny/data.txt")
if Path({fail!r}).exists():
    raise RuntimeError("asked to fail")
frame = pd.DataFrame({{"n": [n], "lines": [len(data.read_text().splitlines())]}})
Results("{name}", profile).table(frame, Schema("{name}", "t", ("n", "lines")), "m", {{"n": n}})
if {n} == 2:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, n])
    Results("{name}", profile).figure(fig, "line", "A line.")
"""


@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    """Two tiny chapters in a notebooks folder of their own, built into tmp_path/build."""
    data, fail = tmp_path / "data.txt", tmp_path / "fail-02"
    data.write_text("one\ntwo\n")
    texts = {}
    for n in (1, 2):
        name = f"0{n}_tiny"
        fail_flag = str(fail) if n == 2 else str(tmp_path / "never")
        texts[name] = CHAPTER.format(n=n, data=str(data), fail=fail_flag, name=name)
    folder = book_of(tmp_path, monkeypatch, texts)
    yield folder, data, fail
    sources.declared_parameters.cache_clear()


def _build(force=False):
    return schedule.build("quick", [(c, {"profile": "quick"}) for c in sources.chapters()], force=force)


def test_build_reuses_resumes_and_reexecutes_only_what_changed(tiny_book, capsys):
    folder, data, fail = tiny_book
    fail.touch()
    with pytest.raises(BookError, match="chapter 02_tiny failed: RuntimeError: asked to fail"):
        _build()  # interrupted half-way: chapter 01 is done
    ed = Edition("quick")
    assert ed.notebook("01_tiny").is_file() and not ed.notebook("02_tiny").exists() and not ed.entry("02_tiny").exists()
    assert ed.statuses()["02_tiny"]["status"] == "failed" and (ed.notebooks / "failed" / "02_tiny.ipynb").is_file()
    fail.unlink()
    capsys.readouterr()
    _build()
    out = capsys.readouterr().out
    assert "01_tiny: reused" in out and "02_tiny (quick): executing, no earlier run" in out
    _build()
    assert capsys.readouterr().out.count("reused") == 2
    schedule.build("quick", [("01_tiny", {"profile": "quick", "n": 4})], dry_run=True)  # says why, runs nothing
    assert capsys.readouterr().out == "== 01_tiny: would be executed, changed: parameter n\n"
    assert "n" not in Entry.load(ed.entry("01_tiny")).parts["parameters"]  # the cell's value: nothing was overridden
    statuses = ed.statuses()
    assert statuses["01_tiny"]["status"] == statuses["02_tiny"]["status"] == "reused"
    # prose of one chapter: only that chapter runs, and rewrites the same files (its figure's PDF has no run date)
    source, pdf = folder / "02_tiny.py", Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "figures" / "02_tiny" / "line.pdf"
    before = pdf.read_bytes()
    source.write_text(source.read_text().replace("Prose of chapter 2.", "Better prose of chapter 2."))
    _build()
    out = capsys.readouterr().out
    assert "01_tiny: reused" in out and "02_tiny (quick): executing, changed: source" in out
    assert pdf.read_bytes() == before
    # a data file both read: both run, and say why
    data.write_text("one\ntwo\nthree\n")
    _build()
    out = capsys.readouterr().out
    assert out.count("executing, data tiny/data.txt changed") == 2
    table = Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "m" / "01_tiny" / "t.csv"
    assert table.read_text().splitlines()[1] == "3,3"
    # a deleted result is re-created
    table.unlink()
    _build()
    out = capsys.readouterr().out
    assert "01_tiny (quick): executing, output quick/m/01_tiny/t.csv missing" in out and "02_tiny: reused" in out and table.is_file()
    entry = Entry.load(ed.entry("01_tiny"))
    assert [i["label"] for i in entry.inputs] == ["tiny/data.txt"] and entry.facts["seconds"] > 0
    cells = report.slowest_cells(ed.notebook("01_tiny"))
    assert cells[0]["section"] == "Tiny chapter 1" and cells[0]["seconds"] >= cells[-1]["seconds"] >= 0


def test_staged_pages_carry_their_provenance(tiny_book):
    folder, data, fail = tiny_book
    _build()
    ed = Edition("quick")
    source = staging.stage(ed)
    page = nbformat.read(source / "book" / "chapters" / "01_tiny.ipynb", as_version=4)
    opening = page.cells[0].source  # the title, one line on how to run it, then the chapter's text
    assert opening.startswith("# Tiny chapter 1\n\n:::{container} book-opening\n*Run it yourself*: ")
    assert opening.split(":::\n\n", 1)[1].startswith("Prose of chapter 1.")
    closing = next(c.source for c in page.cells if c.get("id") == "page-summary")  # the summary, then how the page was made
    assert closing.startswith("(summary-01)=\n## Summary\n\n**Key results**:\n\n") and "**This run**: a number the chapter writes: 3." in closing
    first = closing[closing.index("::::{admonition} How this page was made") :]
    assert "**Quick edition**" in first and "{ref}`build report <build-01_tiny>`" in first
    assert "`n = 3`" not in first  # not changed from the cell's default
    assert ":::{dropdown} Parameters of this chapter\n" in first and "`n`\n: a number the chapter writes (default `3`)" in first
    assert first.count("{admonition}") == 1  # one box: provenance and parameters together
    injected = [c for c in page.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0].metadata["tags"]
    assert page.cells[-1].source.startswith("## Result tables of this page") and "{download}`m: t <tables/quick/m/01_tiny/t.csv>`" in page.cells[-1].source
    staged_table = source / "book" / "chapters" / "tables" / "quick" / "m" / "01_tiny" / "t.csv"
    assert staged_table.read_text() == (Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "m" / "01_tiny" / "t.csv").read_text()
    report = (source / "book" / "build_report.md").read_text()
    assert "(build-01_tiny)=" in report and "tiny/data.txt" in report and str(data) not in report
    assert "| 01_tiny" in report or "{ref}`01_tiny <build-01_tiny>`" in report
    # a second staging with nothing changed rewrites nothing (Sphinx then rebuilds nothing)
    times = {p: p.stat().st_mtime_ns for p in source.rglob("*") if p.is_file()}
    staging.stage(ed)
    assert {p: p.stat().st_mtime_ns for p in source.rglob("*") if p.is_file()} == times
    # MathJax is served from the edition itself, where the config points
    config = yaml.safe_load((source / "_config.yml").read_text())["sphinx"]["config"]
    script = source / config["html_static_path"][0] / config["mathjax_path"]
    assert script.is_file() and script.stat().st_size > 1_000_000 and b"MathJax" in script.read_bytes()[:20000]
    # a chapter never executed gets a placeholder page, not a missing file
    shutil.copy(folder / "02_tiny.py", folder / "03_tiny.py")
    staging.stage(ed)
    assert "has not been executed for the **quick** edition" in (source / "book" / "chapters" / "03_tiny.md").read_text()


def test_the_build_report_counts_the_work_run_ahead_and_says_the_builds_wall_time(tiny_book):
    _build()  # one build executes both chapters and stamps their times with its start
    ed = Edition("quick")
    in_chapters = sum(Entry.load(ed.entry(c)).facts["seconds"] for c in sources.chapters())
    text = (staging.stage(ed) / "book" / "build_report.md").read_text()
    assert f"Executing every chapter once took {costs.duration(in_chapters)} in all (the sum of the times above)." in text
    wall = report.build_wall_time({c: Entry.load(ed.entry(c)) for c in sources.chapters()}, costs.measured("quick"))
    assert wall is not None and wall >= max(Entry.load(ed.entry(c)).facts["seconds"] for c in sources.chapters()) - 1
    assert f"The build that ran all of it took {costs.duration(wall)} of wall time" in text
    costs.record("quick", "01_tiny:job", 600, "elsewhere")  # a job run ahead of chapter 01, outside that build
    text = (staging.stage(ed) / "book" / "build_report.md").read_text()
    assert "| ↳ work run ahead of it, 1 job | – | 10.0 min | – | – | – |" in text
    total = costs.duration(in_chapters + 600)
    assert f"took {total} in all: {costs.duration(in_chapters)} in the chapters and 10.0 min in the work run ahead of them" in text
    assert "of wall time" not in text  # the chapters and the job ahead were not one build's


def test_changed_parameters_show_on_the_page():
    assert chapter_notes.changed_parameters("02_outlier_neurons", {"profile": "quick", "n_sentences": 400, "seed": 0}) == {"n_sentences": 400}


def test_edition_config_from_settings(monkeypatch):
    monkeypatch.setenv("BOOK_REPOSITORY", "https://github.com/owner/book/")
    monkeypatch.setenv("BOOK_BASEURL", "https://owner.github.io/book/")
    config = yaml.safe_load(staging._config("quick"))
    assert config["repository"]["url"] == "https://github.com/owner/book"
    assert config["html"]["use_repository_button"] and config["html"]["use_issues_button"]
    assert config["html"]["baseurl"] == "https://owner.github.io/book/" and config["title"].endswith("(quick edition)")
    monkeypatch.delenv("BOOK_REPOSITORY")
    config = yaml.safe_load(staging._config("default"))
    assert not config["html"]["use_repository_button"] and "edition" not in config["title"]


def test_publish_refuses_pages_with_local_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(sources, "NOTEBOOKS", tmp_path / "no-chapters")  # a book without chapters, its pages stamped as built from no runs
    ed = Edition("default")
    ed.html.mkdir(parents=True)
    (ed.html / "index.html").write_text('<a href="chapters/01.html">1</a>')
    publishing.stamp(ed.html, vouching.entries_digest({}))
    assert publishing.publish(ed) == ed.html and (ed.html / ".nojekyll").is_file()
    (ed.html / "bad.html").write_text(f"<p>{REPO_ROOT}/results/x.csv</p>")
    publishing.stamp(ed.html, vouching.entries_digest({}))  # as if the build had written it
    with pytest.raises(BookError, match="bad.html contains the local path"):
        publishing.publish(ed)
    assert chapter_notes.hide_paths(f"{REPO_ROOT}/results/quick/t.csv") == "$BOOK_RESULTS_DIR/quick/t.csv"


def test_pages_workflow_is_valid():
    """The GitHub Pages workflow parses, builds the quick edition on pull requests and the default edition on main,
    and calls only make targets that exist."""
    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "book.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    jobs = workflow["jobs"]
    assert {"build", "deploy"} <= set(jobs) and jobs["deploy"]["needs"] == "build"
    assert jobs["deploy"]["environment"]["name"] == "github-pages" and "pull_request" in jobs["deploy"]["if"]
    assert workflow["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}
    steps = " ".join(json.dumps(step) for step in jobs["build"]["steps"])
    targets = {line.split(":")[0] for line in (REPO_ROOT / "Makefile").read_text().splitlines() if line and not line[0].isspace() and ":" in line}
    for target in ("test", "publish", "pdf", "student"):
        assert f"make {target}" in steps and target in targets
    assert "actions/cache" in steps and "actions/upload-pages-artifact" in steps and '"path": "_build/site"' in steps
    assert "lib.edition.site --editions default,student,quick" in steps and ".ci/tex-packages" in steps
    colab = next(step for step in jobs["build"]["steps"] if "lib.edition.launch colab" in step.get("run", ""))
    assert colab["if"] == "github.event_name != 'pull_request'" and "colab colab-student" in colab["run"] and "git push -f" in colab["run"]
    # weekly from empty caches; the data folder cached by the pinned table; the link check after the build
    assert [t["cron"] for t in triggers["schedule"]] and "workflow_dispatch" in triggers
    data = next(step for step in jobs["build"]["steps"] if step.get("with", {}).get("path") == "data")
    assert data["with"]["key"] == "data-${{ hashFiles('lib/datasets/sources.tsv') }}" and (REPO_ROOT / "lib/datasets/sources.tsv").is_file()
    assert any(step.get("run") == "make data" for step in jobs["build"]["steps"]) and "data" in targets
    restore = next(step for step in jobs["build"]["steps"] if step.get("uses", "").startswith("actions/cache/restore"))
    save = next(step for step in jobs["build"]["steps"] if step.get("uses", "").startswith("actions/cache/save"))
    assert restore["if"] == "github.event_name != 'schedule'" and save["if"] == "always()"
    linkcheck = jobs["linkcheck"]
    assert linkcheck["needs"] == "build" and "schedule" in linkcheck["if"] and "pull_request" not in linkcheck["if"]
    assert linkcheck["steps"][2]["with"]["key"] == save["with"]["key"].replace("${{ env.PROFILE }}", "default")
    assert linkcheck["steps"][2]["with"]["path"] == save["with"]["path"] == restore["with"]["path"]
    assert linkcheck["steps"][-1]["run"].endswith("-m lib.edition --profile default --linkcheck")
    assert workflow["env"]["PROFILE"] == "${{ github.event_name == 'pull_request' && 'quick' || 'default' }}"


def test_parameter_reference_covers_every_parameter_of_every_chapter():
    """Generated from the cells and profiles: one row per declared parameter, each with a meaning; quick and paper
    show what those profiles set (None: the default runs)."""
    for chapter in sources.chapters():
        rows = reference.reference(chapter)
        declared = sources.declared_parameters(chapter)
        assert [r["parameter"] for r in rows] == list(declared) and all(r["meaning"] and r["allowed"] for r in rows)
        quick, paper = (profiles.profile_parameters(p, chapter) for p in ("quick", "paper"))
        for row in rows:
            assert row["default"] == declared[row["parameter"]]
            assert row["quick"] == quick.get(row["parameter"]) and row["paper"] == paper.get(row["parameter"])
        text = reference.markdown(chapter)
        assert text.count("\n: ") == len(rows) and all(f"`{r['parameter']}`\n: " in text for r in rows)
    rows = {r["parameter"]: r for r in reference.reference("13_isotropy_calibration")}
    assert rows["tasks"]["quick"] == "sst2,stsb" and rows["lr"]["paper"] == 2e-5 and rows["lr"]["quick"] is None
    assert rows["methods"]["allowed"] == "comma-separated, any of: none, cosreg, spectrum-pol, spectrum-exp, flow"
    pretraining = {r["parameter"]: r for r in reference.reference("05_pretraining")}  # keyed by (chapter, parameter)
    assert "clip" not in pretraining and pretraining["grad_clip"]["allowed"] == "a number" and pretraining["grad_clip"]["paper"] == 0.5
    assert {r["parameter"]: r for r in reference.reference("06_clipping_whitening")}["clip"]["allowed"] == "model, layer"
    assert "auto" in pretraining["dtype"]["allowed"].split(", ") and "auto" in pretraining["train_dtype"]["allowed"].split(", ")
    shared = {c: [n for n in ("z_threshold", "min_layer_share") if n in sources.declared_parameters(c)] for c in sources.chapters()}
    assert {c for c, found in shared.items() if found} == {"02_outlier_neurons"}  # the outlier criterion has one home


def test_a_parameter_without_a_meaning_stops_the_reference(tiny_book):
    folder, data, fail = tiny_book
    source = folder / "01_tiny.py"
    source.write_text(source.read_text().replace("n = 3  # a number the chapter writes\n", "n = 3  # a number the chapter writes\nm = 2\n"))
    sources.declared_parameters.cache_clear()
    with pytest.raises(BookError, match="01_tiny.py: parameter 'm' has no comment saying what it means"):
        reference.reference("01_tiny")
    assert reference.meanings("02_tiny") == {"profile": "names the results folder", "n": "a number the chapter writes"}


def test_the_page_box_names_the_models_when_they_are_not_the_papers():
    class Ran:
        parts = {"parameters": {"profile": "default"}}

    box = chapter_notes.models_caveat("02_outlier_neurons", Ran())
    assert box.startswith("**Not the papers' models**: it measures all-MiniLM-L6-v2, all-mpnet-base-v2; the papers measured bert-base-uncased")
    assert "`minilm`" not in box  # the models by their names, not their specs
    Ran.parts = {"parameters": {"models": "roberta-base, bert-base-uncased"}}
    assert chapter_notes.models_caveat("02_outlier_neurons", Ran()) == ""  # the papers' models, in any order
    assert chapter_notes.models_caveat("05_pretraining", Ran()) == ""  # a chapter without a models parameter


def test_the_container_image_installs_the_pinned_environment_and_builds_the_book():
    """The Dockerfile copies only files that exist, installs through `make env` (pinned requirements, CPU torch index),
    and runs make targets that exist; the build context leaves out what git leaves out."""
    lines = (REPO_ROOT / "Dockerfile").read_text().splitlines()
    targets = {line.split(":")[0] for line in (REPO_ROOT / "Makefile").read_text().splitlines() if line and not line[0].isspace() and ":" in line}
    for line in lines:
        if line.startswith("COPY ") and not line.startswith("COPY . ."):
            *sources_, _ = line.split()[1:]
            assert all((REPO_ROOT / s).exists() for s in sources_), line
    text = "\n".join(lines)
    assert lines[[i for i, line in enumerate(lines) if line.startswith("FROM ")][0]].startswith("FROM python:3.11")
    assert "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu" in text and "RUN make env" in text
    for target in ("env", "data", "book"):
        assert f"make {target}" in text or f'"make", "{target}"' in text
        assert target in targets
    ignored = (REPO_ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "_build", "results", "models", "data"} <= set(ignored)


def test_the_registries_a_chapter_reads_are_recorded_as_its_inputs(tmp_path, monkeypatch):
    """Edits to claims.yaml or paper_values.yaml execute the chapters that read them again (issue 42's first finding)."""
    from lib.core import paper
    from lib.experiments import scorecard

    log = tmp_path / "provenance.jsonl"
    monkeypatch.setenv(provenance.ENV, str(log))
    paper.values.cache_clear()
    paper.values()
    scorecard.claims()
    paper.values.cache_clear()
    recorded = {Path(r["path"]).name: r for r in provenance.read(log)}
    assert {"paper_values.yaml", "claims.yaml"} <= set(recorded) and all(r["kind"] == "data" for r in recorded.values())
    copy = tmp_path / "claims.yaml"
    copy.write_text(scorecard.REGISTRY.read_text())
    entry = Entry("14_scorecard", "k", {}, "n", cache.with_digests([{"kind": "data", "path": str(copy), "label": "claims"}]), [], {})
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text("{}")
    entry = Entry(entry.chapter, cache.key({}), {}, cache.digest(str(notebook)), entry.inputs, [], {})
    assert cache.stale(entry, {}, notebook) is None
    copy.write_text(copy.read_text().replace("margin:", "margin: ", 1))  # a registry edited by hand
    assert cache.stale(entry, {}, notebook) == "data claims changed"


def test_a_scaled_profile_shrinks_every_size_but_never_below_the_quick_profiles():
    from lib.core.profiles import profile_parameters, scaled

    gpu = scaled("13_isotropy_calibration", profile_parameters("gpu", "13_isotropy_calibration"), 0.001)
    assert gpu["n_train"] == 64 and gpu["methods"] == profile_parameters("gpu", "13_isotropy_calibration")["methods"]  # quick's floor; the rest kept
    sts = scaled("08_sts", profile_parameters("gpu", "08_sts"), 0.001)
    assert sts["max_pairs"] == 150  # 0 ("all") becomes the quick profile's size
    supervised = scaled("09_supervised", profile_parameters("gpu", "09_supervised"), 0.5)
    assert supervised["n_train"]["imdb"] == 8750 and supervised["n_test"]["sst2"] == round(1821 * 0.5)  # each entry of a mapping
    assert scaled("05_pretraining", profile_parameters("gpu", "05_pretraining"), 1.0)["hidden_size"] == 512
    with pytest.raises(BookError, match="--scale must be in"):
        scaled("05_pretraining", {}, 0.0)
