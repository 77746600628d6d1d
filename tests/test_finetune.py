"""Fine-tuning with calibration (chapter 13), GLUE loaders and metrics."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch

from lib.core import paper
from lib.datasets import tasks
from lib.errors import BookError
from lib.experiments import isotropy_calibration
from lib.io import write_manifest
from lib.measure.metrics import glue_score, student_p, welch_p
from lib.settings import cpu_share
from lib.train import calibration, finetune

from .conftest import tiny_model

GOOD = ["a good film", "good acting and a good script", "really good", "so good , so funny", "good fun"]
BAD = ["a dull film", "bad acting", "dull and slow", "really bad", "a mess"]


def toy(n_repeat: int, regression: bool = False) -> pd.DataFrame:
    texts = GOOD + BAD
    labels = [4.5] * len(GOOD) + [0.5] * len(BAD) if regression else [1] * len(GOOD) + [0] * len(BAD)
    return pd.DataFrame({"text1": texts * n_repeat, "text2": "", "label": labels * n_repeat})


def test_glue_metrics_match_hand_computations():
    gold = np.array([1, 1, 0, 0, 1, 0])
    pred = np.array([1, 0, 0, 1, 1, 0])
    tp, fp, fn, tn = 2, 1, 1, 2
    assert glue_score("accuracy", gold, pred) == pytest.approx(100 * 4 / 6)
    assert glue_score("f1", gold, pred) == pytest.approx(100 * 2 * tp / (2 * tp + fp + fn))
    mcc = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert glue_score("matthews", gold, pred) == pytest.approx(100 * mcc)
    assert glue_score("pearson", np.array([1.0, 2, 3, 4]), np.array([2.0, 4, 6, 8.5])) == pytest.approx(100 * np.corrcoef([1, 2, 3, 4], [2, 4, 6, 8.5])[0, 1])
    assert np.isnan(glue_score("pearson", np.array([1.0, 2, 3]), np.array([2.0, 2.0, 2.0])))  # constant prediction: undefined
    assert glue_score("matthews", gold, np.ones(6, dtype=int)) == 0.0
    with pytest.raises(BookError, match="unknown GLUE metric"):
        glue_score("bleu", gold, pred)


def test_welch_p():
    assert welch_p([80.0, 81.0, 79.5], [70.0, 71.0, 69.0]) < 0.01
    assert welch_p([80.0, 81.0, 79.5], [80.5, 80.0, 79.9]) > 0.3
    assert np.isnan(welch_p([1.0, 1.0], [1.0, 1.0])) and np.isnan(welch_p([80.0], [70.0, 71.0]))


def test_student_p_by_hand_and_unlike_welch_for_unequal_spreads():
    a, b = np.array([80.0, 81.0, 79.5]), np.array([70.0, 75.0, 65.0, 72.0, 68.0])
    pooled = ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2)
    t = (a.mean() - b.mean()) / np.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    assert student_p(a, b) == pytest.approx(2 * scipy.stats.t.sf(abs(t), len(a) + len(b) - 2), rel=1e-10)
    assert abs(student_p(a, b) - welch_p(a, b)) > 1e-3
    assert np.isnan(student_p([80.0], [70.0, 71.0]))


def test_glue_loaders_count_what_the_files_hold(shared_data):
    sizes = {task: (len(tasks.glue(task, "train")), len(tasks.glue(task, "dev"))) for task in tasks.GLUE_TASKS}
    assert sizes == {"sst2": (67349, 872), "mrpc": (4076, 1725), "cola": (7250, 1043), "rte": (2127, 277), "wnli": (518, 71), "stsb": (5749, 1500)}
    rte = tasks.glue("rte", "dev")
    assert set(rte["label"]) == {0, 1} and rte["text2"].str.len().min() > 0
    assert tasks.glue("stsb", "dev")["label"].between(0, 5).all()
    with pytest.raises(BookError, match="unknown GLUE task"):
        tasks.glue("qqp", "train")
    train, dev = tasks.glue_samples("wnli", 100, 1000, seed=3)  # dev asks for more than the 71 there are: all of them
    assert len(train) == 100 and len(dev) == 71 and dev.equals(tasks.glue("wnli", "dev"))
    assert train.equals(tasks.glue_samples("wnli", 100, 1000, seed=3)[0]) and not train.equals(tasks.glue_samples("wnli", 100, 1000, seed=4)[0])
    assert set(train["text1"]) <= set(tasks.glue("wnli", "train")["text1"])


def config(**changes) -> finetune.FinetuneConfig:
    """A run's settings for the tests: chapter 13's regulariser constants, small runs (FinetuneConfig has no defaults)."""
    settings = dict(
        method="none",
        epochs=1,
        batch_size=10,
        lr=1e-3,
        max_length=128,
        seed=0,
        cos_strength=1.0,
        spectrum_strength=1e-3,
        spectrum_c2=0.1,
        spectrum_gamma_pol=-0.5,
        spectrum_gamma_exp=0.5,
        flow_layers=4,
        flow_hidden=256,
        precision="none",
    )
    return finetune.FinetuneConfig(**{**settings, **changes})


def _same_partition(i1: float, i2: float, d: int) -> None:
    """I1 = min Z / max Z and I2 = std Z / mean Z of the same d values Z(c) > 0, m ≤ Z ≤ M: the spread is at least that
    of m and M alone among d values (variance ≥ (M - m)² / 2d) and at most Popoviciu's (M - m) / 2, and the mean lies in
    [m, M], so (1 - I1) / √(2d) ≤ I2 ≤ (1 / I1 - 1) / 2 (both 0 at I1 = 1)."""
    assert 0 < i1 <= 1 and (1 - i1) / np.sqrt(2 * d) - 1e-12 <= i2 <= (1 / i1 - 1) / 2 + 1e-12, (i1, i2, d)


def test_twenty_step_fine_tune_reduces_the_loss_and_learns_the_task():
    lm = tiny_model("bert")
    cfg = config(epochs=4, batch_size=10, lr=1e-3)  # 5 batches per epoch: 20 steps
    out = finetune.finetune(lm, "sst2", toy(5), toy(1), cfg)
    assert (
        len(out.history) == 4
        and out.history["task_loss"].is_monotonic_decreasing
        and out.history["task_loss"].iloc[-1] < 0.7 * out.history["task_loss"].iloc[0]
    )
    assert out.score == 100.0 and out.seconds_per_epoch > 0
    _same_partition(out.i1, out.i2, lm.width)
    _same_partition(out.i1_context, out.i2_context, lm.width)
    w = lm.model.get_input_embeddings().weight.detach().double()  # fine-tuned in place: the W that out.i1 measures
    # for every unit c, n·exp(-|mean row|) ≤ Z(c) = Σ exp(cᵀw) ≤ Σ exp(|w|) (Jensen; Cauchy-Schwarz): a floor for I1 of W
    floor = len(w) * np.exp(-float(w.mean(0).norm())) / float(w.norm(dim=1).exp().sum())
    assert floor <= out.i1, (floor, out.i1)


def test_step_times_interleave_the_methods_on_copies_of_the_encoder():
    """The flow-cost claim's measurement: every method's optimiser steps on the same batch, one of each per round, each on
    its own copy of the encoder (the model the chapter loaded is left as it was)."""
    lm = tiny_model("bert")
    before = lm.model.get_input_embeddings().weight.detach().clone()
    times = finetune.step_times(lm, "sst2", toy(3), [config(), config(method="flow", flow_hidden=16)], rounds=4, warm=1)
    assert times["method"].tolist() == ["none", "flow"] * 4 and times["round"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert (times["seconds"] > 0).all()
    assert torch.equal(lm.model.get_input_embeddings().weight, before)
    summary = isotropy_calibration.step_summary(times).set_index("method")
    assert summary.loc["none", "× none (median of rounds)"] == 1.0 and summary.index.tolist() == ["none", "flow"]


def test_predictions_scored_longest_first_come_back_in_the_rows_order():
    """Scoring in length-sorted batches gives each row the prediction it gets scored alone (padding is masked)."""
    lm = tiny_model("bert")
    frame = pd.DataFrame({"text1": GOOD + BAD + ["a long and winding sentence about a film that is neither good nor bad at all"], "text2": "", "label": 0.0})
    model = finetune.SequenceModel(lm.model, lm.width, 1)
    batched, pooled = finetune.predict(model, lm.tokenizer, frame, 64, lm.device, regression=True)
    alone = [finetune.predict(model, lm.tokenizer, frame.iloc[[i]], 64, lm.device, regression=True) for i in range(len(frame))]
    assert np.abs(batched - np.array([a[0][0] for a in alone])).max() < 1e-4 and np.unique(np.round(batched, 3)).size > 5  # float32 sums in another order
    assert pooled.shape == (len(frame), lm.width) and np.abs(pooled - np.concatenate([a[1] for a in alone])).max() < 1e-4  # embeddings in row order
    classes = finetune.predict(finetune.SequenceModel(lm.model, lm.width, 3), lm.tokenizer, frame, 64, lm.device, regression=False)[0]
    assert classes.dtype == np.int64 and set(classes) <= {0, 1, 2}


@pytest.mark.parametrize("method", ["cosreg", "spectrum-pol", "spectrum-exp", "flow"])
def test_each_calibration_runs_and_its_loss_goes_down(method):
    lm = tiny_model("bert")
    with torch.no_grad():  # a common direction, as trained embedding matrices have: CosReg starts well above 0
        lm.model.get_input_embeddings().weight.add_(0.05)
    strong = {"cos_strength": 50.0, "spectrum_strength": 1.0, "flow_hidden": 16, "flow_lr": 1e-2}
    # the flow learns the density of embeddings that move with the encoder: keep the encoder nearly still to see its loss fall
    cfg = config(method=method, epochs=3, batch_size=10, lr=1e-5 if method == "flow" else 1e-3, **strong)
    out = finetune.finetune(lm, "stsb", toy(5, regression=True), toy(1, regression=True), cfg)
    losses = out.history["calibration_loss"]
    assert np.isfinite(losses).all() and losses.iloc[-1] < losses.iloc[0]
    assert np.isfinite(out.i1)


def test_spectrum_targets_start_at_the_largest_singular_value_and_follow_their_formulas():
    w = torch.randn(40, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    sigma1 = np.linalg.svd(w.numpy(), compute_uv=False)[0]
    k = np.arange(1, 7)
    cfg = config(spectrum_gamma_pol=-0.5, spectrum_gamma_exp=0.5, spectrum_c2=0.3)
    pol = finetune.spectrum_target(w, replace(cfg, method="spectrum-pol")).numpy()
    exp = finetune.spectrum_target(w, replace(cfg, method="spectrum-exp")).numpy()
    np.testing.assert_allclose(pol, sigma1 * k**-0.5, rtol=1e-10)
    np.testing.assert_allclose(exp, sigma1 * np.exp(0.3) * np.exp(-0.3 * k**0.5), rtol=1e-10)
    assert exp[0] == pytest.approx(sigma1) and np.all(np.diff(exp) < 0)
    with pytest.raises(BookError, match="needs a spectrum method"):
        finetune.spectrum_target(w, cfg)


def test_spectrum_scale_multiplies_the_prior_and_with_spectrum_keeps_the_singular_vectors():
    w = torch.randn(40, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 0.5
    cfg = config(method="spectrum-exp")
    prior = finetune.spectrum_target(w, replace(cfg, spectrum_scale=0.25))
    np.testing.assert_allclose(prior.numpy(), 0.25 * finetune.spectrum_target(w, cfg).numpy(), rtol=1e-12)
    moved = calibration.with_spectrum(w, prior)
    u, s, vt = np.linalg.svd(w.numpy(), full_matrices=False)
    u2, s2, vt2 = np.linalg.svd(moved.numpy(), full_matrices=False)
    np.testing.assert_allclose(s2, prior.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(vt * vt2, axis=1)), 1.0, atol=1e-8)  # the same right singular vectors, up to sign
    np.testing.assert_allclose(np.abs(np.sum(u * u2, axis=0)), 1.0, atol=1e-8)


def test_i1_of_w_on_its_prior_tends_to_one_as_the_prior_shrinks():
    """Z(c) → vocabulary size for every direction as W shrinks, so I1 → 1 whatever the prior's shape."""
    w = torch.randn(300, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64) + 1.0  # a common direction
    cfg = config(method="spectrum-exp")
    i1 = [finetune.prior_measures(w, replace(cfg, spectrum_scale=s))["I1"] for s in (1.0, 0.1, 0.001)]
    assert i1[0] < 0.5 and i1[0] < i1[1] < i1[2] and i1[2] > 0.99


def test_start_at_prior_runs_from_w_on_its_prior():
    """With a learning rate too small to move W, I1 after the run is I1 of W moved onto the prior."""
    lm = tiny_model("bert")
    cfg = config(method="spectrum-exp", spectrum_scale=0.1, start_at_prior=True, lr=1e-9, epochs=1)
    expected = finetune.prior_measures(lm.model.get_input_embeddings().weight.detach().double(), cfg)["I1"]
    out = finetune.finetune(lm, "sst2", toy(2), toy(1), cfg)
    assert out.i1 == pytest.approx(expected, abs=1e-4)  # float32 weights; lr 1e-9 moves each by ≤ 2e-9
    with pytest.raises(BookError, match="start_at_prior needs a spectrum method"):
        config(start_at_prior=True).check()


def test_bad_method_is_one_line():
    with pytest.raises(BookError, match="calibration method must be one of") as err:
        config(method="whiten").check()
    assert "\n" not in str(err.value)


def test_cached_run_reuses_a_result_only_for_the_same_weights_data_and_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    lm = tiny_model("bert")
    lm.model.save_pretrained(tmp_path / "models" / "tiny")
    lm.tokenizer.save_pretrained(tmp_path / "models" / "tiny")
    write_manifest(tmp_path / "models" / "tiny")  # as chapter 05 saves its models: every load checks the folder against it
    cfg = config(epochs=1, batch_size=10, lr=1e-3)
    first, cached = finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), cfg, device="cpu")
    assert not cached and first["steps"] == 2 and first["method"] == "none" and first["task"] == "SST-2"
    again, cached = finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), cfg, device="cpu")
    assert cached and again == first
    files = list((tmp_path / "cache" / "finetune").iterdir())
    assert len(files) == 1 and not files[0].name.startswith(".") and cached == files[0]  # no temporary file left behind
    assert not finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), replace(cfg, seed=1), device="cpu")[1]
    assert not finetune.cached_run("trained:tiny", "sst2", toy(3), toy(1), cfg, device="cpu")[1]
    with torch.no_grad():  # same name, other weights: a new run
        lm.model.get_input_embeddings().weight.mul_(2.0)
    lm.model.save_pretrained(tmp_path / "models" / "tiny")
    write_manifest(tmp_path / "models" / "tiny")
    assert not finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), cfg, device="cpu")[1]
    assert finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), cfg, device="cpu")[1]
    monkeypatch.setattr(finetune.codegraph, "digest", lambda module, root=None: "other code")  # the code that computes runs changed
    assert not finetune.cached_run("trained:tiny", "sst2", toy(2), toy(1), cfg, device="cpu")[1]


def test_summary_statistics_by_hand():
    runs = pd.DataFrame(
        {
            "model": "m",
            "task": ["A"] * 6 + ["B"] * 2,
            "metric": "accuracy",
            "method": ["none"] * 3 + ["cosreg"] * 3 + ["none", "flow"],
            "score": [80.0, 81.0, 79.0, 70.0, 71.0, 69.5, 50.0, 60.0],
            "I1": [0.8, 0.8, 0.8, 0.9, 0.92, 0.94, 0.8, 0.85],
            "I2": [0.1] * 8,
            "I1_context": [0.5, 0.5, 0.5, 0.6, 0.6, 0.6, 0.4, 0.3],
            "I2_context": [0.2] * 8,
            "seconds_per_epoch": [10.0, 10.0, 10.0, 12.0, 13.0, 14.0, 5.0, 20.0],
        }
    )
    from lib.experiments.isotropy_calibration import CALIBRATION_SUMMARY

    summary = CALIBRATION_SUMMARY.check(isotropy_calibration.summarise(runs)).set_index(["task", "method"])  # the columns the scorecard reads
    none, cos = summary.loc[("A", "none")], summary.loc[("A", "cosreg")]
    assert none["runs"] == 3 and none["score_mean"] == pytest.approx(80.0) and none["score_std"] == pytest.approx(1.0)
    assert none["scored_runs"] == 3
    undefined = runs.assign(score=runs["score"].where(runs.index != 3))  # one cosreg run predicted a constant: no score
    assert isotropy_calibration.summarise(undefined).set_index(["task", "method"]).loc[("A", "cosreg"), ["runs", "scored_runs"]].tolist() == [3, 2]
    assert np.isnan(none["p"]) and not none["significant"] and np.isnan(none["difference"]) and none["time_ratio"] == pytest.approx(1.0)
    assert cos["difference"] == pytest.approx(70.1666667 - 80.0) and cos["p"] == pytest.approx(welch_p([70.0, 71.0, 69.5], [80.0, 81.0, 79.0]))
    assert cos["p_student"] == pytest.approx(student_p([70.0, 71.0, 69.5], [80.0, 81.0, 79.0]))
    assert cos["significant"] and cos["time_ratio"] == pytest.approx(1.3) and cos["I1_mean"] == pytest.approx(0.92) and cos["I1_std"] == pytest.approx(0.02)
    flow = summary.loc[("B", "flow")]  # one run each: no t-test, but the difference and time ratio are defined
    assert np.isnan(flow["p"]) and not flow["significant"] and flow["difference"] == pytest.approx(10.0) and flow["time_ratio"] == pytest.approx(4.0)
    overview = isotropy_calibration.method_overview(isotropy_calibration.summarise(runs)).set_index("method")
    assert overview.loc["cosreg", "I1_output"] == pytest.approx(0.6) and overview.loc["cosreg", "I1_output_uncalibrated"] == pytest.approx(
        0.45
    )  # over both tasks
    assert overview.loc["cosreg", "I1_W"] == pytest.approx(0.92) and overview.loc["cosreg", "significantly_better"] == 0
    assert overview.loc["cosreg", "significantly_worse"] == 1 and overview.loc["flow", "mean_difference"] == pytest.approx(10.0)


def test_the_papers_table_4_fills_the_output_columns_only():

    theirs = isotropy_calibration.method_overview(isotropy_calibration.paper_summary())
    assert theirs["I1_W"].isna().all()
    # I1_output is a mean over tasks of Table 4's I1 (each in (0, 1]): it lies between that model's and method's smallest and largest
    printed = pd.DataFrame(paper.values()["ding2022"]["glue_isotropy"]).groupby(["model", "method"])["I1"]
    for column, method in (("I1_output", theirs["method"]), ("I1_output_uncalibrated", "none")):
        keys = pd.MultiIndex.from_frame(theirs[["model"]].assign(method=method))
        low, high = printed.min().reindex(keys).to_numpy(), printed.max().reindex(keys).to_numpy()
        assert ((low - 1e-12 <= theirs[column]) & (theirs[column] <= high + 1e-12)).all() and (low > 0).all() and (high <= 1).all(), column


def _tiny_grid(tmp_path, monkeypatch) -> tuple:
    """run_grid's arguments for a saved tiny BERT: one task, two methods, two seeds."""
    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    lm = tiny_model("bert")
    lm.model.save_pretrained(tmp_path / "models" / "tiny")
    lm.tokenizer.save_pretrained(tmp_path / "models" / "tiny")
    write_manifest(tmp_path / "models" / "tiny")
    return (["trained:tiny"], {"sst2": (toy(2), toy(1))}, ["none", "cosreg"], [0, 1], config(batch_size=10, lr=1e-3), {"sst2": 1})


def test_the_grid_on_two_dask_workers_gives_the_serial_runs_and_never_computes_one_twice(tmp_path, monkeypatch, cluster_extra):
    from lib.train import workers

    grid = _tiny_grid(tmp_path, monkeypatch)
    threads = torch.get_num_threads()
    torch.set_num_threads(cpu_share(2))  # as each of the 2 workers runs: the same kernels, the same sums
    try:
        monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "serial"))
        serial = isotropy_calibration.run_grid(*grid, device="cpu")
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "workers"))
    with workers.pool("local:2") as client:
        assert len(client.scheduler_info()["workers"]) == 2
        parallel = isotropy_calibration.run_grid(*grid, device="cpu", client=client)
        stored = {p: p.stat().st_mtime_ns for p in (tmp_path / "workers" / "finetune").iterdir()}
        again = isotropy_calibration.run_grid(*grid, device="cpu", client=client)  # every run is in the cache: none is computed again
    assert len(stored) == 4 and {p: p.stat().st_mtime_ns for p in (tmp_path / "workers" / "finetune").iterdir()} == stored
    timing = ["seconds_per_epoch"]
    pd.testing.assert_frame_equal(parallel.drop(columns=timing), serial.drop(columns=timing))
    pd.testing.assert_frame_equal(again, parallel)
    assert list(parallel["method"]) == ["none", "none", "cosreg", "cosreg"] and list(parallel["seed"]) == [0, 1, 0, 1]


def test_workers_settings_say_what_is_wrong(cluster_extra):
    from lib.train import workers

    for bad, message in [("local:0", "local:N with N ≥ 1"), ("my-cluster", "a Dask scheduler address")]:
        with pytest.raises(BookError, match=message):
            with workers.pool(bad):
                pass


def test_the_grid_on_free_cores_gives_the_one_thread_serial_runs_in_order_and_widens_when_cores_free(tmp_path, monkeypatch):
    from lib import processes
    from lib.train import workers

    grid = _tiny_grid(tmp_path, monkeypatch)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each process of the pool runs
    try:
        monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "serial"))
        serial = isotropy_calibration.run_grid(*grid, device="cpu")
    finally:
        torch.set_num_threads(threads)
    # another chapter of the build holds every core but one: the pool starts one run at a time
    running = tmp_path / "running"
    running.mkdir()
    me = f"{os.getpid()} {{}} {processes.start_time(os.getpid())}\n"  # as a live process of the build writes it
    (running / "09_other.pid").write_text(me.format((os.cpu_count() or 1) - 1))
    (running / "13_this.pid").write_text(me.format(1))
    monkeypatch.setenv(processes.RUNNING, str(running))
    monkeypatch.setenv(processes.CHAPTER, "13_this")
    assert processes.free_cores() == 1
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cores"))
    with workers.pool("cores") as cores:
        assert isinstance(cores, workers.Cores)
        parallel = isotropy_calibration.run_grid(*grid, device="cpu", client=cores)
    timing = ["seconds_per_epoch"]
    pd.testing.assert_frame_equal(parallel.drop(columns=timing), serial.drop(columns=timing))
    assert list(parallel["method"]) == ["none", "none", "cosreg", "cosreg"] and list(parallel["seed"]) == [0, 1, 0, 1]
    (running / "09_other.pid").write_text("999999999 1\n")  # that chapter ended (no such process): its cores are free
    assert processes.free_cores() == (os.cpu_count() or 1)


def test_a_task_of_chapter_13_trained_ahead_is_what_the_chapter_then_reads_from_the_cache(tmp_path, monkeypatch, shared_data):
    """`lib.edition.finetuning`: one command per task of the chapter's grid (`isotropy_calibration.grid`, the values the
    chapter computes with); after it, the chapter's runs of that task all come from the cache, and the grid refuses
    values the chapter would refuse."""
    import json
    import subprocess

    from lib.core.profiles import chapter_parameters, plan
    from lib.edition import finetuning
    from lib.settings import REPO_ROOT

    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    changes = {"tasks": "rte,wnli", "methods": "none,flow", "seeds": 1, "n_train": 8, "n_dev": 8, "device": "cpu", "dtype": "float32"}
    ((_, params),) = plan("quick", ["13_isotropy_calibration"], changes)
    commands = finetuning.ahead("quick", params)
    assert list(commands) == ["13_isotropy_calibration:rte", "13_isotropy_calibration:wnli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(commands["13_isotropy_calibration:wnli"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "wnli: 2 fine-tuning runs cached" in done.stdout, done.stderr[-3000:]
    values = {**chapter_parameters("13_isotropy_calibration", "quick"), **json.loads(json.dumps(params))}  # as the command reads them
    grid = isotropy_calibration.grid(["minilm"], values)
    assert grid.epochs["wnli"] == values["epochs_small"] and grid.seeds == [values["seed"]] and len(grid.splits["wnli"][0]) == 8

    def untrained(*args, **kwargs):
        raise AssertionError("a run the command ahead trained was trained again")

    monkeypatch.setattr(finetune, "finetune", untrained)
    wnli = {"wnli": grid.splits["wnli"]}
    rows = isotropy_calibration.run_grid(grid.specs, wnli, grid.methods, grid.seeds, grid.base, grid.epochs, device="cpu", dtype="float32")
    assert list(rows["method"]) == ["none", "flow"] and rows["task"].eq("WNLI").all()
    with pytest.raises(BookError, match="methods: unknown .typo.; choose from none"):
        isotropy_calibration.grid(["minilm"], {**values, "methods": "none,typo"})
    with pytest.raises(BookError, match="parameter n_train must be a positive integer"):
        isotropy_calibration.grid(["minilm"], {**values, "n_train": 0})
