"""Results are written atomically with a stable layout and schema."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lib.book.results import Results  # noqa: E402
from lib.core.store import Schema  # noqa: E402
from lib.errors import BookError  # noqa: E402
from lib.io import sha256, write_atomic, write_folder_atomic  # noqa: E402


def test_tables_and_meta(tmp_path):
    r = Results("01_x", "quick", root=tmp_path)
    r.table(
        pd.DataFrame({"layer": [0, 1], "mean_cosine": [0.1, 0.2]}),
        Schema("01_x", "anisotropy", ("layer", "mean_cosine")),
        "trained:roberta-pe",
        {"n": 5},
        {"width": 8},
    )
    r.table(pd.DataFrame({"dim": [3]}), Schema("01_x", "outliers", ("dim",)), "trained:roberta-pe", {"n": 5})
    folder = tmp_path / "quick" / "trained_roberta-pe" / "01_x"
    assert pd.read_csv(folder / "anisotropy.csv")["mean_cosine"].tolist() == [0.1, 0.2]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["tables"]["anisotropy"]["columns"] == ["layer", "mean_cosine"]
    assert meta["tables"]["outliers"]["rows"] == 1
    assert meta["parameters"] == {"n": 5} and meta["model_info"] == {"width": 8} and meta["profile"] == "quick"
    assert sorted(p.name for p in folder.iterdir()) == ["anisotropy.csv", "meta.json", "outliers.csv"]


def test_a_table_written_again_leaves_the_same_bytes(tmp_path):
    """meta.json carries no run date, so a chapter executed again with the same results does not make the scorecard stale."""
    frame = pd.DataFrame({"layer": [0, 1], "mean_cosine": [0.1, 0.2]})
    saved = []
    for _ in range(2):
        Results("01_x", "default", root=tmp_path).table(frame, Schema("01_x", "anisotropy", ("layer", "mean_cosine")), "minilm", {"n": 5}, {"width": 8})
        saved.append({p.name: p.read_bytes() for p in (tmp_path / "default" / "minilm" / "01_x").iterdir()})
    assert set(saved[0]) == {"anisotropy.csv", "meta.json"} and saved[0] == saved[1]
    assert set(json.loads(saved[0]["meta.json"])) == {"tables", "chapter", "profile", "model", "model_info", "parameters", "lib_version"}
    meta_path = tmp_path / "default" / "minilm" / "01_x" / "meta.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "written": "2026-11-23T10:00:00+00:00"}))
    Results("01_x", "default", root=tmp_path).table(frame, Schema("01_x", "anisotropy", ("layer", "mean_cosine")), "minilm", {"n": 5}, {"width": 8})
    assert meta_path.read_bytes() == saved[0]["meta.json"]  # a date left by an older version is not carried over


def test_figures_png_and_pdf_shown_once_with_label_and_caption(tmp_path, monkeypatch):
    from lib.book import results

    shown = []
    monkeypatch.setattr(results, "display", lambda bundle, raw, metadata: shown.append((bundle, metadata)))
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    Results("02_y", "default", root=tmp_path).figure(fig, "a figure", "A line, as {cite:t}`bis2021too` draw it.")
    folder = tmp_path / "default" / "figures" / "02_y"
    assert sorted(p.name for p in folder.iterdir()) == ["a_figure.pdf", "a_figure.png"]
    assert (folder / "a_figure.png").read_bytes()[:4] == b"\x89PNG"
    ((bundle, metadata),) = shown
    assert base64.b64decode(bundle["image/png"]) == (folder / "a_figure.png").read_bytes()  # the page shows the saved file
    assert metadata == {
        "book_figure": {"name": "fig-02-a-figure", "caption": "A line, as {cite:t}`bis2021too` draw it.", "pdf": "default/figures/02_y/a_figure.pdf"}
    }
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend does not show it a second time


def test_marked_figures_get_cells_of_their_own_in_page_order():
    import nbformat

    from lib.book.figure_labels import number_figures

    def out(text):
        return nbformat.v4.new_output("stream", name="stdout", text=text)

    def fig(name):
        return nbformat.v4.new_output("display_data", data={"image/png": "AAAA"}, metadata={"book_figure": {"name": name, "caption": f"cap {name}"}})

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# T"),
        nbformat.v4.new_code_cell("plot()", outputs=[out("a"), fig("fig-01-x"), out("b"), fig("fig-01-y")]),
        nbformat.v4.new_code_cell("plain()", outputs=[out("c")]),
    ]
    number_figures(nb)
    kinds = [(c.cell_type, c.source, [o.get("text") or o.metadata["book_figure"]["name"] for o in c.get("outputs", [])]) for c in nb.cells]
    assert kinds == [
        ("markdown", "# T", []),
        ("code", "plot()", ["a"]),
        ("code", "# fig-01-x", ["fig-01-x"]),
        ("code", "# (continued)", ["b"]),
        ("code", "# fig-01-y", ["fig-01-y"]),
        ("code", "plain()", ["c"]),
    ]
    assert nb.cells[2].metadata == {
        "tags": ["remove-input"],
        "mystnb": {"figure": {"name": "fig-01-x", "caption": "cap fig-01-x"}, "image": {"alt": "cap fig-01-x"}},
    }
    assert nb.cells[3].metadata["tags"] == ["remove-input"] and "mystnb" not in nb.cells[3].metadata
    nbformat.validate(nb)


def test_written_files_get_the_umask_permissions_not_mkstemps_0600(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "t.csv", lambda p: p.write_text("x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.read_text() == "x"


def test_failed_write_leaves_nothing(tmp_path):
    def explode(path):
        path.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(tmp_path / "t.csv", explode)
    assert list(tmp_path.iterdir()) == []


def test_profile_names_are_checked(tmp_path):
    with pytest.raises(BookError, match="profile name"):
        Results("01", "../escape", root=tmp_path)


def test_folder_is_swapped_in_whole_or_left_as_it_was(tmp_path):
    target = tmp_path / "model"
    write_folder_atomic(target, lambda f: (f / "a.txt").write_text("first"))
    assert (target / "a.txt").read_text() == "first"

    def half_then_fail(folder):
        (folder / "a.txt").write_text("second")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_folder_atomic(target, half_then_fail)
    assert (target / "a.txt").read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["model"]
    write_folder_atomic(target, lambda f: (f / "b.txt").write_text("third"))
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"] and [p.name for p in tmp_path.iterdir()] == ["model"]


def test_sha256_of_a_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc" * 1000)
    assert sha256(path) == hashlib.sha256(b"abc" * 1000).hexdigest() == sha256(path, chunk=7)


def test_tables_display_as_myst_html_and_plain_text(monkeypatch):
    from lib.book import chapter, tables

    shown = []
    monkeypatch.setattr(tables, "display", lambda bundle, raw, metadata: shown.append((bundle, metadata)))
    chapter.show(pd.DataFrame({"top_dim": [588, 77], "share_percent": [82.5612, float("nan")]}), "RoBERTa & BERT: 100% of #vectors", precision=2)
    ((bundle, metadata),) = shown
    assert set(bundle) == {"text/markdown", "text/html", "text/plain"} and metadata == {tables.KEY: {"name": None}}
    assert "82.56" in bundle["text/html"] and "<caption>RoBERTa &" in bundle["text/html"] and "top dimension" in bundle["text/html"]
    assert bundle["text/plain"].splitlines()[0] == "RoBERTa & BERT: 100% of #vectors" and "82.56" in bundle["text/plain"] and "–" in bundle["text/plain"]
    markdown = bundle["text/markdown"]
    assert markdown.startswith(":::{table} RoBERTa & BERT: 100% of #vectors\n") and "| top dimension | share (%) |" in markdown
    assert "| 588 | 82.56 |" in markdown and "| 77 | – |" in markdown and "82.5612" not in markdown


def test_a_figure_saved_again_is_byte_identical_under_the_runners_source_date(tmp_path, monkeypatch):
    """The runner sets SOURCE_DATE_EPOCH for the kernels: a chapter executed again with the same results rewrites the same
    bytes, so the scorecard, which reads the results folder, is not made stale by a new PDF creation date."""
    from lib.book import results

    monkeypatch.setattr(results, "display", lambda bundle, raw, metadata: None)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    saved = []
    for _ in range(2):
        fig, ax = plt.subplots()
        ax.plot([0, 1, 4])
        Results("02_y", "default", root=tmp_path).figure(fig, "curve", "A curve.")
        saved.append({p.name: p.read_bytes() for p in (tmp_path / "default" / "figures" / "02_y").iterdir()})
    assert set(saved[0]) == {"curve.pdf", "curve.png"} and saved[0] == saved[1]
