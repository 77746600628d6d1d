"""The default acquisition: each pinned file fetched from its public commit (a local server on 127.0.0.1 in GitHub's
layouts), verified, moved in; every way a download goes wrong ends in one line and leaves only verified files."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lib.datasets import fetch, imdb, install
from lib.datasets.pins import SOURCES, TABLE, Source, content_sha256
from lib.errors import BookError
from lib.settings import REPO_ROOT
from scripts.serve_data_mirror import Mirror, server

COMMIT = "c" * 40


class Faulty:
    """Serves `files` (URL path -> bytes) on 127.0.0.1; `faults` (URL path -> kind) makes one misbehave: "404", "500",
    "short" (a Content-Length longer than the body), "stall" (never answers), "loop" (redirects to itself), "endless"
    and "drip" (a body without end). `requests` lists the paths asked for as they arrive, `sent` the bytes of an
    endless or dripping body sent so far; such an answer waits while `answer` is clear."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.faults: dict[str, str] = {}
        self.requests: list[str] = []
        self.sent: dict[str, int] = {}
        self.release, self.answer = threading.Event(), threading.Event()
        self.answer.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                fault, body = outer.faults.get(self.path), outer.files.get(self.path)
                if fault == "stall":
                    outer.release.wait(30)
                    return
                if fault == "loop":
                    self.send_response(302)
                    self.send_header("Location", self.path)
                    self.end_headers()
                    return
                if fault in ("endless", "drip"):  # 200, then bytes without end: at full speed, or one every 50 ms
                    outer.answer.wait(60)
                    self.send_response(200)
                    self.end_headers()
                    try:
                        while not outer.release.is_set():
                            chunk = b"x" * (1 << 16) if fault == "endless" else b"x"
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            outer.sent[self.path] = outer.sent.get(self.path, 0) + len(chunk)
                            if fault == "drip":
                                time.sleep(0.05)
                    except OSError:
                        pass
                    return
                if body is None or fault in ("404", "500"):
                    self.send_error(int(fault or 404))
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body) + (1000 if fault == "short" else 0)))
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def faulty():
    s = Faulty()
    yield s
    s.close()


def reviews_archive(top: str, reviews: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in reviews.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


REVIEWS = {
    "data/aclImdb/train/pos/10_9.txt": b"Great.\tReally\r\ngreat. ",
    "data/aclImdb/train/neg/2_1.txt": b"Bad \xff film.",
    "data/aclImdb/train/neg/11_2.txt": b"<br />Dull.",
    "data/aclImdb/test/pos/0_7.txt": b"Fine.",
    "data/aclImdb/train/unsup/5_0.txt": b"not labelled",
    "data/aclImdb/imdbEr.txt": b"0.1",
}
TRAIN = "label\tfile\ttext\nneg\t2_1.txt\tBad \ufffd film.\nneg\t11_2.txt\t<br />Dull.\npos\t10_9.txt\tGreat. Really  great.\n"


@pytest.fixture
def planted(tmp_path, faulty, monkeypatch):
    """Three identical files and two converted ones (a tiny aclImdb) served in GitHub's layouts; their sources. The
    time-out stays the default's (30 s): a loaded machine's pauses are not a server that does not answer."""
    monkeypatch.setenv(fetch.MIRROR, faulty.base)
    monkeypatch.setattr(imdb, "OFFICIAL", f"{faulty.base}/stanford/aclImdb_v1.tar.gz")  # the fallback, served here when a test says so
    files = {"sst2/sentiment-train": b"a fine film\t1\n" * 500, "wic/train/train.gold.txt": b"T\nF\n", "corpus/brown/a01.txt": os.urandom(200_000)}
    sources = {}
    for path, data in files.items():
        sources[path] = Source(path, hashlib.sha256(data).hexdigest(), "owner/repo", COMMIT, f"up/{path}", "identical", len(data))
        faulty.files[f"/owner/repo/{COMMIT}/up/{path}"] = data
    faulty.files[f"/owner/imdb/tar.gz/{COMMIT}"] = reviews_archive(f"imdb-{COMMIT}", REVIEWS)
    test = "label\tfile\ttext\npos\t0_7.txt\tFine.\n"
    for split, text in (("train", TRAIN), ("test", test)):
        path = f"imdb/{split}.tsv.gz"
        sources[path] = Source(path, hashlib.sha256(text.encode()).hexdigest(), "owner/imdb", COMMIT, f"data/aclImdb/{split}/{{neg,pos}}/*.txt", "converted")
    return tmp_path / "data", sources


def held(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != ".fetch.lock") if root.exists() else []


def verified(root: Path, sources: dict[str, Source]) -> list[str]:
    """The files under root, each asserted to carry its pinned checksum."""
    files = held(root)
    for path in files:
        assert path in sources and content_sha256(root / path, sources[path].converted) == sources[path].sha256, path
    return files


def staging_leftovers(root: Path) -> list[str]:
    return [p.name for p in [*root.parent.iterdir(), *(root.iterdir() if root.exists() else [])] if p.name.startswith((".data.", ".fetch.")) and p.is_dir()]


def test_the_table_is_the_shared_folders_sources_and_its_pins(shared_data):
    """sources.tsv holds SOURCES.tsv's rows; identical files keep its SHA-256, converted ones the content's."""
    shared = (shared_data / "SOURCES.tsv").read_text().splitlines()
    assert shared[0] + "\tsize" == TABLE.read_text().splitlines()[0]
    rows = {line.split("\t")[0]: line.split("\t") for line in shared[1:]}
    assert set(rows) == set(SOURCES) and len(SOURCES) == 595
    for path, source in SOURCES.items():
        row = rows[path]
        assert (source.repository, source.commit, source.upstream_path) == (row[2], row[3], row[4])
        assert source.how == ("identical" if row[5] == "identical" else "converted")
        if not source.converted:
            assert source.sha256 == row[1] and source.size == (shared_data / path).stat().st_size
        else:
            assert source.size == len(gzip.decompress((shared_data / path).read_bytes()))
        assert content_sha256(shared_data / path, source.converted) == source.sha256
    assert sum(s.converted for s in SOURCES.values()) == 2
    assert (
        SOURCES["sst2/sentiment-dev"].url()
        == f"https://raw.githubusercontent.com/robertoviegas/SimCSE/{SOURCES['sst2/sentiment-dev'].commit}/SentEval/data/downstream/SST/binary/sentiment-dev"
    )


def test_imdb_conversion_decodes_replaces_sorts_and_writes_without_a_time(tmp_path):
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(reviews_archive("AMLM-x", REVIEWS))
    contents = imdb.read_archive(archive, ["train", "test"])
    assert contents["train"].decode() == TRAIN  # invalid byte replaced, tab and CR LF to spaces, stripped, by label then number
    imdb.write(contents["train"], tmp_path / "train.tsv.gz")
    again = imdb.write(contents["train"], tmp_path / "again.tsv.gz")
    assert (tmp_path / "train.tsv.gz").read_bytes() == again.read_bytes()  # time 0: the same bytes each time
    assert gzip.decompress(again.read_bytes()) == contents["train"]
    archive.write_bytes(reviews_archive("x", {"README": b"no reviews"}))
    with pytest.raises(BookError, match=r"holds no aclImdb/t\w+/\{neg,pos\}/\*.txt reviews; it is not the pinned source"):
        imdb.read_archive(archive, ["train", "test"])


def test_an_empty_folder_is_filled_and_verified_and_a_second_fetch_downloads_nothing(planted, faulty, capsys):
    root, sources = planted
    installed = fetch.fetch(root, sources, progressbar=False)
    assert installed == sorted(sources) and verified(root, sources) == sorted(sources)
    assert gzip.decompress((root / "imdb/train.tsv.gz").read_bytes()).decode() == TRAIN
    assert len(faulty.requests) == 4 and staging_leftovers(root) == []  # three files and one archive for both IMDB files
    assert "5 of 5 data files missing" in capsys.readouterr().out
    assert fetch.fetch(root, sources) == [] and len(faulty.requests) == 4
    (root / "wic/train/train.gold.txt").unlink()
    assert fetch.fetch(root, sources, progressbar=False) == ["wic/train/train.gold.txt"] and len(faulty.requests) == 5


@pytest.mark.parametrize(
    "fault, reason",
    [
        ("endless", r"more than the 65,540 bytes accepted for this file arrived: it is not the pinned file"),
        ("drip", r"not whole after 1 s, the most a file of this size is given: the server is too slow"),
        ("404", r"HTTP 404 Not Found"),
        ("500", r"HTTP 500 Internal Server Error"),
        ("wrong", r"the file that arrived has another SHA-256 than the pinned one"),
        ("short", r"the connection closed before the whole file arrived"),
        ("loop", r"too many redirects \(a redirect loop\)"),
        ("stall", r"no answer within 0.5 s"),
    ],
)
def test_a_failed_download_ends_in_one_line_and_leaves_only_verified_files(planted, faulty, capsys, monkeypatch, fault, reason):
    root, sources = planted
    monkeypatch.setattr(fetch, "GRACE", 1.0)  # a 4-byte file: given about a second
    if fault == "stall":
        monkeypatch.setattr(fetch, "TIMEOUT", 0.5)  # a server that never answers is given up after half a second
    url = f"/owner/repo/{COMMIT}/up/wic/train/train.gold.txt"
    if fault == "wrong":
        faulty.files[url] = b"F\nF\n"
    else:
        faulty.faults[url] = fault
    start = time.monotonic()
    with pytest.raises(BookError) as err:
        install.require_data(root, sources)  # the default: two retries, then the line
    line = str(err.value)
    assert "\n" not in line and re.search(
        rf"of 5 data files are still missing in {root} \(.*wic \(1\)\): {faulty.base}{url} could not be downloaded \({reason}\)", line
    )
    assert "Set BOOK_DATA_DIR to a folder that holds the data sets, or BOOK_DATA_MIRROR to a mirror" in line
    assert "wic/train/train.gold.txt" not in verified(root, sources) and staging_leftovers(root) == []
    retried = [u for u in faulty.requests if u == url]
    attempts = 1 if fault in ("404", "endless", "drip") else 1 + fetch.RETRIES  # a missing, oversized or too slow file is not asked for again
    assert len(retried) == attempts * (31 if fault == "loop" else 1) and time.monotonic() - start < 60  # requests follows 30 redirects
    if attempts > 1:
        assert f"{url}: " in capsys.readouterr().out  # each retry said, with its reason


def test_offline_is_one_line_naming_both_ways_out(planted, monkeypatch):
    root, sources = planted
    monkeypatch.setenv(fetch.MIRROR, "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setattr(imdb, "OFFICIAL", "http://127.0.0.1:9/aclImdb_v1.tar.gz")
    with pytest.raises(BookError) as err:
        install.require_data(root, sources)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"5 of 5 data files are still missing in {root}")
    assert "could not be downloaded (connection refused)" in line and "BOOK_DATA_DIR" in line and "BOOK_DATA_MIRROR" in line
    assert held(root) == []


FETCH = "import sys, pickle; from lib.datasets import fetch; print(fetch.fetch(sys.argv[1], pickle.loads(bytes.fromhex(sys.argv[2])), progressbar=False))"


# Ctrl-C raises KeyboardInterrupt, as in a terminal's foreground command: a test run in the background (`pytest &` in a
# script) hands its children SIGINT ignored, and Python then installs no handler for it.
CTRL_C = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "


def child(root: Path, sources: dict[str, Source], base: str, code: str = FETCH) -> subprocess.Popen:
    """`fetch` in another process (its own lock holder)."""
    argv = [sys.executable, "-c", CTRL_C + code, str(root), pickle.dumps(dict(sorted(sources.items()))).hex()]
    return subprocess.Popen(argv, cwd=REPO_ROOT, env={**os.environ, fetch.MIRROR: base}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def first_line(process: subprocess.Popen, timeout: float = 120) -> str:
    """The first line a child prints (waiting at most timeout seconds: its start imports torch)."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else ""


def test_two_fetches_at_once_take_turns_and_download_each_file_once(planted, faulty):
    root, sources = planted
    root.mkdir(parents=True)
    with fetch.locked(root):  # a third fetch is running: both wait for it, saying so
        first, second = child(root, sources, faulty.base), child(root, sources, faulty.base)
        assert [first_line(p) for p in (first, second)] == [f"data: another fetch into {root} is running; waiting for it to finish\n"] * 2
        assert faulty.requests == []
    outs = [p.communicate(timeout=60)[0] for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    assert sum(out.endswith("[]\n") for out in outs) == 1, outs  # whichever came second found every file there
    assert len(faulty.requests) == 4 and verified(root, sources) == sorted(sources) and staging_leftovers(root) == []


def test_a_data_folder_that_is_a_mount_point_is_staged_inside_it(planted, monkeypatch):
    root, sources = planted
    root.mkdir(parents=True)
    monkeypatch.setattr(fetch, "_same_device", lambda a, b: False)  # a Docker volume: renames from outside would fail
    seen = []
    real = fetch.staging_folder

    def spy(folder):
        seen.append(real(folder))
        return seen[-1]

    monkeypatch.setattr(fetch, "staging_folder", spy)
    assert fetch.fetch(root, sources, progressbar=False) == sorted(sources)
    assert seen[0].parent == root and not seen[0].exists() and verified(root, sources) == sorted(sources)


def test_a_full_disk_is_one_line_naming_the_file(planted, monkeypatch):
    root, sources = planted
    import errno

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(fetch.os, "replace", full)
    with pytest.raises(BookError, match=rf"^No space left on device while fetching into {root} \(/\S+\.(gz|txt|train)\); free space"):
        fetch.fetch(root, sources, progressbar=False)
    monkeypatch.undo()
    assert held(root) == [] and staging_leftovers(root) == []


def until(condition: Callable[[], bool], what: str | Callable[[], str], seconds: float = 120) -> None:
    """Wait for condition() to hold; after `seconds`, fail saying what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what if isinstance(what, str) else what()}: not within {seconds:g} s"
        time.sleep(0.02)


def stuck_on(root: Path, sources: dict[str, Source], faulty: Faulty, url: str, fault: str) -> subprocess.Popen:
    """A fetch in another process, once it has installed every file but the one at url, which misbehaves (`fault`)."""
    faulty.faults[url] = fault
    fetching = child(root, sources, faulty.base, FETCH.replace("progressbar=False", "progressbar=False, timeout=60"))
    try:
        until(lambda: url in faulty.requests and len(held(root)) == len(sources) - 1, f"a fetch with every file but {url} installed")
    except AssertionError:
        fetching.kill()
        raise
    return fetching


def test_a_fetch_killed_mid_way_leaves_only_verified_files_and_the_next_one_finishes(planted, faulty):
    root, sources = planted
    killed = stuck_on(root, sources, faulty, f"/owner/repo/{COMMIT}/up/sst2/sentiment-train", "stall")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert verified(root, sources) == sorted(set(sources) - {"sst2/sentiment-train"})  # all but the stalled file, each verified
    assert staging_leftovers(root)  # the killed fetch's staging folder (beside the data folder) with its partial download
    faulty.faults.clear()
    assert fetch.fetch(root, sources, progressbar=False) == ["sst2/sentiment-train"]
    assert verified(root, sources) == sorted(sources) and staging_leftovers(root) == []  # and the leftover is swept


def test_the_shared_data_through_a_local_mirror_fills_an_empty_folder(shared_data, tmp_path, monkeypatch):
    """All 595 pinned files from a server on 127.0.0.1 in GitHub's layouts, IMDB rebuilt from review files; each verified."""
    with server(Mirror(shared_data)) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        monkeypatch.setenv(fetch.MIRROR, f"http://127.0.0.1:{httpd.server_address[1]}")
        root = tmp_path / "data"
        installed = install.require_data(root)
        assert len(installed) == 595 and fetch.missing(root, SOURCES) == ([], [])
        asked = len(httpd.requests)
        assert install.require_data(root) == [] and len(httpd.requests) == asked == 594  # 593 files and one archive
        httpd.shutdown()
    assert staging_leftovers(root) == []


def test_the_readme_names_every_repository_and_commit_the_data_comes_from():
    readme = (REPO_ROOT / "README.md").read_text()
    for source in SOURCES.values():
        assert f"[{source.repository}](https://github.com/{source.repository}/tree/{source.commit})" in readme, source.repository


def from_github_here(monkeypatch, faulty) -> None:
    """No mirror set: GitHub's hosts (and Stanford's, for IMDB) are the test's server."""
    monkeypatch.delenv(fetch.MIRROR)
    monkeypatch.setattr(fetch, "RAW", faulty.base)
    monkeypatch.setattr(fetch, "CODELOAD", faulty.base)


def test_imdb_falls_back_to_stanfords_archive_with_the_same_selection(planted, faulty, monkeypatch, capsys):
    """The pinned commit's archive holds Git LFS pointers (as later commits of that repository do): the fetch says so
    and builds IMDB from the official archive, leaving out the training reviews the book does not use."""
    root, sources = planted
    from_github_here(monkeypatch, faulty)
    left_out = min(i for split, label, i in imdb.EXCLUDED if label == "neg")
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 854\n"
    faulty.files[f"/owner/imdb/tar.gz/{COMMIT}"] = reviews_archive(f"imdb-{COMMIT}", {name: pointer for name in REVIEWS})
    official = {name.replace("data/", ""): data for name, data in REVIEWS.items()}
    official[f"aclImdb/train/neg/{left_out}_1.txt"] = b"not one of the book's 20,000"
    faulty.files["/stanford/aclImdb_v1.tar.gz"] = reviews_archive("", official)
    assert fetch.fetch(root, sources, progressbar=False) == sorted(sources)
    assert gzip.decompress((root / "imdb/train.tsv.gz").read_bytes()).decode() == TRAIN and verified(root, sources) == sorted(sources)
    said = capsys.readouterr().out
    assert f"data: IMDB from {faulty.base}/owner/imdb/tar.gz/{COMMIT} failed (the archive holds Git LFS pointers instead of the reviews" in said
    assert f"trying {faulty.base}/stanford/aclImdb_v1.tar.gz" in said


def test_when_both_imdb_sources_fail_the_line_names_the_last(planted, faulty, monkeypatch):
    root, sources = planted
    from_github_here(monkeypatch, faulty)
    faulty.faults[f"/owner/imdb/tar.gz/{COMMIT}"] = "404"
    with pytest.raises(
        BookError,
        match=r"2 of 5 data files are still missing .*\(imdb \(2\)\): http://127.0.0.1:\d+/stanford/aclImdb_v1.tar.gz could not be downloaded \(HTTP 404",
    ):
        install.require_data(root, sources)
    assert verified(root, sources) == sorted(p for p in sources if not p.startswith("imdb/"))


def test_with_a_mirror_the_imdb_line_says_what_the_mirror_answered_and_nothing_else_is_asked(planted, faulty):
    root, sources = planted
    faulty.faults[f"/owner/imdb/tar.gz/{COMMIT}"] = "404"
    with pytest.raises(BookError, match=rf"\(imdb \(2\)\): {faulty.base}/owner/imdb/tar.gz/{COMMIT} could not be downloaded \(HTTP 404"):
        install.require_data(root, sources)
    assert not any("stanford" in u for u in faulty.requests)  # no silent fall back to the internet


@pytest.mark.parametrize("value", ["127.0.0.1:8765", "ftp://host/data", "http://"])
def test_a_mirror_that_is_not_a_url_is_one_line_before_any_request(planted, faulty, monkeypatch, value):
    root, sources = planted
    monkeypatch.setenv(fetch.MIRROR, value)
    with pytest.raises(BookError, match=r"BOOK_DATA_MIRROR=.* is not an http:// or https:// URL with a host; write it as http://host:port/path"):
        install.require_data(root, sources)
    assert faulty.requests == [] and held(root) == []


def test_a_data_folder_setting_that_names_a_file_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    for value in (tmp_path / "a-file", tmp_path / "a-file" / "data"):
        monkeypatch.setenv("BOOK_DATA_DIR", str(value))
        with pytest.raises(BookError, match=r"BOOK_DATA_DIR=.*: .*a-file is a file, not a folder; point BOOK_DATA_DIR at the folder"):
            install.require_data()


def test_the_mirror_script_on_a_busy_port_is_one_line(faulty, shared_data):
    port = str(faulty.httpd.server_address[1])
    env = {**os.environ, "BOOK_DATA_DIR": str(shared_data)}
    done = subprocess.run([sys.executable, "-m", "scripts.serve_data_mirror", port], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"cannot serve on 127.0.0.1:{port} (Address already in use); name a free port" in done.stderr


class Said:
    """What a child prints, line by line, each with the time it arrived (read by a thread of its own)."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append((time.monotonic(), line))

    def when(self, line: str, seconds: float = 120) -> float:
        """The time a line ending in `line` first arrived (stderr's text may precede it), waiting at most `seconds`."""
        until(lambda: any(said.endswith(line) for _, said in list(self.lines)), lambda: f"the child's line {line!r} (it said {str(self)!r})", seconds)
        return next(t for t, said in list(self.lines) if said.endswith(line))

    def __str__(self) -> str:
        return "".join(said for _, said in list(self.lines))


INTERRUPTED = "KeyboardInterrupt\n"  # the last line of the traceback a fetch that stopped on Ctrl-C leaves


def stopped_at_once(fetching: subprocess.Popen, said: Said, since: float) -> None:
    """The fetch ended on the Ctrl-C within 5 s of `since` (the interpreter's exit after it, seconds on a loaded
    machine, is not timed), and its process with it."""
    try:
        assert said.when(INTERRUPTED, 30) - since < 5, str(said)
        assert fetching.wait(60) != 0
    finally:
        fetching.kill()


def test_the_first_ctrl_c_stops_a_fetch_at_once(planted, faulty):
    root, sources = planted
    url = f"/owner/repo/{COMMIT}/up/corpus/brown/a01.txt"
    fetching = stuck_on(root, sources, faulty, url, "drip")
    said = Said(fetching)
    until(lambda: faulty.sent.get(url, 0) > 0, "the dripping file's first byte")  # its download is under way
    fetching.send_signal(signal.SIGINT)  # once
    stopped_at_once(fetching, said, time.monotonic())
    assert verified(root, sources) == sorted(set(sources) - {"corpus/brown/a01.txt"}) and staging_leftovers(root) == []


IMPORTING = "print('importing', flush=True); "
ANNOUNCED = "import signal; signal.signal(signal.SIGINT, lambda *a: (print('interrupted', flush=True), signal.default_int_handler(*a))); "
STAGED = "from lib.datasets import fetch; import time; Run = fetch._Run; fetch._Run = lambda *a: print('staged', flush=True) or time.sleep(60) or Run(*a); "


@pytest.mark.parametrize("moment", ["importing", "staged", "asking"])
def test_a_ctrl_c_before_a_download_is_under_way_stops_the_fetch_too(planted, faulty, moment):
    """The Ctrl-C comes while the child imports lib (and torch), once the staging folder is made but no download has
    started, or while a request waits for its answer (the server answers once the child has been interrupted: a
    download that begins after the halt): the fetch ends at once, leaving verified files only and no staging folder."""
    root, sources = planted
    url = f"/owner/repo/{COMMIT}/up/corpus/brown/a01.txt"
    faulty.faults[url] = "drip"  # a fetch that went on would be held here for minutes
    if moment == "asking":
        faulty.answer.clear()
    fetching = child(root, sources, faulty.base, {"importing": IMPORTING, "staged": STAGED, "asking": ANNOUNCED}[moment] + FETCH)
    said = Said(fetching)
    if moment == "importing":
        said.when("importing\n")
        fetching.send_signal(signal.SIGINT)
        try:
            fetching.wait(30)  # a KeyboardInterrupt in an import (torch's can end in an ImportError)
        finally:
            fetching.kill()
        assert fetching.returncode != 0 and held(root) == [] and staging_leftovers(root) == [], str(said)
        return
    if moment == "staged":
        said.when("staged\n")
        assert staging_leftovers(root)
    else:
        until(lambda: url in faulty.requests, f"the request for {url}")
    fetching.send_signal(signal.SIGINT)
    since = time.monotonic()
    if moment == "asking":
        said.when("interrupted\n", 30)
        faulty.answer.set()
        since = time.monotonic()
    stopped_at_once(fetching, said, since)
    assert "corpus/brown/a01.txt" not in verified(root, sources) and staging_leftovers(root) == []  # others may have been installed


IN_A_THREAD = (
    "from lib.datasets import fetch; import signal, threading; get = fetch._Get.__call__; "
    "fetch._Get.__call__ = lambda self, url, *a: ('a01' in url and signal.pthread_kill(threading.get_ident(), signal.SIGINT)) or get(self, url, *a); "
)


def test_a_ctrl_c_taken_by_a_download_thread_stops_the_fetch_too(planted, faulty):
    """The kernel may hand a process's SIGINT to any of its threads, and Python hears it in the main thread only: one
    taken by the thread about to download the dripping file still stops the fetch at once."""
    root, sources = planted
    url = f"/owner/repo/{COMMIT}/up/corpus/brown/a01.txt"
    faulty.faults[url] = "drip"
    fetching = child(root, sources, faulty.base, IN_A_THREAD + FETCH)
    said = Said(fetching)
    until(lambda: url in faulty.requests, f"the request for {url}")  # asked for after the thread's SIGINT
    stopped_at_once(fetching, said, time.monotonic())
    assert "corpus/brown/a01.txt" not in verified(root, sources) and staging_leftovers(root) == []
