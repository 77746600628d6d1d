"""The pinned data files: each file's SHA-256 and the public commit that holds it, from `lib/datasets/sources.tsv`.

One row per file under the data folder: `path`, `sha256`, the GitHub `repository` and `commit` that publish it, its
`upstream_path` there, `how` it relates to that file, and its `size` in bytes (a download is stopped beyond it):
- `identical`: byte for byte the file at `https://raw.githubusercontent.com/<repository>/<commit>/<upstream_path>`;
- `converted`: built by the book's code from the files `upstream_path` names (IMDB, `lib.datasets.imdb`); its
  `sha256` is that of the *uncompressed content*, which any rebuild reproduces (a gzip file's own bytes also depend on
  its time stamp and zlib build).
The table is checked against `SOURCES.tsv` of the shared data folder by the tests.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..io import sha256

RAW = "https://raw.githubusercontent.com"  # per-file layout: <repository>/<commit>/<path>
CODELOAD = "https://codeload.github.com"  # one archive per repository and commit: <repository>/tar.gz/<commit>
TABLE = Path(__file__).with_name("sources.tsv")


@dataclass(frozen=True)
class Source:
    path: str  # relative to the data folder
    sha256: str  # of the file; of the uncompressed content for a converted file
    repository: str
    commit: str
    upstream_path: str
    how: str  # "identical" or "converted"
    size: int = 0  # bytes of the file (identical) or of its uncompressed content (converted); 0: not known

    @property
    def converted(self) -> bool:
        return self.how == "converted"

    def url(self, base: str = RAW) -> str:
        """Where the file itself is fetched (identical files): the raw layout under base."""
        return f"{base.rstrip('/')}/{self.repository}/{self.commit}/{quote(self.upstream_path)}"

    def archive_url(self, base: str = CODELOAD) -> str:
        """The repository's archive at the pinned commit (what a converted file is built from)."""
        return f"{base.rstrip('/')}/{self.repository}/tar.gz/{self.commit}"

    @property
    def page(self) -> str:
        """The file (or, for a converted file, its source folder) on GitHub at the pinned commit, for readers."""
        if self.converted:
            return f"https://github.com/{self.repository}/tree/{self.commit}/{quote(self.upstream_path.split('/{')[0])}"
        return f"https://github.com/{self.repository}/blob/{self.commit}/{quote(self.upstream_path)}"

    @property
    def where(self) -> str:
        """`repository@commit:path`, short, for tables and messages."""
        return f"{self.repository}@{self.commit[:7]}:{self.upstream_path}"


def _read(table: Path = TABLE) -> dict[str, Source]:
    lines = table.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    assert header == ["path", "sha256", "repository", "commit", "upstream_path", "how", "size"], f"{table}: unexpected header {header}"
    rows = [Source(*fields[:6], int(fields[6])) for fields in (line.split("\t") for line in lines[1:] if line.strip())]
    return {row.path: row for row in rows}


SOURCES: dict[str, Source] = _read()
PINNED: dict[str, str] = {path: row.sha256 for path, row in SOURCES.items()}


def content_sha256(file: Path, converted: bool) -> str:
    """The checksum a pinned file is verified by: of the file, or of its uncompressed content when it is a converted
    gzip file; '' for a converted file that is not a whole gzip file."""
    if not converted:
        return sha256(file)
    try:
        with gzip.open(file, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except (EOFError, gzip.BadGzipFile, zlib.error):
        return ""
