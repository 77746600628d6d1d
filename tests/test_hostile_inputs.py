"""Inputs a reader may give by mistake or on purpose: a model folder elsewhere or with markup in its name, a profile
with a key twice, a per-task mapping without every task; and parameters cells papermill can read."""

from __future__ import annotations

import json
import logging
import re
import shutil

import jupytext
import nbformat
import pandas as pd
import pytest
from papermill.inspection import _infer_parameters
from papermill.iorw import load_notebook_node

import lib.book.chapter as ch
from lib.book import tables, tabs
from lib.core import profiles
from lib.core.profiles import command_line_values, load_profile, plan
from lib.core.sources import chapters, declared_parameters, source_file
from lib.edition import chapter_notes, front_page, staging
from lib.edition.cache import Entry
from lib.edition.execute import KERNEL
from lib.encode.models import minilm_path, resolve
from lib.errors import BookError
from lib.experiments import outlier_set, pretraining


def model_folder(parent, name: str):
    """A model folder (its config is enough to resolve it) named name under parent."""
    folder = parent / name
    folder.mkdir(parents=True)
    shutil.copy(minilm_path() / "config.json", folder)
    return folder


def entry(parameters: dict) -> Entry:
    """A chapter's cache entry as a run with these parameters leaves it, as much as its page's box reads."""
    return Entry("01_anisotropy", "key", {"parameters": parameters}, "", [], [], {"finished": "2026-01-01T00:00:00", "seconds": 1.0, "commit": "abc"})


def test_a_model_folder_outside_the_repository_is_named_on_the_page_not_by_its_path(tmp_path, monkeypatch):
    """`-p models <folder elsewhere>`: the page's box names the model by its folder's name, as its tables do."""
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path / "build"))
    folder = model_folder(tmp_path / "elsewhere", "my-model")
    assert resolve(str(folder))[1] == "my-model"
    note = chapter_notes.chapter_note("01_anisotropy", entry({"profile": "quick", "models": str(folder)}), "quick")
    assert str(tmp_path) not in note
    assert "changed from the chapter's defaults: models: my-model." in note and "it measures my-model;" in note
    run = {"profile": "quick", "models": str(folder)}
    assert staging.measured_text(run) == "**This run**: models my-model."  # the line under the Summary
    cell = staging.run_parameters('models = "minilm"  # the models', run)  # the parameters cell on the page
    assert str(tmp_path) not in cell and cell.startswith('models = "my-model"  # this run (local model folders, named here: give their paths)')


def test_a_model_folder_whose_name_is_markup_stops_the_chapter_before_it_runs(tmp_path):
    """A folder named `<b>m`: pages show a model by its folder's name, which would render as HTML; the chapter's first
    cell (`ch.begin`'s model check) refuses it in one line."""
    folder = model_folder(tmp_path, "<b>m")
    with pytest.raises(BookError, match=re.escape("'<b>m' has characters Markdown or HTML read as markup (< >); rename the folder")) as stopped:
        ch.parse_models(str(folder))
    assert "\n" not in str(stopped.value)


def test_names_and_values_reach_the_page_as_text(tmp_path, monkeypatch):
    """Whatever a name or value holds, the page shows it as text: tab titles, per-model captions, the verdicts under a
    chapter's title, and a value with a backtick in the page's box."""
    outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "t"}, metadata={tabs.KEY: name}) for name in ("<b>m", "x")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=outputs)])
    assert tabs.group(nb, tmp_path, lambda path, data: None) == 1
    text = nb.cells[0].outputs[0]["data"]["text/markdown"]
    assert "{tab-item} \\<b\\>m" in text and "<b>" not in text
    shown = []
    monkeypatch.setattr(tables, "display", lambda data, raw, metadata: shown.append(data["text/markdown"]))
    ch.show_each({"<b>m": pd.DataFrame({"a": [1]})}, "{name}: a table")
    assert shown[0].startswith(":::{table} \\<b\\>m: a table")
    card = pd.DataFrame(
        {"chapter": ["01_anisotropy"], "claim_id": ["c"], "claim": ["a claim"], "model": ["<b>m"], "verdict": ["holds"], "on_model": [True], "ours": ["<i>2"]}
    )
    assert front_page._claim_lines("01_anisotropy", card)[0].startswith("- a claim → \\<b\\>m: ✓ **holds** (\\<i\\>2)")
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path / "build"))
    note = chapter_notes.chapter_note("01_anisotropy", entry({"profile": "quick", "device": "cu`da"}), "quick")
    assert "changed from the chapter's defaults: device: cu\\`da." in note
    from lib.book.markdown import code  # (a module of its own: `tabs` and `tables` both escape)

    assert code("`a`") == "`` `a` ``"


def write_chapter_02_results(root, model: str, z_threshold: float, min_layer_share: float) -> None:
    """What chapter 02 leaves for one model in the quick edition: its average vectors and the criterion it ran with."""
    folder = root / "quick" / model / outlier_set.CHAPTER
    folder.mkdir(parents=True)
    (folder / f"{outlier_set.SOURCE_TABLE}.csv").write_text("layer,dim,mean\n0,0,0.0\n")
    parameters = {"n_sentences": 400, "z_threshold": z_threshold, "min_layer_share": min_layer_share, "seed": 0}
    (folder / "meta.json").write_text(json.dumps({"parameters": parameters}))


def test_chapter_05_reads_the_outlier_criterion_chapter_02_ran_with(tmp_path, monkeypatch, capsys):
    """Chapter 02 run with `-p z_threshold 8 -p min_layer_share 0.25`, say: chapter 05 reads the trained models with
    that criterion, as the chapters that clip do, and says where it comes from; before chapter 02 has run, with the
    edition's, saying so; chapter 02's models recorded with different criteria: one line."""
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    values = {**declared_parameters("05_pretraining"), **plan("quick", ["05_pretraining"], {})[0][1]}
    before = pretraining.inputs(values, "quick").criterion
    assert (before.z_threshold, before.min_layer_share) == (10.0, 0.5) and "chapter 02 has not run in it" in capsys.readouterr().out
    write_chapter_02_results(tmp_path, "minilm", 8.0, 0.25)
    after = pretraining.inputs(values, "quick").criterion
    assert (after.z_threshold, after.min_layer_share) == (8.0, 0.25)
    assert "|robust z| ≥ 8 in ≥ 25% of the contextual layers, as chapter 02's run in the quick edition recorded it (minilm)" in capsys.readouterr().out
    write_chapter_02_results(tmp_path, "mpnet", 10.0, 0.5)
    with pytest.raises(BookError, match=re.escape("record different outlier criteria (minilm: z 8, layer share 0.25; mpnet: z 10, layer share 0.5)")):
        pretraining.inputs(values, "quick")


@pytest.mark.parametrize(
    "text, line",
    [
        ("01_anisotropy:\n  n_sentences: 300\n  n_pairs: 150\n  n_sentences: 400\n", "key 'n_sentences' is given twice, on lines 2 and 4"),
        ("01_anisotropy:\n  n_pairs: 150\n02_outlier_neurons:\n  seed: 1\n01_anisotropy:\n  seed: 2\n", "key '01_anisotropy' is given twice, on lines 1 and 5"),
        ("09_supervised:\n  n_train: {sst2: 10, imdb: 5, sst2: 20}\n", "key 'sst2' is given twice, on lines 2 and 2"),
    ],
)
def test_a_key_given_twice_in_a_profile_is_refused(tmp_path, monkeypatch, text, line):
    """YAML keeps the last of two equal keys silently: the profile is refused, naming the file, the key and its lines."""
    monkeypatch.setattr(profiles, "PROFILES", tmp_path)
    (tmp_path / "twice.yaml").write_text(text)
    with pytest.raises(BookError, match=re.escape(f"{tmp_path / 'twice.yaml'} is not valid YAML: {line}; keep one")) as stopped:
        load_profile("twice")
    assert "\n" not in str(stopped.value)


def test_a_per_task_mapping_without_every_task_is_refused_before_any_chapter_runs(tmp_path, monkeypatch):
    """`-p n_train '{sst2: 100}'` (or a profile's) with the three default tasks: refused while planning, naming the
    tasks without an entry; with `-p tasks sst2` it is complete."""
    expected = "parameter n_train of 09_supervised has no entry for imdb, sst5: give one for every task in tasks (sst2, imdb, sst5)"
    with pytest.raises(BookError, match=re.escape(expected)):
        plan("quick", ["09_supervised"], command_line_values([["n_train", "{sst2: 100}"]]))
    ((_, planned),) = plan("quick", ["09_supervised"], command_line_values([["n_train", "{sst2: 100}"], ["tasks", "sst2"]]))
    assert planned["n_train"] == {"sst2": 100}
    monkeypatch.setattr(profiles, "PROFILES", tmp_path)
    (tmp_path / "partial.yaml").write_text("09_supervised:\n  n_dev: {sst2: 10, imdb: 5}\n")
    with pytest.raises(BookError, match=re.escape("parameter n_dev of 09_supervised has no entry for sst5")):
        plan("partial", ["09_supervised"], {})


@pytest.mark.parametrize("chapter", chapters())
def test_papermill_reads_every_parameter_of_each_parameters_cell(chapter, tmp_path, caplog):
    """Papermill's own reading of a parameters cell (what it checks the injected names against) stumbles on a line with
    a second `=` ("Unable to parse line 6 'check_rows = 0 # ... (0 = ...'") and drops that parameter: none has one."""
    notebook = jupytext.read(source_file(chapter))
    notebook.metadata["kernelspec"] = KERNEL  # as the runner converts it
    jupytext.write(notebook, tmp_path / "input.ipynb")
    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = _infer_parameters(load_notebook_node(str(tmp_path / "input.ipynb")), name=KERNEL["name"], language=KERNEL["language"])
    assert "Unable to parse" not in caplog.text
    assert [p.name for p in found] == list(declared_parameters(chapter))
