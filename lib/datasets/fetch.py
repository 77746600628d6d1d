"""The default acquisition: every pinned data file fetched from the public commit that holds it, verified, then moved in.

    python -m lib.datasets fetch [NAME ...]     # what `make data` and `make book` do

An identical file comes from `<base>/<repository>/<commit>/<path>` (raw.githubusercontent.com), a few at a time,
through pooch (its SHA-256 checked); a converted file (IMDB) is built from the repository's archive at its commit
(`<base>/<repository>/tar.gz/<commit>`, codeload.github.com; Stanford's official archive when that fails and no mirror is set) and checked
by its content. `$BOOK_DATA_MIRROR` names one base URL that serves both layouts instead (an institution's mirror, or a
test's local server). Downloads go to a staging folder on the data folder's own file system (beside it, or inside it
when the data folder is a mount point), and each file is moved in only once verified: a fetch that is killed or fails
leaves verified files only, and the next one fetches the rest. One fetch at a time per data folder; a second waits.
`$BOOK_DATA_URL` instead takes the whole data release archive from a mirror (`lib.datasets.release`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

from ..errors import BookError, require
from ..io import temporary_folder_beside
from ..settings import data_dir
from . import imdb
from .pins import CODELOAD, RAW, SOURCES, Source, content_sha256

MIRROR = "BOOK_DATA_MIRROR"
WORKERS = 4  # downloads at once
RETRIES = 2  # further attempts after a failed download
TIMEOUT = 30.0  # seconds to connect, and seconds without a byte, before an attempt is given up
MARGIN = 1 << 16  # bytes accepted beyond a pinned file's size before the download is stopped as another file
ARCHIVE_LIMIT = 2 << 30  # bytes accepted for a repository's archive or the data release (their sizes are not pinned)
GRACE = 120.0  # seconds every file is given, whatever its size
SLOWEST = 20_000.0  # bytes/s: a file that takes longer than GRACE plus its size at this rate is given up
ARCHIVE_DEADLINE = 3600.0  # seconds for a whole archive


class DownloadFailed(BookError):
    """A file could not be fetched (no connection, an HTTP error, another file than the pinned one)."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{url} could not be downloaded ({reason})")
        self.url, self.reason = url, reason


def mirror() -> str:
    """$BOOK_DATA_MIRROR without its trailing slash ('' when unset); one line when it is not an http(s) URL with a host."""
    base = os.environ.get(MIRROR, "").strip().rstrip("/")
    parsed = urlparse(base)
    require(
        not base or (parsed.scheme in ("http", "https") and bool(parsed.netloc)),
        f"{MIRROR}={base!r} is not an http:// or https:// URL with a host; write it as http://host:port/path (or unset it to fetch from GitHub)",
    )
    return base


def bases() -> tuple[str, str]:
    """(per-file base, archive base): $BOOK_DATA_MIRROR for both, else raw.githubusercontent.com and codeload.github.com."""
    base = mirror()
    return (base, base) if base else (RAW, CODELOAD)


def missing(root: Path, sources: dict[str, Source]) -> tuple[list[str], list[str]]:
    """(absent, different): pinned paths not under root, and those whose content has another checksum."""
    absent, different = [], []
    for path, source in sorted(sources.items()):
        file = root / path
        if not file.is_file():
            absent.append(path)
        elif content_sha256(file, source.converted) != source.sha256:
            different.append(path)
    return absent, different


def absent_files(root: Path, sources: dict[str, Source]) -> list[str]:
    """The pinned paths root lacks; a BookError naming the files root holds with another checksum (they are never
    overwritten)."""
    absent, different = missing(root, sources)
    require(
        not different,
        f"{len(different)} file(s) in {root} differ from the pinned checksums, e.g. {', '.join(different[:3])}; "
        "they are another release or damaged: delete them (or point BOOK_DATA_DIR at another folder) and run `make data` again",
    )
    return absent


def not_there(err: BaseException) -> bool:
    """An HTTP answer that asking again will not change (4xx, but for a time-out or too many requests)."""
    response = getattr(err, "response", None)
    return response is not None and 400 <= response.status_code < 500 and response.status_code not in (408, 429)


def reason(err: BaseException, timeout: float = TIMEOUT) -> str:
    """What went wrong with a download, in a few words (the HTTP status, a time-out, a refused connection, …)."""
    import requests

    if isinstance(err, requests.HTTPError) and err.response is not None:
        return f"HTTP {err.response.status_code} {err.response.reason or ''}".strip()
    if isinstance(err, requests.Timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(err, requests.TooManyRedirects):
        return "too many redirects (a redirect loop)"
    if isinstance(err, requests.exceptions.ChunkedEncodingError):
        return "the connection closed before the whole file arrived"
    if isinstance(err, requests.ConnectionError):
        text = str(err)
        if "refused" in text.lower():
            return "connection refused"
        if any(s in text for s in ("NameResolution", "Name or service not known", "Failed to resolve", "nodename nor servname")):
            return "host not found: no internet connection?"
        return text.split("): ")[-1].strip("()' ")[:120] or "connection failed"
    if isinstance(err, ValueError):  # pooch: the hash of what arrived is not the pinned one
        return "the file that arrived has another SHA-256 than the pinned one"
    return f"{type(err).__name__}: {err}"[:160]


_local = threading.local()


def _session():
    import requests

    if not hasattr(_local, "session"):
        _local.session = requests.Session()
    return _local.session


class _Stopped(Exception):
    """The fetch was stopped (another file failed, or Ctrl-C) while this file downloaded."""


class Halt:
    """The stop signal of one fetch and the downloads under way: `halt` sets it and cuts their connections, so a
    download blocked on a slow or endless body ends at once, not at its next chunk. A response that arrives after the
    halt is never read (`stream_bounded`); a request still waiting for a server's first answer ends with that answer,
    or at the fetch's time-out."""

    def __init__(self) -> None:
        self.event, self.live, self.lock = threading.Event(), set(), threading.Lock()

    def is_set(self) -> bool:
        return self.event.is_set()

    def wait(self, seconds: float) -> None:
        self.event.wait(seconds)

    def halt(self) -> None:
        self.event.set()
        with self.lock:
            for response in list(self.live):
                _cut(response)


def _cut(response: object) -> None:
    """Shut a streamed response's connection down (through a duplicate of its socket's descriptor): a read blocked on
    it returns at once."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        with socket.socket(fileno=os.dup(response.raw.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)


def stream_bounded(url: str, response: object, out: BinaryIO, limit: int, deadline: float, halt: Halt, bar: object | None = None, have: int = 0) -> int:
    """Copy a streamed response's body into out, bounded: beyond `limit` bytes in all (`have` of them from before), or
    after `deadline` seconds, it ends with DownloadFailed (another file, or a server too slow); `halt` ends it at once
    (_Stopped). The bytes copied."""
    import requests

    expired = threading.Event()
    watchdog = threading.Timer(deadline, lambda: (expired.set(), _cut(response)))
    watchdog.daemon = True
    with halt.lock:
        halt.live.add(response)
    if halt.is_set():  # halted before the response was registered, so not cut: a Ctrl-C then must not go unheard
        with halt.lock:
            halt.live.discard(response)
        raise _Stopped
    watchdog.start()
    got = 0
    try:
        for chunk in response.iter_content(chunk_size=1 << 16):
            out.write(chunk)
            got += len(chunk)
            if have + got > limit:
                raise DownloadFailed(url, f"more than the {limit:,} bytes accepted for this file arrived: it is not the pinned file")
            if bar is not None:
                bar.update(len(chunk))
            if halt.is_set() or expired.is_set():
                break
    except requests.RequestException:
        if not (halt.is_set() or expired.is_set()):
            raise
    finally:
        watchdog.cancel()
        with halt.lock:
            halt.live.discard(response)
    if halt.is_set():
        raise _Stopped
    if expired.is_set():
        raise DownloadFailed(url, f"not whole after {deadline:.0f} s, the most a file of this size is given: the server is too slow")
    return got


def bounds(size: int) -> tuple[int, float]:
    """(most bytes, most seconds) a download of a file of `size` bytes is given; size 0 (not pinned): an archive's."""
    return (size + MARGIN, GRACE + size / SLOWEST) if size else (ARCHIVE_LIMIT, ARCHIVE_DEADLINE)


class _Get:
    """A pooch downloader: one GET with a time-out, streamed to pooch's temporary file within its bounds
    (`stream_bounded`); a body shorter than its Content-Length is an error (retried), not a file."""

    def __init__(self, timeout: float, limit: int, deadline: float, halt: Halt, bar: object | None = None):
        self.timeout, self.limit, self.deadline, self.halt, self.bar = timeout, limit, deadline, halt, bar

    def __call__(self, url: str, output_file: str, pooch: object) -> None:
        import requests

        with _session().get(url, stream=True, timeout=self.timeout) as response:
            response.raise_for_status()
            expected = 0 if response.headers.get("Content-Encoding") else int(response.headers.get("Content-Length") or 0)
            if expected > self.limit:
                raise DownloadFailed(url, f"the server announces {expected:,} bytes, more than the {self.limit:,} accepted for this file")
            with open(output_file, "wb") as out:
                got = stream_bounded(url, response, out, self.limit, self.deadline, self.halt, self.bar)
            if expected and got < expected:
                raise requests.ConnectionError(f"the connection closed after {got:,} of {expected:,} bytes")


class _Run:
    """One fetch: the pooch registry of its downloads, a shared stop signal, the progress bar, what was installed."""

    def __init__(self, root: Path, staging: Path, retries: int, timeout: float, progressbar: bool, total: int):
        import pooch
        from tqdm import tqdm

        pooch.get_logger().setLevel("WARNING")  # each retry is said here, with its reason
        self.root, self.staging, self.retries, self.timeout = root, staging, retries, timeout
        self.pooch = pooch.create(path=staging, base_url="", registry={})
        self.stop = Halt()
        self.bar = tqdm(total=total, unit="file", desc="data", disable=not progressbar)
        self.progressbar = progressbar
        self.installed: list[str] = []
        self.lock = threading.Lock()

    def say(self, line: str) -> None:
        self.bar.write(line)

    def download(self, name: str, url: str, sha: str | None, size: int, bar: object | None = None) -> Path | None:
        """staging/name downloaded from url (its SHA-256 checked when given; at most `size` bytes and the margin, or
        ARCHIVE_LIMIT when size is 0), retried on errors that may pass; None when the run was stopped."""
        import requests

        self.pooch.registry[name] = f"sha256:{sha}" if sha else None
        self.pooch.urls[name] = url
        limit, deadline = bounds(size)
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            if self.stop.is_set():
                return None
            try:
                return Path(self.pooch.fetch(name, downloader=_Get(self.timeout, limit, deadline, self.stop, bar)))
            except _Stopped:
                return None
            except requests.HTTPError as err:
                if not_there(err):
                    raise DownloadFailed(url, reason(err)) from None
                last = err
            except (requests.RequestException, ValueError) as err:
                if reason(err).startswith(("host not found", "connection refused")):  # offline, or no server: said at once
                    raise DownloadFailed(url, reason(err)) from None
                last = err
            if attempt < self.retries and not self.stop.is_set():
                self.say(f"data: {url}: {reason(last, self.timeout)}; trying again ({self.retries - attempt} more)")
                self.stop.wait(attempt + 1)
        if self.stop.is_set():
            return None
        raise DownloadFailed(url, reason(last, self.timeout))

    def install(self, path: str) -> None:
        """Move a verified file from staging into the data folder (same file system: one rename)."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.staging / path, target)
        with self.lock:
            self.installed.append(path)
        self.bar.update(1)

    def identical(self, source: Source, base: str) -> None:
        if self.download(source.path, source.url(base), source.sha256, source.size) is not None:
            self.install(source.path)

    def converted(self, sources: list[Source], base: str) -> None:
        """The IMDB files, built from their repository's archive at the pinned commit (or, when that fails and no mirror
        is set, from Stanford's official archive: a mirror's answer is the one reported) and checked by content."""
        first = sources[0]
        urls = [first.archive_url(base)] + ([] if mirror() else [imdb.OFFICIAL])
        for n, url in enumerate(urls):
            try:
                return self._convert(sources, url, f"_sources/imdb-{n}.tar.gz")
            except DownloadFailed as err:
                if n == len(urls) - 1 or self.stop.is_set():
                    raise
                self.say(f"data: IMDB from {url} failed ({err.reason}); trying {urls[n + 1]}")

    def _convert(self, sources: list[Source], url: str, name: str) -> None:
        from tqdm import tqdm

        with tqdm(unit="B", unit_scale=True, desc="IMDB source archive", leave=False, disable=not self.progressbar) as bar:
            archive = self.download(name, url, None, 0, bar)
        if archive is None:
            return  # stopped by another file's failure
        try:
            contents = imdb.read_archive(archive, [Path(s.path).name.split(".")[0] for s in sources])
        except imdb.Unusable as err:
            raise DownloadFailed(url, f"the archive {err.what}") from None
        finally:
            archive.unlink(missing_ok=True)
        built = {s.path: imdb.write(contents[Path(s.path).name.split(".")[0]], self.staging / s.path) for s in sources}
        for source in sources:
            if content_sha256(built[source.path], True) != source.sha256:
                raise DownloadFailed(url, f"its reviews do not rebuild the pinned content of {source.path}")
        for source in sources:
            self.install(source.path)


def _same_device(a: Path, b: Path) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


def staging_folder(root: Path) -> Path:
    """A new folder for downloads on root's file system: beside root, or inside it when root is a mount point (a
    Docker volume) or its parent cannot be written; folders of fetches that were killed are removed first."""
    if _same_device(root, root.parent) and os.access(root.parent, os.W_OK):
        return temporary_folder_beside(root)
    return temporary_folder_beside(root / "fetch")


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's fetch lock (`.fetch.lock`): a second fetch into the same folder waits, saying so."""
    from filelock import FileLock, Timeout

    lock = FileLock(folder / ".fetch.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"data: another fetch into {folder} is running; waiting for it to finish", flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _settled(job: Future) -> None:
    """Wait for a job to end, waking every quarter second: Python runs its signal handlers in the main thread only, and
    a Ctrl-C that the kernel hands to a download thread would otherwise wait for the job to end (minutes, or an hour
    for an archive) before it is heard."""
    while not wait([job], timeout=0.25).done:
        pass


def fetch(
    root: Path | None = None,
    sources: dict[str, Source] | None = None,
    progressbar: bool = True,
    workers: int = WORKERS,
    retries: int = RETRIES,
    timeout: float | None = None,
) -> list[str]:
    """Make the data folder hold every pinned file of `sources` (default: all) and return the paths installed; nothing
    is downloaded when it holds them. Files present with another checksum are not overwritten: a BookError names them.
    A download that fails stops the fetch with DownloadFailed; what was verified by then stays installed."""
    root, sources = Path(root or data_dir()), SOURCES if sources is None else sources
    timeout = TIMEOUT if timeout is None else timeout
    raw, codeload = bases()  # a mirror that is not a URL stops here, before any request
    root.mkdir(parents=True, exist_ok=True)
    if not absent_files(root, sources):  # a complete (perhaps read-only) folder is never locked or written
        return []
    with locked(root):
        absent = absent_files(root, sources)
        if not absent:
            return []
        where = f"the mirror {raw}" if mirror() else "the public commits that hold them (raw.githubusercontent.com)"
        print(f"data: {len(absent)} of {len(sources)} data files missing in {root}; fetching them from {where}", flush=True)
        todo = [sources[p] for p in absent]
        groups: dict[tuple[str, str], list[Source]] = {}
        for source in todo:
            if source.converted:
                groups.setdefault((source.repository, source.commit), []).append(source)
        staging = staging_folder(root)
        run: _Run | None = None
        try:  # from here on, whatever ends the fetch (Ctrl-C included) removes the staging folder
            for folder in {(staging / s.path).parent for s in todo} | {staging / "_sources"}:
                folder.mkdir(parents=True, exist_ok=True)  # before the threads: pooch makes a missing folder, and two would race
            run = _Run(root, staging, retries, timeout, progressbar, len(todo))
            errors: list[Exception] = []
            with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                try:  # the downloads start with their submission: a Ctrl-C from then on halts them
                    largest = [pool.submit(run.converted, group, codeload) for group in groups.values()]  # started first
                    jobs = [pool.submit(run.identical, source, raw) for source in todo if not source.converted] + largest  # a file's error first
                    for job in jobs:
                        _settled(job)
                        try:
                            job.result()
                        except Exception as err:  # the first failure stops the others
                            run.stop.halt()
                            errors.append(err)
                except BaseException:  # Ctrl-C (or a signal), the first time: every download stops at once
                    run.stop.halt()
                    raise
            if errors:
                raise next((e for e in errors if isinstance(e, DownloadFailed)), errors[0])
        except OSError as err:
            if err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                raise
            raise BookError(
                f"{err.strerror} while fetching into {root} ({err.filename or staging}); free space or fix permissions, then run `make data` again"
            ) from None
        finally:
            if run is not None:
                run.bar.close()
            shutil.rmtree(staging, ignore_errors=True)
        return sorted(run.installed)
