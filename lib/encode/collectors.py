"""Streaming collectors for `extraction.extract`, every one the book uses: per-layer statistics, seeded
token samples, all tokens, sentence means, word (span) means, per-position averages, and any of them
restricted to a subset of the sentences.

All are exact and order-independent: statistics are sums, samples choose tokens by a hash of
(seed, sentence index, position), and AllTokens sorts by (sentence, position), so the same inputs
and seed give the same result whatever the batch size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..errors import require
from .extraction import TokenBatch, to_device
from .models import LoadedModel, embedding_layernorm

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_COV_BLOCK = 96  # covariance cross-products are computed in row blocks of this many dimensions (fastest here)
_KEY = 1 << 20  # positions per sentence in the span lookup key (far above any model's maximum length)


def token_keys(seed: int, sentence_ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) keys from a SplitMix64 hash of (seed, sentence, position); same token, same key."""
    with np.errstate(over="ignore"):
        x = (np.asarray(sentence_ids, dtype=np.uint64) << np.uint64(20)) ^ np.asarray(positions, dtype=np.uint64)
        x = x + np.uint64(seed & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9) & _MASK64
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB) & _MASK64
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


def extreme_indices(values: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """For (layers, n, width) values: the dimension of each vector's minimum and of its maximum, two (layers, n) arrays."""
    require(values.ndim == 3, f"values must be (layers, n, width), got shape {tuple(values.shape)}")
    if isinstance(values, torch.Tensor) and values.device.type != "cpu":
        return values.argmin(dim=2).cpu().numpy(), values.argmax(dim=2).cpu().numpy()
    array = values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)  # NumPy's are about twice as fast as torch's on CPU
    return array.argmin(axis=2), array.argmax(axis=2)


def extreme_counts(values: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray] | tuple[torch.Tensor, torch.Tensor]:
    """For (layers, n, width) values: per layer and dimension, how many of the n vectors have their minimum
    (first array) and maximum (second) there. The book's one implementation of this count; values on a GPU are counted
    there (int64 tensors on that device: nothing waits for the device)."""
    layers, _, width = values.shape
    if isinstance(values, torch.Tensor) and values.device.type != "cpu":
        offsets = (torch.arange(layers, device=values.device) * width)[:, None]
        return tuple(torch.bincount((idx + offsets).flatten(), minlength=layers * width).view(layers, width) for idx in (values.argmin(2), values.argmax(2)))
    lo, hi = extreme_indices(values)
    offsets = (np.arange(layers) * width)[:, None]
    return tuple(np.bincount((idx + offsets).ravel(), minlength=layers * width).reshape(layers, width) for idx in (lo, hi))


class LayerStats:
    """Per layer: token count, mean, argmin/argmax counts per dimension, and covariance (float64).

    Vectors are shifted by the first batch's mean before summing, so float32 batch sums and
    cross-products stay accurate when the mean is large (outlier dimensions); the running sums
    are float64. Every sum stays on the vectors' device and reaches the host once, when read.
    """

    def __init__(self, covariance: bool = True, include_special: bool = True):
        self.with_covariance = covariance
        self.include_special = include_special
        self.count = 0
        self._shift: torch.Tensor | None = None  # (layers, 1, width)
        self._shifted_sum: torch.Tensor | None = None  # (layers, width) float64
        self._m2: torch.Tensor | None = None  # (layers, width, width) float64
        self._argmin: torch.Tensor | None = None  # (layers, width) int64
        self._argmax: torch.Tensor | None = None

    def update(self, batch: TokenBatch) -> None:
        h = batch.hidden
        if not self.include_special:
            h = h.index_select(1, to_device(np.flatnonzero(~batch.special), h.device))
        n_layers, n, width = h.shape
        if n == 0:
            return
        if self._shift is None:
            self._shift = h.mean(dim=1, keepdim=True)
            self._shifted_sum = torch.zeros(n_layers, width, dtype=torch.float64, device=h.device)
            self._argmin = torch.zeros(n_layers, width, dtype=torch.int64, device=h.device)
            self._argmax = torch.zeros(n_layers, width, dtype=torch.int64, device=h.device)
            if self.with_covariance:
                self._m2 = torch.zeros(n_layers, width, width, dtype=torch.float64, device=h.device)
        self.count += n
        x = h - self._shift
        self._shifted_sum += x.sum(dim=1).double()
        lo, hi = extreme_counts(h)
        self._argmin += torch.as_tensor(lo, device=h.device)
        self._argmax += torch.as_tensor(hi, device=h.device)
        if self.with_covariance and h.device.type != "cpu":  # one product per batch on a GPU (the launches cost more than the flops)
            self._m2 += torch.bmm(x.transpose(1, 2), x).double()
        elif self.with_covariance:  # upper block-triangle only (about 5/8 of the products); mirrored when read
            for start in range(0, width, _COV_BLOCK):
                stop = start + _COV_BLOCK
                self._m2[:, start:stop, start:] += torch.bmm(x[:, :, start:stop].transpose(1, 2), x[:, :, start:]).double()

    def _ready(self) -> None:
        require(self.count > 0, "no tokens were collected: the sample is empty")

    @property
    def n_layers(self) -> int:
        self._ready()
        return self._shifted_sum.shape[0]

    @property
    def mean(self) -> np.ndarray:
        """(n_layers + 1, width) float64."""
        self._ready()
        return (self._shift[:, 0].double() + self._shifted_sum / self.count).cpu().numpy()

    @property
    def argmin_counts(self) -> np.ndarray:
        """(n_layers + 1, width): how many vectors have their minimum in each dimension."""
        self._ready()
        return self._argmin.cpu().numpy().copy()

    @property
    def argmax_counts(self) -> np.ndarray:
        self._ready()
        return self._argmax.cpu().numpy().copy()

    def covariance(self, layer: int | None = None) -> np.ndarray:
        """Unbiased covariance, float64: (width, width) for one layer, or all layers stacked."""
        self._ready()
        require(self.with_covariance, "covariance was not collected: create LayerStats(covariance=True)")
        require(self.count > 1, "covariance needs at least two tokens")
        require(layer is None or -self.n_layers <= layer < self.n_layers, f"layer {layer} does not exist: this model has hidden states 0..{self.n_layers - 1}")
        s = self._shifted_sum if layer is None else self._shifted_sum[layer]
        m2 = self._m2 if layer is None else self._m2[layer]
        m2 = torch.triu(m2) + torch.triu(m2, diagonal=1).transpose(-1, -2)
        cov = (m2 - s.unsqueeze(-1) * s.unsqueeze(-2) / self.count) / (self.count - 1)
        return cov.cpu().numpy()


class TokenReservoir:
    """A uniform sample of k tokens (without replacement) with their vectors in chosen layers.

    Tokens are kept by smallest hash key, so the sample is the same for any batch size or order;
    the arrays below are ordered by key. Only tokens that enter the sample are copied.
    """

    def __init__(self, k: int, seed: int, layers: list[int] | None = None, include_special: bool = True):
        require(k > 0, f"reservoir size must be positive, got {k}")
        self.k, self.seed, self.layers, self.include_special = k, seed, layers, include_special
        self._n = 0
        self._keys = np.full(k, np.inf)
        self._meta = np.zeros((k, 3), dtype=np.int64)  # token id, position, sentence id
        self._special = np.zeros(k, dtype=bool)
        self._vectors: torch.Tensor | None = None  # (k, n_layers_kept, width) float32, on the vectors' device until read

    def update(self, batch: TokenBatch) -> None:
        keys = token_keys(self.seed, batch.sentence_ids, batch.positions)
        if not self.include_special:
            keys = np.where(batch.special, np.inf, keys)
        threshold = self._keys[: self._n].max() if self._n == self.k else np.inf
        take = np.flatnonzero(keys < threshold)
        if len(take) == 0:
            return
        all_keys = np.concatenate([self._keys[: self._n], keys[take]])
        keep = np.argsort(all_keys, kind="stable")[: self.k]
        new = take[keep[keep >= self._n] - self._n]  # batch indices that enter the sample
        evicted = np.setdiff1d(np.arange(self._n), keep[keep < self._n], assume_unique=True)
        slots = np.concatenate([evicted, np.arange(self._n, self.k)])[: len(new)]
        h = batch.hidden if self.layers is None else batch.hidden[self.layers]
        if self._vectors is None:
            self._vectors = torch.zeros(self.k, h.shape[0], h.shape[2], dtype=torch.float32, device=h.device)
        self._vectors[to_device(slots, h.device)] = h.index_select(1, to_device(new, h.device)).transpose(0, 1)
        self._keys[slots] = keys[new]
        self._meta[slots] = np.stack([batch.token_ids[new], batch.positions[new], batch.sentence_ids[new]], axis=1)
        self._special[slots] = batch.special[new]
        self._n = min(self.k, self._n + len(new))

    def _order(self) -> np.ndarray:
        return np.argsort(self._keys[: self._n], kind="stable")

    @property
    def keys(self) -> np.ndarray:
        return self._keys[self._order()]

    @property
    def vectors(self) -> np.ndarray:
        """(n_kept, n_layers_kept, width) float32."""
        require(self._vectors is not None, "the reservoir is empty: no tokens were collected")
        return self._vectors.cpu().numpy()[self._order()]

    @property
    def token_ids(self) -> np.ndarray:
        return self._meta[self._order(), 0]

    @property
    def positions(self) -> np.ndarray:
        return self._meta[self._order(), 1]

    @property
    def sentence_ids(self) -> np.ndarray:
        return self._meta[self._order(), 2]

    @property
    def special(self) -> np.ndarray:
        return self._special[self._order()]


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


class SentenceExtremes:
    """Per sentence and dimension, how many of the sentence's vectors in the contextual layers (1 … L) have their
    minimum (maximum) there: the counts a share of extreme vectors is resampled from, sentence by sentence (a
    sentence's tokens are not independent draws); and the same per layer (`in_layer`), kept sparse: a sentence's
    vectors in one layer mostly share their extreme dimension."""

    _SHIFT = 2**21  # sentences and dimensions each below 2**21: (layer, sentence, dim) packed in one int64

    def __init__(self) -> None:
        self._lo: np.ndarray | None = None  # (sentences, width) int32
        self._hi: np.ndarray | None = None
        self._vectors = np.zeros(0, dtype=np.int64)  # contextual vectors per sentence
        self._layers = 0
        self._packed: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"argmin": [], "argmax": []}  # (keys, counts) per batch

    def _grow(self, sentences: int, width: int) -> None:
        if self._lo is None:
            self._lo, self._hi = np.zeros((0, width), dtype=np.int32), np.zeros((0, width), dtype=np.int32)
        if sentences > len(self._vectors):
            extra = sentences - len(self._vectors)
            self._lo = np.vstack([self._lo, np.zeros((extra, width), dtype=np.int32)])
            self._hi = np.vstack([self._hi, np.zeros((extra, width), dtype=np.int32)])
            self._vectors = np.concatenate([self._vectors, np.zeros(extra, dtype=np.int64)])

    def update(self, batch: TokenBatch) -> None:
        h = batch.hidden[1:]
        layers, n, width = h.shape
        if n == 0 or layers == 0:
            return
        self._grow(int(batch.sentence_ids.max()) + 1, width)
        require(len(self._vectors) < self._SHIFT and width < self._SHIFT, f"per-layer extreme counts hold fewer than {self._SHIFT:,} sentences and dims")
        lo, hi = extreme_indices(h)
        cells = np.broadcast_to(batch.sentence_ids.astype(np.int64) * width, (layers, n))
        for counts, idx in ((self._lo, lo), (self._hi, hi)):
            np.add.at(counts.reshape(-1), (cells + idx).ravel(), 1)
        np.add.at(self._vectors, batch.sentence_ids, layers)
        self._layers = layers
        where = (np.arange(1, layers + 1, dtype=np.int64)[:, None] * self._SHIFT + batch.sentence_ids.astype(np.int64)[None, :]) * self._SHIFT
        for kind, idx in (("argmin", lo), ("argmax", hi)):
            self._packed[kind].append(np.unique((where + idx).ravel(), return_counts=True))

    def counts(self, kind: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Per sentence: how many of its contextual vectors have their `kind` ("argmin" or "argmax") in `dim`, and how
        many contextual vectors it has."""
        require(self._lo is not None, "no tokens were collected: the sample is empty")
        require(kind in ("argmin", "argmax"), f"kind must be 'argmin' or 'argmax', got {kind!r}")
        return (self._lo if kind == "argmin" else self._hi)[:, dim].astype(np.int64), self._vectors.copy()

    def in_layer(self, kind: str, layer: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Per sentence: how many of its vectors in contextual layer `layer` have their `kind` in `dim`, and how many
        vectors (tokens) it has there."""
        require(self._lo is not None, "no tokens were collected: the sample is empty")
        require(1 <= layer <= self._layers, f"layer must be a contextual layer 1 … {self._layers}, got {layer}")
        keys = np.concatenate([k for k, _ in self._packed[kind]])
        counts = np.concatenate([c for _, c in self._packed[kind]])
        chosen = (keys // self._SHIFT // self._SHIFT == layer) & (keys % self._SHIFT == dim)
        hits = np.zeros(len(self._vectors), dtype=np.int64)
        np.add.at(hits, (keys[chosen] // self._SHIFT) % self._SHIFT, counts[chosen])
        return hits, self._vectors // self._layers


class AllTokens:
    """Every token's vector in every layer, stored compactly (float16 by default) for models trained
    on the vectors, such as probes. Arrays are ordered by (sentence, position), whatever the batching."""

    def __init__(self, include_special: bool = True, dtype: type = np.float16):
        self.include_special, self.dtype = include_special, dtype
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (vectors (layers, n, width), sentence ids, positions)
        self._order: np.ndarray | None = None

    def update(self, batch: TokenBatch) -> None:
        keep = np.ones(len(batch.positions), dtype=bool) if self.include_special else ~batch.special
        idx = torch.from_numpy(np.flatnonzero(keep)).to(batch.hidden.device)
        vectors = batch.hidden.index_select(1, idx).cpu().numpy().astype(self.dtype)
        self._parts.append((vectors, batch.sentence_ids[keep], batch.positions[keep]))
        self._order = None

    def _column(self, i: int) -> np.ndarray:
        return np.concatenate([part[i] for part in self._parts])

    def _sorted(self) -> np.ndarray:
        require(sum(len(part[1]) for part in self._parts) > 0, "no tokens were collected: the sample is empty")
        if self._order is None:
            self._order = np.lexsort((self._column(2), self._column(1)))
        return self._order

    @property
    def n_layers(self) -> int:
        return self._parts[0][0].shape[0] if self._parts else 0

    @property
    def positions(self) -> np.ndarray:
        return self._column(2)[self._sorted()]

    @property
    def sentence_ids(self) -> np.ndarray:
        return self._column(1)[self._sorted()]

    def layer(self, layer: int) -> np.ndarray:
        """(n_tokens, width) float32 vectors of one layer."""
        require(0 <= layer < self.n_layers, f"layer {layer} is not among the collected layers 0..{self.n_layers - 1}")
        return np.concatenate([part[0][layer] for part in self._parts]).astype(np.float32)[self._sorted()]


class _GroupMeans:
    """Running sums of chosen tokens' vectors (every layer) per group (a sentence), and how many were added."""

    def __init__(self, n_groups: int):
        self.n_groups = n_groups
        self._sums: torch.Tensor | None = None
        self._counts = np.zeros(n_groups, dtype=np.int64)

    def _add(self, batch: TokenBatch, tokens: np.ndarray) -> None:
        """Add the batch's tokens at the given indices to their sentences."""
        if len(tokens) == 0:
            return
        h = batch.hidden[:, torch.from_numpy(tokens).to(batch.hidden.device)].transpose(0, 1).cpu()
        if self._sums is None:
            self._sums = torch.zeros(self.n_groups, h.shape[1], h.shape[2])
        self._sums.index_add_(0, torch.from_numpy(batch.sentence_ids[tokens]).long(), h)
        self._counts += np.bincount(batch.sentence_ids[tokens], minlength=self.n_groups)

    def _means(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (self._sums / torch.from_numpy(self._counts).float()[:, None, None]).numpy()


class SentenceMeans(_GroupMeans):
    """Mean-pooled sentence vectors in every layer: (n_sentences, n_layers + 1, width) float32.
    Special tokens are included by default, as in the mean pooling the sentence-transformers models use."""

    def __init__(self, n_sentences: int, include_special: bool = True):
        require(n_sentences > 0, "SentenceMeans needs the number of sentences")
        super().__init__(n_sentences)
        self.include_special = include_special

    def update(self, batch: TokenBatch) -> None:
        self._add(batch, np.flatnonzero(np.ones(len(batch.positions), dtype=bool) if self.include_special else ~batch.special))

    def result(self) -> np.ndarray:
        """Mean vectors; a sentence without tokens is an error (it cannot be pooled)."""
        require(self._sums is not None, "no tokens were collected: the sentences are empty")
        empty = np.flatnonzero(self._counts == 0)
        require(len(empty) == 0, f"{len(empty)} sentences have no tokens to pool (first: index {empty[:1].tolist()}); drop empty sentences first")
        return self._means()


class SpanMeans(_GroupMeans):
    """Collector: for each sentence, the average of the vectors at the given positions, every layer.
    result() is (n_sentences, n_layers + 1, width) float32, NaN where a sentence had no position."""

    def __init__(self, positions: Sequence[np.ndarray]):
        super().__init__(len(positions))
        self._keys = np.sort(np.concatenate([i * _KEY + np.asarray(p, dtype=np.int64) for i, p in enumerate(positions)] or [np.zeros(0, np.int64)]))

    def update(self, batch: TokenBatch) -> None:
        keys = batch.sentence_ids.astype(np.int64) * _KEY + batch.positions
        self._add(batch, np.flatnonzero(np.isin(keys, self._keys, assume_unique=False)))

    def result(self) -> np.ndarray:
        require(self._sums is not None, "none of the requested positions was seen: are the positions right for this model?")
        return self._means()


INPUT_STAGE = "input"  # a position profile's stage before the embedding LayerNorm: token + position (+ segment) embeddings


def layer_stage(layer: int) -> str:
    """A position profile's stage name for a hidden-state layer (0: the embedding output)."""
    return f"layer {layer}"


class PositionProfile:
    """Collector: per sequence position, the average vector at the embedding LayerNorm's input
    (stage "input": token + position (+ segment) embeddings) and at the chosen hidden-state layers.

    Registers a hook on the model; use as a context manager (or call close()) to remove it."""

    def __init__(self, lm: LoadedModel, layers: tuple[int, ...] = (0, 1), max_positions: int = 128, include_special: bool = True):
        require(max_positions > 0, "max_positions must be positive")
        require(all(0 <= layer <= lm.n_layers for layer in layers), f"layers must be within 0..{lm.n_layers} for {lm.name}")
        self.layers, self.max_positions, self.include_special = tuple(layers), max_positions, include_special
        self.stages = [INPUT_STAGE] + [layer_stage(layer) for layer in layers]
        self._sums = torch.zeros((len(self.stages), max_positions, lm.width), dtype=torch.float64, device=lm.device)
        self.counts = np.zeros(max_positions, dtype=np.int64)
        self._input: torch.Tensor | None = None
        self._handle = embedding_layernorm(lm).register_forward_pre_hook(self._capture)

    def _capture(self, module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        self._input = args[0].detach()

    def update(self, batch: TokenBatch) -> None:
        require(self._input is not None, "PositionProfile saw a batch but no embedding input: was the hook removed?")
        keep = batch.positions < self.max_positions
        if not self.include_special:
            keep &= ~batch.special
        pos, rows = batch.positions[keep], batch.rows[keep]
        idx = torch.from_numpy(np.flatnonzero(keep)).to(batch.hidden.device)
        at = torch.from_numpy(pos).to(self._sums.device)
        stacks = [self._input[torch.from_numpy(rows).to(self._input.device), torch.from_numpy(pos).to(self._input.device)].float()]
        stacks += [batch.hidden[layer].index_select(0, idx) for layer in self.layers]
        for s, values in enumerate(stacks):  # summed where they are (on the GPU there), read once at the end
            self._sums[s].index_add_(0, at, values.to(self._sums.device, torch.float64))
        self.counts += np.bincount(pos, minlength=self.max_positions)

    @property
    def sums(self) -> np.ndarray:
        """(stages, max_positions, width) float64 sums of the vectors at each position."""
        return self._sums.cpu().numpy()

    def means(self, min_count: int = 20) -> np.ndarray:
        """(stages, positions, width): average vector per stage for positions 0, 1, ... up to the last
        one with at least min_count tokens (later positions are too rare to average)."""
        enough = np.flatnonzero(self.counts >= min_count)
        require(len(enough) > 0, f"no position has {min_count} tokens: use more sentences")
        seen = int(enough.max()) + 1
        return self.sums[:, :seen] / np.maximum(self.counts[:seen], 1)[None, :, None]

    def close(self) -> None:
        self._handle.remove()

    def __enter__(self) -> PositionProfile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
