"""Chapter 11's experiment (Biš et al. 2021, §4): a few tokens cover most of a corpus, and the tokens training rarely
(or never) updates sit close together, away from the rest. Coverage curves of words and of each tokenizer's tokens, and
the mean cosine between the reference tokens (never-trained or rarest) and the rest of the vocabulary in bins by index
and by corpus frequency."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..encode.models import LoadedModel
from ..measure import vocabulary

MARKS = (0.3, 0.5, 0.98)  # shares of the corpus the coverage table reports


def coverage_row(unit: str, counts: np.ndarray) -> dict:
    """How many distinct items there are, how many occurrences, and how many items cover each share in MARKS."""
    return {
        "unit": unit,
        "distinct": int((counts > 0).sum()),
        "total": int(counts.sum()),
        **{f"items_for_{int(100 * m)}%": k for m, k in zip(MARKS, vocabulary.items_for_share(counts, MARKS))},
    }


@dataclass
class RareTokens:
    curve: np.ndarray  # coverage curve of the model's tokens
    coverage: dict  # its coverage_row
    by_index: pd.DataFrame  # binned cosine to the reference tokens, vocabulary in id order
    by_frequency: pd.DataFrame  # the same, most frequent tokens first
    info: dict  # what the reference tokens are, and whether they occur in the corpus
    matrix: np.ndarray  # W
    reference: np.ndarray  # the reference token ids
    frequency_order: np.ndarray  # token ids, most frequent in the corpus first

    def by_frequency_bins(self, bin_size: int) -> pd.DataFrame:
        """The frequency-ordered binned cosine with another bin size."""
        return vocabulary.binned_cosine(self.matrix, self.reference, self.frequency_order, bin_size)


def measure(lm: LoadedModel, documents: list[str], bin_size: int, own_corpus: bool) -> RareTokens:
    """One model: token counts on the documents, the reference tokens (for a model trained on these documents, the ids
    that never occur in them), and the binned cosines."""
    counts = vocabulary.token_counts(lm, documents)
    curve, row = vocabulary.coverage(counts), coverage_row(f"{lm.name} tokens", counts)
    w = vocabulary.embedding_matrix(lm)
    counts = np.pad(counts, (0, max(0, len(w) - len(counts))))[: len(w)]
    unused, how, unseen = vocabulary.reference_tokens(lm, counts if own_corpus else None)
    frequency_order = np.lexsort((np.arange(len(w)), -counts))  # most frequent first, ties by index
    info = {
        "name": lm.name,
        "vocabulary": len(w),
        "reference_tokens": how,
        "never_trained": unseen,
        "reference_seen_in_corpus": int((counts[unused] > 0).sum()),
    }
    return RareTokens(
        curve,
        row,
        vocabulary.binned_cosine(w, unused, np.arange(len(w)), bin_size),
        vocabulary.binned_cosine(w, unused, frequency_order, bin_size),
        info,
        w,
        unused,
        frequency_order,
    )
