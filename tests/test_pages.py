"""Pages as a reader sees them: tables in words with numbers, figures with alternative text, computed Markdown
rendered, and a small book built to HTML and to PDF."""

from __future__ import annotations

import os
import shutil

import nbformat
import numpy as np
import pandas as pd
import pytest

from lib.book import figure_labels, tables
from lib.edition import downloads, pagecheck, publishing, staging
from lib.edition.folders import Edition
from lib.errors import BookError


def test_headers_are_words_with_units():
    assert tables.header("mean_cosine") == "mean cosine"
    assert tables.header("spearman_x100_words_only") == "spearman × 100 words only"
    assert tables.header("argmax_percent") == "argmax (%)" and tables.header("tokens_seen_millions") == "tokens seen (millions)"
    assert tables.header("ci95_low") == "95% CI low"
    assert tables.header("max_abs_z") == "max |z|"


def test_cells_print_numbers_marks_and_gaps():
    assert tables.cell_text(True, 2) == "✓" and tables.cell_text(np.bool_(False), 2) == "✗"
    assert tables.cell_text(float("nan"), 2) == "–" and tables.cell_text(None, 2) == "–"
    assert tables.cell_text(0.123456, 3) == "0.123" and tables.cell_text(12345.678, 1) == "12,345.7"
    assert tables.cell_text(-0.0004, 3) == "0.000" and tables.cell_text(-0.0006, 3) == "-0.001"  # never "-0.000"
    assert tables.cell_text("GPT-2 (12 layers)", 2) == "GPT\u20112\u00a0(12\u00a0layers)" and tables.cell_text("a-b", 2) == "a-b"
    assert tables.cell_text("0.102 (0.065 to 0.103)", 3) == "0.102 (0.065 to 0.103)"  # an interval breaks where its words do
    assert tables.cell_text(np.int64(7), 3) == "7" and tables.cell_text(120000, 3) == "120,000"
    assert tables.cell_text("91.44 ± 0.52", 2) == "91.44 ±\u00a00.52"  # a short cell breaks only before ±
    assert tables.cell_text("58.61 (3)", 2) == "58.61\u00a0(3)" and tables.cell_text("does not hold", 2) == "does not hold"
    assert list(tables.plus_minus(pd.Series([91.444, np.nan, 1.0]), pd.Series([0.5, 1.0, np.nan]))) == ["91.44 ± 0.50", "–", "1.00 ± –"]
    assert list(tables.annotated(pd.Series([0.0501, np.nan]), pd.Series([204, 3]))) == ["0.050 (204)", "–"]
    assert list(tables.annotated(pd.Series([267]), pd.Series([7.94]), unit="%")) == ["267 (7.9%)"]
    long = "a claim of many words that may wrap over lines"
    assert tables.cell_text(long, 2) == long


def test_a_table_is_a_numbered_myst_directive_with_escaped_cells():
    frame = pd.DataFrame({"model": ["m|1"], "spearman_x100": [91.4], "model_outlier": [True], "note": ["*not bold* $x$"]})
    text = tables.myst(frame, "Scores", 1, "scores")
    lines = text.splitlines()
    assert lines[0] == ":::{table} Scores" and lines[1] == ":name: scores" and lines[-1] == ":::"
    assert lines[3] == "| model | spearman × 100 | outlier of the model | note |"
    assert lines[4] == "|:---|---:|:---:|:---|"
    assert lines[5].replace("\u00a0", " ") == "| m\\|1 | 91.4 | ✓ | \\*not bold\\* \\$x\\$ |"
    data, metadata = tables.bundle(frame, "Scores", 1)
    assert set(data) == {"text/markdown", "text/html", "text/plain"} and metadata == {tables.KEY: {"name": None}}
    assert f":name: {tables.PLACEHOLDER}" in data["text/markdown"] and "spearman × 100" in data["text/plain"]


def test_a_table_without_rows_still_has_a_body():
    lines = tables.myst(pd.DataFrame({"dim": pd.Series([], dtype=int), "z": pd.Series([], dtype=float)}), "Nothing flagged", 1).splitlines()
    assert lines[-2] == "| none | – |"


def test_the_edition_labels_every_table_once():
    outputs = []
    for name in ("pooled", None, "pooled"):
        data, metadata = tables.bundle(pd.DataFrame({"a": [1]}), "A table", name=name)
        outputs.append(nbformat.v4.new_output("display_data", data=data, metadata=metadata))
    cell = nbformat.v4.new_code_cell("show()", outputs=outputs)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), cell])
    assert tables.label_tables(nb, "02_outlier_neurons") == ["tbl-02-pooled", "tbl-02-2", "tbl-02-pooled-b"]
    assert [o["data"]["text/markdown"].splitlines()[1] for o in cell.outputs] == [":name: tbl-02-pooled", ":name: tbl-02-2", ":name: tbl-02-pooled-b"]


def test_alt_text_is_the_caption_in_words():
    caption = "Mean cosine by layer (see {numref}`Fig. 2 <fig-02-x>`, **all** [models](a.html)); $x_1$"
    assert figure_labels.alt_text(caption) == "Mean cosine by layer (see Fig. 2, all models); x1"


PAGE = '<html><body><nav><img src="logo.png"></nav><article class="bd-article">{}</article></body></html>'


@pytest.mark.parametrize(
    "body, problem",
    [
        ("<p>| a | b | |---|---| | 1 | 2 |</p>", "printed as text"),
        ('<img alt="../../_images/abc.png" src="x.png">', "alternative text"),
        ('<img src="x.png">', "alternative text"),
        ("<table><caption>Scores</caption><tr><td>1</td></tr></table>", "without a number"),
        ('<div class="admonition note"><table><tr><td>1</td></tr></table></div><table><tr><td>2</td></tr></table>', "1 table(s) without"),
    ],
)
def test_page_check_finds_what_a_reader_should_not_see(tmp_path, body, problem):
    pages = tmp_path / "book" / "chapters"
    pages.mkdir(parents=True)
    (pages / "01_x.html").write_text(PAGE.format(body))
    found = pagecheck.problems(tmp_path)
    assert len(found) == 1 and problem in found[0] and found[0].startswith("book/chapters/01_x.html")


def test_page_check_passes_a_good_page(tmp_path):
    pages = tmp_path / "book" / "chapters"
    pages.mkdir(parents=True)
    body = (
        '<pre>lines = ["| a |", "|---|---|"]</pre><img alt="I1/I2 of W by layer" src="x.png">'
        '<table><caption><span class="caption-number">Table 1.1 </span>Scores</caption><tr><td>1</td></tr></table>'
    )
    (pages / "01_x.html").write_text(PAGE.format(body))
    assert pagecheck.problems(tmp_path) == []


def test_a_small_book_reads_well_in_html(page_book):
    html = page_book.html
    assert pagecheck.problems(html) == []
    page = (html / "book" / "chapters" / "01_page.html").read_text()
    assert "Table 1.1" in page and "Table 1.2" in page and "Fig. 1.1" in page  # numbered, and the prose's {numref} resolved
    assert page.count('class="sd-tab-set') == 1 and page.count('class="sd-tab-label"') == 2  # one tab per model
    assert "Table 1.5" in page and "Fig. 1.3" in page and 'alt="model b: a line that falls."' in page  # numbered inside the tabs
    assert page.count("<table") == 5 and "Table 1.3" in page and "outlier of the model" in page and "✓" in page  # the computed Markdown table too
    assert 'alt="A line that rises."' in page
    assert page.count("search-button-field") == 1  # one search field, in the sidebar
    assert (
        '<span class="c1"># Parameters</span>' not in page and '<span class="n">n</span> <span class="o">=</span> <span class="mi">3</span>' in page
    )  # papermill's cell is not on the page; the chapter's is, with this run's values
    assert '<span class="n">profile</span> <span class="o">=</span> <span class="s2">"quick"</span>' in page
    assert '# this run; the chapter\'s default: "default"' in page
    front = pagecheck._article((html / "book" / "intro.html").read_text())
    assert front.index("Introduction first.") < front.index("The quick edition") and "notebooks.zip" in front
    assert (html / "index.html").is_file()


NO_TEX = "TeX Live is not installed here (CI installs it and sets BOOK_REQUIRE_TEX=1)"


@pytest.mark.skipif(shutil.which("latexmk") is None and not os.environ.get("BOOK_REQUIRE_TEX"), reason=NO_TEX)
def test_a_small_book_typesets_as_pdf(own_page_book):
    pdf = publishing.build_pdf(own_page_book)
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf == own_page_book.root / downloads.PDF_NAME
    log = (Edition("quick", pdf=True).latex / "book.log").read_text(errors="replace")
    assert "Missing character" not in log  # the fonts print Biš, ✓, ◐ and ≥
    assert "book.pdf" not in (own_page_book.html / "book" / "intro.html").read_text()  # the pages were built before it
    publishing.build_html(own_page_book)
    assert "book.pdf" in (own_page_book.html / "book" / "intro.html").read_text()
    figures_typeset = [p for p in Edition("quick", pdf=True).latex.glob("*") if p.suffix in (".pdf", ".png") and p.name != downloads.PDF_NAME]
    assert [p.suffix for p in figures_typeset] == [".pdf"] * 3  # each figure as the vector PDF its run saved (not in tabs), not the PNG


def test_wide_figures_print_their_labels_at_the_style_size():
    import matplotlib.pyplot as plt

    from lib.experiments import plotting

    plotting.style()
    wide, (a, b) = plt.subplots(1, 2, figsize=(2 * plotting.PAGE_WIDTH, 3))
    a.set_xlabel("x")
    plotting.readable(wide)
    assert a.xaxis.label.get_fontsize() == pytest.approx(2 * plt.rcParams["axes.labelsize"])
    narrow, ax = plt.subplots(figsize=(plotting.PAGE_WIDTH, 3))
    ax.set_xlabel("x")
    plotting.readable(narrow)
    assert ax.xaxis.label.get_fontsize() == pytest.approx(plt.rcParams["axes.labelsize"])
    plt.close("all")


def test_a_wide_figure_is_laid_out_again_after_its_text_grows():
    """Every figure calls fig.tight_layout() before `readable` scales its text; the layout must be fitted again, or
    panel titles and axis labels run into the neighbouring panel (chapter 05's outlier track did)."""
    import matplotlib.pyplot as plt

    from lib.experiments import plotting, pretraining

    plotting.style()
    steps = [500, 1000, 1500]
    track = pd.DataFrame({"step": steps * 3, "layer": [0] * 3 + [1] * 3 + [2] * 3, "top_z": np.arange(9.0), "argmax_percent": np.arange(9.0) * 5})
    history = pd.DataFrame({"step": steps, "pe_top_z": [2.0, 1.9, 1.8]})
    fig = pretraining.outlier_track({"roberta-pe": track, "roberta-nope": track}, 10.0, {"roberta-pe": history, "roberta-nope": history})
    assert fig.get_figwidth() > plotting.PAGE_WIDTH  # its text is scaled
    plotting.readable(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for left, right in zip(fig.axes[0::2], fig.axes[1::2]):
        assert not left.title.get_window_extent(renderer).overlaps(right.title.get_window_extent(renderer))
        assert right.yaxis.label.get_window_extent(renderer).x0 > left.get_tightbbox(renderer).x1
    tops = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    assert all(box.y1 <= fig.bbox.y1 + 1 for box in tops)  # no title cut off at the top
    plt.close(fig)


def test_a_title_or_label_longer_than_its_panel_is_wrapped():
    import matplotlib.pyplot as plt

    from lib.experiments import plotting

    plotting.style()
    fig, (a, b) = plt.subplots(1, 2, figsize=(2 * plotting.PAGE_WIDTH, 5))
    long = "a title that is much too long for a panel that takes half of the figure's width"
    a.set(title=long, ylabel="a y label that is far taller than the panel it labels once scaled")
    b.set(title=long)
    fig.tight_layout()
    plotting.readable(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert "\n" in a.get_title() and a.get_title().replace("\n", " ") == long  # wrapped at spaces, no word lost
    assert not a.title.get_window_extent(renderer).overlaps(b.title.get_window_extent(renderer))
    assert a.yaxis.label.get_window_extent(renderer).height <= a.get_window_extent(renderer).height
    short, ax = plt.subplots(figsize=(2 * plotting.PAGE_WIDTH, 3))
    ax.set_title("short")
    plotting.readable(short)
    assert ax.get_title() == "short"
    plt.close("all")


def test_labels_of_neighbouring_flagged_dimensions_do_not_overlap():
    import matplotlib.pyplot as plt

    from lib.experiments import figure_kinds, plotting

    vectors = np.zeros((1, 400))
    vectors[0, [223, 238, 300]] = [5.0, 4.0, -3.0]
    fig = figure_kinds.vector_panels(vectors, vectors != 0, ["layer 1"])
    assert fig._suptitle is None  # the caption is the figure's title
    plotting.readable(fig)
    labels = {t.get_text(): t for t in fig.axes[0].texts}
    fig.canvas.draw()
    boxes = {k: t.get_window_extent() for k, t in labels.items()}
    assert not boxes["223"].overlaps(boxes["238"])
    assert all(abs(t.xyann[1]) <= 40 for t in labels.values())  # moved apart, but a step or three, not off the panel
    plt.close(fig)


def test_the_site_puts_editions_side_by_side_with_a_switcher(own_page_book, monkeypatch, tmp_path):
    import json

    from lib.edition import site

    student = Edition("quick", student=True)
    monkeypatch.setattr(site, "EDITIONS", {"quick": (own_page_book, "tiny samples"), "student": (student, "no solutions")})
    assert (own_page_book.html / "index.html").is_file()  # the quick edition is built
    with pytest.raises(BookError, match="no quick edition"):  # the student edition is not built yet: nothing is assembled
        site.assemble(["student", "quick"], tmp_path / "site")
    assert not (tmp_path / "site").exists()
    publishing.build_html(student)
    root = site.assemble(["quick", "student"], tmp_path / "site")
    assert json.loads((root / "editions.json").read_text()) == [{"name": "quick", "title": "tiny samples"}, {"name": "student", "title": "no solutions"}]
    assert "url=quick/index.html" in (root / "index.html").read_text()
    page = (root / "student" / "book" / "chapters" / "01_page.html").read_text()
    assert "_static/editions.js" in page and (root / "student" / "_static" / "editions.js").is_file()
    with pytest.raises(BookError, match="unknown edition paper"):
        site.assemble(["paper"], tmp_path / "site")


def test_the_link_check_names_a_broken_external_link(own_page_book, tmp_path):
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ok.html").write_text("<html><body>here</body></html>")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "site"))
    handler.log_message = lambda *a: None
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        rerun = staging.REPO_ROOT / "book" / "rerun.md"
        rerun.write_text(f"# How to re-run\n\nSee [the site]({base}/ok.html).\n")
        report = publishing.linkcheck(own_page_book)
        assert any(f"{base}/ok.html" in line and '"working"' in line for line in report.read_text().splitlines())
        rerun.write_text(f"# How to re-run\n\nSee [the site]({base}/ok.html) and [a moved page]({base}/gone.html).\n")
        with pytest.raises(BookError, match=rf"^1 broken external link\(s\): {base}/gone.html on book/rerun.md \(404"):
            publishing.linkcheck(own_page_book)
        httpd.shutdown()


def test_columns_with_one_value_move_into_the_caption():
    frame = pd.DataFrame({"layer": [1, 2], "tokens": [500, 500], "accuracy": [0.5, 0.75]})
    kept, caption = tables.lift_constants(frame, "Accuracy by layer", 3)
    assert list(kept.columns) == ["layer", "accuracy"] and caption == "Accuracy by layer (the same in every row: tokens 500)"
    one = frame.head(1)  # a single row: every column is "constant", none moves
    assert tables.lift_constants(one, "x", 3) == (one, "x")


def test_a_grid_is_as_wide_as_the_column_and_its_smallest_text_is_recorded():
    import matplotlib.pyplot as plt

    from lib.experiments import plotting

    plotting.style()
    fig, axes = plotting.grid(5, columns=2, panel_height=2.0)
    assert len(axes) == 5 and len(fig.axes) == 5 and fig.get_figwidth() == plotting.PAGE_WIDTH  # the sixth cell removed
    assert abs(fig.get_figheight() - (3 * 2.0 + 0.3)) < 1e-9
    axes[0].set_title("small", fontsize=6)
    assert plotting.smallest_text_px(fig, 144) == 12.0  # 6 pt at 144 dpi
    plt.close(fig)
    empty = plt.figure()
    assert plotting.smallest_text_px(empty, 150) is None
    plt.close(empty)


def test_a_grid_of_many_rows_stays_within_its_tallest_and_a_long_legend_wraps_into_the_width():
    import matplotlib.pyplot as plt

    from lib.experiments import plotting

    plotting.style()
    fig, axes = plotting.grid(8, columns=2, panel_height=3.3)  # four models' two panels each: 13.5 in at full height
    assert fig.get_figheight() == plotting.TALLEST * plotting.PAGE_WIDTH
    names = ["whole words", "all-MiniLM-L6-v2, all-mpnet-base-v2 tokens (one tokenizer: one curve)", "roberta-pe, roberta-nope tokens"]
    for name in names:
        axes[0].plot([0, 1], [0, 1], label=name)
    plotting.legend_above(fig, axes[0])
    legend = fig.legends[0]
    assert len(fig.legends) == 1 and [t.get_text() for t in legend.get_texts()] == names
    assert legend.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width  # in one row it would not fit
    assert legend._ncols < len(names)
    plt.close(fig)
    fig, axes = plotting.grid(2, columns=2, panel_height=3.0)
    axes[0].plot([0, 1], [0, 1], label="raw")
    axes[0].plot([0, 1], [1, 0], label="centred")
    plotting.legend_above(fig, axes[0])
    assert fig.legends[0]._ncols == 2  # short entries stay in one row
    plt.close(fig)


def test_an_edited_style_sheet_reaches_the_built_pages(own_page_book):
    book_css = own_page_book.html / "_static" / "book.css"
    assert book_css.read_bytes() == (staging.STATIC / "book.css").read_bytes()  # built before the edit
    (staging.STATIC / "book.css").write_text((staging.STATIC / "book.css").read_text() + "\n/* edited */\n")
    publishing.build_html(own_page_book)  # incremental: Sphinx alone would keep the old file
    assert book_css.read_text().endswith("/* edited */\n")
