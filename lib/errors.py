"""The one exception type the book raises for bad input, with a message that says what to do."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


class BookError(Exception):
    """Bad input or a missing resource. The message is one line: what is wrong and what to do."""


def require(condition: bool, message: str) -> None:
    """Raise BookError(message) unless condition holds."""
    if not condition:
        raise BookError(message)


def cli(func: F) -> F:
    """Run a command-line entry point: a BookError becomes one line on stderr and exit status 2; Ctrl-C one line and
    status 130; a full disk one line and status 2; a closed pipe (`| head`) no traceback, status 141."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except BookError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)
        except BrokenPipeError:  # the reader went away (`… --plan | head`): stop quietly, as a shell tool does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(141)
        except KeyboardInterrupt:
            print("error: interrupted; nothing half-written was kept: run the same command again to resume", file=sys.stderr)
            sys.exit(130)
        except OSError as err:
            if err.errno not in (errno.ENOSPC, errno.EROFS, errno.EACCES):
                raise
            print(f"error: {err.strerror} while writing {err.filename or 'a file'}; free space or fix permissions, then run again", file=sys.stderr)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]
