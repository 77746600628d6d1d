"""Serve a data folder on 127.0.0.1 in the layouts the book fetches from, as a mirror would (for trying a fresh clone's
`make book` without the internet, and for the tests):

    BOOK_DATA_DIR=../shared/data python -m scripts.serve_data_mirror [PORT]
    # in a fresh clone:  BOOK_DATA_MIRROR=http://127.0.0.1:PORT make book PROFILE=quick

- `/<repository>/<commit>/<path>`: each identical file of `lib/datasets/sources.tsv` (raw.githubusercontent.com's layout);
- `/<repository>/tar.gz/<commit>`: for converted files (IMDB), an archive of the review files they are built from, laid
  out as GitHub's archive of that commit (made from the data folder's own TSV rows, which convert back to the same content);
- `/<release name>`: the data release packed from the folder (for `BOOK_DATA_URL`).
Every file is checked against its pin before it is served.
"""

from __future__ import annotations

import gzip
import io
import sys
import tarfile
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from lib.datasets.fetch import absent_files
from lib.datasets.pins import SOURCES, Source
from lib.datasets.release import pack
from lib.errors import BookError, cli, require
from lib.settings import DATA_RELEASE, data_dir


def review_archive(root: Path, sources: list[Source]) -> bytes:
    """GitHub's archive layout `<name>-<commit>/<folder>/<label>/<file>` of the reviews in the converted TSV files."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for source in sources:
            top = f"{source.repository.split('/')[1]}-{source.commit}"
            folder = source.upstream_path.split("/{")[0]
            with gzip.open(root / source.path, "rt", encoding="utf-8") as f:
                next(f)
                for line in f:
                    label, name, text = line.rstrip("\n").split("\t")
                    data = text.encode("utf-8")
                    info = tarfile.TarInfo(f"{top}/{folder}/{label}/{name}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


class Mirror:
    """What the server answers: URL path -> a file on disk or bytes made once."""

    def __init__(self, root: Path, sources: dict[str, Source] = SOURCES, release: bool = False):
        require(not absent_files(root, sources), f"{root} lacks pinned files; serve a complete, verified data folder")
        self.root, self.sources = Path(root), sources
        self.files = {f"/{s.repository}/{s.commit}/{s.upstream_path}": self.root / s.path for s in sources.values() if not s.converted}
        self.archives: dict[str, list[Source]] = {}
        for s in sources.values():
            if s.converted:
                self.archives.setdefault(f"/{s.repository}/tar.gz/{s.commit}", []).append(s)
        self.made: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.release = f"/{DATA_RELEASE.name}" if release else None

    def body(self, path: str) -> bytes | None:
        path = unquote(path.split("?")[0])
        if path in self.files:
            return self.files[path].read_bytes()
        with self.lock:
            if path not in self.made and path in self.archives:
                self.made[path] = review_archive(self.root, self.archives[path])
            if path not in self.made and path == self.release:
                out = Path(tempfile.mkdtemp(prefix="book-data-release.")) / DATA_RELEASE.name
                pack(self.root, out, pins=self.sources)
                self.made[path] = out.read_bytes()
        return self.made.get(path)


def server(mirror: Mirror, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 (port 0: any free one) answering from mirror; `requests` lists the paths asked for."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            httpd.requests.append(self.path)
            body = mirror.body(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as err:
        raise BookError(f"cannot serve on 127.0.0.1:{port} ({err.strerror}); name a free port: python -m scripts.serve_data_mirror PORT") from None
    httpd.requests = []
    return httpd


@cli
def main() -> None:
    require(len(sys.argv) < 2 or sys.argv[1].isdigit(), f"the port must be a number, not {sys.argv[1:2]}")
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    with server(Mirror(data_dir(), release=True), port) as httpd:
        print(f"serving {data_dir()} at http://127.0.0.1:{port} (BOOK_DATA_MIRROR), the release at http://127.0.0.1:{port}/{DATA_RELEASE.name} (Ctrl-C stops)")
        httpd.serve_forever()


if __name__ == "__main__":
    main()
