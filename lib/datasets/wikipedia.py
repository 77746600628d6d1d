"""English Wikipedia, the paper profile's pre-training corpus (Luo et al. 2021 pre-train RoBERTa on English Wikipedia):
the Wikimedia Foundation's plain-text snapshot on the Hugging Face hub (`wikimedia/wikipedia`, config `20231101.en`,
parquet files with one article per row), pinned in `wikipedia.lock.json` by the repository's commit and every file's
SHA-256 and size.

    python -m lib.datasets pin-wikipedia [REVISION]   # maintainers, online: write the lock file (then commit it)
    python -m lib.datasets fetch-wikipedia            # online: download the pinned files and verify them (resumable)

The files live in the data folder under `wikipedia/<commit>/`. Chapter 05 with `corpus: wikipedia` streams them a
record batch at a time: every non-empty line of an article is a text, and a whole article is held out for validation
when a hash of its id falls below `valid_share`, a fixed function of the id, so the split is the same on any machine
and at any world size.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import BookError, require
from ..io import sha256, write_atomic
from ..settings import data_dir

REPO = "wikimedia/wikipedia"
CONFIG = "20231101.en"
LOCK = Path(__file__).with_name("wikipedia.lock.json")
_BATCH = 1024  # articles per record batch read from a parquet file


@dataclass(frozen=True)
class Snapshot:
    """A pinned snapshot: hub repository, config, commit and its files as (path in the repository, SHA-256, bytes)."""

    repo: str
    config: str
    revision: str
    files: tuple[tuple[str, str, int], ...]

    def key(self) -> str:
        """A digest of the files' checksums: names the corpus in the token cache."""
        return hashlib.sha256(" ".join(digest for _, digest, _ in self.files).encode()).hexdigest()

    def folder(self, root: Path | None = None) -> Path:
        return Path(root or data_dir()) / "wikipedia" / self.revision


def pin(revision: str = "main", repo: str = REPO, config: str = CONFIG, api: object | None = None, lock: Path | None = None) -> Snapshot:
    """Resolve revision (a branch, tag or commit) to its commit on the hub and record the config's parquet files with
    their SHA-256 and size in the lock file (written atomically). Needs the internet."""
    from huggingface_hub import HfApi

    try:
        info = (api or HfApi()).dataset_info(repo, revision=revision, files_metadata=True)
    except Exception as err:  # the hub client's connection and HTTP errors: one line, not a traceback
        raise BookError(
            f"could not read {repo} at {revision} on the Hugging Face hub ({type(err).__name__}): connect to the internet "
            "(or set HF_ENDPOINT to a mirror) and run the same command again"
        ) from None
    files = tuple(
        sorted(
            (s.rfilename, s.lfs.sha256 if s.lfs else "", int(s.lfs.size if s.lfs else s.size or 0))
            for s in info.siblings
            if s.rfilename.startswith(f"{config}/") and s.rfilename.endswith(".parquet")
        )
    )
    require(files, f"{repo} at {revision} has no parquet files under {config}/; name another config or revision")
    require(all(digest for _, digest, _ in files), f"{repo} at {revision}: some files under {config}/ have no SHA-256 (not in Git LFS); they cannot be pinned")
    snapshot = Snapshot(repo, config, info.sha, files)
    write_atomic(lock or LOCK, lambda tmp: tmp.write_text(json.dumps(asdict(snapshot), indent=1) + "\n", encoding="utf-8"))
    return snapshot


def pinned(lock: Path | None = None) -> Snapshot:
    """The snapshot the lock file names; one line saying how to pin one when there is none."""
    lock = Path(lock or LOCK)
    require(
        lock.is_file(),
        f"the Wikipedia snapshot is not pinned ({lock} is missing): online, run `python -m lib.datasets pin-wikipedia` "
        "and commit the lock file it writes, or pre-train on the book's corpus (`-p corpus book`)",
    )
    try:
        raw = json.loads(lock.read_text(encoding="utf-8"))
        snapshot = Snapshot(raw["repo"], raw["config"], raw["revision"], tuple((p, d, int(n)) for p, d, n in raw["files"]))
    except (ValueError, KeyError, TypeError) as err:
        raise BookError(f"{lock} is not a lock file written by `python -m lib.datasets pin-wikipedia` ({err}); pin again") from None
    require(re.fullmatch(r"[0-9a-f]{40}", snapshot.revision) is not None, f"{lock}: revision must be a 40-hex commit, got {snapshot.revision!r}")
    return snapshot


def _verified(path: Path, digest: str, size: int) -> bool:
    """The file is whole: right size, and its SHA-256 (checked once, then remembered in `<file>.sha256`)."""
    mark = path.with_name(path.name + ".sha256")
    if not path.is_file() or path.stat().st_size != size:
        return False
    if mark.is_file() and mark.read_text().strip() == digest:
        return True
    if sha256(path) != digest:
        return False
    write_atomic(mark, lambda tmp: tmp.write_text(digest + "\n"))
    return True


def fetch(snapshot: Snapshot, root: Path | None = None, progressbar: bool = True, endpoint: str | None = None) -> list[Path]:
    """The snapshot's files in the data folder, each downloaded when absent (a cut download resumes; endpoint: the
    hub or a mirror, default $HF_ENDPOINT or huggingface.co), its SHA-256 checked; a file with another checksum is
    refused and deleted."""
    from huggingface_hub import hf_hub_url

    from .release import download

    folder, paths = snapshot.folder(root), []
    for n, (name, digest, size) in enumerate(snapshot.files, start=1):
        path = folder / name
        if not _verified(path, digest, size):
            print(f"wikipedia: file {n} of {len(snapshot.files)}, {name} ({size / 1e6:,.0f} MB)", flush=True)
            url = hf_hub_url(snapshot.repo, name, repo_type="dataset", revision=snapshot.revision, endpoint=endpoint)
            got = download(
                url,
                digest,
                folder / ".downloads",
                progressbar=progressbar,
                what=f"Wikipedia file {name}",
                hint="the hub no longer serves the pinned file (or HF_ENDPOINT names another mirror): pin again with `python -m lib.datasets pin-wikipedia`",
                size=size,
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            got.replace(path)
            require(_verified(path, digest, size), f"{path} does not have the pinned size {size}; delete it and fetch again")
        paths.append(path)
    return paths


def held_out(article_id: str, valid_share: float) -> bool:
    """Whether an article belongs to the validation split: a hash of its id, as a number in [0, 1), below valid_share."""
    return int.from_bytes(hashlib.blake2b(article_id.encode(), digest_size=8).digest(), "big") / 2**64 < valid_share


class Texts:
    """One split's texts (every non-empty line of its articles, in file order), read again from the parquet files each
    time it is iterated: nothing is kept in memory."""

    def __init__(self, paths: list[Path], valid_share: float, validation: bool):
        require(0 < valid_share < 1, f"valid_share must be in (0, 1), got {valid_share}")
        self.paths, self.valid_share, self.validation = list(paths), valid_share, validation

    def __iter__(self) -> Iterator[str]:
        import pyarrow.parquet as pq

        for path in self.paths:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH, columns=["id", "text"]):
                for article_id, text in zip(batch.column("id").to_pylist(), batch.column("text").to_pylist(), strict=True):
                    if held_out(str(article_id), self.valid_share) == self.validation:
                        yield from (line for line in (text or "").split("\n") if line.strip())
