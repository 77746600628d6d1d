"""Words inside sentences: which subword tokens make up a word, sampling words that recur across
sentences, and a word's vector in every layer as the average of its subwords (WiC, self-similarity)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import require
from .collectors import SpanMeans
from .extraction import extract
from .models import LoadedModel


def word_span(sentence: str, index: int) -> tuple[int, int]:
    """Character span of the index-th space-separated word of a sentence."""
    words = sentence.split(" ")
    require(0 <= index < len(words), f"word index {index} is outside the sentence ({len(words)} words): {sentence[:60]!r}")
    start = sum(len(w) + 1 for w in words[:index])
    return start, start + len(words[index])


def subword_positions(lm: LoadedModel, sentences: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[np.ndarray]:
    """For each sentence, the token positions (as `extraction` numbers them: special tokens included)
    whose characters overlap the span. Empty when the word lies beyond the model's maximum length."""
    require(len(sentences) == len(spans), "one span per sentence")
    enc = lm.tokenizer(
        list(sentences), add_special_tokens=True, truncation=True, max_length=lm.max_length, return_offsets_mapping=True, return_special_tokens_mask=True
    )
    out = []
    for offsets, special, (start, end) in zip(enc["offset_mapping"], enc["special_tokens_mask"], spans):
        offsets = np.asarray(offsets).reshape(-1, 2)
        hit = (offsets[:, 0] < end) & (offsets[:, 1] > start) & ~np.asarray(special, dtype=bool)
        out.append(np.flatnonzero(hit))
    return out


def word_occurrences(sentences: Sequence[str], n_words: int, per_word: int, min_sentences: int, seed: int) -> list[tuple[str, int, int]]:
    """Sample n_words alphabetic words that occur in at least min_sentences different sentences, and
    per_word of those sentences for each (first occurrence in each). Returns (word, sentence index,
    word index) triples, grouped by word; seeded."""
    require(
        min(n_words, per_word, min_sentences) > 0 and per_word <= min_sentences,
        "n_words, per_word and min_sentences must be positive, per_word <= min_sentences",
    )
    seen: dict[str, dict[int, int]] = {}
    for s, sentence in enumerate(sentences):
        for w, word in enumerate(sentence.split(" ")):
            if word.isalpha():
                seen.setdefault(word, {}).setdefault(s, w)
    frequent = sorted(word for word, where in seen.items() if len(where) >= min_sentences)
    require(len(frequent) >= n_words, f"only {len(frequent)} words occur in at least {min_sentences} sentences; ask for fewer words or use more sentences")
    rng = np.random.default_rng(seed)
    out = []
    for word in rng.choice(frequent, size=n_words, replace=False):
        where = sorted(seen[word].items())
        for i in rng.choice(len(where), size=per_word, replace=False):
            out.append((str(word), *where[i]))
    return out


def word_vectors(lm: LoadedModel, sentences: Sequence[str], word_indices: Sequence[int], collectors: Sequence = (), desc: str | None = None) -> np.ndarray:
    """(n, n_layers + 1, width): each sentence's word at the given space-separated index, as the
    average of its subword vectors in every layer (NaN where the word lies beyond the model's
    maximum length). Extra collectors see the same pass."""
    spans = [word_span(s, i) for s, i in zip(sentences, word_indices)]
    means = SpanMeans(subword_positions(lm, sentences, spans))
    extract(lm, sentences, [means, *collectors], desc=desc)
    return means.result()
