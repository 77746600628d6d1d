"""The paper profile's Wikipedia corpus: pinned by commit and checksums, fetched from a local stand-in for the hub,
refused when a file differs, streamed into the same token shards as the book's corpus."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub.hf_api import BlobLfsInfo, RepoSibling

from lib.core.profiles import chapter_parameters
from lib.datasets import cli, wikipedia
from lib.edition import train_ahead as launcher
from lib.errors import BookError
from lib.experiments.pretraining import pretraining_runs
from lib.train import masked_lm, shards

from .test_data_release import Server
from .test_masked_lm import TINY

REVISION = "0123456789abcdef0123456789abcdef01234567"
WORDS = "the a river town film music war king city song game team school church bridge island".split()


def _parquet(first_id: int, n: int) -> bytes:
    """n articles (ids from first_id), each a title line, an empty line and three sentences of ten words."""
    rng = np.random.default_rng(first_id)
    texts = ["\n".join([f"Article {i}", "", *(" ".join(rng.choice(WORDS, 10)) + "." for _ in range(3))]) for i in range(first_id, first_id + n)]
    table = pa.table({"id": [str(i) for i in range(first_id, first_id + n)], "url": [""] * n, "title": [""] * n, "text": texts})
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=7)
    return out.getvalue()


FILES = {f"{wikipedia.CONFIG}/train-0000{k}-of-00002.parquet": _parquet(1000 * k, 60) for k in range(2)}


def _hub_api(files: dict[str, bytes]) -> SimpleNamespace:
    """What `HfApi().dataset_info(..., files_metadata=True)` returns, for a repository holding files plus a README."""
    siblings = [RepoSibling("README.md", size=10)] + [
        RepoSibling(name, size=len(data), lfs=BlobLfsInfo(size=len(data), sha256=hashlib.sha256(data).hexdigest(), pointer_size=130))
        for name, data in files.items()
    ]
    info = SimpleNamespace(sha=REVISION, siblings=siblings)
    return SimpleNamespace(dataset_info=lambda repo, revision, files_metadata: info)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A local server holding FILES where the hub would, a lock file pinning them, and empty data and cache folders."""
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(wikipedia, "LOCK", tmp_path / "wikipedia.lock.json")
    server = Server()
    server.thread.start()
    for name, data in FILES.items():
        server.files[f"datasets/{wikipedia.REPO}/resolve/{REVISION}/{name}"] = data
    yield server, server.url("").rstrip("/")
    server.httpd.shutdown()
    server.httpd.server_close()


def test_pin_records_the_commit_and_every_parquet_file_of_the_config(hub):
    snapshot = wikipedia.pin("main", api=_hub_api(FILES))
    assert snapshot.revision == REVISION
    assert [(p, d) for p, d, _ in snapshot.files] == [(p, hashlib.sha256(d).hexdigest()) for p, d in sorted(FILES.items())]
    assert wikipedia.pinned() == snapshot  # read back from the lock file
    assert json.loads(wikipedia.LOCK.read_text())["revision"] == REVISION
    with pytest.raises(BookError, match=r"has no parquet files under 20231101\.de/"):
        wikipedia.pin("main", config="20231101.de", api=_hub_api(FILES))


def test_without_a_lock_or_offline_one_line_says_what_to_do(hub, monkeypatch):
    with pytest.raises(BookError, match=r"^the Wikipedia snapshot is not pinned .*python -m lib\.datasets pin-wikipedia"):
        wikipedia.pinned()

    def offline(*args, **kwargs):
        raise ConnectionError("no route to host")

    with pytest.raises(BookError, match=r"^could not read wikimedia/wikipedia at main on the Hugging Face hub \(ConnectionError\)"):
        wikipedia.pin(api=SimpleNamespace(dataset_info=offline))
    assert not wikipedia.LOCK.exists()
    wikipedia.LOCK.write_text(json.dumps({"repo": wikipedia.REPO, "config": wikipedia.CONFIG, "revision": "main", "files": []}))
    with pytest.raises(BookError, match="revision must be a 40-hex commit"):
        wikipedia.pinned()
    wikipedia.LOCK.write_text('{"repo": "wikimedia/wikipedia"')  # cut short
    with pytest.raises(BookError, match=r"is not a lock file written by .*pin again"):
        wikipedia.pinned()


def test_fetch_downloads_verifies_and_a_second_fetch_downloads_nothing(hub, capsys):
    server, endpoint = hub
    snapshot = wikipedia.pin(api=_hub_api(FILES))
    paths = wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint)
    assert [p.read_bytes() for p in paths] == list(FILES.values())
    assert all(str(p).startswith(str(snapshot.folder())) for p in paths)
    before = len(server.requests)
    assert wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint) == paths
    assert len(server.requests) == before


def test_a_file_that_differs_from_the_pin_is_refused_and_not_kept(hub):
    server, endpoint = hub
    snapshot = wikipedia.pin(api=_hub_api(FILES))
    name = next(iter(FILES))
    server.files[f"datasets/{wikipedia.REPO}/resolve/{REVISION}/{name}"] = _parquet(5000, 60)  # the hub's file changed
    with pytest.raises(BookError, match=r"^the file at .* has SHA-256 .* not the pinned .*pin again"):
        wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint)
    assert not (snapshot.folder() / name).exists()
    # a damaged local copy is not trusted either: it is downloaded again
    server.files[f"datasets/{wikipedia.REPO}/resolve/{REVISION}/{name}"] = FILES[name]
    paths = wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint)
    paths[1].write_bytes(paths[1].read_bytes()[:-1] + b"x")  # same size, one byte changed
    (paths[1].parent / (paths[1].name + ".sha256")).unlink()  # as if the damage came before the first check
    assert wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint)[1].read_bytes() == list(FILES.values())[1]


def test_the_split_holds_out_whole_articles_by_id_and_loses_no_line(hub):
    _, endpoint = hub
    paths = wikipedia.fetch(wikipedia.pin(api=_hub_api(FILES)), progressbar=False, endpoint=endpoint)
    train, valid = (list(wikipedia.Texts(paths, 0.2, v)) for v in (False, True))
    every = [line for data in FILES.values() for text in pq.read_table(io.BytesIO(data))["text"].to_pylist() for line in text.split("\n") if line]
    assert sorted(train + valid) == sorted(every) and len(train) + len(valid) == len(every)  # nothing lost, nothing twice
    held = {line.split()[1] for line in valid if line.startswith("Article ")}
    assert 0.1 < len(held) / 120 < 0.3  # about valid_share of the 120 articles
    assert held == {str(i) for k in range(2) for i in range(1000 * k, 1000 * k + 60) if wikipedia.held_out(str(i), 0.2)}
    assert list(wikipedia.Texts(paths, 0.2, True)) == valid  # read again: the same texts


def test_wikipedia_goes_through_the_same_tokenizer_cache_and_token_shards(hub, capsys):
    _, endpoint = hub
    snapshot = wikipedia.pin(api=_hub_api(FILES))
    wikipedia.fetch(snapshot, progressbar=False, endpoint=endpoint)  # in place: prepare_corpus downloads nothing
    cfg = dataclasses.replace(masked_lm.PretrainConfig(**TINY), corpus="wikipedia", valid_share=0.2)
    tokenizer, train_blocks, valid_blocks = masked_lm.prepare_corpus(cfg)
    paths = [snapshot.folder() / name for name, _, _ in snapshot.files]
    memory = shards.in_memory(wikipedia.Texts(paths, 0.2, False), tokenizer, cfg.seq_len)
    assert isinstance(train_blocks.stream, np.memmap) and np.array_equal(np.asarray(train_blocks.stream), memory.stream)
    assert train_blocks[:].equal(memory[:]) and len(valid_blocks) > 0
    again, train_again, _ = masked_lm.prepare_corpus(cfg)  # the tokenizer and tokens come from the cache
    assert shards.tokenizer_digest(again) == shards.tokenizer_digest(tokenizer)
    assert train_again.stream.filename == train_blocks.stream.filename
    assert len(list((masked_lm.cache_dir() / "tokenizers").iterdir())) == 1


def test_the_command_line_says_in_one_line_when_nothing_is_pinned(hub, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["fetch-wikipedia"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith("error: the Wikipedia snapshot is not pinned")
    with pytest.raises(SystemExit):
        cli.main(["pin-wikipedia", "main", "extra"])
    assert "at most one argument" in capsys.readouterr().err


def test_the_paper_profile_pretrains_on_wikipedia_and_stops_in_one_line_until_pinned(hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BOOK_MODELS_DIR", str(tmp_path / "models"))
    _, configs = pretraining_runs(chapter_parameters("05_pretraining", "paper"))
    assert {cfg.corpus for cfg in configs.values()} == {"wikipedia"}
    with pytest.raises(SystemExit) as stop:
        launcher.main(["--profile", "paper"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith("error: the Wikipedia snapshot is not pinned")
    assert not (tmp_path / "models").exists()
