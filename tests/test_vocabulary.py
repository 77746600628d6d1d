"""Coverage counts, reference tokens, binned cosines, single-token filtering, and the Appendix A identity."""

from __future__ import annotations

import numpy as np
import pytest

from lib.errors import BookError
from lib.measure import isotropy, vocabulary

from .conftest import tiny_model


def test_coverage_and_items_for_share():
    counts = np.array([0, 50, 30, 10, 10])
    np.testing.assert_allclose(vocabulary.coverage(counts), [0.5, 0.8, 0.9, 1.0])
    assert vocabulary.items_for_share(counts, [0.3, 0.5, 0.81, 1.0]) == [1, 1, 3, 4]
    assert vocabulary.word_counts(["a b a", "c a b"]).tolist() == [3, 2, 1]


def test_token_counts_match_the_tokenizer(minilm):
    docs = ["the film is good\nthe end", "good good"]
    counts = vocabulary.token_counts(minilm, docs)
    the, good = minilm.tokenizer.convert_tokens_to_ids(["the", "good"])
    assert counts[the] == 2 and counts[good] == 3 and counts.sum() == 8


def test_reference_tokens_say_whether_they_were_never_trained(minilm):
    ids, how, unseen = vocabulary.reference_tokens(minilm)
    assert len(ids) == 994 and "[unused]" in how and unseen
    assert all(t.startswith("[unused") for t in minilm.tokenizer.convert_ids_to_tokens(ids.tolist()))
    gpt2 = tiny_model("gpt2")  # its own small BPE vocabulary, no [unused] tokens
    size = gpt2.model.get_input_embeddings().weight.shape[0]
    ids, how, unseen = vocabulary.reference_tokens(gpt2, fallback=100)
    assert ids[-1] == size - 1 and len(ids) == 100 and "last 100" in how and "rarest merges" in how and not unseen
    counts = np.ones(size, dtype=int)
    counts[[5, 9]] = 0
    counts[gpt2.tokenizer.all_special_ids] = 0  # special tokens never occur in the text, yet they are trained
    ids, how, unseen = vocabulary.reference_tokens(gpt2, counts, fallback=100)
    assert ids.tolist() == [5, 9] and "never occur" in how and unseen
    assert not vocabulary.reference_tokens(gpt2, np.ones(size, dtype=int), fallback=100)[2]  # every id seen: the fallback
    with pytest.raises(BookError, match="only"):
        vocabulary.reference_tokens(gpt2, fallback=10**6)


def test_binned_cosine_equals_brute_force():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(50, 6)) + 0.5
    reference, order = np.array([0, 1, 2]), rng.permutation(50)
    table = vocabulary.binned_cosine(w, reference, order, bin_size=20)
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    rest = order[~np.isin(order, reference)]
    first = rest[:20]
    assert table["mean_cosine"].iloc[0] == pytest.approx((unit[reference] @ unit[first].T).mean())
    assert table["n_tokens"].tolist() == [20, 20, 7]
    by_index = vocabulary.binned_cosine(w, np.array([0, 1, 2, 25]), np.arange(50), bin_size=20)
    assert by_index[["bin_start", "bin_end"]].values.tolist() == [[3, 22], [23, 43], [44, 49]]  # vocabulary indices, not positions after removal


def test_single_token_filter(minilm):
    ids = vocabulary.single_token_ids(minilm, ["the", "unbelievably", "cat"])
    assert ids[0] == minilm.tokenizer.convert_tokens_to_ids("the") and ids[1] == -1 and ids[2] > 0


def test_cosine_regulariser_equals_squared_mean_unit_vector():
    w = np.random.default_rng(1).normal(size=(300, 8)) + 0.3
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    cos = unit @ unit.T
    brute = (cos.sum() - np.trace(cos)) / (300 * 299)
    assert isotropy.mean_pairwise_cosine(w, chunk=64) == pytest.approx(brute)
    assert isotropy.cosine_from_mean_unit(w) == pytest.approx(brute)
