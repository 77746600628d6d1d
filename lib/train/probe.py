"""Linear softmax classifiers: the neuron-level position probe of Luo et al. (2021, §3), a bias-free map W
(classes x width) from a token vector to its position trained with Adam and cross-entropy, with each neuron's
contribution c(i) = |w_{y,i} * v_i| for the true class y; and the frozen-feature sentence classifiers of their §4.4,
fitted to convergence (L-BFGS, scikit-learn) with the L2 strength chosen on development data."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from tqdm import tqdm

from ..errors import require
from ..measure.outliers import descending_ranks
from ..settings import pick_device

STILL_RISING = 0.005  # a last epoch that adds this much development accuracy (half a point) or more: not converged


@dataclass
class Probe:
    """Trained weights (n_classes, width) from the epoch with the best development accuracy."""

    weight: np.ndarray
    dev_accuracy: list[float]  # after each epoch
    best_epoch: int  # 1-based

    @property
    def converged(self) -> bool:
        """Whether training had levelled off: the best epoch came before the last, or the last added less than
        STILL_RISING to the development accuracy."""
        history = self.dev_accuracy
        return self.best_epoch < len(history) or (len(history) > 1 and history[-1] - history[-2] < STILL_RISING)

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """Share of rows whose highest-scoring class is the label."""
        return accuracy(self.weight, x, y)


def _check(x: np.ndarray, y: np.ndarray, n_classes: int, what: str) -> None:
    require(x.ndim == 2 and len(x) == len(y) and len(y) > 0, f"{what}: need a non-empty (n, width) matrix and n labels")
    require(int(y.min()) >= 0 and int(y.max()) < n_classes, f"{what}: labels must lie in 0..{n_classes - 1}; drop or cap larger positions first")


def _accuracy(
    weight: torch.Tensor, bias: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor, predicts: torch.Tensor | None = None, chunk: int = 65536
) -> float:
    """Share of rows whose highest-scoring row of weight (its class in `predicts`, if given) is the label."""
    correct = 0
    for i in range(0, len(y), chunk):
        best = (x[i : i + chunk] @ weight.T + (0 if bias is None else bias)).argmax(dim=1)
        correct += int(((best if predicts is None else predicts[best]) == y[i : i + chunk]).sum())
    return correct / len(y)


def train_probe(
    x: np.ndarray,
    y: np.ndarray,
    x_dev: np.ndarray,
    y_dev: np.ndarray,
    n_classes: int,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int = 0,
    device: str = "auto",
    desc: str | None = None,
) -> Probe:
    """Train the probe on (x, y); keep the weights of the epoch with the best accuracy on (x_dev, y_dev).

    Weights start at zero (the problem is convex, so no random start is needed) and the batch order
    comes from a generator seeded with `seed`: the same inputs give the same probe. epochs, batch_size and lr
    have no defaults here: chapter 04 sets them in its parameters cell. `Probe.converged` says whether the
    development accuracy had levelled off by the last epoch."""
    return train_probes(x, [y], x_dev, y_dev, n_classes, seeds=[seed], epochs=epochs, batch_size=batch_size, lr=lr, device=device, desc=desc)[0]


def train_probes(
    x: np.ndarray,
    ys: list[np.ndarray],
    x_dev: np.ndarray,
    y_dev: np.ndarray,
    n_classes: int,
    *,
    seeds: list[int],
    offsets: list[np.ndarray | None] | None = None,
    epochs: int,
    batch_size: int,
    lr: float,
    device: str = "auto",
    desc: str | None = None,
) -> list[Probe]:
    """Train one probe per training labelling ys[k] on the rows of x minus offsets[k] (None: x itself), each with its
    own batch order (a generator seeded with seeds[k]), side by side: the same probes `train_probe` trains one at a
    time, in one batched product per step (each probe's loss and Adam update are its own).

    Classes that no training label uses start at zero and get identical gradients, so their weight rows stay identical:
    they are trained as one row (its gradient that of one class) and copied back, which makes a probe with M classes
    cost what one with the classes in use costs (about a fifth of the paper's 300 on SST-2)."""
    k = len(ys)
    offsets = offsets or [None] * k
    require(k > 0 and len(seeds) == k and len(offsets) == k, "train_probes: one seed and one offset (or None) per labelling")
    for y in ys:
        _check(x, y, n_classes, "training set")
    _check(x_dev, y_dev, n_classes, "development set")
    require(epochs > 0 and batch_size > 0 and lr > 0, "epochs, batch_size and lr must be positive")
    require(all(len(y) == len(ys[0]) for y in ys), "train_probes: every labelling needs one label per training row")
    torch_device = pick_device(device)
    used = np.unique(np.concatenate(ys))
    unused = np.setdiff1d(np.arange(n_classes), used)
    classes = Classes(used, unused)
    as_tensor = lambda a, dtype=torch.float32: torch.as_tensor(a, dtype=dtype, device=torch_device)  # noqa: E731
    xt, xd, yd = as_tensor(x), as_tensor(x_dev), as_tensor(y_dev, torch.long)
    yt = torch.stack([as_tensor(classes.reduce(y), torch.long) for y in ys])
    shift = torch.stack([as_tensor(np.zeros(x.shape[1]) if o is None else o) for o in offsets])[:, None, :]  # (k, 1, width)
    with flushed_denormals():
        weights, histories, best_epochs = _train(xt, yt, shift, (xd, yd), classes, epochs, batch_size, lr, seeds, desc)
    return [Probe(classes.expand(w), h, b) for w, h, b in zip(weights, histories, best_epochs)]


@contextmanager
def flushed_denormals() -> Iterator[None]:
    """CPU float operations with denormal numbers flushed to zero while the block runs. A probe starts at zero and the
    classes of positions that never occur get ever smaller gradients, whose denormal values Adam's moment estimates then
    carry: on a CPU each operation on them is 10-100 times slower (measured here: 10× for a whole probe). Values below
    1e-38 change no prediction. Denormals are kept again afterwards (torch's default)."""
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


@dataclass
class Classes:
    """The classes some training label uses, and those none does (trained as one shared row)."""

    used: np.ndarray
    unused: np.ndarray

    @property
    def n_rows(self) -> int:
        """Rows trained: one per used class, plus one shared by the unused classes."""
        return len(self.used) + bool(len(self.unused))

    def reduce(self, y: np.ndarray) -> np.ndarray:
        """Labels as trained rows (every label in y is a used class)."""
        return np.searchsorted(self.used, y)

    def full_class(self) -> np.ndarray:
        """The class each trained row predicts: the used classes, then the first unused class (where the full probe's
        tied unused rows give their first)."""
        return np.concatenate([self.used, self.unused[:1]])

    def expand(self, weight: np.ndarray) -> np.ndarray:
        """(n_rows, width) trained rows -> (n_classes, width), every unused class a copy of the shared row."""
        full = np.empty((len(self.used) + len(self.unused), weight.shape[1]), dtype=weight.dtype)
        full[self.used] = weight[: len(self.used)]
        full[self.unused] = weight[len(self.used) :]
        return full


def _train(
    xt: torch.Tensor,
    yt: torch.Tensor,
    shift: torch.Tensor,
    dev: tuple[torch.Tensor, torch.Tensor],
    classes: Classes,
    epochs: int,
    batch_size: int,
    lr: float,
    seeds: list[int],
    desc: str | None,
) -> tuple[list[np.ndarray], list[list[float]], list[int]]:
    (xd, yd), torch_device, k = dev, xt.device, len(seeds)
    weight = torch.zeros(k, classes.n_rows, xt.shape[1], device=torch_device, requires_grad=True)
    optimizer = torch.optim.Adam([weight], lr=lr, fused=True)  # one kernel per step: the same update, a third of the time here
    # the shared row stands for m classes: its logit counts m times in the softmax, and its gradient is one class's
    m = len(classes.unused)
    log_m = torch.zeros(classes.n_rows, device=torch_device)
    if m:
        log_m[-1] = math.log(m)
        weight.register_hook(lambda g: torch.cat([g[:, :-1], g[:, -1:] / m], dim=1))
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    predicts = torch.as_tensor(classes.full_class(), device=torch_device)
    best, best_epoch, history = weight.detach().clone(), [0] * k, [[] for _ in range(k)]
    bar = tqdm(range(1, epochs + 1), desc=desc or "probe", unit="epoch", leave=False)
    for epoch in bar:
        orders = torch.stack([torch.randperm(len(xt), generator=g) for g in generators]).to(torch_device)
        for start in range(0, orders.shape[1], batch_size):
            idx = orders[:, start : start + batch_size]  # (k, batch)
            rows_in = torch.index_select(xt, 0, idx.flatten()).view(k, -1, xt.shape[1])
            transposed = weight.transpose(1, 2)
            logits = torch.baddbmm(log_m - shift @ transposed, rows_in, transposed)  # (x - shift) W^T + log m
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch.gather(yt, 1, idx).flatten(), reduction="sum") / idx.shape[1]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            for j in range(k):
                history[j].append(_accuracy(weight[j], None, xd - shift[j], yd, predicts))
                if history[j][-1] > max(history[j][:-1], default=-1.0):
                    best[j], best_epoch[j] = weight[j].detach().clone(), epoch
        bar.set_postfix(loss=f"{loss.item() / k:.3f}", dev_acc=f"{max(h[-1] for h in history):.3f}")
    return list(best.cpu().numpy()), history, best_epoch


DEFAULT_CS = tuple(10.0**k for k in range(-3, 4))  # inverse L2 strengths tried by fit_classifier


@dataclass
class Classifier:
    """A fitted sentence classifier: weights (n_classes, width), bias (or None), the chosen inverse L2 strength C,
    whether its fit converged within max_iter, and the development accuracy of every C tried."""

    weight: np.ndarray
    bias: np.ndarray | None
    c: float
    converged: bool
    dev_accuracy: dict[float, float]

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """Share of rows whose highest-scoring class is the label."""
        return accuracy(self.weight, x, y, self.bias)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The highest-scoring class of every row (the decisions `accuracy` counts)."""
        logits = torch.as_tensor(x, dtype=torch.float32) @ torch.as_tensor(self.weight).T
        return (logits + (0 if self.bias is None else torch.as_tensor(self.bias))).argmax(dim=1).numpy()


def _softmax_form(values: np.ndarray) -> np.ndarray:
    """scikit-learn's one row for a binary problem as two softmax rows with the same decisions (−v/2, v/2)."""
    return values if len(values) > 1 else np.concatenate([-values / 2, values / 2])


def fit_classifier(
    x: np.ndarray,
    y: np.ndarray,
    x_dev: np.ndarray,
    y_dev: np.ndarray,
    *,
    bias: bool,
    cs: tuple[float, ...] = DEFAULT_CS,
    max_iter: int = 5000,
    patience: int = 2,
) -> Classifier:
    """Multinomial logistic regression fitted to convergence (L-BFGS) for the inverse L2 strengths C in cs, smallest
    first, each started from the previous solution; the path stops once `patience` Cs in a row fail to beat the best
    development accuracy so far (the weakly regularised fits are the slow ones). Keeps the C with the best development
    accuracy (the smaller C on a tie). A fit that stops at max_iter is still scored, and the classifier says whether its
    own fit converged."""
    n_classes = int(max(y.max(), y_dev.max())) + 1
    _check(x, y, n_classes, "training set")
    _check(x_dev, y_dev, n_classes, "development set")
    require(len(cs) > 0 and all(c > 0 for c in cs), f"cs must be positive inverse L2 strengths, got {cs!r}")
    model = LogisticRegression(fit_intercept=bias, max_iter=max_iter, warm_start=True)
    dev, best = {}, None
    for c in sorted(cs):
        model.set_params(C=c)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(x, y)
        converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        weight = _softmax_form(model.coef_).astype(np.float32)
        offset = _softmax_form(model.intercept_[:, None])[:, 0].astype(np.float32) if bias else None
        dev[c] = accuracy(weight, x_dev, y_dev, offset)
        if best is None or dev[c] > dev[best.c]:
            best = Classifier(weight, offset, c, converged, {})
        elif sum(1 for tried in dev if tried > best.c) >= patience:
            break
    best.dev_accuracy = dev
    return best


def accuracy(weight: np.ndarray, x: np.ndarray, y: np.ndarray, bias: np.ndarray | None = None) -> float:
    """Share of rows whose highest-scoring class (x W^T + b) is the label."""
    _check(x, y, weight.shape[0], "evaluation set")
    b = None if bias is None else torch.as_tensor(bias, dtype=torch.float32)
    return _accuracy(torch.as_tensor(weight, dtype=torch.float32), b, torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y))


def correct(weight: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n,) bool: whether each row's highest-scoring class (x W^T, no bias) is its label (what `accuracy` averages)."""
    _check(x, y, weight.shape[0], "evaluation set")
    logits = torch.as_tensor(x, dtype=torch.float32) @ torch.as_tensor(weight, dtype=torch.float32).T
    return (logits.argmax(dim=1) == torch.as_tensor(y)).numpy()


def contributions(weight: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n, width): c(i) = |w_{y,i} * v_i| for each row v with true class y."""
    _check(x, y, weight.shape[0], "contribution set")
    return np.abs(weight[y] * x)


def group_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, width) float64: the sum of the rows of values (n, width) in each group (ids 0 … n_groups - 1); what
    np.add.at computes, 8× faster here (torch's index_add_)."""
    out = torch.zeros(n_groups, values.shape[1], dtype=torch.float64)
    return out.index_add_(0, torch.as_tensor(groups, dtype=torch.long), torch.as_tensor(values, dtype=torch.float64)).numpy()


def contribution_by_position(contrib: np.ndarray, positions: np.ndarray, n_positions: int) -> np.ndarray:
    """(n_positions, width): mean contribution of each neuron over the tokens at each position (NaN where none)."""
    keep = positions < n_positions
    sums = group_sums(contrib[keep], positions[keep], n_positions)
    counts = np.bincount(positions[keep], minlength=n_positions)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def first_share(contrib: np.ndarray, sentences: np.ndarray, dims: np.ndarray, draws: int = 200, seed: int = 0) -> float:
    """The share of `draws` bootstrap resamples of the sentences (their tokens together) in which one of `dims` has the
    largest mean contribution: how sure the test sample makes "an outlier ranks first" in this layer (NaN without dims)."""
    dims = np.asarray(dims, dtype=int)
    if dims.size == 0:
        return float("nan")
    ids, inverse = np.unique(sentences, return_inverse=True)
    sums = group_sums(contrib, inverse, len(ids))
    counts = np.bincount(inverse, minlength=len(ids)).astype(float)
    weights = np.random.default_rng(seed).multinomial(len(ids), np.full(len(ids), 1 / len(ids)), size=draws).astype(float)  # resampled sentences
    means = (weights @ sums) / (weights @ counts)[:, None]
    return float(np.isin(means.argmax(axis=1), dims).mean())


def contribution_summary(contrib: np.ndarray, positions: np.ndarray, dims: np.ndarray, n_positions: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """One layer's contributions (n, width) summarised for the outlier dimensions `dims`: a row with the mean over all
    neurons, the top neuron and the top non-outlier neuron, each outlier dimension's mean and its rank (1 = largest);
    the mean contribution of every neuron (width,); and a (n_positions, len(dims) + 1) map of the outlier dimensions'
    mean contribution by position, the last column the largest non-outlier neuron's."""
    dims = np.asarray(dims, dtype=int)
    mean = contrib.mean(axis=0)
    others = np.setdiff1d(np.arange(contrib.shape[1]), dims)
    row = {"mean_all": mean.mean(), "top_dim": int(mean.argmax()), "top_other_dim": int(others[mean[others].argmax()]), "top_other": mean[others].max()}
    for d, rank in zip(dims, descending_ranks(mean, dims)):
        row[f"dim {d}"] = mean[d]
        row[f"dim {d} rank"] = int(rank)
    by_position = contribution_by_position(contrib, positions, n_positions)
    return row, mean, np.concatenate([by_position[:, dims], np.nanmax(by_position[:, others], axis=1, keepdims=True)], axis=1)
