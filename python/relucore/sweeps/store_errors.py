"""SQLite's errors as relucore reports them (an ``OSError`` naming the store, or
:class:`~relucore.CheckpointError` for a damaged one), and running a step again while SQLite
reports the database busy."""

from __future__ import annotations

import errno
import sqlite3
import time
from typing import Any, Callable, Optional

from relucore.sweeps.files import CheckpointError

__all__ = ["BUSY_TIMEOUT", "RETRY_PAUSE", "is_busy", "retry_busy", "sqlite_error"]

#: Seconds a writer waits for another writer's transaction before giving up.
BUSY_TIMEOUT = 600.0
#: First and longest pause (s) before a write transaction that SQLite refused at once is tried again.
#: SQLite's busy handler (``timeout=BUSY_TIMEOUT``) covers the ordinary wait for another writer, but
#: some conflicts are reported at once, without it: a connection that must upgrade a lock it holds
#: while another connection waits (deadlock avoidance), or the WAL being reset or recovered by a
#: writer that is closing. The whole transaction is then rolled back and run again.
RETRY_PAUSE = (0.001, 0.05)


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (``SQLITE_BUSY`` / ``SQLITE_LOCKED``)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
    if name:
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    return "locked" in str(exc) or "busy" in str(exc)


def retry_busy(step: Callable[[], Any], timeout: Optional[float] = None):
    """``step()``, run again after a pause while it fails with :func:`is_busy` (for up to
    ``timeout`` seconds in all, :data:`BUSY_TIMEOUT` by default); ``step`` must leave no
    transaction open when it raises."""
    timeout = BUSY_TIMEOUT if timeout is None else timeout
    deadline = None
    pause = RETRY_PAUSE[0]
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            now = time.monotonic()
            deadline = now + timeout if deadline is None else deadline
            if not is_busy(exc) or now >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, RETRY_PAUSE[1])


def sqlite_error(exc: sqlite3.Error, path: str) -> Exception:
    """A ``sqlite3`` error as relucore reports it: :class:`~relucore.CheckpointError` for a damaged
    database, else an ``OSError`` (errno ENOSPC, EACCES, EBUSY or EIO) naming ``path``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return CheckpointError(
            f"store {path!r} is damaged (SQLite: {text}); committed rows may be recovered with the sqlite3 "
            f"shell's .recover, or start a new store"
        )
    if name.startswith("SQLITE_FULL"):
        code, what = errno.ENOSPC, "No space left on device"
    elif name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        code, what = errno.EACCES, "cannot write here"
    elif is_busy(exc):
        code, what = errno.EBUSY, f"locked by another writer for over {BUSY_TIMEOUT:.0f} s"
    else:
        code, what = errno.EIO, "input/output error"
    return OSError(code, f"{what} (SQLite: {text})", path)
