"""Serve the data release packed from the data folder on 127.0.0.1, as a mirror would (for trying a fresh clone's
`make book` without the data folder, offline):

    BOOK_DATA_DIR=../shared/data python -m scripts.serve_data_release [PORT]
    # in a fresh clone:  BOOK_DATA_URL=http://127.0.0.1:PORT/book-data-v1.tar.gz make book PROFILE=quick

Packs `$BOOK_DATA_DIR` with `lib.datasets.release.pack`, checks that the archive is the pinned release (same SHA-256),
then serves it until Ctrl-C.
"""

from __future__ import annotations

import functools
import sys
import tempfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from lib.datasets.release import pack
from lib.errors import cli, require
from lib.settings import DATA_RELEASE, data_dir


@cli
def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    folder = Path(tempfile.mkdtemp(prefix="book-data-release."))
    name = DATA_RELEASE.url.rsplit("/", 1)[-1]
    digest = pack(data_dir(), folder / name)
    require(digest == DATA_RELEASE.sha256, f"{data_dir()} packs to {digest[:12]}…, not the pinned {DATA_RELEASE.sha256[:12]}…; pack and pin a new release")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    with ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        print(f"serving the pinned data release at http://127.0.0.1:{port}/{name} (Ctrl-C stops)", flush=True)
        httpd.serve_forever()


if __name__ == "__main__":
    main()
