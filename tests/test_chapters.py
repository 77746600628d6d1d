"""The chapters run end to end through papermill (quick profile), and bad input stops them cleanly."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lib.core import profiles
from lib.core.profiles import command_line_values, load_profile, plan, profile_parameters
from lib.core.sources import chapters, declared_parameters, source_file
from lib.errors import BookError
from lib.experiments import outlier_set, verdicts
from lib.settings import REPO_ROOT, build_dir, models_dir, results_dir


def run(tmp_path, *args, env_extra=None):
    copy = tmp_path / "profiles"  # a copy: the chapter times a build records stay out of the checkout's files
    if not copy.exists():
        shutil.copytree(REPO_ROOT / "profiles", copy)
    env = {
        **os.environ,
        "BOOK_PROFILES_DIR": str(copy),
        "BOOK_RESULTS_DIR": str(tmp_path / "results"),
        "BOOK_MODELS_DIR": str(tmp_path / "models"),
        "BOOK_BUILD_DIR": str(tmp_path / "build"),
        **(env_extra or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "lib.edition.runner", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=2700,
    )


def test_profiles_list_only_changes_to_declared_parameters():
    """A profile sets only parameters its chapters declare, with values of the cells' types, and never restates a
    cell's value (the cells are the default edition's one home)."""
    for profile in sorted(p.stem for p in (REPO_ROOT / "profiles").glob("*.yaml")):
        spec = load_profile(profile)
        for chapter in chapters():
            declared = declared_parameters(chapter)
            params = profile_parameters(profile, chapter)
            assert params["profile"] == profile and set(params) <= set(declared)
            for name, value in params.items():
                if name != "profile":
                    assert value != declared[name], f"{profile}/{chapter}: {name} = {value!r} restates the parameters cell"
        assert profile != "default" or spec == {}, "the default profile changes nothing: the cells are the default edition"


def test_parameters_are_checked_before_anything_runs():
    with pytest.raises(
        BookError, match=r"unknown parameter 'n_sentnces' for 02_outlier_neurons; parameters are: 02_outlier_neurons: profile, models, n_sentences"
    ):
        plan("quick", ["02_outlier_neurons"], {"n_sentnces": 5})
    with pytest.raises(BookError, match=r"parameter n_sentences must be an integer like its default 10000, got 'many'"):
        plan("quick", ["02_outlier_neurons"], {"n_sentences": "many"})
    with pytest.raises(BookError, match="parameter retrain must be true or false"):
        plan("quick", ["05_pretraining"], {"retrain": 1})
    with pytest.raises(BookError, match="no chapter '99_none'"):
        plan("quick", ["99_none"], {})
    # a name some of the chapters run declare goes to those only; numbers read as strings (YAML 1.1: 1e-3) are taken
    plans = dict(plan("quick", ["02_outlier_neurons", "04_position_probe"], {"lr": "1e-3", "n_sentences": 50}))
    assert plans["04_position_probe"]["lr"] == 1e-3 and "lr" not in plans["02_outlier_neurons"]
    assert plans["02_outlier_neurons"]["n_sentences"] == 50 and "n_sentences" not in plans["04_position_probe"]
    assert plan("quick", ["04_position_probe"], {"lr": 1})[0][1]["lr"] == 1.0


@pytest.mark.parametrize(
    "profile, expected",
    [
        ({"02_outlier_neurons": {"n_sentnces": 5}}, "02_outlier_neurons has no parameter 'n_sentnces'"),
        ({"all": {"n_sentnces": 5}}, "`all` sets 'n_sentnces', which no chapter declares"),
        ({"02_outlier_neurons": {"z_threshold": "high"}}, "parameter z_threshold must be a number like its default 10.0"),
        ({"99_extra": {"n": 1}}, "'99_extra' is not a chapter"),
    ],
)
def test_bad_profile_values_stop_with_one_line(tmp_path, profile, expected, monkeypatch):
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "mine.yaml").write_text(yaml.safe_dump(profile))
    monkeypatch.setattr(profiles, "PROFILES", folder)
    with pytest.raises(BookError, match=re.escape(expected)):
        plan("mine", ["02_outlier_neurons"], {})


def test_unknown_parameter_stops_the_command_with_one_line(tmp_path):
    """End to end, stopped while planning: no kernel starts, no folder is made."""
    done = run(tmp_path, "--profile", "quick", "--chapters", "02_outlier_neurons", "-p", "n_sentnces", "5")
    assert_clean_failure(tmp_path, done, "unknown parameter 'n_sentnces' for 02_outlier_neurons; parameters are: 02_outlier_neurons: profile, models")
    assert "models, n_sentences" in done.stderr and not (tmp_path / "build").exists() and "== 02" not in done.stdout


BUILT = "BOOK_TEST_EDITION"  # "built": test the quick edition this checkout has built (CI builds it once, before the suite)


@pytest.fixture(scope="module")
def quick_edition(shared_data, tmp_path_factory) -> dict[str, Path]:
    """The quick edition, executed: results, models and build folders. With BOOK_TEST_EDITION=built, the one this
    checkout built (`make publish PROFILE=quick`), which must be current: the runner's plan reuses every chapter. Else
    all 14 chapters cold, into a temporary folder (20-40 minutes on 2 cores)."""
    if os.environ.get(BUILT):
        assert os.environ[BUILT] == "built", f"{BUILT} must be 'built' (or unset), got {os.environ[BUILT]!r}"
        planned = subprocess.run([sys.executable, "-m", "lib.edition.runner", "--profile", "quick", "--plan"], capture_output=True, text=True, cwd=REPO_ROOT)
        assert planned.returncode == 0, planned.stderr[-2000:]
        stale = [line for line in planned.stdout.splitlines() if line.startswith("== ") and "would be reused" not in line]
        assert not stale, f"{BUILT}=built, but the built quick edition is not this checkout's: {stale}"
        return {"results": results_dir(), "models": models_dir(), "build": build_dir()}
    tmp_path = tmp_path_factory.mktemp("quick")
    done = run(tmp_path, "--profile", "quick")
    assert done.returncode == 0, done.stderr[-2000:]
    return {"results": tmp_path / "results", "models": tmp_path / "models", "build": tmp_path / "build"}


@pytest.mark.slow
def test_quick_profile_runs_every_chapter(tmp_path, quick_edition):
    for chapter in chapters():
        assert (quick_edition["build"] / "quick" / "notebooks" / f"{chapter}.ipynb").is_file()
    results = quick_edition["results"] / "quick"
    table = pd.read_csv(results / "minilm" / "01_anisotropy" / "anisotropy_by_layer.csv")
    # MiniLM's embeddings share a direction at every layer (its mean cosine is positive), and never all of it
    assert table["layer"].tolist() == list(range(7)) and table["mean_cosine"].between(0, 0.99).all()
    meta = json.loads((results / "mpnet" / "02_outlier_neurons" / "meta.json").read_text())
    assert meta["model_info"]["n_layers"] == 12 and meta["model_info"]["width"] == 768
    assert set(meta["tables"]) == {
        "extreme_dimensions_by_layer",
        "extreme_dimensions_pooled",
        "extreme_dimensions_by_sentence",
        "extreme_dimensions_by_layer_sentence",
        "outlier_dimensions",
        "mean_vectors",
        "last_layernorm",
    }
    assert (results / "figures" / "02_outlier_neurons" / "extreme_dimension_shares.png").is_file()
    offsets = {m: json.loads((results / m / "03_positional_origin" / "meta.json").read_text())["model_info"]["position_offset"] for m in ("minilm", "mpnet")}
    assert offsets == {"minilm": 0, "mpnet": 2}  # BERT tables start at row 0; MPNet skips padding rows
    ranks = pd.read_csv(results / "minilm" / "03_positional_origin" / "layernorm_ranks.csv")
    assert set(ranks["layer"]) == set(range(7)) and ranks["rank"].between(1, 384).all()
    pretrained = pd.read_csv(results / "chapter" / "05_pretraining" / "summary.csv")
    assert (
        pretrained["position_embeddings"].tolist() == [True, False, True, False]
        and pretrained["seed"].tolist() == [10, 10, 11, 11]  # the scored seeds start at 10 (seeds 0-3 chose the configuration)
        and pretrained["valid_perplexity"].between(1, 2000).all()
    )
    drift = pd.read_csv(results / "chapter" / "05_pretraining" / "embedding_drift.csv").query("bin == 'all'")
    assert (
        drift.query("stage == 'trained'")["mean_norm_over_avg_norm"].to_numpy() > drift.query("stage == 'initial'")["mean_norm_over_avg_norm"].to_numpy()
    ).all()
    history = pd.read_csv(results / "trained_quick-roberta-nope" / "05_pretraining" / "training_history.csv")
    assert history["step"].tolist() == [20, 40, 60] and history["valid_loss"].is_monotonic_decreasing
    assert (quick_edition["models"] / "quick-roberta-pe" / "tokenizer.json").is_file()
    probe = pd.read_csv(results / "minilm" / "04_position_probe" / "accuracy_by_layer.csv")
    assert probe["layer"].tolist() == list(range(7))
    assert probe["test_accuracy"].iloc[0] > 0.5 > probe["test_accuracy"].iloc[-1]  # position decodable low, fading high
    assert (results / "figures" / "04_position_probe" / "contribution_heatmaps_all-MiniLM-L6-v2.png").is_file()
    geometry = pd.read_csv(results / "minilm" / "06_clipping_whitening" / "geometry_by_variant.csv")
    assert geometry["mean_cosine"][geometry["variant"] == "whitened"].abs().max() < 0.05  # whitening removes the common direction
    wic = pd.read_csv(results / "mpnet" / "07_wic" / "best.csv")
    assert set(wic["variant"]) == {"raw", "clipped", "clipped-random", "whitened"} and wic["train_accuracy"].between(50, 100).all()
    sts = pd.read_csv(results / "minilm" / "08_sts" / "spearman_by_layer.csv")
    assert sts.query("dataset == 'STS-B' and variant == 'raw'")["spearman_x100"].max() > 60  # a sentence-similarity model
    best_sts = pd.read_csv(results / "minilm" / "08_sts" / "best.csv")
    assert (best_sts["layer"] >= 1).all() and set(best_sts["variant"]) == {"raw", "clipped", "whitened", "whitened-sentences"}
    clipped = {
        json.loads((results / "mpnet" / c / "meta.json").read_text())["model_info"]["clipping_set"]
        for c in ("06_clipping_whitening", "07_wic", "08_sts", "09_supervised")
    }
    assert len(clipped) == 1 and "chapter 02's results" in clipped.pop()  # one clipping set per model, chapter 02's
    supervised = pd.read_csv(results / "minilm" / "09_supervised" / "accuracy_by_layer.csv")
    assert supervised["test_accuracy"].between(0, 100).all() and set(supervised["task"]) == {"SST-2", "IMDB", "SST-5"}
    matrix = pd.read_csv(results / "mpnet" / "10_common_direction" / "embedding_matrix.csv").iloc[0]
    assert matrix["mean_pairwise_cosine_brute_force"] == pytest.approx(matrix["mean_pairwise_cosine_from_mean_unit_vector"], abs=1e-9)
    assert matrix["sigma1_over_sigma2_centered"] < matrix["sigma1_over_sigma2_raw"]
    coverage = pd.read_csv(results / "corpus" / "11_rare_words" / "coverage.csv")
    assert (coverage["items_for_30%"] < coverage["items_for_98%"]).all()
    own = pd.read_csv(results / "trained_quick-roberta-pe" / "12_isotropy_word_similarity" / "isotropy.csv")  # chapter 05's model, reloaded
    assert own["I1"].between(0, 1).all() and json.loads((results / "trained_quick-roberta-pe" / "10_common_direction" / "meta.json").read_text())
    runs = pd.read_csv(results / "minilm" / "13_isotropy_calibration" / "runs.csv")
    assert len(runs) == 2 * 5 * 2 and set(runs["method"]) == {"none", "cosreg", "spectrum-pol", "spectrum-exp", "flow"}
    assert runs["I1"].between(0, 1).all() and runs.query("task == 'SST-2'")["score"].between(0, 100).all()
    iso = pd.read_csv(results / "minilm" / "12_isotropy_word_similarity" / "isotropy.csv").set_index("variant")
    assert iso.loc["centered", "I1"] > iso.loc["raw", "I1"] and iso.loc["centered", "mean_vector_norm"] < 1e-9
    card = pd.read_csv(results / "chapter" / "14_scorecard" / "scorecard.csv")
    assert set(card["verdict"]) <= set(verdicts.VERDICTS)
    least = iso.loc["centered", "I1_sign_low"] - iso.loc["raw", "I1_sign_high"]  # chapter 12's table above, as the rule reads it
    most = iso.loc["centered", "I1_sign_high"] - iso.loc["raw", "I1_sign_low"]
    verdict = card.query("claim_id == 'bis2021/centering-isotropy' and model == 'all-MiniLM-L6-v2'")["verdict"].iloc[0]
    assert verdict == ("holds" if least > 0.1 else "does not hold" if most < 0.1 else "inconclusive")  # over every sign convention
    # the exercises' solutions ran: chapter 02's threshold table is in the executed notebook
    executed = (quick_edition["build"] / "quick" / "notebooks" / "02_outlier_neurons.ipynb").read_text()
    assert "Flagged dimensions at this chapter's threshold and at 5" in executed
    # a notebook as a reader downloads it from the built page executes again, from another folder
    build = tmp_path / "build"  # staged from a copy: the built edition's own source folder stays as published
    shutil.copytree(quick_edition["build"] / "quick", build / "quick", ignore=shutil.ignore_patterns("html", "source", "pdf", "student", "*.pdf"))
    env = {**os.environ, "BOOK_RESULTS_DIR": str(tmp_path / "again"), "BOOK_MODELS_DIR": str(quick_edition["models"]), "BOOK_BUILD_DIR": str(build)}
    staged = subprocess.run(
        [sys.executable, "-c", "from lib.edition.folders import Edition; from lib.edition.staging import stage; print(stage(Edition('quick')))"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    assert staged.returncode == 0, staged.stderr[-2000:]
    page = Path(staged.stdout.strip()) / "book" / "chapters" / "10_common_direction.ipynb"
    reader = tmp_path / "reader"
    reader.mkdir()
    again = subprocess.run(
        [sys.executable, "-m", "papermill", str(page), str(reader / "out.ipynb"), "--cwd", str(reader)], capture_output=True, text=True, env=env, timeout=900
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert (tmp_path / "again" / "quick" / "minilm" / "10_common_direction" / "embedding_matrix.csv").is_file()


def assert_clean_failure(tmp_path, done, expected, chapter="01_anisotropy"):
    """A command that stopped with status 2 and one line, leaving no results, executed notebook or cache entry."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "build" / "quick" / "notebooks" / f"{chapter}.ipynb").exists()
    assert not (tmp_path / "build" / "quick" / "cache").exists()


def test_a_value_a_chapter_rejects_stops_the_command_with_one_line(tmp_path):
    """End to end, stopped inside the chapter's kernel: the value is planned (a string, as the cell's), the chapter's first
    cell rejects it; the runner says so in one line and keeps the failed notebook for inspection, nothing else."""
    done = run(tmp_path, "--profile", "quick", "--chapters", "01_anisotropy", "-p", "models", "no-such-model")
    assert_clean_failure(tmp_path, done, "chapter 01_anisotropy failed: BookError: model 'no-such-model' is not a local folder nor downloaded")
    assert "embedded models (offline): minilm, mpnet" in done.stderr
    assert (tmp_path / "build" / "quick" / "notebooks" / "failed" / "01_anisotropy.ipynb").is_file()


def kernel_values(chapter: str, **typed: str) -> dict[str, object]:
    """The values the chapter's kernel holds after its parameters cell under `runner --profile quick --chapters <chapter>
    -p NAME VALUE ...` (typed: each VALUE as typed): the cell's, then those the runner plans and papermill injects."""
    ((_, planned),) = plan("quick", [chapter], command_line_values([[name, value] for name, value in typed.items()]))
    return {**declared_parameters(chapter), **planned}


def first_cell(chapter: str, values: dict[str, object]) -> object:
    """What the chapter's first cell after its parameters cell calls, in this process (no kernel): `ch.begin`'s check of
    the models, then the chapter module's function that checks every other value before anything is computed or written."""
    import lib.book.chapter as ch
    from lib.experiments import anisotropy, isotropy_calibration, position_probe, pretraining, sts, supervised, vector_variants, wic

    v = values
    specs = ch.parse_models(v["models"], v["profile"]) if "models" in v else []
    probe = ("max_positions", "epochs", "batch_size", "lr", "heatmap_positions", "probe_seeds")
    return {
        "01_anisotropy": lambda: anisotropy.inputs(v["profile"], v["n_sentences"], v["n_pairs"], v["pca_tokens"], v["seed"]),
        "04_position_probe": lambda: position_probe.inputs(v["n_train"], v["n_dev"], v["n_test"], v["seed"], **{k: v[k] for k in probe}),
        "05_pretraining": lambda: pretraining.inputs(v, v["profile"]),
        "07_wic": lambda: wic.inputs(v["n_pairs"], v["seed"], specs),
        "08_sts": lambda: sts.inputs(v["datasets"], v["max_pairs"], v["n_fit"], v["seed"], v["variants"]),
        "09_supervised": lambda: (vector_variants.requested(v["variants"]), supervised.task_data(v)),
        "13_isotropy_calibration": lambda: isotropy_calibration.inputs(specs, v),
    }[chapter]()


CHECKED_BY = {  # the calls `first_cell` makes, as each notebook makes them
    "01_anisotropy": ["ch.begin(", "anisotropy.inputs("],
    "04_position_probe": ["ch.begin(", "position_probe.inputs("],
    "05_pretraining": ["pretraining.inputs("],
    "07_wic": ["ch.begin(", "wic.inputs("],
    "08_sts": ["ch.begin(", "sts.inputs("],
    "09_supervised": ["ch.begin(", "vector_variants.requested(", "supervised.task_data("],
    "13_isotropy_calibration": ["ch.begin(", "isotropy_calibration.inputs("],
}


@pytest.fixture
def edition_folders(tmp_path, monkeypatch) -> Path:
    """The results, build and models folders in tmp_path (as `run` sets them), which a chapter stopped by a bad value
    must leave empty."""
    for var, name in (("BOOK_RESULTS_DIR", "results"), ("BOOK_BUILD_DIR", "build"), ("BOOK_MODELS_DIR", "models")):
        monkeypatch.setenv(var, str(tmp_path / name))
    return tmp_path


@pytest.mark.parametrize(
    "chapter, typed, expected",
    [
        ("01_anisotropy", {"n_sentences": "0"}, "parameter n_sentences must be a positive integer, got 0"),
        ("01_anisotropy", {"n_pairs": "600"}, "600 disjoint pairs need at least 1200 sentences; the sample has 300"),
        # before any extraction; SST-2's 67,349 training sentences less the 400 chapter 02 selects its outliers on
        ("01_anisotropy", {"n_sentences": "100000", "n_pairs": "40000"}, "need at least 80000 sentences; the sample has 66,947 (n_sentences 100,000)"),
        ("01_anisotropy", {"pca_tokens": "1e12"}, "parameter pca_tokens (1,000,000,000,000) is more tokens than 300 sentences can hold"),
        (
            "01_anisotropy",
            {"models": "no-such-model"},
            "model 'no-such-model' is not a local folder nor downloaded, and the Hugging Face hub is not reachable from here; "
            "embedded models (offline): minilm, mpnet",
        ),
        ("08_sts", {"datasets": "stsb,sts99"}, "datasets: unknown 'sts99'; choose from stsb, sick"),
        ("07_wic", {"n_pairs": "0"}, "a sample size must be a positive integer, got 0"),
        ("09_supervised", {"n_train": "{sst2: 100}"}, "parameter n_train of 09_supervised has no entry for imdb, sst5"),  # while planning
        ("04_position_probe", {"heatmap_positions": "400"}, "heatmap_positions (400) cannot exceed max_positions (300)"),
        ("05_pretraining", {"hidden_size": "33"}, "hidden_size 33 must be divisible by heads 2"),
        ("05_pretraining", {"names": "same,same"}, "names must be two different model names, with then without position embeddings, got 'same,same'"),
        ("13_isotropy_calibration", {"methods": "none,whiten"}, "methods: unknown 'whiten'; choose from none, cosreg"),
        ("13_isotropy_calibration", {"spectrum_scales": "1,x"}, "parameter spectrum_scales must be comma-separated positive numbers, got '1,x'"),
    ],
)
def test_bad_parameters_stop_the_chapter_before_it_writes(edition_folders, shared_data, chapter, typed, expected):
    """Each value as `runner --profile quick --chapters <chapter> -p NAME VALUE` gives it to the chapter, checked where
    the chapter checks it (in this process: the kernel's part of the path is the test above): one line, nothing written."""
    with pytest.raises(BookError, match=re.escape(expected)) as stopped:
        first_cell(chapter, kernel_values(chapter, **typed))
    assert "\n" not in str(stopped.value) and not any(edition_folders.iterdir())
    source = source_file(chapter).read_text()  # `first_cell` makes the notebook's calls: the notebook still makes them
    assert all(call in source for call in CHECKED_BY[chapter]), (chapter, CHECKED_BY[chapter])


def test_a_layer_the_model_lacks_stops_chapter_01_before_it_writes(edition_folders, shared_data):
    """`-p models minilm -p pca_layer 9`: checked against the loaded model's layers, before any extraction."""
    import lib.book.chapter as ch
    from lib.book.results import Results
    from lib.experiments import anisotropy

    v = kernel_values("01_anisotropy", models="minilm", pca_layer="9")
    sentences = first_cell("01_anisotropy", v)
    settings = {name: v[name] for name in ("n_pairs", "pca_tokens", "pca_layer", "seed", "device", "dtype")}  # as chapter 01's cell passes them
    settings |= {"sentences": sentences, "results": Results("01_anisotropy", "quick"), "parameters": ch.parameters("01_anisotropy", v)}
    with pytest.raises(BookError, match=re.escape("layer 9 does not exist in all-MiniLM-L6-v2: hidden states are 0..6 (0 = embedding output)")):
        ch.each_model(anisotropy.run, ["minilm"], **settings)
    assert not any(edition_folders.iterdir())


def test_missing_data_directory_stops_the_chapter(edition_folders, monkeypatch):
    monkeypatch.setenv("BOOK_DATA_DIR", str(edition_folders / "none"))
    with pytest.raises(BookError, match=re.escape(f"data directory {edition_folders / 'none'} does not exist; set BOOK_DATA_DIR")):
        first_cell("01_anisotropy", kernel_values("01_anisotropy"))
    assert not any(edition_folders.iterdir())


def test_unknown_profile(edition_folders, capsys):
    """The runner's command in this process (its start is the two end-to-end tests' above), stopped while planning."""
    from lib.edition import runner

    with pytest.raises(SystemExit) as stopped:
        runner.main(["--profile", "huge"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and err.startswith("error: unknown profile 'huge'; choose one of default, gpu, paper, quick")
    assert not any(edition_folders.iterdir())


def test_a_config_is_built_from_the_parameters_cell_and_chapter_05s_models_by_alias():
    import lib.book.chapter as ch
    from lib.train.masked_lm import PretrainConfig

    cell = {**declared_parameters("05_pretraining"), "adam_betas": (0.9, 0.98)}
    cfg = ch.config(PretrainConfig, cell, position_embeddings=False, precision="none")
    assert cfg.grad_clip == cell["grad_clip"] and cfg.steps == cell["steps"] and not cfg.position_embeddings
    with pytest.raises(BookError, match="divisible by heads"):
        ch.config(PretrainConfig, {**cell, "hidden_size": 33}, position_embeddings=True, precision="none")
    assert ch.trained_spec("chapter05:nope", "quick") == "trained:quick-roberta-nope"
    assert ch.trained_spec("chapter05:pe", "default") == "trained:roberta-pe" and ch.trained_spec("minilm", "quick") == "minilm"
    assert outlier_set.outlier_criterion("quick").n_sentences == 400 and outlier_set.outlier_criterion("default").z_threshold == 10.0


def test_comma_separated_parameters_and_recorded_values():
    import lib.book.chapter as ch

    assert ch.names(" sst2, rte ,", "tasks", ["sst2", "rte", "cola"]) == ["sst2", "rte"]
    with pytest.raises(BookError, match="tasks: unknown 'qqp'; choose from sst2, rte"):
        ch.names("sst2,qqp", "tasks", ["sst2", "rte"])
    with pytest.raises(BookError, match="tasks is empty"):
        ch.names(" , ", "tasks")
    assert ch.positive_numbers("scales", " 1, 0.25,") == [1.0, 0.25] and ch.positive_numbers("scales", "") == []
    with pytest.raises(BookError, match="scales must be comma-separated positive numbers, got '1,-2'"):
        ch.positive_numbers("scales", "1,-2")
    namespace = {**declared_parameters("02_outlier_neurons"), "n_sentences": 7, "unrelated": 1}
    recorded = ch.parameters("02_outlier_neurons", namespace)
    assert recorded["n_sentences"] == 7 and not {"profile", "models", "device", "unrelated"} & set(recorded)
