"""Tokenizer training and masked-LM pre-training (chapter 05): masking, equivariance without position
embeddings, loss going down, save/load and resume."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from lib.encode.models import load_model
from lib.errors import BookError
from lib.train import bpe, masked_lm, shards

from .conftest import SENTENCES

TEXTS = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))] * 4
TINY = dict(  # every setting, as chapter 05 passes them (PretrainConfig has no defaults)
    position_embeddings=True,
    corpus="book",
    vocab_size=300,
    valid_share=0.02,
    hidden_size=32,
    layers=2,
    heads=4,
    intermediate_size=64,
    seq_len=24,
    steps=30,
    batch_size=8,
    lr=3e-3,
    warmup=3,
    weight_decay=0.01,
    adam_betas=(0.9, 0.98),
    adam_eps=1e-6,
    grad_clip=1.0,
    mask_prob=0.15,
    dropout=0.0,
    eval_every=10,
    seed=0,
    precision="none",
)


@pytest.fixture(scope="module")
def tokenizer():
    return bpe.train_tokenizer(TEXTS, 300, 24)


@pytest.fixture(scope="module")
def blocks(tokenizer):
    return shards.in_memory(TEXTS, tokenizer, 24)


def test_tokenizer_is_roberta_style_and_deterministic(tokenizer):
    again = bpe.train_tokenizer(TEXTS, 300, 24)
    assert again.get_vocab() == tokenizer.get_vocab() and len(tokenizer) == 300
    assert [tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id, tokenizer.mask_token_id] == [0, 1, 2, 3, 4]
    text = "the cast is uniformly excellent"
    enc = tokenizer(text, return_offsets_mapping=True)
    assert enc["input_ids"][0] == 0 and enc["input_ids"][-1] == 2
    assert tokenizer.decode(enc["input_ids"], skip_special_tokens=True) == text
    assert "".join(text[a:b] for a, b in enc["offset_mapping"][1:-1]) == text.replace(" ", "")
    with pytest.raises(BookError, match="vocab_size"):
        bpe.train_tokenizer(TEXTS, 100, 24)


def test_split_documents_holds_out_the_tail_of_every_document():
    docs = ["\n".join(f"doc{d} line{i}" for i in range(50)) for d in range(3)]
    train, valid = masked_lm.split_documents(docs, 0.1)
    assert len(train) == len(valid) == 3
    for d in range(3):
        assert valid[d].split("\n") == [f"doc{d} line{i}" for i in range(45, 50)]
        assert not set(train[d].split("\n")) & set(valid[d].split("\n"))


def test_blocks_in_memory_frame_a_continuous_stream(tokenizer, blocks):
    assert blocks.shape[1] == 24 and (blocks[:, 0] == tokenizer.bos_token_id).all() and (blocks[:, -1] == tokenizer.eos_token_id).all()
    stream = [t for text in TEXTS for t in (*tokenizer(text, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id)]
    assert blocks[:, 1:-1].flatten().tolist() == stream[: blocks.shape[0] * 22]
    with pytest.raises(BookError, match="fewer than one block"):
        shards.in_memory(["dull"], tokenizer, 24)


def test_masking_follows_80_10_10_and_skips_special_tokens(tokenizer):
    torch.manual_seed(0)
    ids = torch.randint(5, len(tokenizer), (400, 100))
    ids[:, 0], ids[:, -1] = tokenizer.bos_token_id, tokenizer.eos_token_id
    inputs, labels = masked_lm.mask_tokens(ids, tokenizer, 0.15, torch.Generator().manual_seed(1))
    chosen = labels != masked_lm.IGNORE
    assert not chosen[:, [0, -1]].any()
    assert (labels[chosen] == ids[chosen]).all()
    assert chosen.float().mean().item() == pytest.approx(0.15 * 98 / 100, abs=0.005)
    masked = (inputs == tokenizer.mask_token_id) & chosen
    kept = (inputs == ids) & chosen
    assert masked.sum() / chosen.sum() == pytest.approx(0.8, abs=0.01)
    assert kept.sum() / chosen.sum() == pytest.approx(0.1 + 0.1 / len(tokenizer), abs=0.01)  # 10% kept (+ random draws of the same id)
    assert (inputs[~chosen] == ids[~chosen]).all()
    again = masked_lm.mask_tokens(ids, tokenizer, 0.15, torch.Generator().manual_seed(1))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)


def _masked_lm_loss(model, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the masked tokens only (the training loss)."""
    return masked_lm.masked_lm_losses(model, masked_lm.MaskedPart.of(inputs, labels)).mean()


def test_masked_loss_equals_the_full_model_loss(tokenizer, blocks):
    cfg = masked_lm.PretrainConfig(**TINY)
    model = masked_lm.build_model(cfg, tokenizer).eval()
    inputs, labels = masked_lm.mask_tokens(blocks[:4], tokenizer, 0.15, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = _masked_lm_loss(model, inputs, labels)
        full = model(input_ids=inputs, labels=labels).loss
    assert ours.item() == pytest.approx(full.item(), rel=1e-5)


def test_block_losses_add_up_to_the_token_weighted_mean(tokenizer, blocks):
    cfg = masked_lm.PretrainConfig(**TINY)
    model = masked_lm.build_model(cfg, tokenizer).eval()
    sums, counts = masked_lm.block_losses(model, blocks[:7], tokenizer, cfg, torch.device("cpu"), batch_size=3)
    assert sums.shape == counts.shape == (7,) and (counts > 0).all()
    inputs, labels = masked_lm.mask_tokens(blocks[3:6], tokenizer, cfg.mask_prob, masked_lm._generator(cfg.seed, 3, 1))  # the second batch's masking
    with torch.no_grad():
        alone = _masked_lm_loss(model, inputs[1:2], labels[1:2]).item()  # block 4 = that batch's second row
    assert sums[4] / counts[4] == pytest.approx(alone, rel=1e-5)
    assert counts[4] == int((labels[1] != masked_lm.IGNORE).sum())
    assert masked_lm.evaluate(model, blocks[:7], tokenizer, cfg, torch.device("cpu"), batch_size=3) == pytest.approx(sums.sum() / counts.sum())


def test_position_table_extreme_finds_a_planted_dimension(tokenizer):
    cfg = masked_lm.PretrainConfig(**TINY)
    model = masked_lm.build_model(cfg, tokenizer)
    with torch.no_grad():
        model.roberta.embeddings.position_embeddings.weight[:, 5] += 3.0
    found = masked_lm.position_table_extreme(model, cfg.seq_len)
    assert found["pe_top_dim"] == 5 and found["pe_top_z"] > 10
    nope = masked_lm.build_model(masked_lm.PretrainConfig(**{**TINY, "position_embeddings": False}), tokenizer)
    assert np.isnan(masked_lm.position_table_extreme(nope, cfg.seq_len)["pe_top_z"])


def test_batches_cover_each_block_once_per_epoch():
    seen = torch.cat([masked_lm.batch_indices(10, 5, 3, step) for step in range(2)])
    assert sorted(seen.tolist()) == list(range(10))
    assert torch.equal(masked_lm.batch_indices(10, 5, 3, 1), masked_lm.batch_indices(10, 5, 3, 1))
    assert not torch.equal(masked_lm.batch_indices(10, 10, 3, 0), masked_lm.batch_indices(10, 10, 3, 1))  # a new permutation per epoch


@pytest.mark.parametrize("with_pe", [False, True])
def test_only_the_model_without_position_embeddings_is_permutation_equivariant(tokenizer, with_pe):
    cfg = masked_lm.PretrainConfig(**{**TINY, "position_embeddings": with_pe})
    model = masked_lm.build_model(cfg, tokenizer).eval()
    if with_pe:  # a trained table is not zero; random init is small, so make the positional signal visible
        with torch.no_grad():
            model.roberta.embeddings.position_embeddings.weight.normal_()
    ids = torch.tensor([tokenizer("funny , touching and smart , slow going")["input_ids"]])
    assert 8 < ids.shape[1] <= 24
    perm = torch.randperm(ids.shape[1], generator=torch.Generator().manual_seed(0))  # special tokens move too: no anchoring
    with torch.no_grad():
        out = model.roberta(input_ids=ids, output_hidden_states=True).hidden_states
        permuted = model.roberta(input_ids=ids[:, perm], output_hidden_states=True).hidden_states
    gaps = [float((p - h[:, perm]).abs().max()) for h, p in zip(out, permuted)]
    if with_pe:
        assert min(gaps[1:]) > 1e-2
    else:
        assert max(gaps) < 1e-5
        assert not model.roberta.embeddings.position_embeddings.weight.requires_grad
        assert float(model.roberta.embeddings.position_embeddings.weight.abs().max()) == 0.0


def test_tiny_run_reduces_loss_and_saves_and_loads_identically(tokenizer, blocks, tmp_path, monkeypatch):
    cfg = masked_lm.PretrainConfig(**{**TINY, "position_embeddings": False})
    before = masked_lm.evaluate(masked_lm.build_model(cfg, tokenizer), blocks, tokenizer, cfg, torch.device("cpu"))
    run = masked_lm.train(cfg, tokenizer, blocks, blocks, track_blocks=4, checkpoint_dir=tmp_path / "ckpt", device="cpu")
    assert run.history["step"].tolist() == [10, 20, 30]
    assert run.history["valid_loss"].iloc[-1] < before - 1.0
    assert set(run.track["layer"]) == {0, 1, 2} and run.track["argmax_percent"].between(0, 100).all()
    assert float(run.model.roberta.embeddings.position_embeddings.weight.abs().max()) == 0.0  # still no positional signal

    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    masked_lm.save(run, tmp_path / "models" / "tiny-nope", "quick")
    loaded = load_model("trained:tiny-nope", device="cpu")
    enc = loaded.tokenizer(SENTENCES[2], return_tensors="pt", truncation=True)
    with torch.no_grad():
        ours = run.model.roberta(**enc, output_hidden_states=True).hidden_states
        theirs = loaded.model(**enc, output_hidden_states=True).hidden_states
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
    assert loaded.n_layers == 2 and loaded.width == 32 and loaded.model.config.position_embeddings is False
    history, track = masked_lm.saved_run(tmp_path / "models" / "tiny-nope", cfg)
    assert history["valid_loss"].tolist() == pytest.approx(run.history["valid_loss"].tolist())
    assert masked_lm.saved_run(tmp_path / "models" / "tiny-nope", dataclasses.replace(cfg, steps=31)) is None
    key = cfg.key()
    monkeypatch.setattr(masked_lm, "training_code", lambda: "other code")  # saved by other training code: train again
    assert masked_lm.saved_run(tmp_path / "models" / "tiny-nope", cfg) is None and cfg.key() != key
    assert json.loads((tmp_path / "models" / "tiny-nope" / "training.json").read_text())["config"]["position_embeddings"] is False


def test_an_interrupted_run_resumes_to_the_same_weights(tokenizer, blocks, tmp_path):
    cfg = masked_lm.PretrainConfig(**{**TINY, "dropout": 0.1, "steps": 20})
    whole = masked_lm.train(cfg, tokenizer, blocks, blocks, track_blocks=4, checkpoint_dir=tmp_path / "a", device="cpu")

    def stop(step: int) -> None:
        if step == 13:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        masked_lm.train(cfg, tokenizer, blocks, blocks, track_blocks=4, checkpoint_dir=tmp_path / "b", device="cpu", on_step=stop)
    assert not list((tmp_path / "b").rglob(".*.tmp"))  # nothing half-written
    resumed = masked_lm.train(cfg, tokenizer, blocks, blocks, track_blocks=4, checkpoint_dir=tmp_path / "b", device="cpu")
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert np.allclose(whole.history["valid_loss"], resumed.history["valid_loss"])


def test_bad_settings_give_one_line():
    for change, word in [
        ({"hidden_size": 30, "heads": 4}, "divisible"),
        ({"warmup": 50, "steps": 10}, "warmup"),
        ({"layers": 0}, "layers"),
        ({"mask_prob": 1.5}, "mask_prob"),
    ]:
        with pytest.raises(BookError, match=word) as err:
            masked_lm.PretrainConfig(**{**TINY, **change}).check()
        assert "\n" not in str(err.value)


def test_unigram_perplexity_by_hand(tokenizer):
    v = len(tokenizer)
    train = shards.Blocks(np.array([10, 2, 10, 11, 5]), 6, 0, 2)  # one block <s> 10 </s> 10 11 </s>: specials are not counted, 5 is cut off
    valid = shards.Blocks(np.array([10, 11, 12, 7]), 5, 0, 2)  # one block <s> 10 11 12 </s>
    counts = np.ones(v)
    counts[10] += 2
    counts[11] += 1
    p = counts / counts.sum()
    expected = np.exp(-np.mean(np.log(p[[10, 11, 12]])))
    assert masked_lm.unigram_perplexity(train, valid, tokenizer) == pytest.approx(expected, rel=1e-9)


def test_outlier_track_equals_a_direct_count_of_the_hidden_states(tokenizer, blocks):
    """The track now goes through LayerStats (the book's one count of extremes): same dimensions and shares as
    counting the hidden states directly, means equal to float32 accuracy."""
    model = masked_lm.build_model(masked_lm.PretrainConfig(**TINY), tokenizer).eval()
    track = masked_lm.layer_extremes(model, blocks[:12], torch.device("cpu"), batch_size=5)
    with torch.no_grad():
        parts = [torch.stack(model.roberta(input_ids=blocks[i : min(i + 5, 12)], output_hidden_states=True).hidden_states).flatten(1, 2) for i in (0, 5, 10)]
    hidden = torch.cat(parts, dim=1).double().numpy()  # (layers + 1, tokens, width)
    means = hidden.mean(axis=1)
    top = np.abs(means).argmax(axis=1)
    assert track["top_dim"].tolist() == top.tolist()
    np.testing.assert_allclose(track["top_mean"], means[np.arange(len(means)), top], rtol=1e-5, atol=1e-7)
    for kind, pick in (("argmax", hidden.argmax(axis=2)), ("argmin", hidden.argmin(axis=2))):
        counts = np.stack([np.bincount(p, minlength=hidden.shape[2]) for p in pick])
        assert track[f"{kind}_dim"].tolist() == counts.argmax(axis=1).tolist()
        np.testing.assert_array_equal(track[f"{kind}_percent"], 100.0 * counts.max(axis=1) / hidden.shape[1])


def test_token_streams_on_disk_equal_the_in_memory_blocks(tokenizer, blocks, tmp_path, monkeypatch):
    monkeypatch.setattr(shards, "_BATCH", 7)  # texts cross several encoding batches
    disk = shards.on_disk(iter(TEXTS), tokenizer, 24, tmp_path, "texts v1")
    assert isinstance(disk.stream, np.memmap) and disk.stream.dtype == np.uint16 and disk.shape == blocks.shape
    assert torch.equal(disk[:], blocks[:]) and torch.equal(disk[:, 1:-1], blocks[:, 1:-1])
    rows = torch.tensor([5, 0, len(blocks) - 1, 5])
    assert torch.equal(disk[rows], blocks[:][rows]) and torch.equal(disk[3], blocks[:][3])
    (file,) = tmp_path.glob("*.tokens")
    written = file.stat().st_mtime_ns
    again = shards.on_disk(["never read"], tokenizer, 24, tmp_path, "texts v1")  # same tokenizer and corpus key: reused
    assert torch.equal(again[:], blocks[:]) and file.stat().st_mtime_ns == written
    shards.on_disk(TEXTS[:40], tokenizer, 24, tmp_path, "texts v2")  # another corpus: a stream of its own
    assert len(list(tmp_path.glob("*.tokens"))) == 2
    with pytest.raises(BookError, match="block numbers must be below"):
        disk[torch.tensor([len(blocks)])]


def test_embedding_drift_measures_the_common_direction_by_frequency():
    """Rows that share a direction in proportion to their rarity: the ratio of the mean row to the average row rises
    from the random start, the rarest fifth lines up with the mean row most, special tokens and never-seen ids apart."""
    from lib.experiments import pretraining

    rng = np.random.default_rng(0)
    vocab, width = 60, 16
    counts = np.concatenate([[0, 0], np.arange(1, vocab - 1)])  # ids 0-1 special, then from rare to frequent
    counts[5] = 0  # one token never seen in training
    initial = rng.normal(size=(vocab, width))
    direction = np.eye(width)[0] * 6
    rarity = 1 - np.argsort(np.argsort(counts)) / vocab
    trained = initial + rarity[:, None] * direction
    frame = pretraining.embedding_drift("run", 0, True, {"initial": initial, "trained": trained}, counts, special=[0, 1]).set_index(["stage", "bin"])
    assert frame.loc[("trained", "all"), "mean_norm_over_avg_norm"] > frame.loc[("initial", "all"), "mean_norm_over_avg_norm"] + 0.2
    assert frame.loc[("trained", "never seen"), "tokens"] == 1 and frame.loc[("trained", "all"), "tokens"] == vocab - 2
    rare, common = frame.loc[("trained", "bin 1 of 5"), "mean_cosine_to_mean"], frame.loc[("trained", "bin 5 of 5"), "mean_cosine_to_mean"]
    assert rare > common + 0.1 and frame.loc[("trained", "bin 1 of 5"), "max_count"] < frame.loc[("trained", "bin 5 of 5"), "min_count"]
    view = pretraining.drift_view(frame.reset_index())
    assert view.columns[-1] == "|mean| / avg norm" and len(view) == 2
