"""IMDB rebuilt by code: the reviews of an aclImdb folder (Maas et al. 2011) as the book's `imdb/{train,test}.tsv.gz`.

The source is any gzip tar archive holding `…/aclImdb/<split>/{neg,pos}/<id>_<rating>.txt`: GitHub's archive of the
pinned commit of the repository `lib/datasets/sources.tsv` names, whose training folder holds the 20,000 reviews the
book uses, or else Stanford's official `aclImdb_v1.tar.gz` (`OFFICIAL`), from whose 25,000 training reviews the 5,000
listed in `imdb_train_excluded.txt` are left out (the same selection, by file name). Each review's bytes are decoded
as UTF-8 (invalid bytes replaced), tabs and line breaks become spaces, the text is stripped; one row
`label<TAB>file<TAB>text` per review, sorted by label and then by the number before `_`, under the header
`label\tfile\ttext`, every row ending in a line break; gzip level 9 with time 0. The pinned checksum is that of this
uncompressed content (`pins.content_sha256`).
"""

from __future__ import annotations

import gzip
import re
import tarfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from ..errors import BookError
from ..io import write_atomic

MEMBER = re.compile(r"(?:^|/)aclImdb/(train|test)/(neg|pos)/((\d+)_\d+\.txt)$")
HEADER = "label\tfile\ttext\n"
OFFICIAL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
LFS = b"version https://git-lfs.github.com/spec/"


class Unusable(BookError):
    """An archive that does not hold the reviews (damaged, another layout, Git LFS pointers); `what` says which."""

    def __init__(self, archive: Path, what: str):
        super().__init__(f"the IMDB source archive {archive} {what}")
        self.what = what


def _excluded() -> set[tuple[str, str, int]]:
    """(split, label, id) of the official training reviews the book leaves out."""
    lines = Path(__file__).with_name("imdb_train_excluded.txt").read_text().splitlines()
    return {("train", label, int(i)) for line in lines if not line.startswith("#") for label, *ids in [line.split()] for i in ids}


EXCLUDED = _excluded()


def row_text(raw: bytes) -> str:
    """A review file's bytes as one TSV field."""
    text = raw.decode("utf-8", errors="replace")
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip()


def content(reviews: Iterable[tuple[str, str, str]]) -> bytes:
    """The uncompressed TSV of (label, file name, text) rows, in the pinned order."""
    ordered = sorted(reviews, key=lambda r: (r[0], int(r[1].split("_")[0]), r[1]))
    return (HEADER + "".join(f"{label}\t{name}\t{text}\n" for label, name, text in ordered)).encode("utf-8")


def read_archive(archive: Path, splits: Iterable[str]) -> dict[str, bytes]:
    """split -> uncompressed TSV content, from the reviews of an aclImdb archive."""
    wanted = set(splits)
    rows: dict[str, list[tuple[str, str, str]]] = {split: [] for split in wanted}
    try:
        with tarfile.open(archive, mode="r|gz") as tar:  # a stream: GitHub's archive need not be read twice
            for member in tar:
                match = MEMBER.search(member.name)
                if not match or not member.isfile() or match.group(1) not in wanted:
                    continue
                split, label, name = match.group(1), match.group(2), match.group(3)
                if (split, label, int(match.group(4))) in EXCLUDED:
                    continue
                raw = tar.extractfile(member).read()
                if raw.startswith(LFS):
                    raise Unusable(archive, f"holds Git LFS pointers instead of the reviews ({member.name})")
                rows[split].append((label, name, row_text(raw)))
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise Unusable(archive, f"is damaged ({err}); run the same command again to download it anew") from None
    empty = sorted(split for split, found in rows.items() if not found)
    if empty:
        raise Unusable(archive, f"holds no aclImdb/{empty[0]}/{{neg,pos}}/*.txt reviews; it is not the pinned source")
    return {split: content(found) for split, found in rows.items()}


def write(data: bytes, target: Path) -> Path:
    """Write the content as gzip (level 9, time 0, no file name) to target, atomically."""

    def put(tmp: Path) -> None:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(data)

    return write_atomic(target, put)
