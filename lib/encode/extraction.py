"""Batched, length-sorted extraction of every layer's token vectors, streamed into collectors.

`extract` tokenizes the sentences, sorts them by length, runs padded batches through the model
with `output_hidden_states=True`, drops padding, and hands each batch of real tokens (special
tokens kept and flagged) to the collectors. A collector is anything with `update(batch)`.
Nothing holds all vectors unless a collector chooses to.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from tqdm import tqdm

from ..errors import require
from ..settings import autocast
from .models import LoadedModel

TRIM_EVERY = 32  # batches between returning freed heap memory to the OS
TRUNCATED: dict[tuple[str, int], list[int]] = {}  # (model, token limit) -> [inputs truncated, inputs encoded] in this process


def _malloc_trim():
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c")), "malloc_trim", None)
    except (OSError, TypeError):
        return None


_TRIM = _malloc_trim()


def release_memory() -> None:
    """Return freed heap memory to the OS (glibc malloc_trim; a no-op elsewhere). Batches of ever-changing
    shapes fragment the heap, and without this a long extraction's resident memory creeps upwards."""
    if _TRIM is not None:
        _TRIM(0)


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array as a tensor on device, without waiting for the work queued there (the array is copied out before
    this returns)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(device, non_blocking=True)


def batch_limits(device: torch.device) -> tuple[int, int]:
    """(tokens, sentences) at most per padded batch: 2,048 and 64 on a CPU; eight times both on a GPU, where a batch's
    fixed cost (hundreds of kernel launches for the hidden states and statistics) would otherwise rival its compute.
    Collected values depend on the batches only through floating-point rounding."""
    return (2048, 64) if device.type == "cpu" else (16384, 512)


@dataclass
class TokenBatch:
    """The real (non-padding) tokens of one batch, every layer.

    hidden: (n_layers + 1, n_tokens, width) on the model's device, layer 0 is the embedding output.
    token_ids, positions (0-based index in the input sequence, special tokens included),
    sentence_ids (index into the input list), special (bool) and rows (the token's row in the padded
    model input, for collectors that read other activations captured by hooks) are NumPy arrays of
    length n_tokens.
    """

    hidden: torch.Tensor
    token_ids: np.ndarray
    positions: np.ndarray
    sentence_ids: np.ndarray
    special: np.ndarray
    rows: np.ndarray


class Collector(Protocol):
    def update(self, batch: TokenBatch) -> None: ...


@dataclass
class Encoded:
    """Tokenized sentences in input order, stored flat: sentence i is ids[offsets[i]:offsets[i + 1]]."""

    flat_ids: np.ndarray  # int32
    flat_special: np.ndarray  # bool
    offsets: np.ndarray  # int64, n + 1
    truncated: int

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def ids(self, i: int) -> np.ndarray:
        return self.flat_ids[self.offsets[i] : self.offsets[i + 1]]

    def special(self, i: int) -> np.ndarray:
        return self.flat_special[self.offsets[i] : self.offsets[i + 1]]


def encode(lm: LoadedModel, sentences: Sequence[str], chunk: int = 1000) -> Encoded:
    """Tokenize with the model's special tokens, truncating to the model's maximum length.

    Works in chunks and keeps only compact arrays, so memory grows by a few bytes per token."""
    require(len(sentences) > 0, "no sentences to encode: the sample size must be at least 1")
    require(all(isinstance(s, str) for s in sentences), "sentences must be strings")
    ids, special, lengths, truncated = [], [], [], 0
    for start in range(0, len(sentences), chunk):
        enc = lm.tokenizer(
            list(sentences[start : start + chunk]), add_special_tokens=True, truncation=True, max_length=lm.max_length, return_special_tokens_mask=True
        )
        truncated += sum(bool(e.overflowing) for e in enc.encodings)
        for row, mask in zip(enc["input_ids"], enc["special_tokens_mask"]):
            ids.append(np.asarray(row, dtype=np.int32))
            special.append(np.asarray(mask, dtype=bool))
            lengths.append(len(row))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Encoded(np.concatenate(ids), np.concatenate(special), offsets, truncated)


def batches(lengths: np.ndarray, max_tokens: int, max_sentences: int) -> list[np.ndarray]:
    """Group sentence indices, sorted by length (stable), so a padded batch stays within max_tokens.
    Sentences with no tokens at all (possible without special tokens) are left out."""
    require(max_tokens > 0 and max_sentences > 0, "batch limits must be positive")
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    groups, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, int(lengths[i]))
        if current and (longest_if_added * (len(current) + 1) > max_tokens or len(current) >= max_sentences):
            groups.append(np.array(current))
            current, longest_if_added = [], int(lengths[i])
        current.append(int(i))
        longest = longest_if_added
    if current:
        groups.append(np.array(current))
    return groups


def truncation_note() -> str | None:
    """One sentence on the inputs this process cut at their model's token limit (`TRUNCATED`), or None if none was:
    said once for a chapter, not once per pass over the data."""
    cut = [f"{name}: {n:,} of {total:,} at {limit} tokens" for (name, limit), (n, total) in TRUNCATED.items() if n]
    return f"Inputs longer than the model's limit were truncated ({'; '.join(cut)}; counted over every pass over the data)." if cut else None


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token id lists into (ids, attention mask) tensors."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for j, r in enumerate(rows):
        ids[j, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[j, : len(r)] = 1
    return ids, mask


def iterate(
    lm: LoadedModel,
    sentences: Sequence[str],
    max_tokens: int | None = None,
    max_sentences: int | None = None,
    progress: bool = True,
    desc: str | None = None,
) -> Iterable[TokenBatch]:
    """Yield TokenBatch objects for the sentences, longest-last, padding removed (batch limits: `batch_limits`)."""
    enc = encode(lm, sentences)
    tally = TRUNCATED.setdefault((lm.name, lm.max_length), [0, 0])
    tally[0] += enc.truncated
    tally[1] += len(sentences)
    lengths = enc.lengths
    tokens, rows = batch_limits(lm.device)
    groups = batches(lengths, max_tokens or tokens, max_sentences or rows)
    bar = tqdm(total=int(lengths.sum()), unit="tok", desc=desc or lm.name, disable=not progress, mininterval=1.0)
    pad_id = lm.tokenizer.pad_token_id
    with torch.inference_mode():
        for number, group in enumerate(groups, start=1):
            if number % TRIM_EVERY == 0:
                release_memory()
            token_lists = [enc.ids(i) for i in group]
            ids, mask = pad_batch(token_lists, pad_id)
            with autocast(lm.precision, lm.device):
                out = lm.model(input_ids=ids.to(lm.device, non_blocking=True), attention_mask=mask.to(lm.device, non_blocking=True), output_hidden_states=True)
            keep = mask.bool()
            flat = keep.flatten().nonzero().squeeze(1).to(lm.device, non_blocking=True)
            hidden = torch.empty(len(out.hidden_states), len(flat), lm.width, device=lm.device, dtype=torch.float32)
            for layer, states in enumerate(out.hidden_states):  # one copy per layer, padding left out
                torch.index_select(states.reshape(-1, lm.width).float(), 0, flat, out=hidden[layer])
            positions = torch.arange(ids.shape[1]).expand_as(ids)[keep].numpy()
            sentence_ids = torch.from_numpy(group).unsqueeze(1).expand_as(ids)[keep].numpy()
            rows = torch.arange(ids.shape[0]).unsqueeze(1).expand_as(ids)[keep].numpy()
            special = np.concatenate([enc.special(i) for i in group])
            yield TokenBatch(hidden, ids[keep].numpy(), positions, sentence_ids, special, rows)
            bar.update(int(keep.sum()))
    bar.close()


def extract(lm: LoadedModel, sentences: Sequence[str], collectors: Sequence[Collector], **kwargs) -> None:
    """Stream every batch of `sentences` through each collector (see `iterate` for options)."""
    require(len(collectors) > 0, "extract needs at least one collector")
    for batch in iterate(lm, sentences, **kwargs):
        for c in collectors:
            c.update(batch)
