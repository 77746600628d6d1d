"""Pre-training text as blocks of token ids cut from one token stream, which can live on disk (a memory-mapped file,
tokenized once and keyed by the tokenizer and the corpus) so that a corpus of any size never sits in memory.

The stream is every text's ids followed by </s>, in order; block i is <s> + stream[i·(L-2) : (i+1)·(L-2)] + </s> for
blocks of L tokens, and the incomplete tail is dropped (RoBERTa's FULL-SENTENCES packing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from ..errors import require
from ..io import write_atomic

_BATCH = 256  # texts encoded per call to the tokenizer


class Blocks:
    """Blocks of seq_len tokens cut on demand from a token stream (an array or a memory map). Indexing with an int, a
    slice or an array of block numbers gives an int64 tensor (n, seq_len)."""

    def __init__(self, stream: np.ndarray, seq_len: int, bos: int, eos: int):
        inner = seq_len - 2
        n = len(stream) // inner
        require(n > 0, f"the text gives {len(stream)} tokens, fewer than one block of {inner}; use more text or a smaller seq_len")
        self.stream, self.seq_len, self.bos, self.eos, self.n = stream, seq_len, bos, eos, n

    def __len__(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.seq_len)

    def numel(self) -> int:
        return self.n * self.seq_len

    def __getitem__(self, key: int | slice | np.ndarray | torch.Tensor | tuple) -> torch.Tensor:
        if isinstance(key, tuple):  # rows, then columns
            return self[key[0]][(slice(None), *key[1:])]
        rows = np.arange(self.n)[key] if isinstance(key, (int, slice)) else np.asarray(key, dtype=np.int64)
        single = np.ndim(rows) == 0
        rows = np.atleast_1d(rows)
        require(rows.size == 0 or (rows.min() >= -self.n and rows.max() < self.n), f"block numbers must be below {self.n}")
        inner = self.seq_len - 2
        starts = (rows % self.n) * inner
        body = np.asarray(self.stream[(starts[:, None] + np.arange(inner)).reshape(-1)], dtype=np.int64).reshape(len(rows), inner)
        out = np.concatenate([np.full((len(rows), 1), self.bos), body, np.full((len(rows), 1), self.eos)], axis=1)
        return torch.from_numpy(out[0] if single else out)

    def token_chunks(self, size: int = 1 << 22) -> Iterator[np.ndarray]:
        """The tokens inside the blocks (no <s>/</s> framing), a chunk at a time."""
        end = self.n * (self.seq_len - 2)
        for start in range(0, end, size):
            yield np.asarray(self.stream[start : min(start + size, end)], dtype=np.int64)


def _dtype(tokenizer: PreTrainedTokenizerFast) -> np.dtype:
    return np.dtype(np.uint16 if len(tokenizer) <= np.iinfo(np.uint16).max + 1 else np.int32)


def encode_stream(texts: Iterable[str], tokenizer: PreTrainedTokenizerFast) -> Iterator[np.ndarray]:
    """Batches of texts as arrays of ids, every text followed by </s>."""
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == _BATCH:
            yield _encode(batch, tokenizer)
            batch = []
    if batch:
        yield _encode(batch, tokenizer)


def _encode(texts: list[str], tokenizer: PreTrainedTokenizerFast) -> np.ndarray:
    encodings = tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    return np.fromiter((t for e in encodings for t in (*e.ids, tokenizer.eos_token_id)), dtype=_dtype(tokenizer))


def in_memory(texts: Iterable[str], tokenizer: PreTrainedTokenizerFast, seq_len: int) -> Blocks:
    """Blocks of texts tokenized into memory (small corpora, tests)."""
    parts = list(encode_stream(texts, tokenizer))
    stream = np.concatenate(parts) if parts else np.zeros(0, dtype=_dtype(tokenizer))
    return Blocks(stream, seq_len, tokenizer.bos_token_id, tokenizer.eos_token_id)


def tokenizer_digest(tokenizer: PreTrainedTokenizerFast) -> str:
    return hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode()).hexdigest()


def on_disk(texts: Iterable[str], tokenizer: PreTrainedTokenizerFast, seq_len: int, folder: Path, corpus_key: str) -> Blocks:
    """Blocks of a token stream kept in folder/<key>.tokens (key: the tokenizer and corpus_key, which names the texts:
    e.g. the checksums of the files they come from): tokenized and written atomically once, then memory-mapped."""
    key = hashlib.sha256(f"{tokenizer_digest(tokenizer)} {corpus_key}".encode()).hexdigest()[:16]
    path = Path(folder) / f"{key}.{_dtype(tokenizer).name}.tokens"
    if not path.exists():

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as out:
                for ids in encode_stream(texts, tokenizer):
                    out.write(ids.tobytes())

        write_atomic(path, write)
    stream = np.memmap(path, dtype=_dtype(tokenizer), mode="r") if path.stat().st_size else np.zeros(0, dtype=_dtype(tokenizer))
    return Blocks(stream, seq_len, tokenizer.bos_token_id, tokenizer.eos_token_id)
