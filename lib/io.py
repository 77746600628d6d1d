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
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; a built book's images must be readable by a web server
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_folder_atomic(folder: Path, write: Callable[[Path], None]) -> Path:
    """Call write(tmp) on an empty temporary folder beside folder, then swap it in for folder.
    An error leaves folder as it was and no temporary folder behind."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    os.chmod(staging, 0o777 & ~_umask())
    old = staging.with_name(staging.name + ".old")
    try:
        write(staging)
        if folder.exists():
            folder.rename(old)
        try:
            staging.rename(folder)
        except OSError:
            if old.exists():
                old.rename(folder)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return folder


def sha256(path: Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()
