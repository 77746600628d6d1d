"""Chapter 11's experiment (Biš et al. 2021, §4): a few tokens cover most of a corpus, and the tokens training rarely
(or never) updates sit close together, away from the rest. Coverage curves of words and of each tokenizer's tokens, and
the mean cosine between the reference tokens (never-trained or rarest) and the rest of the vocabulary in bins by index
and by corpus frequency."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.declaration import chapter
from ..encode.models import LoadedModel
from ..measure import inference, vocabulary
from .plotting import COLORS
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, decide, from_units, outcome, unit

CHAPTER = chapter("11_rare_words")

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


def coverage_curves(curves: dict[str, np.ndarray], marks: list[float]):
    """Share of a corpus covered by the k most frequent items (log k), with horizontal marks; and rank-frequency on log-log axes."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    for (name, cov), color in zip(curves.items(), COLORS):
        k = np.arange(1, len(cov) + 1)
        left.plot(k, 100 * cov, color=color, label=name)
        freq = np.diff(np.concatenate([[0.0], cov]))
        right.loglog(k, freq, color=color, label=name)
    for mark in marks:
        left.axhline(100 * mark, color="grey", lw=0.7, ls=":")
    left.set(xscale="log", xlabel="k most frequent items", ylabel="% of the corpus covered", title="coverage")
    right.set(xlabel="rank", ylabel="share of the corpus", title="rank-frequency (log-log)")
    left.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def binned_cosines(tables: dict[str, pd.DataFrame], xlabel: str):
    """Mean cosine between the reference tokens and each bin of the vocabulary, one line per model."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["bin_start"], t["mean_cosine"], "-o", ms=3, color=color, label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel=xlabel, ylabel="mean cosine")
    ax.legend(frameon=False)
    return fig


COVERAGE = CHAPTER.table("coverage", "unit distinct total items_for_30% items_for_50% items_for_98%")


RARE_COSINE = CHAPTER.table("unused_cosine_by_frequency", "bin_start bin_end n_tokens mean_cosine std_cosine")
UNUSED_BY_INDEX = CHAPTER.table("unused_cosine_by_index", "bin_start bin_end n_tokens mean_cosine std_cosine")


@CHAPTER.rule
def rare_tokens_closer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    full = t[t["n_tokens"] == t["n_tokens"].max()]
    if len(full) < 2:
        return Outcome(UNTESTABLE, "fewer than two full frequency bins")
    first, last = full.iloc[0], full.iloc[-1]
    n = int(first["n_tokens"])
    estimate = inference.welch(last["mean_cosine"], last["std_cosine"], n, first["mean_cosine"], first["std_cosine"], n, "tokens")
    text = f"mean cosine {first['mean_cosine']:.2f} with the most frequent bin, {last['mean_cosine']:.2f} with the rarest full bin: {estimate.text(3)}"
    return outcome(decide(estimate, claim.margin), text, estimate)


@CHAPTER.rule
def few_tokens_cover(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    tokens = t[t["unit"].str.endswith(" tokens")]
    units = [
        unit(u.removesuffix(" tokens"), inference.exact(n, "counted on the whole corpus"), claim.margin, "below", of="tokenizers")
        for u, n in zip(tokens["unit"], tokens["items_for_30%"])
    ]
    return from_units(units, claim, 0)
