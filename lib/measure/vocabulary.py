"""The static (input) embedding matrix and the vocabulary behind it: corpus frequencies of each
token, how many tokens cover a share of the corpus, the reference tokens (never trained, or the rarest), and cosine similarity
between token groups (Biš et al. 2021, §4.2)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..encode.models import LoadedModel
from ..errors import require


def embedding_matrix(lm: LoadedModel) -> np.ndarray:
    """The input embedding matrix (vocabulary size, width) as float64."""
    return lm.model.get_input_embeddings().weight.detach().double().cpu().numpy()


def token_counts(lm: LoadedModel, documents: Sequence[str], batch: int = 2000) -> np.ndarray:
    """How often each vocabulary id occurs when the documents' lines are tokenized (no special tokens)."""
    lines = [line for doc in documents for line in doc.split("\n") if line.strip()]
    require(len(lines) > 0, "the corpus is empty")
    counts = np.zeros(len(lm.tokenizer), dtype=np.int64)
    for start in tqdm(range(0, len(lines), batch), desc=f"{lm.name} tokenizing", unit="batch", mininterval=1.0):
        enc = lm.tokenizer(lines[start : start + batch], add_special_tokens=False, verbose=False)["input_ids"]  # counting only: no length warning
        counts += np.bincount(np.concatenate([np.asarray(ids, dtype=np.int64) for ids in enc if ids] or [np.zeros(0, np.int64)]), minlength=len(counts))[
            : len(counts)
        ]
    return counts


def word_counts(documents: Sequence[str]) -> np.ndarray:
    """Counts of whitespace-separated words, most frequent first."""
    counter = Counter(w for doc in documents for w in doc.split())
    return np.array(sorted(counter.values(), reverse=True), dtype=np.int64)


def coverage(counts: np.ndarray) -> np.ndarray:
    """Share of all occurrences covered by the k most frequent items, for k = 1, 2, ... (unseen items dropped)."""
    ordered = np.sort(counts[counts > 0])[::-1]
    require(len(ordered) > 0, "no item occurs")
    return np.cumsum(ordered) / ordered.sum()


def items_for_share(counts: np.ndarray, shares: Sequence[float]) -> list[int]:
    """The smallest number of most frequent items that covers each share of the occurrences."""
    cov = coverage(counts)
    return [int(np.searchsorted(cov, share - 1e-12) + 1) for share in shares]


_UNUSED = re.compile(r"^\[unused\d+\]$")


def reference_tokens(lm: LoadedModel, training_counts: np.ndarray | None = None, fallback: int = 1000) -> tuple[np.ndarray, str, bool]:
    """The tokens the vocabulary is compared with (Biš et al. 2021, §4.2), how they were chosen, and whether they truly
    never occurred in training. In order: BERT's `[unusedN]` tokens where the vocabulary has them; for a model trained
    on a known corpus (`training_counts`: each id's count there), the ids that never occur in it, special tokens left
    out; otherwise the last `fallback` ids, as Biš et al. do for RoBERTa, which in a BPE vocabulary are its rarest
    merges, not tokens unseen in training."""
    vocab = lm.tokenizer.get_vocab()
    unused = np.array(sorted(i for t, i in vocab.items() if _UNUSED.match(t)), dtype=np.int64)
    if len(unused):
        return unused, f"the {len(unused)} [unused] tokens (never used in training)", True
    size = lm.model.get_input_embeddings().weight.shape[0]
    if training_counts is not None:
        unseen = np.setdiff1d(np.flatnonzero(np.asarray(training_counts)[:size] == 0), lm.tokenizer.all_special_ids)
        if len(unseen):
            return unseen, f"the {len(unseen)} ids that never occur in the model's training corpus", True
    require(fallback < size, f"the vocabulary has only {size} tokens; cannot take the last {fallback}")
    return np.arange(size - fallback, size), f"the last {fallback} ids of the vocabulary (its rarest merges; not unseen in training)", False


def binned_cosine(w: np.ndarray, reference: np.ndarray, order: np.ndarray, bin_size: int = 1000) -> pd.DataFrame:
    """Mean cosine between the reference rows and the rows in consecutive bins of `order`, reference rows left out of
    the bins, and the standard deviation over the bin's tokens of each token's mean cosine to the reference rows.
    `bin_start`/`bin_end` are positions in `order` itself, so with order = vocabulary ids they are the vocabulary indices
    of the bin's first and last token, as in the paper's index axis."""
    require(bin_size > 0 and len(reference) > 0, "need reference rows and a positive bin size")
    unit = w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    ref_sum = unit[reference].sum(axis=0)  # mean over reference x bin pairs = (Σ_ref u) · (Σ_bin u) / (|ref| |bin|)
    positions = np.flatnonzero(~np.isin(order, reference))
    rows = []
    for start in range(0, len(positions), bin_size):
        where = positions[start : start + bin_size]
        ids = order[where]
        per_token = unit[ids] @ ref_sum / len(reference)
        rows.append(
            {
                "bin_start": int(where[0]),
                "bin_end": int(where[-1]),
                "n_tokens": len(ids),
                "mean_cosine": float(per_token.mean()),
                "std_cosine": float(per_token.std(ddof=1)) if len(ids) > 1 else 0.0,
            }
        )
    return pd.DataFrame(rows)


def single_token_ids(lm: LoadedModel, words: Sequence[str]) -> np.ndarray:
    """Vocabulary id of each word when it is a single token (as a word on its own, after a space), else -1."""
    out = np.full(len(words), -1, dtype=np.int64)
    for i, word in enumerate(words):
        ids = lm.tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            out[i] = ids[0]
    return out
