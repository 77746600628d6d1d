"""Streaming statistics and samples equal brute force; padding never enters; seeds and batch sizes don't matter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.encode.collectors import LayerStats, SentenceExtremes, SentenceTokenSampler, TokenReservoir, token_keys
from lib.encode.extraction import encode, extract
from lib.errors import BookError

from .conftest import SENTENCES, tiny_model


def brute_force(lm, sentences):
    """Every layer's vectors, one unpadded sentence at a time: (layers, tokens, width) float64 plus metadata."""
    enc = encode(lm, sentences)
    hidden, sid, pos, special = [], [], [], []
    with torch.no_grad():
        for i in range(len(sentences)):
            ids, spec = enc.ids(i).tolist(), enc.special(i).tolist()
            if not ids:
                continue
            out = lm.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
            hidden.append(torch.stack(out.hidden_states)[:, 0].double().numpy())
            sid += [i] * len(ids)
            pos += list(range(len(ids)))
            special += spec
    return np.concatenate(hidden, axis=1), np.array(sid), np.array(pos), np.array(special, dtype=bool)


def test_layer_stats_equal_brute_force(tiny):
    h, *_ = brute_force(tiny, SENTENCES)
    st = LayerStats()
    extract(tiny, SENTENCES, [st], max_sentences=4, progress=False)
    assert st.count == h.shape[1]
    assert st.mean.shape == (tiny.n_layers + 1, tiny.width)
    np.testing.assert_allclose(st.mean, h.mean(axis=1), atol=1e-5)
    np.testing.assert_array_equal(st.argmin_counts, np.stack([np.bincount(x.argmin(1), minlength=tiny.width) for x in h]))
    np.testing.assert_array_equal(st.argmax_counts, np.stack([np.bincount(x.argmax(1), minlength=tiny.width) for x in h]))
    for layer in (0, tiny.n_layers):
        np.testing.assert_allclose(st.covariance(layer), np.cov(h[layer], rowvar=False), atol=2e-5)
    np.testing.assert_allclose(st.covariance()[1], np.cov(h[1], rowvar=False), atol=2e-5)


def test_covariance_is_accurate_with_a_large_mean():
    """An outlier dimension with a huge mean must not cost the covariance its precision; the width
    spans several covariance blocks, the last one partial."""
    from lib.encode.extraction import TokenBatch

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3000, 200)).astype(np.float32)
    x[..., 3] += 1000.0
    st = LayerStats()
    for chunk in np.array_split(np.arange(3000), 7):
        n = len(chunk)
        st.update(TokenBatch(torch.from_numpy(x[:, chunk]), np.zeros(n, int), np.zeros(n, int), chunk, np.zeros(n, bool), np.zeros(n, int)))
    for layer in (0, 1):
        np.testing.assert_allclose(st.covariance(layer), np.cov(x[layer].astype(np.float64), rowvar=False), atol=1e-4)
    np.testing.assert_allclose(st.mean, x.astype(np.float64).mean(axis=1), atol=1e-5)


def test_padding_never_enters_the_statistics(minilm):
    """Making the padding token's embedding enormous must change nothing."""
    before = LayerStats()
    extract(minilm, SENTENCES, [before], progress=False)
    emb = minilm.model.get_input_embeddings().weight
    pad = minilm.tokenizer.pad_token_id
    saved = emb.data[pad].clone()
    try:
        emb.data[pad] = 1e4
        after = LayerStats()
        extract(minilm, SENTENCES, [after], progress=False)
    finally:
        emb.data[pad] = saved
    assert after.count == before.count == encode(minilm, SENTENCES).lengths.sum()
    np.testing.assert_allclose(after.mean, before.mean, atol=1e-5)
    np.testing.assert_array_equal(after.argmax_counts, before.argmax_counts)


def test_special_tokens_kept_and_flagged(minilm):
    res = TokenReservoir(k=10_000, seed=0)
    extract(minilm, SENTENCES, [res], progress=False)
    special_ids = set(minilm.tokenizer.all_special_ids)
    assert set(res.token_ids[res.special]) <= special_ids
    assert not set(res.token_ids[~res.special]) & special_ids
    assert (res.positions[res.special] == 0).sum() == len(SENTENCES)  # [CLS] opens every sentence
    no_special = LayerStats(include_special=False)
    extract(minilm, SENTENCES, [no_special], progress=False)
    assert no_special.count == (~res.special).sum()


def test_reservoir_keeps_the_k_smallest_keys(tiny):
    h, sid, pos, special = brute_force(tiny, SENTENCES)
    res = TokenReservoir(k=17, seed=3, layers=[0, -1])
    extract(tiny, SENTENCES, [res], max_sentences=3, progress=False)
    expected = np.argsort(token_keys(3, sid, pos))[:17]
    got = {(s, p) for s, p in zip(res.sentence_ids, res.positions)}
    assert got == {(sid[i], pos[i]) for i in expected}
    order = np.lexsort((pos[expected], sid[expected]))
    mine = np.lexsort((res.positions, res.sentence_ids))
    np.testing.assert_allclose(res.vectors[mine][:, 1], h[-1][expected][order], atol=1e-5)


def test_sentence_sampler_takes_one_ordinary_token_per_sentence(tiny):
    sampler = SentenceTokenSampler(seed=1)
    extract(tiny, SENTENCES, [sampler], max_sentences=5, progress=False)
    sid, tid, pos, vec = sampler.result()
    h, all_sid, all_pos, special = brute_force(tiny, SENTENCES)
    keys = np.where(special, np.inf, token_keys(1, all_sid, all_pos))
    expected = [(s, all_pos[all_sid == s][np.argmin(keys[all_sid == s])]) for s in np.unique(all_sid) if np.isfinite(keys[all_sid == s]).any()]
    assert list(zip(sid, pos)) == expected
    assert vec.shape == (len(expected), tiny.n_layers + 1, tiny.width)


def test_same_seed_same_results_across_runs_and_batch_sizes(minilm):
    runs = []
    for max_sentences, max_tokens in [(64, 2048), (64, 2048), (1, 2048), (5, 40)]:
        st, res, samp = LayerStats(), TokenReservoir(k=25, seed=7), SentenceTokenSampler(seed=7)
        extract(minilm, SENTENCES, [st, res, samp], max_sentences=max_sentences, max_tokens=max_tokens, progress=False)
        runs.append((st, res, samp))
    first = runs[0]
    assert np.array_equal(first[0].mean, runs[1][0].mean)  # identical run: bit for bit
    assert np.array_equal(first[1].vectors, runs[1][1].vectors)
    for st, res, samp in runs[2:]:
        np.testing.assert_allclose(st.mean, first[0].mean, atol=1e-5)
        np.testing.assert_allclose(st.covariance(3), first[0].covariance(3), atol=1e-4)
        np.testing.assert_array_equal(np.sort(res.keys), np.sort(first[1].keys))
        np.testing.assert_array_equal(samp.result()[2], first[2].result()[2])
        np.testing.assert_allclose(samp.result()[3], first[2].result()[3], atol=1e-4)


def test_a_different_seed_samples_different_tokens():
    a = token_keys(0, np.arange(1000), np.zeros(1000, int))
    b = token_keys(1, np.arange(1000), np.zeros(1000, int))
    assert not np.array_equal(np.argsort(a)[:50], np.argsort(b)[:50])
    assert 0.45 < a.mean() < 0.55 and a.min() >= 0 and a.max() < 1


def test_empty_and_invalid_collectors():
    with pytest.raises(BookError, match="no tokens"):
        _ = LayerStats().mean
    with pytest.raises(BookError, match="positive"):
        TokenReservoir(k=0, seed=0)


def test_sentence_extremes_add_up_to_the_layer_counts(tiny):
    """Per-sentence extreme counts over the contextual layers sum to LayerStats' counts for those layers, each sentence's
    vectors are its tokens × contextual layers, and batching changes nothing."""
    stats, by_sentence, small_batches = LayerStats(), SentenceExtremes(), SentenceExtremes()
    extract(tiny, SENTENCES, [stats, by_sentence], progress=False)
    extract(tiny, SENTENCES, [small_batches], max_sentences=2, progress=False)
    lengths = encode(tiny, SENTENCES).lengths
    for kind, counts in (("argmin", stats.argmin_counts), ("argmax", stats.argmax_counts)):
        dim = int(counts[1:].sum(axis=0).argmax())
        hits, vectors = by_sentence.counts(kind, dim)
        assert hits.sum() == counts[1:, dim].sum()
        np.testing.assert_array_equal(vectors, np.asarray(lengths) * (stats.n_layers - 1))
        np.testing.assert_array_equal(small_batches.counts(kind, dim)[0], hits)
        for layer in range(1, stats.n_layers):  # and per layer: each layer's counts, each sentence's tokens
            top = int(counts[layer].argmax())
            in_layer, tokens = by_sentence.in_layer(kind, layer, top)
            assert in_layer.sum() == counts[layer, top] and (in_layer <= tokens).all()
            np.testing.assert_array_equal(tokens, lengths)
            np.testing.assert_array_equal(small_batches.in_layer(kind, layer, top)[0], in_layer)
        assert sum(by_sentence.in_layer(kind, layer, dim)[0].sum() for layer in range(1, stats.n_layers)) == hits.sum()


def test_truncation_is_counted_and_said_once_for_every_pass(monkeypatch):
    from lib.encode import extraction

    monkeypatch.setattr(extraction, "TRUNCATED", {})
    lm = tiny_model("bert")
    long = " ".join(["word"] * (lm.max_length + 10))
    assert extraction.truncation_note() is None
    for _ in range(3):  # three passes over the same two inputs, one of them too long: one sentence, not three
        list(extraction.iterate(lm, [long, "short"], progress=False))
    assert extraction.truncation_note() == (
        f"Inputs longer than the model's limit were truncated (tiny-bert: 3 of 6 at {lm.max_length} tokens; counted over every pass over the data)."
    )
