"""The data release (an optional mirror): packed deterministically, fetched from a local HTTP server, verified, refused
when wrong."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lib import settings
from lib.datasets import cli, fetch, install, release
from lib.datasets.pins import SOURCES, Source
from lib.errors import BookError


class Server:
    """Serves `files` (name -> bytes) on 127.0.0.1 with HTTP Range support; `cut` sends half the body of each
    response, then closes the connection. `requests` records (path, Range header) of each GET."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.cut = False
        self.requests: list[tuple[str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Range")))
                body = server.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                part = body[start:]
                self.wfile.write(part[: len(part) // 2] if server.cut else part)
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"


@pytest.fixture
def server():
    s = Server()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A small data folder, its pins, and a cache folder of its own."""
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    files = {"sst2/sentiment-train": b"a fine film\t1\n" * 500, "wic/train/train.gold.txt": b"T\nF\n", "corpus/brown/a01.txt": os.urandom(300_000)}
    for path, data in files.items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_bytes(data)
    pins = {path: Source(path, hashlib.sha256(data).hexdigest(), "owner/repo", "c" * 40, path, "identical") for path, data in files.items()}
    return src, pins


def packed(tmp_path: Path, src: Path, pins: dict[str, Source]) -> tuple[bytes, str]:
    digest = release.pack(src, tmp_path / "rel.tar.gz", pins=pins)
    return (tmp_path / "rel.tar.gz").read_bytes(), digest


def leftovers(tmp_path: Path) -> list[str]:
    return [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def held(root: Path) -> list[str]:
    """What a data folder holds besides its fetch lock."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != ".fetch.lock") if root.exists() else []


def test_packing_is_deterministic_and_documents_every_file(tmp_path, folder):
    src, pins = folder
    first, digest = packed(tmp_path, src, pins)
    (src / "extra.txt").write_text("not pinned")
    for path in pins:
        os.utime(src / path, (1e9, 1e9))  # other times and an unpinned file do not change the archive
    os.chmod(src / "wic/train/train.gold.txt", 0o600)
    again, digest2 = packed(tmp_path, src, pins)
    assert digest == digest2 == hashlib.sha256(first).hexdigest() and first == again
    with tarfile.open(tmp_path / "rel.tar.gz") as tar:
        members = tar.getmembers()
        manifest = tar.extractfile("_release/MANIFEST.tsv").read().decode()
    assert [m.name for m in members] == [*release.DOCS, *sorted(pins)]
    assert {m.mtime for m in members} == {0} and {m.mode for m in members} == {0o644}
    for path, source in pins.items():
        assert f"{path}\t{source.sha256}\t{(src / path).stat().st_size}\t" in manifest
    assert "\tsst2\towner/repo@ccccccc:sst2/sentiment-train\t" in manifest  # registry files carry where they are published


def test_packing_refuses_a_folder_with_a_changed_file(tmp_path, folder):
    src, pins = folder
    (src / "wic/train/train.gold.txt").write_bytes(b"F\nF\n")
    with pytest.raises(BookError, match=r"1 file\(s\) in .* differ from their pinned checksums, e.g. wic/train/train.gold.txt"):
        release.pack(src, tmp_path / "rel.tar.gz", pins=pins)
    assert not (tmp_path / "rel.tar.gz").exists()


def test_fetch_fills_an_empty_folder_and_a_second_fetch_downloads_nothing(tmp_path, folder, server, capsys):
    src, pins = folder
    server.files["rel.tar.gz"], digest = packed(tmp_path, src, pins)
    root = tmp_path / "data"
    installed = release.fetch(root, server.url("rel.tar.gz"), digest, pins, progressbar=False)
    assert set(installed) == {*pins, *release.DOCS}
    for path, source in pins.items():
        assert hashlib.sha256((root / path).read_bytes()).hexdigest() == source.sha256
    assert (root / "_release/README.md").is_file() and len(server.requests) == 1
    assert "3 of 3 data files missing" in capsys.readouterr().out
    assert release.fetch(root, server.url("rel.tar.gz"), digest, pins) == [] and len(server.requests) == 1
    (root / "sst2/sentiment-train").unlink()  # one file lost: the cached archive restores it, nothing is downloaded
    assert release.fetch(root, server.url("rel.tar.gz"), digest, pins, progressbar=False) == [
        "_release/MANIFEST.tsv",
        "_release/README.md",
        "sst2/sentiment-train",
    ]
    assert len(server.requests) == 1 and fetch.missing(root, pins) == ([], [])


def test_a_file_with_another_checksum_is_named_and_kept(tmp_path, folder, server):
    src, pins = folder
    server.files["rel.tar.gz"], digest = packed(tmp_path, src, pins)
    root = tmp_path / "data"
    (root / "wic/train").mkdir(parents=True)
    (root / "wic/train/train.gold.txt").write_text("mine\n")
    with pytest.raises(BookError, match=r"1 file\(s\) in .* differ from the pinned checksums, e.g. wic/train/train.gold.txt; .* delete them"):
        release.fetch(root, server.url("rel.tar.gz"), digest, pins)
    assert (root / "wic/train/train.gold.txt").read_text() == "mine\n" and server.requests == []


def test_a_corrupted_archive_and_a_wrong_hash_are_refused_and_leave_nothing(tmp_path, folder, server):
    src, pins = folder
    good, digest = packed(tmp_path, src, pins)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    server.files["bad.tar.gz"] = bytes(bad)
    server.files["rel.tar.gz"] = good
    root = tmp_path / "data"
    with pytest.raises(BookError, match=r"has SHA-256 [0-9a-f]{12}…, not the pinned [0-9a-f]{12}…; it was refused: check BOOK_DATA_URL"):
        release.fetch(root, server.url("bad.tar.gz"), digest, pins, progressbar=False, retries=0)
    with pytest.raises(BookError, match=r"not the pinned 000000000000…"):
        release.fetch(root, server.url("rel.tar.gz"), "0" * 64, pins, progressbar=False, retries=0)
    assert held(root) == [] and leftovers(tmp_path) == []
    assert [p.name for p in (tmp_path / "cache/data-release").iterdir()] == [".fetch.lock"]  # the refused downloads are deleted


def test_a_download_over_its_limit_is_refused_and_deleted(tmp_path, server):
    server.files["big.tar.gz"] = b"x" * 300_000
    with pytest.raises(
        BookError, match=r"big.tar.gz could not be downloaded \(more than the 165,536 bytes accepted for this file arrived: it is not the pinned"
    ):
        release.download(server.url("big.tar.gz"), "0" * 64, tmp_path / "cache", retries=2, progressbar=False, size=100_000)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".fetch.lock"] and len(server.requests) == 1  # not asked again


def test_a_damaged_archive_that_matches_its_hash_is_refused_at_unpacking(tmp_path, folder):
    src, pins = folder
    good, _ = packed(tmp_path, src, pins)
    (tmp_path / "cut.tar.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(BookError, match=r"is damaged .*; delete it and fetch it again"):
        release.unpack(tmp_path / "cut.tar.gz", tmp_path / "data", pins)
    assert held(tmp_path / "data") == [] and leftovers(tmp_path) == []


def _archive(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "evil.tar.gz"
    path.write_bytes(raw.getvalue())
    return path


@pytest.mark.parametrize(
    "name, kind, message",
    [
        ("../escape.txt", tarfile.REGTYPE, r"unsafe path '../escape.txt'"),
        ("sst2/../../escape.txt", tarfile.REGTYPE, r"unsafe path"),
        ("/tmp/escape.txt", tarfile.REGTYPE, r"unsafe path '/tmp/escape.txt'"),
        ("sst2/sentiment-train", tarfile.SYMTYPE, r"'sst2/sentiment-train', which is not a regular file"),
        ("sst2/unpinned.txt", tarfile.REGTYPE, r"'sst2/unpinned.txt', which the book does not pin"),
    ],
)
def test_unsafe_members_are_refused_and_nothing_is_written(tmp_path, folder, name, kind, message):
    src, pins = folder
    members = [(tarfile.TarInfo(p), (src / p).read_bytes()) for p in sorted(pins) if p != name]
    evil = tarfile.TarInfo(name)
    evil.type = kind
    evil.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    archive = _archive(tmp_path, [(evil, b"" if kind == tarfile.SYMTYPE else b"x"), *members])
    root = tmp_path / "deep" / "data"
    for existing in (False, True):
        if existing:
            root.mkdir(parents=True, exist_ok=True)
        with pytest.raises(BookError, match=message):
            release.unpack(archive, root, pins)
        assert sorted(p.name for p in root.parent.iterdir()) == ["data"] and held(root) == []
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "deep" / "escape.txt").exists()


def test_an_archive_lacking_a_pinned_file_is_refused(tmp_path, folder):
    src, pins = folder
    archive = _archive(tmp_path, [(tarfile.TarInfo(p), (src / p).read_bytes()) for p in sorted(pins)[1:]])
    with pytest.raises(BookError, match=r"lacks 1 pinned file\(s\), e.g. " + sorted(pins)[0]):
        release.unpack(archive, tmp_path / "data", pins)
    assert held(tmp_path / "data") == []


def test_a_download_cut_half_way_is_refused_then_resumed(tmp_path, folder, server):
    src, pins = folder
    server.files["rel.tar.gz"], digest = packed(tmp_path, src, pins)
    server.cut = True
    root = tmp_path / "data"
    with pytest.raises(BookError, match=r"^http://127.0.0.1:\d+/rel.tar.gz could not be downloaded \(the connection closed before the whole file arrived\)"):
        release.fetch(root, server.url("rel.tar.gz"), digest, pins, progressbar=False, retries=0)
    assert held(root) == [] and leftovers(tmp_path) == []
    part = tmp_path / "cache/data-release" / f"{digest}.tar.gz.part"
    half = part.stat().st_size
    assert 0 < half < len(server.files["rel.tar.gz"])
    server.cut = False
    assert set(release.fetch(root, server.url("rel.tar.gz"), digest, pins, progressbar=False)) == {*pins, *release.DOCS}
    assert server.requests[-1] == ("/rel.tar.gz", f"bytes={half}-")  # the rest only
    assert fetch.missing(root, pins) == ([], []) and not part.exists()


def test_offline_the_build_names_the_missing_files_and_the_two_ways(tmp_path, folder, monkeypatch):
    src, pins = folder
    monkeypatch.setenv("BOOK_DATA_URL", "http://127.0.0.1:9/book-data.tar.gz")  # the discard port: nothing listens
    monkeypatch.setattr(release, "RETRIES", 0)
    with pytest.raises(BookError) as err:
        install.require_data(tmp_path / "data", pins)
    line = str(err.value)
    assert "\n" not in line and line.startswith("3 of 3 data files are still missing in") and "(corpus (1), sst2 (1), wic (1))" in line
    assert "http://127.0.0.1:9/book-data.tar.gz could not be downloaded (connection refused)" in line
    assert "Set BOOK_DATA_DIR to a folder that holds the data sets, or BOOK_DATA_MIRROR to a mirror" in line
    assert held(tmp_path / "data") == []


def test_make_data_fetches_the_pinned_release_from_a_mirror(tmp_path, folder, server, monkeypatch, capsys):
    src, pins = folder
    server.files["mirror/rel.tar.gz"], digest = packed(tmp_path, src, pins)
    monkeypatch.setattr(settings, "DATA_RELEASE", settings.DataRelease("rel.tar.gz", digest))
    monkeypatch.setattr(release, "DATA_RELEASE", settings.DataRelease("rel.tar.gz", digest))
    monkeypatch.setattr(install, "SOURCES", pins)
    monkeypatch.setenv("BOOK_DATA_URL", server.url("mirror/rel.tar.gz"))
    monkeypatch.setenv("BOOK_DATA_DIR", str(tmp_path / "data"))
    cli.main(["fetch"])
    assert "data: installed _release (2), corpus (1), sst2 (1), wic (1)" in capsys.readouterr().out
    assert server.requests == [("/mirror/rel.tar.gz", None)]
    cli.main(["fetch"])
    assert "every pinned file is in" in capsys.readouterr().out and len(server.requests) == 1


def test_the_pinned_release_is_what_the_verified_data_folder_packs_into(tmp_path, shared_data):
    """The SHA-256 pinned in lib.settings is the archive this code packs from the verified data: a change to the pinned
    checksums or to the provenance the release documents needs a new release (pack it, attach it, pin its hash)."""
    digest = release.pack(shared_data, tmp_path / settings.DATA_RELEASE.name)
    assert digest == settings.DATA_RELEASE.sha256, f"the data release packs to {digest}: pin it in lib/settings.py"
    absent, different = fetch.missing(shared_data, SOURCES)
    assert absent == different == []


def test_a_fetch_killed_while_unpacking_is_swept_by_the_next(tmp_path, folder, server):
    src, pins = folder
    server.files["rel.tar.gz"], digest = packed(tmp_path, src, pins)
    root = tmp_path / "data"
    root.mkdir()
    dead = tmp_path / ".data.999999999.x1"  # what a killed fetch leaves: its process is gone
    (dead / "sst2").mkdir(parents=True)
    (dead / "sst2" / "sentiment-train").write_text("half")
    release.fetch(root, server.url("rel.tar.gz"), digest, pins, progressbar=False)
    assert leftovers(tmp_path) == [] and fetch.missing(root, pins) == ([], [])
