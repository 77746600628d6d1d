"""Fine-tuning an encoder on a GLUE task with an optional isotropy calibration (chapter 13, Ding et al. 2022).

The model is the encoder, mean pooling over real tokens, dropout and a linear head (one output for STS-B,
a regression). Calibration acts on the encoder's token-embedding matrix W (the matrix BERT-style models tie
to their output layer): CosReg or spectrum control is added to the task loss; or a flow maps the pooled
embedding to a Gaussian latent on which the head is trained. The flow is trained by its likelihood alone
(the task loss reaches the encoder and head through it but does not change it) and that likelihood does
not reach the encoder, which could otherwise collapse the embeddings to raise it. The paper fine-tunes with a constant learning rate (no schedule), as here.

Forward passes may run under bf16 autocast (`precision`; the weights, optimiser, losses, pooling and the isotropy
measures stay float32). Training batches are drawn in a seeded random order. The development set is scored longest first, which pads far
less and gives the same predictions. (Length-grouped training batches, as the Trainer's `group_by_length`, were tried
and dropped: at these few dozen steps they changed the scores well beyond seed noise, e.g. MRPC F1 78 → 64.)
Finished runs are cached under a key that includes the code of the modules that compute them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm import tqdm

from .. import codegraph
from ..datasets.tasks import GLUE_TASKS
from ..encode.models import LoadedModel, load_model, weights_digest
from ..errors import require
from ..io import write_atomic
from ..measure import isotropy
from ..measure.metrics import glue_score
from ..settings import autocast, cache_dir
from . import calibration

METHODS = ("none", "cosreg", "spectrum-pol", "spectrum-exp", "flow")


@dataclass(frozen=True)
class FinetuneConfig:
    """One fine-tuning run. Regulariser constants are not given by the paper; chapter 13's parameters cell holds the
    book's choices (no defaults here, so that cell stays their one home)."""

    method: str
    epochs: int
    batch_size: int
    lr: float
    max_length: int
    seed: int
    cos_strength: float  # λ_c
    spectrum_strength: float  # λ_p = λ_e
    spectrum_c2: float  # exponential prior's rate
    spectrum_gamma_pol: float  # polynomial prior c1·k^γ
    spectrum_gamma_exp: float  # exponential prior c1·exp(−c2·k^γ); c1 = σ1 of the pre-trained matrix
    flow_layers: int
    flow_hidden: int
    precision: str  # "bfloat16": forward passes (training and dev scoring) under bf16 autocast (`settings.autocast_precision`); "none"
    flow_lr: float = 1e-3  # the flow's own learning rate (not a chapter parameter)
    spectrum_scale: float = 1.0  # the prior's first value as a multiple of σ1 of the pre-trained W (chapter 13's scale sweep)
    start_at_prior: bool = False  # spectrum methods: W starts at its prior (U diag(prior) Vᵀ), as if the penalty had already won

    def check(self) -> None:
        require(self.method in METHODS, f"calibration method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for name in ("epochs", "batch_size", "max_length"):
            value = getattr(self, name)
            require(isinstance(value, int) and value > 0, f"fine-tuning setting {name} must be a positive integer, got {value!r}")
        require(self.lr > 0, f"lr must be positive, got {self.lr}")
        require(self.precision in ("bfloat16", "none"), f"precision must be 'bfloat16' or 'none', got {self.precision!r}")
        require(self.spectrum_scale > 0, f"spectrum_scale must be positive, got {self.spectrum_scale}")
        require(not self.start_at_prior or self.method.startswith("spectrum"), f"start_at_prior needs a spectrum method, got {self.method!r}")


class SequenceModel(nn.Module):
    """Encoder → mean pooling → (flow) → dropout → linear head."""

    def __init__(self, encoder: nn.Module, width: int, n_outputs: int, flow: calibration.Flow | None = None, dropout: float = 0.1):
        super().__init__()
        self.encoder, self.flow = encoder, flow
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(width, n_outputs)

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(head outputs, pooled embeddings)."""
        hidden = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
        features = self.flow(pooled)[0] if self.flow is not None else pooled
        return self.head(self.dropout(features)), pooled


def calibration_loss(model: SequenceModel, cfg: FinetuneConfig, prior: torch.Tensor | None, pooled: torch.Tensor) -> torch.Tensor:
    """The calibration term added to the task loss for cfg.method (zero for none)."""
    w = model.encoder.get_input_embeddings().weight
    if cfg.method == "cosreg":
        return calibration.cosine_regulariser(w, cfg.cos_strength)
    if cfg.method.startswith("spectrum"):
        return calibration.spectrum_regulariser(w, cfg.spectrum_strength, prior)
    if cfg.method == "flow":
        return model.flow.nll(pooled.detach())
    return pooled.new_zeros(())


def weight_penalty(model: SequenceModel, cfg: FinetuneConfig, prior: torch.Tensor | None) -> float | None:
    """The calibration term of a regulariser on W (CosReg, spectrum control) as W stands: what the regulariser drives
    down, so its value before and after a run shows whether the run was long enough for it to act; None for the
    methods without one (none, flow)."""
    if cfg.method != "cosreg" and not cfg.method.startswith("spectrum"):
        return None
    with torch.no_grad():
        return float(calibration_loss(model, cfg, prior, torch.zeros(())))


def spectrum_target(w: torch.Tensor, cfg: FinetuneConfig) -> torch.Tensor:
    """The prior that spectrum-pol / spectrum-exp pull W's singular values towards; both start at
    cfg.spectrum_scale × σ1 of W."""
    require(cfg.method in ("spectrum-pol", "spectrum-exp"), f"spectrum_target needs a spectrum method, got {cfg.method!r}")
    sigma1 = cfg.spectrum_scale * float(calibration.singular_values(w)[0])
    if cfg.method == "spectrum-pol":
        return calibration.spectrum_prior(min(w.shape), "polynomial", sigma1, cfg.spectrum_c2, cfg.spectrum_gamma_pol, device=w.device)
    return calibration.spectrum_prior(min(w.shape), "exponential", sigma1 * np.exp(cfg.spectrum_c2), cfg.spectrum_c2, cfg.spectrum_gamma_exp, device=w.device)


def prior_measures(w: torch.Tensor, cfg: FinetuneConfig) -> dict[str, float]:
    """I1 and I2 of W moved onto cfg's spectrum prior (its singular vectors kept): where spectrum control pulls W."""
    return isotropy.partition_measures(calibration.with_spectrum(w, spectrum_target(w, cfg)).cpu().numpy())


@dataclass
class FinetuneResult:
    """Dev score (×100), isotropy after fine-tuning of the token-embedding matrix W (i1, i2) and of the development
    examples' pooled output embeddings (i1_context, i2_context), seconds per epoch, optimiser steps, loss per epoch,
    and the regulariser's penalty on W before and after (`weight_penalty`)."""

    score: float
    i1: float
    i2: float
    i1_context: float
    i2_context: float
    seconds_per_epoch: float
    steps: int
    history: pd.DataFrame
    penalty_start: float | None = None
    penalty_end: float | None = None


def _encode(tokenizer, rows: pd.DataFrame, max_length: int, **kwargs):
    pairs = rows["text2"].astype(bool).any()
    return tokenizer(rows["text1"].tolist(), rows["text2"].tolist() if pairs else None, truncation=True, max_length=max_length, **kwargs)


def token_lengths(tokenizer, frame: pd.DataFrame, max_length: int) -> np.ndarray:
    """Tokens per example (special tokens included, truncated at max_length)."""
    return np.array([len(ids) for ids in _encode(tokenizer, frame, max_length)["input_ids"]])


def _batches(tokenizer, frame: pd.DataFrame, order: np.ndarray, size: int, max_length: int, device: torch.device):
    for start in range(0, len(order), size):
        rows = frame.iloc[order[start : start + size]]
        enc = _encode(tokenizer, rows, max_length, padding=True, return_tensors="pt")
        yield {k: v.to(device) for k, v in enc.items()}, torch.tensor(rows["label"].to_numpy()).to(device)


def predict(
    model: SequenceModel, tokenizer, frame: pd.DataFrame, max_length: int, device: torch.device, regression: bool, precision: str = "none"
) -> tuple[np.ndarray, np.ndarray]:
    """The model's prediction (a value for regression, else a class) and pooled output embedding (n, width) for every
    row of frame, in frame's order; rows are scored longest first, 64 at a time, in eval mode."""
    model.eval()
    longest_first = np.argsort(-token_lengths(tokenizer, frame, max_length), kind="stable")
    outputs, embeddings = [], []
    with torch.no_grad():
        for batch, _ in _batches(tokenizer, frame, longest_first, 64, max_length, device):
            with autocast(precision, device):
                out, pooled = model(batch)
            out, pooled = out.float(), pooled.float()
            outputs.append(out.squeeze(-1) if regression else out.argmax(dim=-1))
            embeddings.append(pooled.double())
    predicted = np.empty(len(frame), dtype=np.float64 if regression else np.int64)
    predicted[longest_first] = torch.cat(outputs).cpu().numpy()
    pooled = np.empty((len(frame), embeddings[0].shape[1]))
    pooled[longest_first] = torch.cat(embeddings).cpu().numpy()
    return predicted, pooled


@dataclass
class Trainer:
    """One method's model, optimiser and calibration target on an encoder, and how one optimiser step is taken."""

    model: SequenceModel
    optimizer: torch.optim.Optimizer
    cfg: FinetuneConfig
    prior: torch.Tensor | None
    regression: bool
    centre: float = 0.0  # a regression target's mean and scale on the training sample (the head starts at the right scale)
    scale: float = 1.0

    def step(self, batch: dict[str, torch.Tensor], labels: torch.Tensor) -> tuple[float, float]:
        """One optimiser step on a batch: (task loss, calibration loss)."""
        with autocast(self.cfg.precision, labels.device):  # the forward pass only; losses and the calibration terms in float32
            out, pooled = self.model(batch)
        out, pooled = out.float(), pooled.float()
        if self.regression:
            task_loss = nn.functional.mse_loss(out.squeeze(-1), (labels.float() - self.centre) / self.scale)
        else:
            task_loss = nn.functional.cross_entropy(out, labels)
        extra = calibration_loss(self.model, self.cfg, self.prior, pooled)
        self.optimizer.zero_grad(set_to_none=True)
        if self.model.flow is None:
            (task_loss + extra).backward()
        else:  # the task loss trains encoder and head through the flow; only the likelihood trains the flow
            task_loss.backward()
            self.model.flow.zero_grad(set_to_none=True)
            extra.backward()
        self.optimizer.step()
        return task_loss.item(), extra.item()


def trainer(lm: LoadedModel, encoder: nn.Module, task: str, train_set: pd.DataFrame, cfg: FinetuneConfig) -> Trainer:
    """The model (encoder + pooling + head, and the flow for that method), its optimiser and the spectrum prior, seeded."""
    cfg.check()
    require(task in GLUE_TASKS, f"unknown GLUE task {task!r}; known: {', '.join(GLUE_TASKS)}")
    regression = task == "stsb"
    centre, scale = (float(train_set["label"].mean()), float(train_set["label"].std()) or 1.0) if regression else (0.0, 1.0)
    torch.manual_seed(cfg.seed)
    flow = calibration.Flow(lm.width, cfg.flow_layers, cfg.flow_hidden) if cfg.method == "flow" else None
    model = SequenceModel(encoder, lm.width, 1 if regression else int(train_set["label"].max()) + 1, flow).to(lm.device)
    w = model.encoder.get_input_embeddings().weight
    prior = spectrum_target(w.detach(), cfg) if cfg.method.startswith("spectrum") else None
    if cfg.start_at_prior:
        with torch.no_grad():
            w.copy_(calibration.with_spectrum(w.detach(), prior))
    groups = [{"params": [p for n, p in model.named_parameters() if not n.startswith("flow.")], "lr": cfg.lr}]
    if flow is not None:
        groups.append({"params": list(flow.parameters()), "lr": cfg.flow_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.0, fused=True)  # fused: one kernel for all tensors, 2-3× faster steps on CPU
    return Trainer(model, optimizer, cfg, prior, regression, centre, scale)


def finetune(lm: LoadedModel, task: str, train_set: pd.DataFrame, dev_set: pd.DataFrame, cfg: FinetuneConfig, desc: str = "") -> FinetuneResult:
    """Fine-tune lm.model (changed in place) on train_set, score on dev_set with the task's GLUE metric."""
    run = trainer(lm, lm.model, task, train_set, cfg)
    model, w = run.model, run.model.encoder.get_input_embeddings().weight
    penalty_start = weight_penalty(model, cfg, run.prior)
    rng = np.random.default_rng(cfg.seed)
    history, seconds = [], []
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        order = rng.permutation(len(train_set))
        start, task_total, extra_total, n = time.perf_counter(), 0.0, 0.0, 0
        bar = tqdm(
            _batches(lm.tokenizer, train_set, order, cfg.batch_size, cfg.max_length, lm.device),
            total=-(-len(train_set) // cfg.batch_size),
            desc=f"{desc} epoch {epoch}",
            unit="batch",
            mininterval=5.0,
            leave=False,
        )
        for batch, labels in bar:
            task_loss, extra = run.step(batch, labels)
            task_total, extra_total, n = task_total + task_loss, extra_total + extra, n + 1
        seconds.append(time.perf_counter() - start)
        history.append({"epoch": epoch, "task_loss": task_total / n, "calibration_loss": extra_total / n, "seconds": seconds[-1]})
    predicted, pooled = predict(model, lm.tokenizer, dev_set, cfg.max_length, lm.device, run.regression, cfg.precision)
    measures, context = isotropy.partition_measures(w.detach().double().cpu().numpy()), isotropy.partition_measures(pooled)
    return FinetuneResult(
        glue_score(GLUE_TASKS[task][1], dev_set["label"].to_numpy(), predicted),
        measures["I1"],
        measures["I2"],
        context["I1"],
        context["I2"],
        float(np.mean(seconds)),
        cfg.epochs * -(-len(train_set) // cfg.batch_size),
        pd.DataFrame(history),
        penalty_start,
        weight_penalty(model, cfg, run.prior),
    )


def step_times(lm: LoadedModel, task: str, train_set: pd.DataFrame, cfgs: list[FinetuneConfig], rounds: int = 20, warm: int = 3) -> pd.DataFrame:
    """Seconds per optimiser step of each configuration's method, measured in this one process on the same batch: each
    method on its own copy of the encoder, `warm` untimed steps each, then `rounds` rounds of one timed step per method,
    interleaved, so that whatever else the machine runs slows every method alike. One row per (method, round): the
    flow's cost as a ratio of these, not of epoch times measured beside other chapters' work."""
    trainers = {cfg.method: trainer(lm, copy.deepcopy(lm.model), task, train_set, cfg) for cfg in cfgs}
    first = next(iter(trainers.values()))
    batch, labels = next(
        _batches(lm.tokenizer, train_set, np.arange(min(len(train_set), first.cfg.batch_size)), first.cfg.batch_size, first.cfg.max_length, lm.device)
    )
    for run in trainers.values():
        run.model.train()
        for _ in range(warm):
            run.step(batch, labels)
    rows = []
    for r in tqdm(range(rounds), desc=f"{lm.name} step times ({', '.join(trainers)})", unit="round", leave=False):
        for method, run in trainers.items():
            _synchronise(lm.device)
            start = time.perf_counter()
            run.step(batch, labels)
            _synchronise(lm.device)
            rows.append({"method": method, "round": r, "seconds": time.perf_counter() - start})
    return pd.DataFrame(rows)


def _synchronise(device: torch.device) -> None:
    """Wait for the device's queued work, so that a step's time is its own (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _run_key(lm: LoadedModel, task: str, train_set: pd.DataFrame, dev_set: pd.DataFrame, cfg: FinetuneConfig) -> str:
    """Hash of everything a run's result depends on: the weights, the data, the settings, the device and the code."""
    code = codegraph.digest(__name__)  # this module and every lib file it runs
    digest = hashlib.sha256(json.dumps([lm.spec, task, asdict(cfg), str(lm.device), str(lm.model.dtype), code]).encode())
    digest.update(weights_digest(lm).encode())
    for frame in (train_set, dev_set):
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:20]


def cached_run(
    spec: str, task: str, train_set: pd.DataFrame, dev_set: pd.DataFrame, cfg: FinetuneConfig, device: str = "auto", dtype: str = "float32"
) -> tuple[dict, Path | None]:
    """One fine-tuning run of a freshly loaded model as a result row, and the cache file it came from (None: run now).
    Rows are kept under cache_dir()/finetune, one JSON file per run, so an interrupted grid resumes where it stopped."""
    lm = load_model(spec, device=device, dtype=dtype)
    path = cache_dir() / "finetune" / f"{_run_key(lm, task, train_set, dev_set, cfg)}.json"
    if path.exists():
        return json.loads(path.read_text()), path
    out = finetune(lm, task, train_set, dev_set, cfg, desc=f"{lm.name} {task} {cfg.method} seed {cfg.seed}")
    row = {
        "model": lm.name,
        "spec": spec,
        "task": GLUE_TASKS[task][0],
        "metric": GLUE_TASKS[task][1],
        "method": cfg.method,
        "seed": cfg.seed,
        "steps": out.steps,
        "score": out.score,
        "I1": out.i1,
        "I2": out.i2,
        "I1_context": out.i1_context,
        "I2_context": out.i2_context,
        "seconds_per_epoch": out.seconds_per_epoch,
        "final_task_loss": float(out.history["task_loss"].iloc[-1]),
        "final_calibration_loss": float(out.history["calibration_loss"].iloc[-1]),
        "penalty_start": out.penalty_start,
        "penalty_end": out.penalty_end,
    }
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(row)))
    return row, None
