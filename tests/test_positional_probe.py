"""Embedding tables, LayerNorm ranks, per-position profiles and the position probe, against brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import rankdata

from lib.encode.collectors import AllTokens, PositionProfile, extreme_counts
from lib.encode.extraction import extract
from lib.errors import BookError
from lib.measure import positional
from lib.train import probe

from .conftest import SENTENCES, tiny_model
from .test_collectors import brute_force


def test_descending_ranks_match_scipy():
    v = np.random.default_rng(0).normal(size=50)
    v[7] = v[3]  # a tie shares the better rank
    dims = np.array([0, 3, 7, 20, 49])
    expected = rankdata(-v, method="min")[dims]
    assert positional.descending_ranks(v, dims).tolist() == expected.astype(int).tolist()


def test_layernorms_are_found_in_model_order_with_layer_numbers():
    lm = tiny_model("bert")
    norms = positional.layernorms(lm)
    assert [(n.layer, n.which) for n in norms] == [(0, "embedding")] + [(layer, w) for layer in (1, 2, 3) for w in ("first", "second")]
    assert norms[1].module == "encoder.layer.0.attention.output.LayerNorm"


def test_parameter_ranks_follow_the_outlier_sign():
    lm = tiny_model("bert")
    ln = lm.model.encoder.layer[1].attention.output.LayerNorm
    with torch.no_grad():
        ln.weight[5] = 10.0  # largest gain
        ln.bias[9] = -10.0  # smallest bias
        ln.bias[5] = 10.0
    ranks = positional.parameter_ranks(positional.layernorms(lm), np.array([5, 9]), ["+", "-"])
    row = ranks.set_index(["layer", "layernorm", "param", "dim"])
    assert row.loc[(2, "first", "gamma", 5), "rank"] == 1
    assert row.loc[(2, "first", "beta", 5), "rank"] == 1
    assert row.loc[(2, "first", "beta", 9), "rank"] == 1  # negative outlier: ranked from the smallest
    assert row.loc[(2, "first", "beta", 9), "rank_abs"] in (1, 2)
    assert row.loc[(2, "first", "gamma", 9), "rank"] > 1
    with pytest.raises(BookError, match="one sign"):
        positional.parameter_ranks(positional.layernorms(lm), np.array([5]), ["up"])


def test_position_offset_is_observed_from_the_model():
    assert positional.position_offset(tiny_model("bert")) == 0
    roberta = tiny_model("roberta")
    assert positional.position_offset(roberta) == roberta.model.config.pad_token_id + 1


def test_table_summary_finds_a_planted_position_outlier():
    lm = tiny_model("bert")
    with torch.no_grad():
        lm.model.embeddings.position_embeddings.weight[0, 4] = -5.0  # only the first position
        lm.model.embeddings.position_embeddings.weight[1:, 11] += 1.0  # dim 11 the maximum of every later position
    tables = positional.embedding_tables(lm)
    assert tables.position.shape == (64, 32) and tables.segment.shape == (2, 32) and tables.position_offset == 0
    rows = positional.row_outliers(tables.position)
    assert rows.loc[0, "flagged_dims"] == "4" and rows.loc[0, "argmin_dim"] == 4
    summary = positional.table_summary(tables).set_index("table")
    assert summary.loc["position", "rows_with_flagged_dim"] >= 1
    assert summary.loc["position after the first", "argmax_dim"] == 11
    assert summary.loc["position after the first", "argmax_percent"] == 100.0
    assert summary.loc["position after the first", "n_rows"] == 63


def test_position_profile_equals_brute_force():
    lm = tiny_model("bert")
    h, sid, pos, _ = brute_force(lm, SENTENCES)
    with PositionProfile(lm, layers=(0, 2), max_positions=40) as profile:
        extract(lm, SENTENCES, [profile], progress=False, max_sentences=3)
    means = profile.means(min_count=1)
    assert profile.means(min_count=5).shape[1] == np.flatnonzero(profile.counts >= 5).max() + 1
    emb = lm.model.embeddings
    ids = np.concatenate([lm.tokenizer(s)["input_ids"] for s in SENTENCES if s is not None])
    raw = (emb.word_embeddings.weight[ids] + emb.position_embeddings.weight[pos] + emb.token_type_embeddings.weight[0]).detach().double().numpy()
    for p in (0, 1, 5):
        at = pos == p
        np.testing.assert_allclose(means[0, p], raw[at].mean(axis=0), atol=1e-5)
        np.testing.assert_allclose(means[1, p], h[0, at].mean(axis=0), atol=1e-5)
        np.testing.assert_allclose(means[2, p], h[2, at].mean(axis=0), atol=1e-5)
    assert profile.counts[: means.shape[1]].sum() == len(pos)
    frame = positional.propagation(means, profile.stages, np.array([0, 1]), profile.counts)
    assert set(frame["stage"]) == {"input", "layer 0", "layer 2"} and (frame["positions"] == means.shape[1]).all()
    assert not lm.model.embeddings.LayerNorm._forward_pre_hooks  # the hook is removed on exit


def test_all_tokens_are_ordered_and_batch_independent(minilm):
    a, b = AllTokens(), AllTokens(dtype=np.float32)
    extract(minilm, SENTENCES, [a], progress=False, max_sentences=2)
    extract(minilm, SENTENCES, [b], progress=False, max_sentences=64)
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.sentence_ids, b.sentence_ids)
    np.testing.assert_allclose(a.layer(3), b.layer(3), atol=2e-3, rtol=2e-3)  # float16 storage
    h, sid, pos, _ = brute_force(minilm, SENTENCES)
    assert np.array_equal(sid, b.sentence_ids) and np.array_equal(pos, b.positions)
    np.testing.assert_allclose(b.layer(6), h[6], atol=1e-4)
    with pytest.raises(BookError, match="not among"):
        b.layer(7)


def test_contributions_are_weight_times_value_of_the_true_class():
    rng = np.random.default_rng(1)
    w, x, y = rng.normal(size=(4, 6)), rng.normal(size=(10, 6)), rng.integers(0, 4, 10)
    c = probe.contributions(w, x, y)
    for n in range(10):
        for i in range(6):
            assert c[n, i] == pytest.approx(abs(w[y[n], i] * x[n, i]))
    by_pos = probe.contribution_by_position(c, y, 5)
    np.testing.assert_allclose(by_pos[y[0]], c[y == y[0]].mean(axis=0))
    assert np.isnan(by_pos[4]).all()  # no token at position 4


def _toy(n: int, seed: int, n_classes: int = 20, width: int = 16):
    """Positions encoded in a random direction per position, plus noise."""
    codes = np.random.default_rng(123).normal(size=(n_classes, width))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    return (codes[y] + 0.3 * rng.normal(size=(n, width))).astype(np.float32), y


def test_probe_learns_positions_on_a_toy_set_and_is_deterministic():
    x, y = _toy(3000, 0)
    xd, yd = _toy(500, 1)
    xt, yt = _toy(500, 2)
    trained = probe.train_probe(x, y, xd, yd, n_classes=20, epochs=5, batch_size=128, lr=1e-2, device="cpu")
    assert probe.accuracy(trained.weight, xt, yt) > 0.95
    assert trained.dev_accuracy[trained.best_epoch - 1] == max(trained.dev_accuracy)
    again = probe.train_probe(x, y, xd, yd, n_classes=20, epochs=5, batch_size=128, lr=1e-2, device="cpu")
    assert np.array_equal(trained.weight, again.weight)
    chance = probe.train_probe(x, np.random.default_rng(5).permutation(y), xd, yd, n_classes=20, epochs=5, batch_size=128, lr=1e-2, device="cpu")
    assert probe.accuracy(chance.weight, xt, yt) < 0.2  # shuffled labels: nothing to learn


def _plain_probe(x, y, x_dev, y_dev, n_classes, epochs, seed, batch_size=128, lr=1e-2):
    """The probe as the paper trains it: every class a row of its own, one probe at a time (the reference)."""
    xt, yt, xd = torch.as_tensor(x), torch.as_tensor(y), torch.as_tensor(x_dev)
    weight = torch.zeros(n_classes, x.shape[1], requires_grad=True)
    optimizer, generator, history = torch.optim.Adam([weight], lr=lr), torch.Generator().manual_seed(seed), []
    for _ in range(epochs):
        order = torch.randperm(len(yt), generator=generator)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            loss = torch.nn.functional.cross_entropy(xt[idx] @ weight.T, yt[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        history.append(float(((xd @ weight.T).argmax(1).numpy() == y_dev).mean()))
    return weight.detach().numpy(), history


def test_probes_trained_side_by_side_are_the_plain_probes():
    """Several probes in one batched product (own labels, offsets and batch orders), with the classes no label uses
    trained as one shared row, give the weights and development accuracies of the plain one-at-a-time probe: classes
    15-29 never occur in training, two development labels are such classes, and one probe is centred."""
    x, y = _toy(2000, 0, n_classes=15)
    xd, yd = _toy(400, 1, n_classes=17)
    centre, shuffled = x.mean(axis=0), np.random.default_rng(5).permutation(y)
    together = probe.train_probes(
        x, [y, y, shuffled], xd, yd, 30, seeds=[0, 1, 0], offsets=[None, centre, None], epochs=3, batch_size=128, lr=1e-2, device="cpu"
    )
    for trained, (x_in, xd_in, labels, seed) in zip(together, [(x, xd, y, 0), (x - centre, xd - centre, y, 1), (x, xd, shuffled, 0)]):
        weight, history = _plain_probe(x_in, labels, xd_in, yd, 30, epochs=3, seed=seed)
        assert trained.best_epoch == int(np.argmax(history)) + 1 and trained.dev_accuracy == pytest.approx(history, abs=1e-3)
        if trained.best_epoch == 3:
            assert np.abs(trained.weight - weight).max() < 1e-5 * np.abs(weight).max()  # float32 rounding, over 48 Adam steps
        assert np.array_equal(trained.weight[15], trained.weight[29])  # the unused classes share one row


def test_a_probe_says_whether_it_converged():
    """A probe stopped while its development accuracy still rises says so; one that levelled off (or peaked earlier)
    does not; and flushing denormals while training leaves the global setting as it was."""
    x, y = _toy(3000, 0)
    xd, yd = _toy(500, 1)
    trained = probe.train_probe(x, y, xd, yd, n_classes=20, epochs=5, batch_size=128, lr=1e-2, device="cpu")
    assert trained.converged  # a toy problem the probe solves within five epochs
    assert probe.Probe(trained.weight, [0.5, 0.6, 0.7], 3).converged is False  # best at the last epoch, 10 points up
    assert probe.Probe(trained.weight, [0.5, 0.7, 0.702], 3).converged is True  # levelled off
    assert probe.Probe(trained.weight, [0.5, 0.7, 0.69], 2).converged is True
    assert torch.tensor(1e-40, dtype=torch.float32).item() != 0.0  # denormals are kept again outside the probe


def test_probe_decodes_positions_from_a_tiny_bert():
    lm = tiny_model("bert")
    words = " ".join(SENTENCES).split()
    rng = np.random.default_rng(0)
    shuffled = [" ".join(rng.choice(words, size=rng.integers(3, 20))) for _ in range(300)]  # word order unrelated to position
    data = {}
    for split, sentences in (("train", shuffled), ("test", SENTENCES)):
        tokens = AllTokens(dtype=np.float32)
        extract(lm, sentences, [tokens], progress=False)
        data[split] = tokens
    trained = probe.train_probe(
        data["train"].layer(0),
        data["train"].positions,
        data["test"].layer(0),
        data["test"].positions,
        n_classes=64,
        epochs=10,
        batch_size=128,
        lr=1e-2,
        device="cpu",
    )
    assert probe.accuracy(trained.weight, data["test"].layer(0), data["test"].positions) > 0.9


def test_probe_rejects_positions_beyond_its_classes():
    x, y = _toy(50, 0)
    with pytest.raises(BookError, match="labels must lie in 0..9"):
        probe.train_probe(x, y, x, y, n_classes=10, epochs=1, batch_size=128, lr=1e-2, device="cpu")


def test_classifier_with_bias_learns_what_a_bias_free_probe_cannot():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 4)).astype(np.float32)
    y = (x[:, 0] > 1.0).astype(int)  # a threshold away from the origin needs a bias
    with_bias = probe.fit_classifier(x, y, x, y, bias=True)
    without = probe.fit_classifier(x, y, x, y, bias=False)
    assert with_bias.bias is not None and without.bias is None
    assert with_bias.accuracy(x, y) > 0.97 > without.accuracy(x, y) - 0.1
    assert with_bias.accuracy(x, y) > without.accuracy(x, y)


def test_extreme_share_counts_rows_as_layer_stats_counts_vectors():
    matrix = np.random.default_rng(0).normal(size=(50, 8))
    matrix[:30, 5] += 10.0
    share = positional.extreme_share(matrix)
    assert share["argmax_dim"] == 5 and share["argmax_percent"] >= 60.0 and share["n_rows"] == 50
    lo, hi = extreme_counts(matrix[None])
    np.testing.assert_array_equal(hi[0], np.bincount(matrix.argmax(axis=1), minlength=8))
    np.testing.assert_array_equal(lo[0], np.bincount(matrix.argmin(axis=1), minlength=8))
    assert share["argmin_percent"] == 100.0 * lo[0].max() / 50


def test_position_view_lists_every_usable_position_with_its_table_row():
    lm = tiny_model("roberta")
    view = positional.position_view(lm, z_threshold=10.0)
    offset = view.tables.position_offset
    assert offset == lm.tokenizer.pad_token_id + 1 and len(view.rows) == lm.max_length
    assert view.rows["position"].tolist() == list(range(lm.max_length)) and (view.rows["table_row"] == view.rows["position"] + offset).all()
    chosen = view.example_rows()
    assert chosen[:3] == [0, 1, 2] and len(set(chosen)) == len(chosen)
    np.testing.assert_array_equal(view.matrix([0, 3]), view.tables.position[[offset, offset + 3]])


def test_contribution_summary_ranks_and_maps_the_outlier_dimensions():
    contrib = np.abs(np.random.default_rng(1).normal(size=(40, 6)))
    contrib[:, 2] += 5.0
    positions = np.arange(40) % 4
    row, mean, heat = probe.contribution_summary(contrib, positions, np.array([2, 4]), n_positions=4)
    assert row["top_dim"] == 2 and row["dim 2 rank"] == 1 and row["dim 4 rank"] == int((mean > mean[4]).sum() + 1)
    others = [0, 1, 3, 5]
    assert row["top_other_dim"] == others[int(mean[others].argmax())] and row["mean_all"] == pytest.approx(mean.mean())
    by_position = probe.contribution_by_position(contrib, positions, 4)
    np.testing.assert_allclose(heat, np.column_stack([by_position[:, 2], by_position[:, 4], by_position[:, others].max(axis=1)]))


@pytest.mark.parametrize("n_classes,bias", [(2, False), (5, True)])
def test_sentence_classifier_is_fitted_to_convergence_and_chosen_on_dev(n_classes, bias):
    """The softmax form decides as scikit-learn's own fit of the chosen C does; the chosen C has the best dev accuracy."""
    from sklearn.linear_model import LogisticRegression

    x, y = _toy(400, 0, n_classes, width=40)
    xd, yd = _toy(300, 1, n_classes, width=40)
    x, xd = x + 3.0, xd + 3.0  # a shared offset, as sentence vectors have
    fitted = probe.fit_classifier(x, y, xd, yd, bias=bias, patience=len(probe.DEFAULT_CS))
    assert set(fitted.dev_accuracy) == set(probe.DEFAULT_CS)
    assert fitted.dev_accuracy[fitted.c] == max(fitted.dev_accuracy.values())
    assert fitted.c == min(c for c, a in fitted.dev_accuracy.items() if a == fitted.dev_accuracy[fitted.c])
    reference = LogisticRegression(C=fitted.c, fit_intercept=bias, max_iter=5000).fit(x, y)
    agree = (fitted.weight @ xd.T).T + (0 if fitted.bias is None else fitted.bias)
    assert np.mean(agree.argmax(1) == reference.predict(xd)) > 0.99  # same optimum, reached from another start
    assert abs(fitted.accuracy(xd, yd) - fitted.dev_accuracy[fitted.c]) < 1e-12
    assert fitted.dev_accuracy[fitted.c] > 0.9 and fitted.converged
    early = probe.fit_classifier(x, y, xd, yd, bias=bias)  # patience 2: the path stops two Cs after a best that is not beaten
    tried = sorted(early.dev_accuracy)
    assert tried == sorted(probe.DEFAULT_CS)[: len(tried)] and early.c == fitted.c
    assert len(tried) == len(probe.DEFAULT_CS) or all(early.dev_accuracy[c] <= early.dev_accuracy[early.c] for c in tried[-2:])


def test_sentence_classifier_says_when_it_does_not_converge():
    x, y = _toy(200, 0, 3, width=30)
    assert probe.fit_classifier(x, y, x, y, bias=False).converged
    stopped = probe.fit_classifier(x, y, x, y, bias=False, cs=(1e6,), max_iter=2)
    assert not stopped.converged and stopped.c == 1e6


class _Tokens:
    """Stand-in for AllTokens: one layer of vectors, each row's position and its sentence (a new one at each position 0)."""

    def __init__(self, x: np.ndarray, positions: np.ndarray):
        self.x, self.positions = x, positions
        self.sentence_ids = np.cumsum(positions == 0) - 1

    def layer(self, layer: int) -> np.ndarray:
        return self.x


def _planted_tokens(seed: int, n: int, n_positions: int = 16, width: int = 64, constant: int = 63) -> _Tokens:
    """Tokens of sentences of 2-16 tokens (so early positions are the frequent ones, as in text), position written into
    32 dimensions (a weak random code per position, plus noise), noise elsewhere, and one large, nearly constant dimension
    that carries no position information."""
    rng = np.random.default_rng(seed)
    code = 0.5 * np.random.default_rng(99).normal(size=(n_positions, 32))
    positions = np.concatenate([np.arange(length) for length in rng.integers(2, n_positions + 1, size=n)])[:n]
    x = rng.normal(size=(n, width)).astype(np.float32)
    x[:, :32] = code[positions] + rng.normal(size=(n, 32))
    x[:, constant] = 20 + 0.01 * rng.normal(size=n)
    return _Tokens(x, positions)


def test_a_constant_dimension_without_position_information_is_not_ranked_first():
    """The issue's simulation: a bias-free probe lets a large constant dimension stand in for the bias (it ranks first
    with no position information); the centred probe, whose ranks the scorecard uses, does not rank it first, and the
    shuffled-position control exposes it (first again, at chance accuracy)."""
    from lib.experiments import position_probe

    tokens = {split: _planted_tokens(seed, n) for split, seed, n in (("train", 0, 3000), ("dev", 1, 600), ("test", 2, 1000))}
    run = position_probe._probe(tokens, np.array([63]), 0, 16, 16, "planted", epochs=8, batch_size=64, lr=1e-2, seed=0, device="cpu", probe_seeds=2)
    ranks = run.contribution.set_index("probe")["dim 63 rank"]
    assert ranks["paper"] == 1  # the confound the paper's measure shares
    assert ranks["centred"] > 32  # no position information, no high rank once a constant cannot act as a bias
    assert ranks["shuffled"] == 1  # the control: first with no position to predict
    first = run.contribution.set_index("probe")["outlier_first_share"]
    assert first["paper"] == 1.0 and first["centred"] == 0.0  # first (not first) in every resample of the test sentences
    assert run.contribution.set_index("probe")["probe_seeds"].to_dict() == {"paper": 2, "centred": 2, "shuffled": 1}  # paper's and centred twice
    hits = run.by_sentence  # the sampled unit of the accuracy: every test sentence, per training of the paper's probe
    assert hits["seed"].tolist() == [0] * hits["sentence"].nunique() + [1] * hits["sentence"].nunique()
    first = hits[hits["seed"] == 0]
    assert first["tokens"].sum() == run.accuracy["test_tokens"].iloc[0] and first["hits"].sum() / first["tokens"].sum() == pytest.approx(
        run.accuracy["test_accuracy"].iloc[0], abs=1e-9
    )
    accuracy = run.accuracy.iloc[0]
    assert accuracy["centred_test_accuracy"] > 0.5 and accuracy["shuffled_test_accuracy"] < 0.2  # 16 positions: chance 1/16


def test_the_papers_lowest_layers_are_a_share_of_the_depth():
    from lib.experiments.position_probe import lowest_layers

    assert [lowest_layers(n) for n in (2, 6, 12, 24)] == [1, 2, 3, 6]  # layers 1-3 of 12, as the paper


def test_layernorm_criteria_count_the_layers_each_bar_is_cleared_in():
    """The paper's bars in each layer's first LayerNorm: γ among the 6 largest in the first 10/12 of the layers, β among
    the 2 most extreme (in the outlier's direction) in all; every dimension counted, so the never-flagged ones are the
    control."""
    from lib.experiments.positional_origin import layernorm_criteria
    from lib.measure.positional import LayerNormParameters

    width, rng = 40, np.random.default_rng(0)
    norms = [LayerNormParameters(0, "embedding", "emb", rng.normal(size=width), rng.normal(size=width))]
    for layer in range(1, 13):
        gamma, beta = rng.normal(size=width), rng.normal(size=width)
        gamma[7] = 10.0 if layer <= 10 else -10.0  # dim 7: the largest gain in layers 1-10 only (the paper's BERT bar)
        beta[9] = -10.0  # dim 9, a negative outlier: the most negative bias in every layer (the RoBERTa bar)
        beta[5] = -10.0 if layer < 12 else 10.0  # dim 5, flagged positive: extreme the other way, then right in the last layer only
        norms += [LayerNormParameters(layer, "first", f"l{layer}.a", gamma, beta), LayerNormParameters(layer, "second", f"l{layer}.b", gamma * 0, beta * 0)]
    c = layernorm_criteria(norms, np.array([7, 9, 5]), ["+", "-", "+"]).set_index("dim")
    assert c.loc[7, "gamma_layers"] == 10 and c.loc[7, "gamma_met"] == 10 and c.loc[7, "meets"]
    assert c.loc[9, "beta_layers"] == 12 and c.loc[9, "beta_met"] == 12 and c.loc[9, "meets"]
    assert c.loc[5, "beta_met"] == 1 and not c.loc[5, "meets"]  # the wrong direction does not count for an outlier
    assert c["flagged"].sum() == 3 and len(c) == width


def test_first_share_resamples_sentences():
    """Two dimensions with the same mean contribution: an outlier is first in about half of the resamples; one clearly
    larger: in all; sentences, not tokens, are resampled (one sentence holding every large value decides nothing)."""
    rng = np.random.default_rng(0)
    sentences = np.repeat(np.arange(200), 10)
    tied = np.abs(rng.normal(size=(2000, 2)))
    tied[:, 1] = np.roll(tied[:, 0], 1000)  # the same values in other sentences: equal means, resamples differ
    assert 0.2 < probe.first_share(tied, sentences, np.array([0])) < 0.8
    clear = tied.copy()
    clear[:, 0] += 1.0
    assert probe.first_share(clear, sentences, np.array([0])) == 1.0
    lumpy = tied.copy()
    lumpy[sentences == 0, 0] += 20.0  # one sentence makes dim 0's mean the largest
    assert lumpy[:, 0].mean() > lumpy[:, 1].mean()
    assert probe.first_share(lumpy, sentences, np.array([0])) < 0.95  # undecided: the resamples without that sentence disagree
    assert np.isnan(probe.first_share(clear, sentences, np.array([], dtype=int)))


def test_group_sums_are_what_numpy_add_at_computes():
    rng = np.random.default_rng(0)
    values, groups = rng.random((500, 6)).astype(np.float32), rng.integers(0, 9, 500)
    expected = np.zeros((11, 6))
    np.add.at(expected, groups, values)
    assert np.array_equal(probe.group_sums(values, groups, 11), expected)  # groups 9 and 10 empty: zero rows
