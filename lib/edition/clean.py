"""`make clean`: delete every edition (`_build/`, or $BOOK_BUILD_DIR), never under a build that is writing one.

    python -m lib.edition.clean

Each edition's lock is taken first (a build or page build that holds one stops the clean with one line naming it), then
the whole folder is renamed aside in one step and deleted: a build started meanwhile gets a fresh folder of its own.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import BookError, cli
from ..settings import build_dir
from .folders import lock_holder


def clean(root: Path | None = None) -> bool:
    """Delete the build folder and what earlier cleans left half-deleted; False when there was nothing to delete."""
    root = root or build_dir()
    for leftover in root.parent.glob(f"{root.name}.deleting-*"):  # a clean that was killed half-way
        shutil.rmtree(leftover, ignore_errors=True)
    if not root.exists():
        return False
    held: list[FileLock] = []
    doomed = root.with_name(f"{root.name}.deleting-{os.getpid()}")
    try:
        for lock_file in sorted(root.glob("*/.lock")):
            lock = FileLock(lock_file, timeout=0)
            try:
                lock.acquire()
            except Timeout:
                raise BookError(
                    f"the {lock_file.parent.name} edition is being written by {lock_holder(lock_file.parent)}; nothing was deleted: wait for it to "
                    "finish (or stop it), then run `make clean` again"
                ) from None
            held.append(lock)
        root.rename(doomed)
    finally:
        for lock in held:
            lock.release()
    shutil.rmtree(doomed)
    return True


@cli
def main() -> None:
    root = build_dir()
    print(f"deleted {root} (every edition; results/ and models/ stay)" if clean(root) else f"nothing to delete: {root} does not exist")


if __name__ == "__main__":
    main()
