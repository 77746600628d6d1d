"""The data release: every pinned data file in one deterministic archive, an optional mirror of the per-file fetch.

    python -m lib.datasets pack OUT.tar.gz                        # pack the verified data folder, print its SHA-256
    BOOK_DATA_URL=https://…/book-data-v2.tar.gz make data         # install from such an archive instead of per file

The default acquisition fetches each file from the public commit that holds it (`lib.datasets.fetch`); an institution
that mirrors one archive instead names it with `$BOOK_DATA_URL`. The archive holds the files pinned in `sources.tsv` at
their paths under the data folder, plus `_release/README.md` (what each data set is, where it was first released and
the public commit it is fetched from, its licence and conversion) and `_release/MANIFEST.tsv` (path, SHA-256, bytes,
data set, published at, licence). Members are sorted, with time 0, owner 0 and mode 0644, so the same files always give
the same archive; its SHA-256 is pinned in `lib.settings.DATA_RELEASE`, whatever the host.

Fetching goes through pooch (retries, hash check, progress bar) with a downloader that resumes a cut download from its
`.part` file. The archive's hash is checked before anything is unpacked; only regular files at pinned paths are taken
(no absolute paths, no `..`, no links, nothing unlisted); every member is checked against the pinned checksums in a
temporary folder beside the data folder, and only then moved in, so an interrupted or refused fetch installs nothing.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import time
import zlib
from pathlib import Path, PurePosixPath

from ..errors import BookError, require
from ..io import sha256, write_atomic
from ..settings import DATA_RELEASE, cache_dir, data_dir
from .fetch import TIMEOUT, DownloadFailed, Halt, absent_files, bounds, locked, missing, not_there, reason, staging_folder, stream_bounded
from .pins import SOURCES, Source, content_sha256
from .registry import REGISTRY

DOCS = ("_release/README.md", "_release/MANIFEST.tsv")
RETRIES = 3  # further attempts after a failed download, each resuming where the last stopped
_CHUNK = 1 << 20


def _provenance(pins: dict[str, Source]) -> dict[str, tuple[str, str, str, str]]:
    """path -> (data set, first released at, licence, conversion) for the pinned paths the registry knows."""
    out = {}
    for ds in REGISTRY.values():
        for spec in ds.files.values():
            if spec.path in pins:
                out[spec.path] = (ds.name, spec.origin, ds.licence, ds.conversion)
    return out


def _readme(name: str, pins: dict[str, Source]) -> str:
    known = _provenance(pins)
    lines = [
        f"# {name}: the data sets of 'The geometry of transformer embeddings, re-run'",
        "",
        "Unpack into the book's data folder (`tar -xzf ARCHIVE -C data`), or let `BOOK_DATA_URL=… make data` do it (it verifies every file).",
        "MANIFEST.tsv lists each file's SHA-256 (of the uncompressed content for converted files) and the public commit it",
        "is fetched from; the book pins the same in lib/datasets/sources.tsv. The data sets' own licences apply.",
        "",
        "| data set | files | first released at | fetched from (repository@commit) | licence | how the file derives from the source |",
        "|---|---|---|---|---|---|",
    ]
    for ds in REGISTRY.values():
        paths = [p for p, (n, *_) in known.items() if n == ds.name]
        if paths:
            origin = sorted({known[p][1] for p in paths})
            published = sorted({f"{pins[p].repository}@{pins[p].commit}" for p in paths})
            conversion = ds.conversion or "byte-identical to the file at the commit it is fetched from"
            lines.append(f"| {ds.name} | {len(paths)} | {', '.join(origin)} | {', '.join(published)} | {ds.licence} | {conversion} |")
    other = sorted(set(pins) - set(known))
    if other:
        lines.append(f"| (pinned, read by no data set) | {len(other)}: {', '.join(other)} | – | – | – |")
    return "\n".join(lines) + "\n"


def _manifest(root: Path, pins: dict[str, Source]) -> str:
    known = _provenance(pins)
    rows = ["path\tsha256\tbytes\tdataset\tpublished_at\tlicence"]
    for path, source in sorted(pins.items()):
        name, _, licence, _ = known.get(path, ("", "", "", ""))
        rows.append(f"{path}\t{source.sha256}\t{(root / path).stat().st_size}\t{name}\t{source.where}\t{licence}")
    return "\n".join(rows) + "\n"


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = size, 0, 0o644, 0, 0, "", ""
    return info


def pack(src: Path, out: Path, name: str | None = None, pins: dict[str, Source] = SOURCES) -> str:
    """Write the release archive of the data folder src to out (atomically) and return its SHA-256. Every pinned file
    must be in src with its pinned checksum; files src holds beyond them are left out."""
    src = Path(src)
    require(src.is_dir(), f"{src} is not a folder; pass the data folder that holds the verified data sets")
    absent, different = missing(src, pins)
    require(not absent, f"{src} lacks {len(absent)} pinned file(s), e.g. {', '.join(absent[:3])}; pack a complete data folder")
    require(not different, f"{len(different)} file(s) in {src} differ from their pinned checksums, e.g. {', '.join(different[:3])}; pack the verified files")
    name = name or Path(out).name.removesuffix(".tar.gz")
    docs = {DOCS[0]: _readme(name, pins).encode(), DOCS[1]: _manifest(src, pins).encode()}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
                for path, data in docs.items():
                    tar.addfile(_member(path, len(data)), io.BytesIO(data))
                for path in sorted(pins):
                    with open(src / path, "rb") as f:
                        tar.addfile(_member(path, (src / path).stat().st_size), f)

    write_atomic(Path(out), write)
    return sha256(Path(out))


def _check_member(member: tarfile.TarInfo, allowed: set[str]) -> str:
    """The member's path if it is a regular file at an allowed relative path; else BookError."""
    name = member.name
    parts = PurePosixPath(name).parts
    require(
        not name.startswith("/") and ".." not in parts,
        f"the data archive holds the unsafe path {name!r} (absolute or with '..'); it was refused: fetch it again from the pinned URL",
    )
    require(
        member.isfile(), f"the data archive holds {name!r}, which is not a regular file (a link or device); it was refused: fetch it again from the pinned URL"
    )
    require(name in allowed, f"the data archive holds {name!r}, which the book does not pin; it is not the book's data release: check BOOK_DATA_URL")
    return name


def unpack(archive: Path, root: Path, pins: dict[str, Source] = SOURCES) -> list[str]:
    """Unpack a release archive into root and return the paths installed. Every member is checked (safe path, regular
    file, pinned checksum) in a temporary folder beside root before any is moved in; files root already holds with
    their pinned checksum are kept. Raises BookError, leaving root as it was, for any archive that fails a check."""
    root = Path(root)
    allowed = set(pins) | set(DOCS)

    def extract(tmp: Path) -> None:
        seen = set()
        try:
            with tarfile.open(archive, mode="r:gz") as tar:
                for member in tar:
                    name = _check_member(member, allowed)
                    require(name not in seen, f"the data archive holds {name!r} twice; it was refused: fetch it again")
                    seen.add(name)
                    target = tmp / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as f, open(target, "wb") as out:
                        shutil.copyfileobj(f, out, _CHUNK)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise BookError(f"the data archive {archive} is damaged ({err}); delete it and fetch it again") from None
        lacking = sorted(set(pins) - seen)
        require(
            not lacking,
            f"the data archive lacks {len(lacking)} pinned file(s), e.g. {', '.join(lacking[:3])}; it is not the book's data release: check BOOK_DATA_URL",
        )
        bad = [p for p, source in sorted(pins.items()) if content_sha256(tmp / p, source.converted) != source.sha256]
        require(
            not bad,
            f"{len(bad)} file(s) in the data archive differ from their pinned checksums, e.g. {', '.join(bad[:3])}; it was refused: check BOOK_DATA_URL",
        )

    root.mkdir(parents=True, exist_ok=True)
    tmp = staging_folder(root)  # on root's file system: a data folder that is a mount point takes its files by renaming
    try:
        extract(tmp)
        absent, different = missing(root, pins)
        installed = [*absent, *different, *DOCS]
        for path in installed:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / path, root / path)  # each file whole and verified; a kill between two leaves a valid subset
        return sorted(installed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class ResumingDownloader:
    """A pooch downloader that keeps what it received in `<cache>/<name>.part` and asks the server for the rest
    (an HTTP Range request) when it is called again, with a progress bar. A body shorter than the server announced
    is kept in the part file and reported as an error, so that the next attempt resumes after it; more than `limit`
    bytes in all is another file (the part file is deleted, not retried)."""

    def __init__(self, part: Path, progressbar: bool = True, timeout: float = TIMEOUT, desc: str = "data release", size: int = 0):
        self.part, self.progressbar, self.timeout, self.desc = Path(part), progressbar, timeout, desc
        self.limit, self.deadline = bounds(size)

    def __call__(self, url: str, output_file: str, pooch: object, check_only: bool = False) -> bool | None:
        import requests
        from tqdm import tqdm

        if check_only:
            return requests.head(url, allow_redirects=True, timeout=self.timeout).ok
        have = self.part.stat().st_size if self.part.is_file() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with requests.get(url, headers=headers, stream=True, timeout=self.timeout) as response:
            if response.status_code == 416:  # asked past the end: the part file is whole (or stale); hash check decides
                response.close()
            else:
                response.raise_for_status()
                if response.status_code != 206:
                    have = 0  # the server ignored the range: start again
                announced = int(response.headers.get("content-length", 0))
                total = (announced + have) or None
                with (
                    open(self.part, "ab" if have else "wb") as out,
                    tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=self.desc, disable=not self.progressbar) as bar,
                ):
                    try:
                        got = stream_bounded(url, response, out, self.limit, self.deadline, Halt(), bar, have)
                    except DownloadFailed:
                        self.part.unlink(missing_ok=True)  # another file, or too slow a server: nothing to resume
                        raise
                if announced and got < announced:
                    raise requests.ConnectionError(f"the connection closed after {have + got:,} of {total:,} bytes")
        shutil.move(self.part, output_file)  # whole: pooch checks its hash before keeping it
        return None


def download(
    url: str,
    digest: str,
    cache: Path,
    retries: int = RETRIES,
    progressbar: bool = True,
    timeout: float = TIMEOUT,
    what: str = "data release",
    hint: str = "check BOOK_DATA_URL",
    size: int = 0,
) -> Path:
    """A file (by default the release archive) in cache as `<sha256><suffix of url>`, downloaded if absent (one fetch
    at a time per cache), its SHA-256 checked. Each failed attempt is said with its reason and the next resumes where
    it stopped; a file with another hash, or beyond the bounds of its `size` (`fetch.bounds`; 0: not known), is deleted
    and refused (hint says what to do)."""
    import pooch
    import requests

    fname = digest + "".join(PurePosixPath(url.split("?")[0]).suffixes[-2:])
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    pooch.get_logger().setLevel("WARNING")  # each retry is said below, with its reason
    fetcher = pooch.create(path=cache, base_url="", registry={fname: f"sha256:{digest}"}, urls={fname: url})
    downloader = ResumingDownloader(cache / f"{fname}.part", progressbar, timeout, desc=what, size=size)
    last: BaseException | None = None
    with locked(cache):
        for attempt in range(retries + 1):
            try:
                return Path(fetcher.fetch(fname, downloader=downloader))
            except ValueError as err:  # pooch: hash mismatch (the downloaded file is already deleted)
                got = str(err).split(" but got ")[-1].split(".")[0] if " but got " in str(err) else "another hash"
                raise BookError(f"the file at {url} has SHA-256 {got[:12]}…, not the pinned {digest[:12]}…; it was refused: {hint}") from None
            except requests.HTTPError as err:
                if not_there(err):
                    raise DownloadFailed(url, reason(err)) from None
                last = err
            except requests.RequestException as err:
                last = err
            if attempt < retries:
                print(f"data: {url}: {reason(last, timeout)}; trying again, resuming ({retries - attempt} more)", flush=True)
                time.sleep(attempt + 1)
    raise DownloadFailed(url, reason(last, timeout))


def fetch(
    root: Path | None = None,
    url: str | None = None,
    digest: str | None = None,
    pins: dict[str, Source] | None = None,
    progressbar: bool = True,
    retries: int | None = None,
) -> list[str]:
    """Make the data folder hold every pinned file from the release archive at url (default $BOOK_DATA_URL): nothing
    is downloaded when it does; otherwise the archive is downloaded (or taken from the cache), verified and unpacked.
    Returns the paths installed. Files present with another checksum are not overwritten: a BookError names them."""
    root, pins = Path(root or data_dir()), SOURCES if pins is None else pins
    url, digest = url or os.environ.get("BOOK_DATA_URL", ""), digest or DATA_RELEASE.sha256
    require(bool(url), "no data release archive is named: set BOOK_DATA_URL to its URL (or leave it unset to fetch each file from its public commit)")
    root.mkdir(parents=True, exist_ok=True)
    if not absent_files(root, pins):
        return []
    with locked(root):
        absent = absent_files(root, pins)
        if not absent:
            return []
        print(f"data: {len(absent)} of {len(pins)} data files missing in {root}; fetching the data release {url}", flush=True)
        archive = download(url, digest, cache_dir() / "data-release", RETRIES if retries is None else retries, progressbar)
        return unpack(archive, root, pins)
