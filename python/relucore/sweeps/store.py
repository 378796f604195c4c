"""Append-only checkpoint file of a sweep.

Format (UTF-8 text, one JSON document per line):

- line 1, the header: ``{"format": "relucore-sweep", "version": 1,
  "fingerprint": <sha256 of the sweep's arguments>, "arguments": {...}}``;
  created atomically (temporary file, fsync, rename, fsync of the directory).
- every further line, one finished batch: ``{"sha": <sha256 of rows>,
  "rows": [...]}``, appended with a single write, flushed and fsync'ed
  before the sweep moves on.

A process killed mid-write leaves at most a torn last line (no newline,
invalid JSON or a checksum mismatch); the reader drops it and the writer
truncates it away before appending. Damage anywhere else is an error.
Floats are written with ``repr`` so that they read back bit for bit.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any, Callable, Dict, List, Optional

__all__ = ["Checkpoint", "CheckpointError", "write_atomically"]

FORMAT = "relucore-sweep"
VERSION = 1


class CheckpointError(ValueError):
    """The checkpoint file is damaged or belongs to a different sweep."""


def _rows_sha(rows_json: str) -> str:
    return hashlib.sha256(rows_json.encode()).hexdigest()


def _fsync_dir(path: str) -> None:
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


def _named(exc: OSError, path: str) -> OSError:
    """``exc`` naming ``path`` (``os.write`` and ``fsync`` errors name no file), same errno and class."""
    if exc.errno is None:
        return OSError(f"could not write {path!r}: {exc}")
    return OSError(exc.errno, exc.strerror or str(exc), path)


@contextlib.contextmanager
def _undo_on_failure(path: str, undo: Callable[[], None]):
    """On any exception calls ``undo`` (its own errors ignored); an ``OSError`` is raised
    again naming ``path``."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            undo()
        if isinstance(exc, OSError):
            raise _named(exc, path) from exc
        raise


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Writes ``path`` whole or not at all: ``write(tmp)`` fills a temporary file next to it,
    which is fsync'ed and renamed over ``path``. On any failure the temporary file is removed;
    an ``OSError`` is raised again naming ``path``."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with _undo_on_failure(path, lambda: os.remove(tmp)):
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    _fsync_dir(path)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


class Checkpoint:
    """Opens (creating or resuming) a checkpoint for a sweep with ``fingerprint``.

    Parameters
    ----------
    path : str or os.PathLike
    fingerprint : str
        Hash of everything that determines the rows.
    arguments : dict
        Human-readable description stored in the header.
    on_rows : callable, optional
        Called with the rows of every saved batch found when resuming.
    """

    def __init__(self, path, fingerprint: str, arguments: Dict[str, Any], on_rows=None):
        self.path = os.fspath(path)
        self.fingerprint = fingerprint
        self.n_rows = 0
        self._on_rows = on_rows
        if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
            self._load()
        else:
            self._create(arguments)

    def _create(self, arguments: Dict[str, Any]) -> None:
        header = {"format": FORMAT, "version": VERSION, "fingerprint": self.fingerprint, "arguments": arguments}

        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps(header, sort_keys=True) + "\n")

        write_atomically(self.path, write)

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        # A file ending in "\n" splits into [..., b""]; anything after the last
        # newline is an unfinished (torn) record.
        complete, tail = lines[:-1], lines[-1]
        if not complete:
            raise CheckpointError(f"checkpoint {self.path!r} has no complete header line")
        try:
            header = json.loads(complete[0])
        except ValueError as exc:
            raise CheckpointError(f"{self.path!r} is not a relucore sweep checkpoint (unreadable header: {exc})") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CheckpointError(f"{self.path!r} is not a relucore sweep checkpoint")
        if header.get("version") != VERSION:
            raise CheckpointError(f"checkpoint {self.path!r} has version {header.get('version')}, expected {VERSION}")
        if header.get("fingerprint") != self.fingerprint:
            raise CheckpointError(
                f"checkpoint {self.path!r} was written by a sweep with different arguments "
                f"(stored: {json.dumps(header.get('arguments'), sort_keys=True)[:2000]}); "
                "use the same grid, trials, seed and measure, or another checkpoint path"
            )
        good_end = len(complete[0]) + 1
        records = complete[1:]
        for i, line in enumerate(records):
            rows = self._parse(line)
            if rows is None:
                if i == len(records) - 1 and not tail:
                    break  # a torn last record that happened to end in a newline
                raise CheckpointError(f"checkpoint {self.path!r}: record {i + 1} is damaged")
            self.n_rows += len(rows)
            if self._on_rows is not None:
                self._on_rows(rows)
            good_end += len(line) + 1
        if good_end != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
                f.flush()
                os.fsync(f.fileno())

    @staticmethod
    def _parse(line: bytes) -> Optional[List[Dict[str, Any]]]:
        try:
            rec = json.loads(line)
            rows_json = json.dumps(rec["rows"], sort_keys=True)
        except (ValueError, KeyError, TypeError):
            return None
        if rec.get("sha") != _rows_sha(rows_json):
            return None
        return rec["rows"]

    def append(self, rows: List[Dict[str, Any]]) -> None:
        """Durably appends one batch of rows (one line, flush + fsync)."""
        rows_json = json.dumps(rows, sort_keys=True)
        line = json.dumps({"sha": _rows_sha(rows_json), "rows": rows}, sort_keys=True) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise _named(exc, self.path) from exc
        try:
            size = os.fstat(fd).st_size
            with _undo_on_failure(self.path, lambda: os.ftruncate(fd, size)):  # no torn record left
                _write_all(fd, line.encode("utf-8"))
                os.fsync(fd)
        finally:
            os.close(fd)
        self.n_rows += len(rows)
