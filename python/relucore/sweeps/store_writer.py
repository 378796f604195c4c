"""The thread that commits a store's batches in the background, so that a sweep's next batches
compute while the last ones are encoded and inserted (``sqlite3`` releases the GIL while SQLite
works).

Batches are handed over through a bounded queue (a full queue makes the sweep wait: memory
stays bounded by :data:`DEPTH` + 1 batches) and committed in the order they were handed over. The
first failure stops the writer: it commits nothing more (later batches are dropped, to be
recomputed by a resume) and the error is raised in the sweep's thread, once, by the next
:meth:`Writer.submit`, :meth:`Writer.flush` or :meth:`Writer.stop`.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional

__all__ = ["Writer", "DEPTH"]

#: Batches waiting in the queue, at most (one more may be in its commit).
DEPTH = 4
#: Seconds the idle writer sleeps before it looks at the queue again. A KeyboardInterrupt that
#: lands inside ``queue.Queue.put`` in the sweep's thread (between the wake-up of a waiting
#: ``Condition`` and the bookkeeping after it) can leave the queue's condition variable with a stale
#: waiter, so that the next wake-up is lost; waiting with a timeout makes such a loss cost at most
#: this long instead of hanging ``stop`` forever.
POLL = 0.05
_STOP = object()


class Writer:
    """Calls ``commit(batch)`` on a background thread for every batch handed to :meth:`submit`."""

    def __init__(self, commit: Callable[[Any], None], name: str = "relucore-store-writer"):
        self._commit = commit
        self._queue: queue.Queue = queue.Queue(maxsize=DEPTH)
        self._error: Optional[BaseException] = None
        self._reported = False
        # A daemon: a second Ctrl-C while the sweep waits for it must still end the process.
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                batch = self._queue.get(timeout=POLL)
            except queue.Empty:
                continue
            try:
                if batch is _STOP:
                    return
                if self._error is None:
                    self._commit(batch)
            except BaseException as exc:  # raised in the sweep's thread instead
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None and not self._reported:
            self._reported = True
            raise self._error

    @property
    def alive(self) -> bool:
        """Whether the thread still runs (False once :meth:`stop` has returned)."""
        return self._thread.is_alive()

    def submit(self, batch: Any) -> None:
        """Hands ``batch`` over (waits while :data:`DEPTH` batches are queued); raises the
        error of an earlier batch instead, if one failed."""
        self._raise()
        if self._error is not None:
            raise RuntimeError("the store's writer failed earlier; the store takes no more batches")
        self._queue.put(batch)

    def flush(self) -> None:
        """Returns when every batch handed over is committed; raises the writer's error if not."""
        self._queue.join()
        self._raise()

    def stop(self) -> None:
        """Commits what is pending, ends the thread and raises the writer's error if it was
        not raised yet. Interrupted (Ctrl-C) while it waits, the thread goes on committing what
        is pending (or dies with the process: those batches are then recomputed by a resume)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise()
