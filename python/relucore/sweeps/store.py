"""Append-only checkpoint file of a sweep.

Format (UTF-8 text, one JSON document per line):

- line 1, the header: ``{"format": "relucore-sweep", "version": 1,
  "fingerprint": <sha256 of the arguments>, "arguments": {"seed", "measure",
  "relucore", "configs": [every configuration the file has rows of]}}``;
  created atomically (temporary file, fsync, rename, fsync of the directory),
  and rewritten the same way when a sweep adds configurations.
- every further line, one finished batch: ``{"sha": <sha256 of rows>,
  "rows": [...]}`` (``config_index`` numbering the header's ``configs``),
  appended with a single write, flushed and fsync'ed before the sweep moves on.

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

from relucore.sweeps.config import canonical_json

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
    if exc.errno is not None:
        return OSError(exc.errno, exc.strerror or str(exc), path)
    named = OSError(f"could not write {path!r}: {exc}")
    named.filename, named.strerror = path, str(exc)
    return named


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


def _write_header_and(path: str, header: bytes, records: bytes) -> None:
    """Writes (or replaces) a checkpoint atomically: ``header`` then ``records``."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(header)
            f.write(records)

    write_atomically(path, write)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Checkpoint:
    """Opens (creating or resuming) the checkpoint of a sweep.

    A row depends only on its configuration, its trial index and ``identity``, so a checkpoint
    serves any sweep with the same ``identity``: rows of configurations or trials the sweep
    does not ask for are skipped (and kept in the file), configurations the file has not seen
    are added to its header. Rows in the file number configurations by the header's list,
    which only grows; rows handed to ``on_rows`` or to :meth:`append` by the sweep's list.

    Parameters
    ----------
    path : str or os.PathLike
    identity : dict
        Everything besides configuration and trial that determines a row (seed, measure,
        relucore version); a file with other values raises :class:`CheckpointError`.
    configs : list of dict
        The sweep's normalised configurations.
    trials : int
        Trials per configuration.
    on_rows : callable, optional
        Called with the rows of every saved batch found when resuming.
    """

    def __init__(self, path, identity: Dict[str, Any], configs: List[Dict[str, Any]], trials: int, on_rows=None):
        self.path = os.fspath(path)
        self.identity = dict(identity)
        self.configs = list(configs)
        self.trials = trials
        self.n_rows = 0
        self._on_rows = on_rows
        self._to_file = list(range(len(configs)))  # sweep's config index -> file's
        if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
            self._load()
        else:
            _write_header_and(self.path, self._header(self.configs), b"")

    def _header(self, file_configs: List[Dict[str, Any]]) -> bytes:
        arguments = dict(self.identity, configs=file_configs)
        fingerprint = hashlib.sha256(canonical_json(arguments).encode()).hexdigest()
        header = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint, "arguments": arguments}
        return (json.dumps(header, sort_keys=True) + "\n").encode("utf-8")

    def _check_header(self, line: bytes) -> List[Dict[str, Any]]:
        """The header's configurations, after checking the file belongs to this sweep."""
        try:
            header = json.loads(line)
        except ValueError as exc:
            raise CheckpointError(
                f"{self.path!r} is not a relucore sweep checkpoint (unreadable header: {exc})"
            ) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CheckpointError(f"{self.path!r} is not a relucore sweep checkpoint")
        if header.get("version") != VERSION:
            raise CheckpointError(f"checkpoint {self.path!r} has version {header.get('version')}, expected {VERSION}")
        stored = header.get("arguments")
        if not isinstance(stored, dict) or not isinstance(stored.get("configs"), list):
            raise CheckpointError(f"checkpoint {self.path!r} has a damaged header (no configurations)")
        differ = [k for k in self.identity if stored.get(k) != self.identity[k]]
        if differ:
            what = "; ".join(
                f"{k}: {_short(stored.get(k))} in the file, {_short(self.identity[k])} now" for k in differ
            )
            raise CheckpointError(
                f"checkpoint {self.path!r} was written by a sweep with different arguments ({what}); "
                f"resume with the same {' and '.join(differ)}, or use another checkpoint path"
            )
        return stored["configs"]

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        # A file ending in "\n" splits into [..., b""]; anything after the last
        # newline is an unfinished (torn) record.
        complete, tail = lines[:-1], lines[-1]
        if not complete:
            raise CheckpointError(f"checkpoint {self.path!r} has no complete header line")
        file_configs = self._check_header(complete[0])
        known = {canonical_json(c): i for i, c in enumerate(file_configs)}
        added = [c for c in self.configs if canonical_json(c) not in known]
        for c in added:
            known[canonical_json(c)] = len(file_configs)
            file_configs.append(c)
        self._to_file = [known[canonical_json(c)] for c in self.configs]
        from_file = {fi: ci for ci, fi in enumerate(self._to_file)}
        good_end = len(complete[0]) + 1
        records = complete[1:]
        for i, line in enumerate(records):
            rows = self._parse(line)
            if rows is None:
                if i == len(records) - 1 and not tail:
                    break  # a torn last record that happened to end in a newline
                raise CheckpointError(f"checkpoint {self.path!r}: record {i + 1} is damaged")
            rows = [
                dict(r, config_index=from_file[r["config_index"]])
                for r in rows
                if r["config_index"] in from_file and r["trial"] < self.trials
            ]
            self.n_rows += len(rows)
            if self._on_rows is not None and rows:
                self._on_rows(rows)
            good_end += len(line) + 1
        if added:  # the header names every configuration the file has rows of
            _write_header_and(self.path, self._header(file_configs), data[len(complete[0]) + 1 : good_end])
        elif good_end != len(data):
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
        if self._to_file != list(range(len(self._to_file))):
            rows = [dict(r, config_index=self._to_file[r["config_index"]]) for r in rows]
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
