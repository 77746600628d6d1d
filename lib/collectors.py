"""Streaming collectors for `extraction.extract`: per-layer statistics and seeded token samples.

All three are exact and order-independent: statistics are sums, and samples choose tokens by a
hash of (seed, sentence index, position), so the same inputs and seed give the same tokens
whatever the batch size.
"""

from __future__ import annotations

import numpy as np
import torch

from .errors import require
from .extraction import TokenBatch

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def token_keys(seed: int, sentence_ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) keys from a SplitMix64 hash of (seed, sentence, position); same token, same key."""
    with np.errstate(over="ignore"):
        x = (np.asarray(sentence_ids, dtype=np.uint64) << np.uint64(20)) ^ np.asarray(positions, dtype=np.uint64)
        x = x + np.uint64(seed & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9) & _MASK64
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB) & _MASK64
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


class LayerStats:
    """Per layer: token count, mean, argmin/argmax counts per dimension, and covariance (float64).

    The covariance accumulates cross-products of vectors shifted by the first batch's mean, which
    keeps float32 batch products accurate when the mean is large (outlier dimensions), and sums
    them in float64.
    """

    def __init__(self, covariance: bool = True, include_special: bool = True):
        self.with_covariance = covariance
        self.include_special = include_special
        self.count = 0
        self._sum: torch.Tensor | None = None
        self._argmin: torch.Tensor | None = None
        self._argmax: torch.Tensor | None = None
        self._shift: torch.Tensor | None = None
        self._shifted_sum: torch.Tensor | None = None
        self._m2: torch.Tensor | None = None

    def update(self, batch: TokenBatch) -> None:
        h = batch.hidden
        if not self.include_special:
            h = h[:, torch.from_numpy(~batch.special).to(h.device)]
        n_layers, n, width = h.shape
        if n == 0:
            return
        if self._sum is None:
            dev = h.device
            self._sum = torch.zeros(n_layers, width, dtype=torch.float64, device=dev)
            self._argmin = torch.zeros(n_layers * width, dtype=torch.long, device=dev)
            self._argmax = torch.zeros(n_layers * width, dtype=torch.long, device=dev)
            if self.with_covariance:
                self._shift = h.mean(dim=1, keepdim=True)
                self._shifted_sum = torch.zeros(n_layers, width, dtype=torch.float64, device=dev)
                self._m2 = torch.zeros(n_layers, width, width, dtype=torch.float64, device=dev)
        self.count += n
        self._sum += h.sum(dim=1, dtype=torch.float64)
        offsets = (torch.arange(n_layers, device=h.device) * width).unsqueeze(1)
        self._argmin += torch.bincount((h.argmin(dim=2) + offsets).flatten(), minlength=n_layers * width)
        self._argmax += torch.bincount((h.argmax(dim=2) + offsets).flatten(), minlength=n_layers * width)
        if self.with_covariance:
            x = h - self._shift
            self._shifted_sum += x.sum(dim=1, dtype=torch.float64)
            self._m2 += torch.bmm(x.transpose(1, 2), x).double()

    def _ready(self) -> None:
        require(self.count > 0, "no tokens were collected: the sample is empty")

    @property
    def n_layers(self) -> int:
        self._ready()
        return self._sum.shape[0]

    @property
    def mean(self) -> np.ndarray:
        """(n_layers + 1, width) float64."""
        self._ready()
        return (self._sum / self.count).cpu().numpy()

    @property
    def argmin_counts(self) -> np.ndarray:
        """(n_layers + 1, width): how many vectors have their minimum in each dimension."""
        self._ready()
        return self._argmin.view(self.n_layers, -1).cpu().numpy()

    @property
    def argmax_counts(self) -> np.ndarray:
        self._ready()
        return self._argmax.view(self.n_layers, -1).cpu().numpy()

    def covariance(self, layer: int | None = None) -> np.ndarray:
        """Unbiased covariance, float64: (width, width) for one layer, or all layers stacked."""
        self._ready()
        require(self.with_covariance, "covariance was not collected: create LayerStats(covariance=True)")
        require(self.count > 1, "covariance needs at least two tokens")
        require(layer is None or -self.n_layers <= layer < self.n_layers,
                f"layer {layer} does not exist: this model has hidden states 0..{self.n_layers - 1}")
        s = self._shifted_sum if layer is None else self._shifted_sum[layer]
        m2 = self._m2 if layer is None else self._m2[layer]
        cov = (m2 - s.unsqueeze(-1) * s.unsqueeze(-2) / self.count) / (self.count - 1)
        return cov.cpu().numpy()


class TokenReservoir:
    """A uniform sample of k tokens (without replacement) with their vectors in chosen layers.

    Tokens are kept by smallest hash key, so the sample is the same for any batch size or order.
    """

    def __init__(self, k: int, seed: int, layers: list[int] | None = None, include_special: bool = True):
        require(k > 0, f"reservoir size must be positive, got {k}")
        self.k, self.seed, self.layers, self.include_special = k, seed, layers, include_special
        self.keys = np.empty(0)
        self.token_ids = np.empty(0, dtype=np.int64)
        self.positions = np.empty(0, dtype=np.int64)
        self.sentence_ids = np.empty(0, dtype=np.int64)
        self.special = np.empty(0, dtype=bool)
        self.vectors: np.ndarray | None = None  # (n_kept, n_layers_kept, width) float32

    def update(self, batch: TokenBatch) -> None:
        keys = token_keys(self.seed, batch.sentence_ids, batch.positions)
        if not self.include_special:
            keys = np.where(batch.special, np.inf, keys)
        threshold = np.partition(self.keys, self.k - 1)[self.k - 1] if len(self.keys) >= self.k else np.inf
        take = np.flatnonzero(keys < threshold)
        if len(take) == 0:
            return
        h = batch.hidden if self.layers is None else batch.hidden[self.layers]
        new_vectors = h[:, torch.from_numpy(take).to(h.device)].transpose(0, 1).cpu().numpy()
        all_keys = np.concatenate([self.keys, keys[take]])
        keep = np.argsort(all_keys, kind="stable")[: self.k]
        keep = keep[np.isfinite(all_keys[keep])]
        cat = lambda old, new: np.concatenate([old, new])[keep]  # noqa: E731
        self.vectors = cat(self.vectors, new_vectors) if self.vectors is not None else new_vectors[keep]
        self.keys = all_keys[keep]
        self.token_ids = cat(self.token_ids, batch.token_ids[take])
        self.positions = cat(self.positions, batch.positions[take])
        self.sentence_ids = cat(self.sentence_ids, batch.sentence_ids[take])
        self.special = cat(self.special, batch.special[take])


class SentenceTokenSampler:
    """One random token per sentence (hash-chosen), with its vector in every layer."""

    def __init__(self, seed: int, include_special: bool = False):
        self.seed, self.include_special = seed, include_special
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def update(self, batch: TokenBatch) -> None:
        keys = token_keys(self.seed, batch.sentence_ids, batch.positions)
        if not self.include_special:
            keys = np.where(batch.special, np.inf, keys)
        order = np.lexsort((keys, batch.sentence_ids))  # by sentence, then key
        first = np.ones(len(order), dtype=bool)
        first[1:] = batch.sentence_ids[order][1:] != batch.sentence_ids[order][:-1]
        chosen = order[first]
        chosen = chosen[np.isfinite(keys[chosen])]
        vectors = batch.hidden[:, torch.from_numpy(chosen).to(batch.hidden.device)].transpose(0, 1).cpu().numpy()
        self._parts.append((batch.sentence_ids[chosen], batch.token_ids[chosen], batch.positions[chosen], vectors))

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sentence_ids, token_ids, positions, vectors (n, n_layers + 1, width)) sorted by sentence."""
        require(len(self._parts) > 0, "no tokens were sampled: the sentences are empty")
        sid, tid, pos, vec = (np.concatenate(x) for x in zip(*self._parts))
        order = np.argsort(sid)
        return sid[order], tid[order], pos[order], vec[order]
