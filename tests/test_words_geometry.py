"""Word spans, subword positions, span averages, row cosines and self-similarity against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from lib.encode import words
from lib.encode.extraction import extract
from lib.errors import BookError
from lib.measure import geometry

from .test_collectors import brute_force


def test_word_span_and_subword_positions(minilm):
    sentence = "the unbelievably tedious film ."
    start, end = words.word_span(sentence, 1)
    assert sentence[start:end] == "unbelievably"
    positions = words.subword_positions(minilm, [sentence], [(start, end)])[0]
    pieces = minilm.tokenizer.convert_ids_to_tokens(minilm.tokenizer(sentence)["input_ids"])
    assert "".join(pieces[p].removeprefix("##") for p in positions) == "unbelievably" and len(positions) > 1
    with pytest.raises(BookError, match="outside the sentence"):
        words.word_span(sentence, 9)


def test_span_means_average_the_subword_vectors(minilm):
    sentences = ["a thoroughly unremarkable picture", "remarkable !"]
    spans = [words.word_span(sentences[0], 2), words.word_span(sentences[1], 0)]
    positions = words.subword_positions(minilm, sentences, spans)
    collector = words.SpanMeans(positions)
    extract(minilm, sentences, [collector], progress=False)
    h, sid, pos, _ = brute_force(minilm, sentences)
    for i, p in enumerate(positions):
        expected = h[:, (sid == i) & np.isin(pos, p)].mean(axis=1)
        np.testing.assert_allclose(collector.result()[i], expected, atol=1e-5)


def test_row_cosines_and_self_similarity_match_brute_force():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20, 5)), rng.normal(size=(20, 5))
    expected = [x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b)]
    np.testing.assert_allclose(geometry.row_cosines(a, b), expected)
    groups = np.repeat([3, 7, 9], [2, 4, 5])[rng.permutation(11)]
    vectors = rng.normal(size=(11, 5))
    per_group = []
    for g in np.unique(groups):
        v = vectors[groups == g]
        pairs = [v[i] @ v[j] / np.linalg.norm(v[i]) / np.linalg.norm(v[j]) for i in range(len(v)) for j in range(len(v)) if i != j]
        per_group.append(np.mean(pairs))
    assert geometry.self_similarity(vectors, groups) == pytest.approx(np.mean(per_group))
    assert geometry.self_similarity(np.ones((4, 3)), np.array([0, 0, 1, 1])) == pytest.approx(1.0)


def test_word_occurrences_are_seeded_and_respect_the_minimum():
    sentences = [f"w{i % 3} the film {'good' if i % 2 else 'bad'} x1" for i in range(30)]
    occ = words.word_occurrences(sentences, n_words=2, per_word=5, min_sentences=10, seed=0)
    assert occ == words.word_occurrences(sentences, n_words=2, per_word=5, min_sentences=10, seed=0)
    assert len(occ) == 10 and all(sentences[s].split(" ")[w] == word for word, s, w in occ)
    assert {word for word, _, _ in occ} <= {"the", "film", "good", "bad"}  # 'w0'/'x1' are not alphabetic
    with pytest.raises(BookError, match="only 4 words occur"):
        words.word_occurrences(sentences, n_words=5, per_word=5, min_sentences=10, seed=0)


def test_svd_plane_of_a_shifted_cloud():
    rng = np.random.default_rng(2)
    cloud = rng.normal(size=(400, 5)) + np.array([6.0, 0, 0, 0, 0])
    view = geometry.svd_plane(cloud)
    assert view.explained[0] > 0.8  # the shift dominates the uncentered spectrum
    assert abs(view.coords[:, 0].mean()) > 5 and np.array_equal(view.origin, np.zeros(2))
    centered = geometry.svd_plane(cloud - cloud.mean(axis=0))
    assert centered.explained[0] < 0.4 and centered.mean_vector_norm_ratio < 1e-12
