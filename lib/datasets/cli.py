"""`python -m lib.datasets ACTION`: verify, fetch or pack the data sets; pin and fetch the Wikipedia corpus.

check [NAME ...]            verify the data folder's files against the pinned checksums
fetch [NAME ...]            fetch what the data folder lacks, each file from the public commit that holds it (what
                            `make data` does; $BOOK_DATA_MIRROR: a mirror of that layout; $BOOK_DATA_URL: a release archive)
pack OUT.tar.gz             pack the verified data folder into a release archive (a mirror); prints its SHA-256
pin-wikipedia [REVISION]    (maintainers, online) pin English Wikipedia's snapshot in lib/datasets/wikipedia.lock.json
fetch-wikipedia             (online) download and verify the pinned Wikipedia files (the paper profile's corpus)
"""

from __future__ import annotations

import argparse

from ..errors import cli, require
from ..settings import data_dir
from . import install, release, wikipedia
from .registry import REGISTRY, dataset, verified_path


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m lib.datasets",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("action", choices=["check", "fetch", "pack", "pin-wikipedia", "fetch-wikipedia"])
    parser.add_argument("names", nargs="*", help="data sets (default: all); for pack, the archive to write; for pin-wikipedia, a revision")
    args = parser.parse_args(argv)
    if args.action == "pin-wikipedia":
        require(len(args.names) <= 1, "pin-wikipedia takes at most one argument, a revision of the hub repository (default: main)")
        snapshot = wikipedia.pin(*args.names)
        size = sum(n for _, _, n in snapshot.files)
        print(f"{wikipedia.LOCK}: {snapshot.repo} {snapshot.config} at {snapshot.revision}, {len(snapshot.files)} files, {size / 1e9:.1f} GB")
        return
    if args.action == "fetch-wikipedia":
        paths = wikipedia.fetch(wikipedia.pinned())
        print(f"wikipedia: {len(paths)} files verified in {paths[0].parent}")
        return
    if args.action == "pack":
        require(len(args.names) == 1 and args.names[0].endswith(".tar.gz"), "pack takes one argument, the archive to write, e.g. book-data-v2.tar.gz")
        digest = release.pack(data_dir(), args.names[0])
        print(f"{args.names[0]}  sha256 {digest}")
        return
    names = args.names or sorted(REGISTRY)
    for name in names:
        dataset(name)  # an unknown name stops here, with the known ones
    if args.action == "fetch":
        chosen = None if not args.names else {f.path: f.source for name in names for f in dataset(name).files.values()}
        installed = install.require_data(sources=chosen)
        print(
            f"data: installed {install.names(installed)} in {data_dir()}"
            if installed
            else f"data: every pinned file{'' if chosen is None else ' of ' + ', '.join(names)} is in {data_dir()}"
        )
        return
    for name in names:
        for split in dataset(name).files:
            print(f"ok  {name:8s} {split:24s} {verified_path(name, split)}")
