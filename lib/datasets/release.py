"""The data release: every pinned data file in one deterministic archive, packed by the maintainers and fetched by users.

    python -m lib.datasets pack OUT.tar.gz       # maintainers: pack the verified data folder, print its SHA-256
    python -m lib.datasets fetch                 # users (`make data`): download, verify, unpack into the data folder

The archive holds the files pinned in `checksums.sha256` at their paths under the data folder, plus `_release/README.md`
(what each data set is, its upstream source, licence and conversion) and `_release/MANIFEST.tsv` (path, SHA-256, bytes,
data set, source, licence). Members are sorted, with time 0, owner 0 and mode 0644, so the same files always give the
same archive. Its URL and SHA-256 are pinned in `lib.settings.DATA_RELEASE` (`$BOOK_DATA_URL` names a mirror).

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
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import BookError, require
from ..io import sha256, temporary_folder_beside, write_atomic, write_folder_atomic
from ..settings import cache_dir, data_dir, data_release
from .registry import PINNED, REGISTRY, DownloadFailed

DOCS = ("_release/README.md", "_release/MANIFEST.tsv")
RETRIES = 3  # further attempts after a failed download, each resuming where the last stopped
_CHUNK = 1 << 20


def missing(root: Path, pins: dict[str, str] = PINNED) -> tuple[list[str], list[str]]:
    """(absent, different): pinned paths that are not under root, and those whose content has another checksum."""
    absent, different = [], []
    for path, digest in sorted(pins.items()):
        file = root / path
        if not file.is_file():
            absent.append(path)
        elif sha256(file) != digest:
            different.append(path)
    return absent, different


def _provenance(pins: dict[str, str]) -> dict[str, tuple[str, str, str, str]]:
    """path -> (data set, upstream source, licence, conversion) for the pinned paths the registry knows."""
    out = {}
    for ds in REGISTRY.values():
        for spec in ds.files.values():
            if spec.path in pins:
                out[spec.path] = (ds.name, spec.url, ds.licence, ds.conversion)
    return out


def _readme(name: str, pins: dict[str, str]) -> str:
    known = _provenance(pins)
    lines = [
        f"# {name}: the data sets of 'The geometry of transformer embeddings, re-run'",
        "",
        "Unpack into the book's data folder (`tar -xzf ARCHIVE -C data`), or let `make data` do it (it verifies every file).",
        "MANIFEST.tsv lists each file's SHA-256; the book pins the same checksums in lib/datasets/checksums.sha256.",
        "",
        "| data set | files | upstream source | licence | how the file derives from the source |",
        "|---|---|---|---|---|",
    ]
    for ds in REGISTRY.values():
        paths = [p for p, (n, *_) in known.items() if n == ds.name]
        if paths:
            source = sorted({known[p][1] for p in paths})
            archive = any(spec.archive for spec in ds.files.values())
            conversion = ds.conversion or ("byte-identical to the archive's member" if archive else "byte-identical to the published file")
            lines.append(f"| {ds.name} | {len(paths)} | {', '.join(source)} | {ds.licence} | {conversion} |")
    other = sorted(set(pins) - set(known))
    if other:
        lines.append(f"| (pinned, read by no data set) | {len(other)}: {', '.join(other)} | – | – | – |")
    return "\n".join(lines) + "\n"


def _manifest(root: Path, pins: dict[str, str]) -> str:
    known = _provenance(pins)
    rows = ["path\tsha256\tbytes\tdataset\tsource\tlicence"]
    for path in sorted(pins):
        name, url, licence, _ = known.get(path, ("", "", "", ""))
        rows.append(f"{path}\t{pins[path]}\t{(root / path).stat().st_size}\t{name}\t{url}\t{licence}")
    return "\n".join(rows) + "\n"


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = size, 0, 0o644, 0, 0, "", ""
    return info


def pack(src: Path, out: Path, name: str | None = None, pins: dict[str, str] = PINNED) -> str:
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


def unpack(archive: Path, root: Path, pins: dict[str, str] = PINNED) -> list[str]:
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
        bad = [p for p in sorted(pins) if sha256(tmp / p) != pins[p]]
        require(
            not bad,
            f"{len(bad)} file(s) in the data archive differ from their pinned checksums, e.g. {', '.join(bad[:3])}; it was refused: check BOOK_DATA_URL",
        )

    if not root.exists():
        write_folder_atomic(root, extract)
        return sorted([*pins, *DOCS])
    tmp = temporary_folder_beside(root)
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
    (an HTTP Range request) when it is called again, with a progress bar."""

    def __init__(self, part: Path, progressbar: bool = True, timeout: float = 30.0, desc: str = "data release"):
        self.part, self.progressbar, self.timeout, self.desc = Path(part), progressbar, timeout, desc

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
                total = int(response.headers.get("content-length", 0)) + have or None
                with (
                    open(self.part, "ab" if have else "wb") as out,
                    tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=self.desc, disable=not self.progressbar) as bar,
                ):
                    for chunk in response.iter_content(chunk_size=1 << 16):
                        out.write(chunk)
                        bar.update(len(chunk))
        shutil.move(self.part, output_file)  # whole: pooch checks its hash before keeping it
        return None


def download(
    url: str,
    digest: str,
    cache: Path,
    retries: int = RETRIES,
    progressbar: bool = True,
    what: str = "data release",
    hint: str = "check BOOK_DATA_URL (a mirror must serve the same release)",
) -> Path:
    """A file (by default the release archive) in cache as `<sha256><suffix of url>`, downloaded if absent, its SHA-256
    checked. A download cut half-way is resumed by the next call; a file with another hash is deleted and refused."""
    import pooch
    import requests

    fname = digest + "".join(PurePosixPath(url.split("?")[0]).suffixes[-2:])
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    pooch.get_logger().setLevel("WARNING")  # the caller says what is fetched, in one line
    fetcher = pooch.create(path=cache, base_url="", registry={fname: f"sha256:{digest}"}, urls={fname: url}, retry_if_failed=retries)
    try:
        return Path(fetcher.fetch(fname, downloader=ResumingDownloader(cache / f"{fname}.part", progressbar, desc=what)))
    except ValueError as err:  # pooch: hash mismatch (the downloaded file is already deleted)
        got = str(err).split(" but got ")[-1].split(".")[0] if " but got " in str(err) else "another hash"
        raise BookError(f"the file at {url} has SHA-256 {got[:12]}…, not the pinned {digest[:12]}…; it was refused: " + hint) from None
    except requests.RequestException as err:
        reason = type(err).__name__ if not str(err) else str(err).split(": ")[-1][:120]
        raise DownloadFailed(
            f"could not download the {what} from {url} ({reason}); run the same command again to resume"
            + (", or see `make data` in the README" if what == "data release" else "")
        ) from None


def fetch(
    root: Path | None = None,
    url: str | None = None,
    digest: str | None = None,
    pins: dict[str, str] | None = None,
    progressbar: bool = True,
    retries: int | None = None,
) -> list[str]:
    """Make the data folder hold every pinned file: nothing is downloaded when it does; otherwise the release is
    downloaded (or taken from the cache), verified and unpacked. Returns the paths installed. Files that are present
    with another checksum are not overwritten: that is a BookError naming them."""
    root, pins = Path(root or data_dir()), PINNED if pins is None else pins
    release = data_release()
    url, digest = url or release.url, digest or release.sha256
    absent, different = missing(root, pins) if root.exists() else (sorted(pins), [])
    require(
        not different,
        f"{len(different)} file(s) in {root} differ from the pinned checksums, e.g. {', '.join(different[:3])}; "
        "they are another release or damaged: delete them (or point BOOK_DATA_DIR at another folder) and run `make data` again",
    )
    if not absent:
        return []
    print(f"data: {len(absent)} of {len(pins)} data files missing in {root}; fetching the data release {url}", flush=True)
    archive = download(url, digest, cache_dir() / "data-release", RETRIES if retries is None else retries, progressbar)
    return unpack(archive, root, pins)


def require_data(root: Path | None = None, pins: dict[str, str] | None = None) -> list[str]:
    """Before a build (`make data`, `make book`): fetch the data release when files are missing and return the paths
    installed; offline, one line naming the missing files and the two ways to provide them."""
    root, pins = Path(root or data_dir()), PINNED if pins is None else pins
    try:
        return fetch(root, pins=pins)
    except DownloadFailed:
        absent, _ = missing(root, pins) if root.exists() else (sorted(pins), [])
        raise BookError(
            f"{len(absent)} data files are missing in {root} ({names(absent)}) and the data release could not be downloaded "
            f"({data_release().url}): set BOOK_DATA_DIR to a folder that holds the data sets, or connect to the internet and run `make data`"
        ) from None


def names(paths: Iterable[str]) -> str:
    """A short listing of paths by data folder, e.g. 'sst2 (3), wic (4)'."""
    counts: dict[str, int] = {}
    for p in paths:
        counts[p.split("/")[0]] = counts.get(p.split("/")[0], 0) + 1
    return ", ".join(f"{k} ({v})" for k, v in sorted(counts.items()))
