"""Fine-tuning with calibration (chapter 13), GLUE loaders and metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from lib import data, finetune
from lib.errors import BookError
from lib.metrics import glue_score, welch_p

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


def test_glue_loaders_count_what_the_files_hold(shared_data):
    sizes = {task: (len(data.glue(task, "train")), len(data.glue(task, "dev"))) for task in data.GLUE_TASKS}
    assert sizes == {"sst2": (67349, 872), "mrpc": (4076, 1725), "cola": (7250, 1043), "rte": (2127, 277), "wnli": (518, 71), "stsb": (5749, 1500)}
    rte = data.glue("rte", "dev")
    assert set(rte["label"]) == {0, 1} and rte["text2"].str.len().min() > 0
    assert data.glue("stsb", "dev")["label"].between(0, 5).all()
    with pytest.raises(BookError, match="unknown GLUE task"):
        data.glue("qqp", "train")


def test_twenty_step_fine_tune_reduces_the_loss_and_learns_the_task():
    lm = tiny_model("bert")
    cfg = finetune.FinetuneConfig(epochs=4, batch_size=10, lr=1e-3)  # 5 batches per epoch: 20 steps
    out = finetune.finetune(lm, "sst2", toy(5), toy(1), cfg)
    assert len(out.history) == 4 and out.history["task_loss"].is_monotonic_decreasing and out.history["task_loss"].iloc[-1] < 0.7 * out.history["task_loss"].iloc[0]
    assert out.score == 100.0
    assert 0 < out.i1 <= 1 and out.i2 >= 0 and out.seconds_per_epoch > 0


@pytest.mark.parametrize("method", ["cosreg", "spectrum-pol", "spectrum-exp", "flow"])
def test_each_calibration_runs_and_its_loss_goes_down(method):
    lm = tiny_model("bert")
    with torch.no_grad():  # a common direction, as trained embedding matrices have: CosReg starts well above 0
        lm.model.get_input_embeddings().weight.add_(0.05)
    strong = dict(cos_strength=50.0, spectrum_strength=1.0, flow_hidden=16, flow_lr=1e-2)
    # the flow learns the density of embeddings that move with the encoder: keep the encoder nearly still to see its loss fall
    cfg = finetune.FinetuneConfig(method=method, epochs=3, batch_size=10, lr=1e-5 if method == "flow" else 1e-3, **strong)
    out = finetune.finetune(lm, "stsb", toy(5, regression=True), toy(1, regression=True), cfg)
    losses = out.history["calibration_loss"]
    assert np.isfinite(losses).all() and losses.iloc[-1] < losses.iloc[0]
    assert np.isfinite(out.i1)


def test_bad_method_is_one_line():
    with pytest.raises(BookError, match="calibration method must be one of") as err:
        finetune.FinetuneConfig(method="whiten").check()
    assert "\n" not in str(err.value)
