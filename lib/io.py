"""Files written whole or not at all, and their checksums: the only copies of these helpers in the book."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


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
    An error leaves folder as it was and no temporary folder behind."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    return _install(Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.")), folder, write, 0o777)


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


def sha256(path: Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()
