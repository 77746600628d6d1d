"""Files written whole or not at all, and their checksums: the only copies of these helpers in the book."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path

from .errors import BookError
from .processes import alive


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call write(tmp) on a temporary file beside path, then rename it into place, readable as any new file would be.
    An error leaves path as it was and no temporary file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    return _install(Path(tmp), path, write, 0o666)  # mkstemp makes 0600 files; a built book's images must be readable by a web server


def write_folder_atomic(folder: Path, write: Callable[[Path], None]) -> Path:
    """Call write(tmp) on an empty temporary folder beside folder, then swap it in for folder.
    An error leaves folder as it was and no temporary folder behind; the temporary folders of a writer that was killed
    (its process gone) are removed first."""
    return _install(temporary_folder_beside(folder), Path(folder), write, 0o777)


def temporary_folder_beside(folder: Path) -> Path:
    """A new empty folder `.<name>.<pid>.<random>` beside folder (same file system: its files move in by renaming),
    after removing those of writers that were killed (their process gone)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    for leftover in folder.parent.glob(f".{folder.name}.*.*"):
        pid = leftover.name.split(".")[2]
        if leftover.is_dir() and pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)
    return Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.{os.getpid()}."))


def _install(tmp: Path, target: Path, write: Callable[[Path], None], mode: int) -> Path:
    """write(tmp), give it the permissions a new file or folder gets, and move it to target (a folder target is first
    moved aside: a rename cannot replace a folder that has content); on any error target stays as it was."""
    old = tmp.with_name(tmp.name + ".old")
    try:
        write(tmp)
        os.chmod(tmp, mode & ~_umask())
        if tmp.is_dir() and target.exists():
            target.rename(old)
        try:
            os.replace(tmp, target)
        except OSError:
            if old.exists():
                old.rename(target)
            raise
    finally:
        for leftover in (tmp, old):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            elif leftover.exists():
                leftover.unlink()
    return target


def replace_folders(folders: Mapping[Path, Callable[[Path], None] | None], failure: str, remedy: str, before: Callable[[], None]) -> None:
    """Replace several folders together, all or none: each by a new folder that write(tmp) fills (None: it is removed).
    Every folder is first checked to be replaceable (`_blocker`), then the new ones are written beside the old, on their
    own file system (so that they move in by renaming, wherever write copies from), then `before()` is called and the
    folders are swapped; a swap that fails puts back those made before it. An error stops with one line,
    `<failure>: <the path and what is wrong>; <remedy>`, and leaves every folder as it was and nothing temporary behind."""
    folders = {Path(target): write for target, write in folders.items()}
    for target in folders:
        if (blocked := _blocker(target)) is not None:
            raise BookError(f"{failure}: {blocked}; {remedy}")
    created = sorted({p for target in folders for p in target.parents if not p.exists()}, key=lambda p: len(p.parts), reverse=True)
    fresh: dict[Path, Path] = {}  # target -> its new folder, beside it
    aside: dict[Path, Path] = {}  # target -> an empty folder beside it that the old one replaces
    done = False
    try:
        for target, write in folders.items():
            if write is not None:
                fresh[target] = temporary_folder_beside(target)
                write(fresh[target])
                os.chmod(fresh[target], 0o777 & ~_umask())
            if target.exists():
                aside[target] = temporary_folder_beside(target)
        before()
        _swap(list(folders), fresh, aside)
        done = True
    except OSError as err:
        where = err.filename if err.filename is not None else "a folder"
        raise BookError(f"{failure}: {where}: {err.strerror or err}; {remedy}") from None
    finally:
        for tmp in fresh.values():
            shutil.rmtree(tmp, ignore_errors=True)
        for tmp in aside.values():  # after a swap: the old folders; after a failed one, empty unless putting one back failed
            if done or not tmp.exists() or not any(tmp.iterdir()):
                shutil.rmtree(tmp, ignore_errors=True)
        for folder in created if not done else ():
            with suppress(OSError):
                folder.rmdir()


def _swap(targets: list[Path], fresh: dict[Path, Path], aside: dict[Path, Path]) -> None:
    """Move each target onto its empty folder aside (if it exists) and its new folder in (if it has one); on an error,
    put back what was moved, then raise it."""
    moved = []
    try:
        for target in targets:
            if target in aside:
                os.replace(target, aside[target])  # a folder may replace an empty one
            moved.append(target)
            if target in fresh:
                os.rename(fresh[target], target)
    except OSError:
        for target in reversed(moved):
            if target in fresh and not fresh[target].exists():
                os.rename(target, fresh[target])
            if target in aside:
                os.replace(aside[target], target)
        raise


def _blocker(folder: Path) -> str | None:
    """What keeps folder from being replaced, in words that start with the path, or None: the folder it is in (or the
    nearest one that exists) must take new entries, every folder in it must let its entries go, and every file in it
    must be writable (not on a read-only mount, not read-only or immutable)."""
    parent = next(p for p in folder.parents if p.exists())
    if not os.access(parent, os.W_OK | os.X_OK):
        return _unwritable(parent)
    for root, _, files in os.walk(folder):  # nothing when folder does not exist
        if not os.access(root, os.W_OK | os.X_OK):
            return _unwritable(Path(root))
        for name in files:
            if not os.access(Path(root, name), os.W_OK):
                return _unwritable(Path(root, name))
    return None


def _unwritable(path: Path) -> str:
    return f"{path} is on a read-only file system" if os.statvfs(path).f_flag & os.ST_RDONLY else f"{path} is not writable"


MANIFEST = ".manifest.sha256"  # in a model folder: SHA-256, size and path of every file, written with the folder


def write_manifest(folder: Path) -> Path:
    """Record every file of a folder (its SHA-256, size and relative path) in the folder's manifest."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    lines = "".join(f"{sha256(p)}  {p.stat().st_size}  {p.relative_to(folder).as_posix()}\n" for p in files)
    return write_atomic(folder / MANIFEST, lambda p: p.write_text(lines, encoding="utf-8"))


WEIGHTS = (".safetensors", ".bin")  # a model folder's manifest lists at least one file with such a name


def _manifest_entries(folder: Path, remedy: str) -> list[tuple[str, int, str]]:
    """The manifest's (SHA-256, size, relative path) lines; one line naming the first line that is not of that form."""
    try:
        lines = (folder / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        raise BookError(f"{folder} has no readable manifest ({MANIFEST}), so its files cannot be checked; {remedy}") from None
    entries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("  ", 2)
        if len(parts) != 3 or len(parts[0]) != 64 or not all(c in "0123456789abcdef" for c in parts[0]) or not parts[1].isdigit() or not parts[2]:
            raise BookError(f"line {number} of {folder / MANIFEST} is not '<sha256>  <size>  <path>' (it reads {line[:60]!r}); {remedy}")
        entries.append((parts[0], int(parts[1]), parts[2]))
    return entries


def verify_manifest(folder: Path, remedy: str) -> None:
    """Check a model folder against its manifest: it lists every file there (and a weights file), and each file has the
    listed size and checksum; a missing, unlisted, truncated or changed file, or a manifest that is not one, stops with
    one line that names it and says what to do (remedy)."""
    folder = Path(folder)
    state = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file())
    if _verified.get(str(folder)) == state:  # checked already in this process and untouched since
        return
    entries = _manifest_entries(folder, remedy)
    listed = {name for _, _, name in entries}
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST}
    unlisted = sorted(present - listed)
    if unlisted:
        raise BookError(f"{folder / unlisted[0]} is not in the folder's manifest ({MANIFEST} lists {len(listed)} file(s)), so it cannot be checked; {remedy}")
    if not any(name.endswith(WEIGHTS) for name in listed):
        raise BookError(f"{folder / MANIFEST} lists no weights file ({' or '.join(WEIGHTS)}), so the model cannot be checked; {remedy}")
    for _, size, name in entries:
        path = folder / name
        if not path.is_file() or path.stat().st_size != size:
            raise BookError(f"{path} is {'missing' if not path.is_file() else 'truncated or resized'} (the manifest lists {size:,} bytes); {remedy}")
    for digest, _, name in entries:
        if sha256(folder / name) != digest:
            raise BookError(f"{folder / name} differs from the file the manifest records (SHA-256 {digest[:12]}…); {remedy}")
    _verified[str(folder)] = state


_verified: dict[str, tuple] = {}


def sha256(path: Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def write_bytes_if_changed(path: Path, data: bytes) -> None:
    """Write bytes unless the file already holds them."""
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, lambda p: p.write_bytes(data))


def write_if_changed(path: Path, text: str) -> None:
    """Write text unless the file already holds it (an unchanged file keeps its time, so Sphinx skips it)."""
    write_bytes_if_changed(path, text.encode("utf-8"))
