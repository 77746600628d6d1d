"""Shared fixtures: tiny randomly initialised models (built here, no download) and the packaged MiniLM."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never reach for the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402
from transformers import (  # noqa: E402
    AutoTokenizer,
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2Model,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaModel,
)

from lib.encode.models import LoadedModel, load_model, minilm_path, wrap  # noqa: E402
from lib.settings import data_dir  # noqa: E402

if os.environ.get("BOOK_TORCH_THREADS"):  # the suite must pass with 1 and with 2 threads: `BOOK_TORCH_THREADS=1 make test`
    torch.set_num_threads(int(os.environ["BOOK_TORCH_THREADS"]))

SENTENCES = [
    "a gripping , funny film .",
    "not worth the price of admission",
    "the cast is uniformly excellent and the script sharp , witty and surprisingly moving",
    "dull",
    "it 's a mess , but a fascinating one , and you will want to see it twice",
    "an hour and a half of nothing happening",
    "",
    "slow going at first , then wonderful",
    "the director knows exactly what he is doing and does it with grace",
    "bad",
    "funny , touching and smart",
    "it never finds its footing",
]

TINY = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)


def _gpt2_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        SENTENCES * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def tiny_model(kind: str) -> LoadedModel:
    """A randomly initialised 3-layer, 32-wide model of the given architecture, seeded."""
    torch.manual_seed(0)
    if kind == "bert":
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **TINY))
    elif kind == "roberta":
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())  # BERT vocabulary; RoBERTa's position offset from pad id
        model = RobertaModel(RobertaConfig(vocab_size=tokenizer.vocab_size, pad_token_id=tokenizer.pad_token_id, **{**TINY, "max_position_embeddings": 66}))
    elif kind == "gpt2":
        tokenizer = _gpt2_tokenizer()
        model = GPT2Model(
            GPT2Config(
                vocab_size=len(tokenizer),
                bos_token_id=tokenizer.eos_token_id,
                eos_token_id=tokenizer.eos_token_id,
                n_embd=32,
                n_layer=3,
                n_head=4,
                n_positions=64,
            )
        )
    else:
        raise ValueError(kind)
    return wrap(model, tokenizer, f"tiny-{kind}", f"tiny-{kind}", torch.device("cpu"))


@pytest.fixture(params=["bert", "roberta", "gpt2"])
def tiny(request) -> LoadedModel:
    return tiny_model(request.param)


@pytest.fixture(scope="session")
def minilm() -> LoadedModel:
    return load_model("minilm", device="cpu")


def unavailable(reason: str) -> None:
    """A test that cannot run here: skipped, with its reason in the one-line-per-reason summary at the end; in CI
    (CI set) a failure, since CI installs everything and a check it cannot run would silently be gone."""
    if os.environ.get("CI"):
        pytest.fail(f"CI cannot run this test: {reason}")
    pytest.skip(reason)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001 (pytest's hook signature)
    """One line per reason tests were skipped, with how many: what a newcomer's run left out and how to run it."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"skipped {count} test{'s' if count > 1 else ''}: {reason}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data directory; missing data fails in CI and skips elsewhere."""
    root = data_dir()
    if not (root / "sst2").is_dir():
        unavailable(f"no data sets in {root}: set BOOK_DATA_DIR (or run make data) to run them")
    return root


@pytest.fixture(scope="session")
def cluster_extra() -> None:
    """Dask distributed (requirements-cluster.txt): missing fails in CI and skips elsewhere."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        unavailable("the cluster extra is not installed: .venv/bin/pip install -r requirements-cluster.txt to run them")


@pytest.fixture(scope="session")
def page_book_folder(tmp_path_factory) -> Path:
    """The one-chapter page book (tests/books.py: `PAGE_CHAPTER`) executed in the quick edition and built to HTML once
    a session, with nothing left patched: tests take it as `page_book` (to read) or `own_page_book` (to change)."""
    from tests.books import built_page_book

    return built_page_book(tmp_path_factory.mktemp("page-book"))


@pytest.fixture
def page_book(page_book_folder, monkeypatch):
    """The shared page book's quick edition, executed and built, for a test that only reads it (the library pointed at
    it until the test ends); a test that changed it is an error: it wants `own_page_book`."""
    from lib.core import sources
    from tests.books import fingerprint, open_page_book

    before = fingerprint(page_book_folder)
    yield open_page_book(page_book_folder, monkeypatch)
    sources.declared_parameters.cache_clear()
    assert fingerprint(page_book_folder) == before, "a test changed the shared page book: let it take `own_page_book`"


@pytest.fixture
def own_page_book(page_book_folder, monkeypatch, tmp_path_factory):
    """The shared page book's quick edition for a test to change: a copy at the same paths (its cache entries name the
    results they vouch for, and Sphinx's environment its source folder, by absolute path), the original put back after."""
    import shutil

    from lib.core import sources
    from tests.books import open_page_book

    kept = tmp_path_factory.mktemp("page-book-kept") / "book"
    page_book_folder.rename(kept)
    try:
        shutil.copytree(kept, page_book_folder, symlinks=True)
        yield open_page_book(page_book_folder, monkeypatch)
    finally:
        sources.declared_parameters.cache_clear()
        shutil.rmtree(page_book_folder, ignore_errors=True)
        kept.rename(page_book_folder)
