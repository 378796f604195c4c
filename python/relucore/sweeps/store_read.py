"""Reading a sweep store while or after a sweep runs: the table, its status, old checkpoints.

- :func:`read_table`: every saved row as the table :func:`relucore.sweep` returns (column-wise,
  read-only: works while writers run, and in a read-only folder);
- :func:`status`: rows and errors per configuration, the recent rate and an ETA;
- :func:`import_checkpoint`: copies the rows of an old JSON-lines checkpoint into a store.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from relucore._core import Status
from relucore.sweeps.columns import RENAMED_COLUMNS
from relucore.sweeps.config import DEFAULTS, stored_config
from relucore.sweeps.legacy import LEGACY_SWEEP_FORMAT, read_checkpoint
from relucore.sweeps.store import Store, connect_readonly, load_columns, quick_check, read_meta, sqlite_error
from relucore.sweeps.table import Results

__all__ = ["read_table", "status", "StoreStatus", "import_checkpoint"]

#: Window over which ``status`` measures the rate (seconds of the most recent batches).
RATE_WINDOW = 60.0
#: A writer on another host counts as stopped when it has been silent this many times its usual
#: interval between batches (and at least ``RATE_WINDOW``); on this host its process is checked.
STALE_INTERVALS = 10.0


def _process_gone(writer: str) -> Optional[bool]:
    """True or False for a writer ``host:pid`` of this host; None when that cannot be told here."""
    host, _, pid = writer.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)  # signal 0: asks whether the process exists, sends nothing
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by someone else
        return False
    return False


@contextlib.contextmanager
def _reading(path):
    import sqlite3

    path = os.fspath(path)
    conn = connect_readonly(path)
    try:
        # One read transaction: every SELECT of the reader sees the same snapshot, so rows a
        # writer commits between two queries (the trial count, then the rows) are not half seen.
        conn.execute("BEGIN")
        yield path, conn
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    finally:
        conn.close()


def _configs(conn) -> List[Dict[str, Any]]:
    return [
        dict(id=i, config=json.loads(text), trials=t)
        for i, text, t in conn.execute("SELECT id, json, trials FROM configs ORDER BY id")
    ]


def read_table(path, *, check: bool = True):
    """Every saved row of the store at ``path`` as a sweep table (``config_index`` numbering
    the store's configurations in the order they were first added), read column-wise.

    Parameters
    ----------
    path : str or os.PathLike
    check : bool
        Run SQLite's ``quick_check`` first (a damaged store raises :class:`~relucore.CheckpointError`).
    """
    with _reading(path) as (path, conn):
        if check:
            quick_check(conn, path)
        meta = read_meta(conn, path)
        configs = _configs(conn)
        extras = dict(conn.execute("SELECT name, bools FROM extras").fetchall())
        top = conn.execute("SELECT max(trial) FROM trials").fetchone()[0]
        results = Results(len(configs), 0 if top is None else top + 1)
        index = {c["id"]: ci for ci, c in enumerate(configs)}
        for cols in load_columns(conn, index, None, extras):
            results.add_columns(cols)
        return results.table([c["config"] for c in configs], int(meta["seed"]))


@dataclass
class StoreStatus:
    """What :func:`status` found; ``str()`` gives the report ``relucore sweep status`` prints."""

    path: str
    meta: Dict[str, Any]
    rows: List[Dict[str, Any]]  #: per configuration: id, config, trials asked, done, errors
    rate: Optional[float]  #: trials per second over the last ``RATE_WINDOW`` s of writes
    last_write: Optional[float]  #: Unix time of the last committed batch
    writers: int  #: distinct writers of the batches in that window
    last_writers: List[str] = field(default_factory=list)  #: ``host:pid`` of the writers in that window
    interval: Optional[float] = None  #: median seconds between the window's batches

    @property
    def stopped(self) -> bool:
        """Whether the writers of the most recent batches have stopped while trials remain:
        their processes are gone (this host), or they have been silent for ``STALE_INTERVALS``
        times their usual interval (other hosts)."""
        if self.last_write is None or self.remaining == 0 or not self.last_writers:
            return False
        gone = [_process_gone(w) for w in self.last_writers]
        if all(g is True for g in gone):
            return True
        if any(g is False for g in gone):
            return False
        silent = time.time() - self.last_write
        return silent > max(RATE_WINDOW, STALE_INTERVALS * (self.interval or 0.0))

    @property
    def done(self) -> int:
        return sum(r["done"] for r in self.rows)

    @property
    def remaining(self) -> int:
        return sum(max(r["trials"] - r["done"], 0) for r in self.rows)

    @property
    def eta(self) -> Optional[float]:
        """Seconds left at the recent rate (None when nothing was written recently, or the
        writers have :attr:`stopped`)."""
        if self.remaining == 0:
            return 0.0
        return None if not self.rate or self.stopped else self.remaining / self.rate

    def __str__(self) -> str:
        m = self.meta
        lines = [
            f"store {self.path}: sweep format {m.get('sweep_format')}, generator {m.get('generator') or 'unrecorded'}, "
            f"seed {m.get('seed')}, "
            f"measure {m.get('measure') or 'none'}, created by relucore {m.get('relucore')}",
            f"{'id':>4} {'done':>9} {'asked':>9} {'errors':>7}  configuration (keys not at their defaults)",
        ]
        for r in self.rows:
            keys = {k: v for k, v in stored_config(r["config"]).items() if DEFAULTS.get(k) != v and k not in ("m",)}
            cfg = json.dumps(keys, separators=(",", ":"))
            lines.append(f"{r['id']:>4} {r['done']:>9} {r['trials']:>9} {r['errors']:>7}  {cfg}")
        total = sum(r["trials"] for r in self.rows)
        errors = sum(r["errors"] for r in self.rows)
        lines.append(f"total: {self.done} of {total} trials saved, {errors} errors, {self.remaining} to run")
        lines.append(self._rate_line())
        return "\n".join(lines)

    def _rate_line(self) -> str:
        if self.last_write is None:
            return "no batch committed yet"
        ago = max(time.time() - self.last_write, 0.0)
        if self.stopped:
            return (
                f"last batch committed {ago:.0f} s ago by {', '.join(self.last_writers)}, which stopped "
                f"with {self.remaining} trials to run: no ETA; run the same sweep again to resume"
            )
        if self.rate is None:
            return f"last batch committed {ago:.0f} s ago; no rate (one batch in the window)"
        eta = self.eta
        left = "done" if eta == 0 else ("ETA unknown" if eta is None else f"ETA {_duration(eta)}")
        return (
            f"{self.rate:,.0f} trials/s over the last {RATE_WINDOW:.0f} s of writes ({self.writers} writer(s)); "
            f"last batch {ago:.0f} s ago; {left}"
        )


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def status(path) -> StoreStatus:
    """Rows saved and errors per configuration, the rate of the most recent writes and an ETA.

    Reads the store read-only (safe while sweeps write to it). The rate counts the rows
    committed in the ``RATE_WINDOW`` seconds before the last batch; the ETA divides the
    trials not yet saved (configurations' most recent ``trials``) by it.
    """
    with _reading(path) as (path, conn):
        meta = read_meta(conn, path)
        counts = {
            cid: (done, errors)
            for cid, done, errors in conn.execute(
                "SELECT config, count(*), sum(status = ?) FROM trials GROUP BY config", (Status.error.name,)
            )
        }
        rows = []
        for c in _configs(conn):
            done, errors = counts.get(c["id"], (0, 0))
            rows.append(dict(c, done=done, errors=errors or 0))
        last = conn.execute("SELECT max(at) FROM batches").fetchone()[0]
        rate, writers, names, interval = None, 0, [], None
        if last is not None:
            ats = [
                a for (a,) in conn.execute("SELECT at FROM batches WHERE at >= ? ORDER BY at", (last - RATE_WINDOW,))
            ]
            names = sorted(
                w or "unknown"
                for (w,) in conn.execute("SELECT DISTINCT writer FROM batches WHERE at >= ?", (last - RATE_WINDOW,))
            )
            gaps = sorted(b - a for a, b in zip(ats, ats[1:]))
            interval = gaps[len(gaps) // 2] if gaps else None
            n, first, writers, batches = conn.execute(
                "SELECT sum(rows), min(at), count(DISTINCT writer), count(*) FROM batches WHERE at >= ?",
                (last - RATE_WINDOW,),
            ).fetchone()
            if batches > 1 and last > first:
                # rows of the first batch in the window were computed before it starts
                first_rows = conn.execute("SELECT rows FROM batches WHERE at = ?", (first,)).fetchone()[0]
                rate = (n - first_rows) / (last - first)
        return StoreStatus(path, meta, rows, rate, last, writers, names, interval)


def _renamed_columns(row: Dict[str, Any]) -> Dict[str, Any]:
    """An old checkpoint's row with its renamed columns (``RENAMED_COLUMNS``) under their new names."""
    return {RENAMED_COLUMNS.get(k, k): v for k, v in row.items()}


def import_checkpoint(old, new) -> Dict[str, int]:
    """Copies the rows of the JSON-lines checkpoint ``old`` into the store ``new`` (created, or
    an existing store of the same sweep). Returns counts: ``rows`` read, ``inserted``,
    ``torn_bytes`` (an unfinished last record, left out). The store gets the old file's
    ``seed`` and ``measure`` and sweep format 1, so a sweep of this relucore resumes from it
    only while :data:`relucore.sweeps.config.SWEEP_FORMAT` is 1.
    """
    old, new = os.fspath(old), os.fspath(new)
    ckpt = read_checkpoint(old)
    args = ckpt.arguments
    identity = {
        "seed": args.get("seed"),
        "measure": args.get("measure"),
        "sweep_format": LEGACY_SWEEP_FORMAT,
        "generator": None,  # numpy's streams, before the generator version was recorded
    }
    configs = args["configs"]
    trials = 1 + max((r["trial"] for r in ckpt.rows), default=0)
    store = Store(new, identity, configs, trials, relucore_version=str(args.get("relucore", "")))
    try:
        before = store.conn.execute("SELECT count(*) FROM trials").fetchone()[0]
        batch = 4096
        for i in range(0, len(ckpt.rows), batch):
            store.append_rows([_renamed_columns(r) for r in ckpt.rows[i : i + batch]])
        after = store.conn.execute("SELECT count(*) FROM trials").fetchone()[0]
    finally:
        store.close()
    return {"rows": len(ckpt.rows), "inserted": after - before, "torn_bytes": ckpt.torn_bytes}
