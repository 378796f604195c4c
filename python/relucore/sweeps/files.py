"""Files written whole or not at all, and OS errors that name the file they concern."""

from __future__ import annotations

import contextlib
import os
from typing import Callable

__all__ = ["CheckpointError", "write_atomically", "named_error", "undo_on_failure", "fsync_dir"]


class CheckpointError(ValueError):
    """A sweep's store (or old checkpoint) is damaged or belongs to a different sweep."""


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def named_error(exc: OSError, path: str) -> OSError:
    """``exc`` naming ``path`` (``os.write`` and ``fsync`` errors name no file), same errno and class."""
    if exc.errno is not None:
        return OSError(exc.errno, exc.strerror or str(exc), path)
    named = OSError(f"could not write {path!r}: {exc}")
    named.filename, named.strerror = path, str(exc)
    return named


@contextlib.contextmanager
def undo_on_failure(path: str, undo: Callable[[], None]):
    """On any exception calls ``undo`` (its own errors ignored); an ``OSError`` is raised
    again naming ``path``."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            undo()
        if isinstance(exc, OSError):
            raise named_error(exc, path) from exc
        raise


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Writes ``path`` whole or not at all: ``write(tmp)`` fills a temporary file next to it,
    which is fsync'ed and renamed over ``path``. On any failure the temporary file is removed;
    an ``OSError`` is raised again naming ``path``."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with undo_on_failure(path, lambda: os.remove(tmp)):
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    fsync_dir(path)
