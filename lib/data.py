"""Data sets: a registry of checksummed files under the data directory, and their loaders.

The data directory comes from $BOOK_DATA_DIR (default `data/`). Each data set lists the files it
reads with their SHA-256 and where they are published; `python -m lib.data download NAME` (or
`make data`) fetches them for users who are online. Adding a data set is one `DataSet` entry and,
if its format is new, one small reader.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import BookError, cli, require
from .settings import data_dir


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory
    sha256: str
    url: str


@dataclass(frozen=True)
class DataSet:
    name: str
    description: str
    licence: str
    files: dict[str, DataFile]  # split name -> file
    reader: Callable[[Path], pd.DataFrame] = field(repr=False)


def _read_tab_sentence_label(path: Path) -> pd.DataFrame:
    """SentEval SST layout: `sentence<TAB>label` per line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if not line:
                continue
            sentence, sep, label = line.rpartition("\t")
            require(sep == "\t" and label.strip().lstrip("-").isdigit(), f"{path}: line {n} is not 'sentence<TAB>label'; re-fetch the file with `make data`")
            rows.append((sentence.strip(), int(label)))
    return pd.DataFrame(rows, columns=["sentence", "label"])


_SENTEVAL_SST2 = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data/sentiment-{}"

REGISTRY: dict[str, DataSet] = {
    "sst2": DataSet(
        name="sst2",
        description="SST-2 (Socher et al. 2013), binary sentiment, SentEval/GLUE split",
        licence="research use (Stanford)",
        files={
            "train": DataFile("sst2/sentiment-train", "10a92a297ec38e262386e5a2713b4bc70e5d18ced88b7f54bd171a26e5b34ab5", _SENTEVAL_SST2.format("train")),
            "dev": DataFile("sst2/sentiment-dev", "9a6c7403b71a9b762158387afe4431253ae10cdfb2319b5275289f3766f48291", _SENTEVAL_SST2.format("dev")),
            "test": DataFile("sst2/sentiment-test", "4fefd1cd67526cf87ebc7fafc3afc21cc7cfa6ae53b45e74f77f9456e3c62752", _SENTEVAL_SST2.format("test")),
        },
        reader=_read_tab_sentence_label,
    ),
}

_verified: dict[tuple[str, int, int], str] = {}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def dataset(name: str) -> DataSet:
    require(name in REGISTRY, f"unknown data set {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def verified_path(name: str, split: str) -> Path:
    """Path of a data file after checking that it exists and has the pinned checksum."""
    ds = dataset(name)
    require(split in ds.files, f"data set {name!r} has no split {split!r}; splits: {', '.join(ds.files)}")
    spec = ds.files[split]
    root = data_dir()
    require(root.is_dir(), f"data directory {root} does not exist; set BOOK_DATA_DIR to the folder holding the data sets, or run `make data` to download them")
    path = root / spec.path
    require(path.is_file(), f"{name} {split}: missing file {path}; it is published at {spec.url} (run `make data`, or set BOOK_DATA_DIR)")
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _verified.get(key) != spec.sha256:
        digest = sha256(path)
        require(digest == spec.sha256, f"{name} {split}: {path} has checksum {digest[:12]}…, expected {spec.sha256[:12]}…; the file is corrupted or a different release: re-fetch it from {spec.url}")
        _verified[key] = digest
    return path


def load(name: str, split: str) -> pd.DataFrame:
    """Read one split of a registered data set as a DataFrame, checksum verified."""
    return dataset(name).reader(verified_path(name, split))


def sample_sentences(name: str, split: str, n: int, seed: int, column: str = "sentence") -> list[str]:
    """n sentences drawn without replacement (seeded) from a split, in the drawn order."""
    frame = load(name, split)
    require(isinstance(n, (int, np.integer)) and n > 0, f"number of sentences must be a positive integer, got {n!r}")
    require(n <= len(frame), f"{name} {split} has {len(frame)} sentences; asked for {n}: lower the sample size")
    rows = np.random.default_rng(seed).choice(len(frame), size=n, replace=False)
    return frame[column].iloc[rows].tolist()


def download(name: str, root: Path | None = None) -> list[Path]:
    """Fetch a data set's files into the data directory (online users); verify checksums; atomic."""
    root = root or data_dir()
    done = []
    for split, spec in dataset(name).files.items():
        target = root / spec.path
        if target.is_file() and sha256(target) == spec.sha256:
            done.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(fd)
        try:
            urllib.request.urlretrieve(spec.url, tmp)
            digest = sha256(Path(tmp))
            require(digest == spec.sha256, f"{name} {split}: downloaded {spec.url} has checksum {digest[:12]}…, expected {spec.sha256[:12]}…; the published file changed: please report it")
            os.replace(tmp, target)
        except OSError as err:
            raise BookError(f"{name} {split}: could not download {spec.url} ({err}); check the connection or copy the file to {target}") from err
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        done.append(target)
    return done


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.data", description="Check or download the book's data sets.")
    parser.add_argument("action", choices=["check", "download"])
    parser.add_argument("names", nargs="*", help="data sets (default: all)")
    args = parser.parse_args(argv)
    for name in args.names or sorted(REGISTRY):
        if args.action == "download":
            download(name)
        for split in dataset(name).files:
            print(f"ok  {name:8s} {split:6s} {verified_path(name, split)}")


if __name__ == "__main__":
    main()
