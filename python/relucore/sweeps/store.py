"""The store of a sweep: a SQLite database (Python's standard ``sqlite3``) holding its rows.

Schema (``meta.schema`` = 1):

- ``meta(key, value)``: ``format`` (``relucore-sweep-store``), ``schema``, ``sweep_format``
  (:data:`relucore.sweeps.config.SWEEP_FORMAT` of the rows), ``generator``
  (:data:`relucore.sweeps.config.GENERATOR_VERSION` of the rows' random streams; absent in
  stores written before it was recorded), ``seed`` (root entropy, text),
  ``measure`` (the ``measure`` function's name, NULL without one), ``relucore`` (the version
  that created the store), ``created`` (Unix time);
- ``configs(id, key, json, trials, <one column per configuration key>)``: every configuration
  the store has rows of, ``key`` the SHA-256 of its canonical JSON, ``trials`` the most
  trials a sweep asked of it; the key columns (lists as JSON text) are there for SQL;
- ``trials(config, trial, <built-in columns>, status, error, <measure columns>)`` with
  ``PRIMARY KEY (config, trial)`` (a ``WITHOUT ROWID`` table): one row per trial;
- ``extras(name, bools)``: the ``measure`` columns, and whether one held bools;
- ``batches(id, at, rows, writer)``: when each batch was committed, by whom (for ``status``);
- the view ``results``: ``trials`` joined with the configuration keys.

The database runs in WAL mode (the WAL copied into the database every ``WAL_CHECKPOINT_PAGES``
pages), so readers (``relucore sweep status``, pandas, DuckDB) never
block a writer. Each batch of trials is one transaction (``BEGIN IMMEDIATE``, ``INSERT OR
IGNORE`` of its rows, ``COMMIT``) with ``synchronous=NORMAL``: a committed batch survives the
death of the process (SIGKILL, an exception, Ctrl-C), and the store stays consistent through
anything; an OS crash or power cut may take back the last batches committed before it, which
a resume recomputes bit for bit (rows are deterministic). ``FULL`` (an fsync per commit)
would buy durability of recomputable rows at the price of a commit rate bounded by the
disk's fsync latency.

A sweep hands its batches to a writer thread (:mod:`relucore.sweeps.store_writer`) that encodes
and commits them while the next batches compute; closing the store commits what was handed
over, and a batch not yet committed when the process dies is recomputed by a resume like any
other. A batch is inserted up to ``ROWS_PER_INSERT`` rows per statement.

Many writers: a row depends only on its configuration, trial and the store's ``seed``,
``measure``, ``sweep_format`` and ``generator``, all checked when the store is opened; so writers of the same
sweep compute identical rows and each simply inserts with ``INSERT OR IGNORE``. A row another
writer committed first is compared with this writer's, bit for bit (a difference is a
:class:`~relucore.CheckpointError`), never duplicated. See docs/sweeps.md for why not leases.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import socket
import sqlite3
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from relucore.sweeps import store_errors
from relucore.sweeps.columns import RENAMED_COLUMNS
from relucore.sweeps.config import (
    DEFAULTS,
    FORMAT_CHANGES,
    GENERATOR_CHANGES,
    canonical_json,
    config_column,
    stored_config,
)
from relucore.sweeps.files import CheckpointError
from relucore.sweeps.legacy import is_legacy
from relucore.sweeps.store_codec import (
    BUILTIN_NAMES,
    NUMERIC_NAMES,
    SQL_TYPES,
    TEXT_NAMES,
    comparable,
    decode,
    encode,
    rows_to_columns,
)
from relucore.sweeps.store_errors import retry_busy, sqlite_error
from relucore.sweeps.store_writer import Writer

__all__ = ["Store", "CheckpointError", "STORE_FORMAT", "SCHEMA", "connect_readonly", "sqlite_error"]

STORE_FORMAT = "relucore-sweep-store"
SCHEMA = 1
#: SQLite's ``synchronous`` setting of a writer (see the module's docstring for why NORMAL).
SYNCHRONOUS = "NORMAL"
#: WAL pages after which a writer's commit copies the WAL into the database (SQLite's default:
#: 1000 pages, 4 MB). Less often means fewer copies of the pages every commit rewrites (the last
#: leaf, the interior pages): less CPU per row, for a WAL of up to ~40 MB while a sweep runs.
WAL_CHECKPOINT_PAGES = 10000
#: Rows per INSERT statement, at most (each binds rows x columns values: as many as the
#: connection's SQLITE_LIMIT_VARIABLE_NUMBER allows, 999 on SQLite before 3.32). ``sqlite3``
#: releases the GIL once per statement, so fewer, larger statements mean fewer hand-overs of the
#: GIL between the writer thread and the sweep's threads; the CPU per row is the same from ~40 rows.
ROWS_PER_INSERT = 256
_MAX_VARIABLES = 999
_SQLITE_MAGIC = b"SQLite format 3\x00"
_FETCH = 65536


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _schema_sql() -> List[str]:
    trial_cols = ", ".join(f"{_q(k)} {SQL_TYPES[k]}" for k in BUILTIN_NAMES)
    key_cols = ", ".join(_q(config_column(k)) for k in DEFAULTS)
    view_keys = ", ".join(f"c.{_q(config_column(k))}" for k in DEFAULTS if config_column(k) not in SQL_TYPES)
    return [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value)",
        f"CREATE TABLE configs (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, json TEXT NOT NULL, "
        f"trials INTEGER NOT NULL, {key_cols})",
        f"CREATE TABLE trials (config INTEGER NOT NULL REFERENCES configs(id), trial INTEGER NOT NULL, "
        f"{trial_cols}, PRIMARY KEY (config, trial)) WITHOUT ROWID",
        "CREATE TABLE extras (name TEXT PRIMARY KEY, bools INTEGER NOT NULL DEFAULT 0)",
        "CREATE TABLE batches (id INTEGER PRIMARY KEY, at REAL NOT NULL, rows INTEGER NOT NULL, writer TEXT)",
        f"CREATE VIEW results AS SELECT {view_keys}, t.* FROM trials t JOIN configs c ON c.id = t.config",
    ]


def connect_readonly(path: str) -> sqlite3.Connection:
    """A read-only connection (also in a read-only folder, where WAL's shared-memory file
    cannot be created: then the file is opened as immutable)."""
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such file", path)
    _check_head(path)
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    try:
        conn = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=store_errors.BUSY_TIMEOUT)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn = sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise sqlite_error(exc, path) from None
    return conn


def _check_head(path: str) -> None:
    """Refuses a file that is neither empty nor a SQLite database (an old checkpoint says how
    to import it)."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if not head or head.startswith(_SQLITE_MAGIC):
        return
    if is_legacy(head):
        raise CheckpointError(
            f"{path!r} is a JSON-lines checkpoint of an older relucore; import it into a store with "
            f"`relucore sweep import {path} NEW.db`, then resume with checkpoint='NEW.db'"
        )
    raise CheckpointError(f"{path!r} is not a relucore sweep store (neither SQLite nor an old checkpoint)")


def quick_check(conn: sqlite3.Connection, path: str) -> None:
    """SQLite's ``PRAGMA quick_check``; damage raises :class:`~relucore.CheckpointError` naming ``path``."""
    try:
        rows = retry_busy(lambda: conn.execute("PRAGMA quick_check(3)").fetchall())
        problems = [" ".join(str(r[0]).split()) for r in rows]
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    if problems != ["ok"]:
        raise CheckpointError(
            f"store {path!r} is damaged (SQLite quick_check: {'; '.join(problems)}); committed rows may be "
            f"recovered with the sqlite3 shell's .recover, or start a new store"
        )


def read_meta(conn: sqlite3.Connection, path: str) -> Dict[str, Any]:
    """The ``meta`` table, after checking the database is a relucore sweep store."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        raise CheckpointError(f"{path!r} is a SQLite database but not a relucore sweep store (no meta table)")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != STORE_FORMAT:
        raise CheckpointError(f"{path!r} is a SQLite database but not a relucore sweep store")
    if meta.get("schema") != SCHEMA:
        raise CheckpointError(f"store {path!r} has schema {meta.get('schema')}; this relucore reads schema {SCHEMA}")
    return meta


def _short(value: Any, limit: int = 60) -> str:
    import json

    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _changes(old, new, notes_of: Dict[int, str], what: str) -> str:
    """``" (format 2: ...)"``: the notes of the versions after ``old`` up to ``new``; "" when unknown."""
    try:
        lo, hi = sorted((int(old), int(new)))
    except (TypeError, ValueError):
        return ""
    notes = [f"{what} {v}: {notes_of[v]}" for v in range(lo + 1, hi + 1) if v in notes_of]
    return f" ({'; '.join(notes)})" if notes else ""


def _format_changes(old, new) -> str:
    """What the sweep formats after ``old`` up to ``new`` changed."""
    return _changes(old, new, FORMAT_CHANGES, "format")


def _generator_changes(old, new) -> str:
    """What the generator versions after ``old`` up to ``new`` changed."""
    return _changes(old, new, GENERATOR_CHANGES, "version")


def _check_identity(path: str, meta: Dict[str, Any], identity: Dict[str, Any]) -> None:
    stored = meta.get("sweep_format")
    if stored != identity["sweep_format"]:
        raise CheckpointError(
            f"store {path!r} holds rows of sweep format {stored} (relucore {meta.get('relucore')}), but this "
            f"sweep computes format {identity['sweep_format']}{_format_changes(stored, identity['sweep_format'])}, "
            f"so its rows cannot be resumed; read or export them (relucore sweep export {path} OUT.csv), or use "
            f"another store path"
        )
    stored_gen, gen = meta.get("generator"), identity.get("generator")
    if stored_gen != gen:
        drawn = "an older generator (none recorded)" if stored_gen is None else f"generator version {stored_gen}"
        raise CheckpointError(
            f"store {path!r} holds rows drawn from the random streams of {drawn} (relucore "
            f"{meta.get('relucore')}), but this sweep draws with generator version {gen}: the random streams "
            f"changed{_generator_changes(stored_gen, gen)} (old seeds give new draws of the same law), so its rows "
            f"cannot be resumed; read or export "
            f"them (relucore sweep export {path} OUT.csv), or use another store path"
        )
    differ = [k for k in ("seed", "measure") if meta.get(k) != identity[k]]
    if differ:
        # The store keeps the root seed under "seed"; the argument that sets it is sweep(rng=).
        args = {"seed": "rng"}
        what = "; ".join(
            f"{args.get(k, k)}: {_short(meta.get(k))} in the file, {_short(identity[k])} now" for k in differ
        )
        raise CheckpointError(
            f"store {path!r} was written by a sweep with different arguments ({what}); "
            f"resume with the same {' and '.join(args.get(k, k) for k in differ)}, or use another store path"
        )


def _config_values(cfg: Dict[str, Any]) -> List[Any]:
    cfg = stored_config(cfg)  # an old checkpoint's configuration has the old keys
    return [canonical_json(cfg[k]) if isinstance(cfg[k], list) else cfg[k] for k in DEFAULTS]


def config_hash(cfg: Dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(cfg).encode()).hexdigest()


class Store:
    """Opens (creating or resuming) the store of a sweep at ``path``.

    A row depends only on its configuration, its trial index and ``identity``, so a store
    serves any sweep with the same ``identity``: rows of configurations or trials the sweep
    does not ask for are skipped (and kept), configurations the store has not seen are added.

    Parameters
    ----------
    path : str or os.PathLike
    identity : dict
        ``seed`` (text), ``measure`` (name or None), ``sweep_format`` and ``generator``; a store with other
        values raises :class:`~relucore.CheckpointError`.
    configs : list of dict
        The sweep's normalised configurations.
    trials : int
        Trials per configuration.
    on_columns : callable, optional
        Called with the saved rows found when resuming, as columns (``config_index`` numbering
        ``configs``; see :meth:`relucore.sweeps.table.Results.add_columns`).
    relucore_version : str
        Recorded when the store is created.
    """

    def __init__(
        self, path, identity, configs, trials: int, on_columns: Optional[Callable] = None, relucore_version=""
    ):
        self.path = os.fspath(path)
        self.n_rows = 0
        self._writer = f"{socket.gethostname()}:{os.getpid()}"
        self._own_file = self._create_file()  # until another writer is seen to have made the schema
        self.conn: Optional[sqlite3.Connection] = None
        self._background: Optional[Writer] = None
        try:
            # Used by one thread at a time: this one until the first batch, then the writer's
            # (see submit_columns), then this one again once the writer has stopped.
            self.conn = sqlite3.connect(
                self.path, timeout=store_errors.BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
            self._open(identity, relucore_version, check=not self._own_file)
            self._ids = self._register(configs, trials)
            if on_columns is not None:
                self._load(configs, trials, on_columns)
        except BaseException as exc:
            self.close()
            if self._own_file:  # a store this call created and failed to finish: no stray files
                _remove_store_files(self.path)
            if isinstance(exc, sqlite3.Error):
                raise sqlite_error(exc, self.path) from None
            raise

    def _create_file(self) -> bool:
        """Creates an empty file at a new path (an empty file is an empty database), so that a
        folder that cannot be written fails here with the system's own error; True if created."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            _check_head(self.path)
            return False
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, self.path) from None
        os.close(fd)
        return True

    def _write(self, body: Callable[[], Any]):
        """``body()`` in one ``BEGIN IMMEDIATE`` transaction, committed; rolled back if it raises,
        and run again while SQLite reports the database busy (:func:`retry_busy`)."""
        conn = self.conn

        def once():
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = body()
                conn.execute("COMMIT")
                return out
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

        return retry_busy(once)

    def _open(self, identity, relucore_version: str, check: bool) -> None:
        conn = self.conn
        retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        if check:
            quick_check(conn, self.path)
        self._write(lambda: self._init_schema(identity, relucore_version))
        self._extras = dict(conn.execute("SELECT name, bools FROM extras").fetchall())

    def _init_schema(self, identity, relucore_version: str) -> None:
        """Creates the tables of a new store and checks the identity of an existing one (in the
        caller's transaction)."""
        conn = self.conn
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables:
            self._own_file = False
        else:
            for sql in _schema_sql():
                conn.execute(sql)
            meta = dict(
                format=STORE_FORMAT,
                schema=SCHEMA,
                created=time.time(),
                relucore=relucore_version,
                **identity,
            )
            conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        meta = read_meta(conn, self.path)
        _check_identity(self.path, meta, identity)

    def _register(self, configs, trials: int) -> np.ndarray:
        """The store's id of each configuration (added when new)."""
        conn = self.conn
        keys = [config_hash(c) for c in configs]

        def register():
            cols = ", ".join(_q(config_column(k)) for k in DEFAULTS)
            marks = ", ".join("?" * (3 + len(DEFAULTS)))
            conn.executemany(
                f"INSERT OR IGNORE INTO configs (key, json, trials, {cols}) VALUES ({marks})",
                [(k, canonical_json(c), trials, *_config_values(c)) for k, c in zip(keys, configs)],
            )
            conn.executemany("UPDATE configs SET trials = max(trials, ?) WHERE key = ?", [(trials, k) for k in keys])
            return dict(conn.execute("SELECT key, id FROM configs").fetchall())

        ids = self._write(register)
        return np.array([ids[k] for k in keys], dtype=np.int64)

    def _load(self, configs, trials: int, on_columns: Callable) -> None:
        index = {int(i): ci for ci, i in enumerate(self._ids)}
        for cols in load_columns(self.conn, index, trials, self._extras):
            self.n_rows += len(cols["trial"])
            on_columns(cols)

    def append_rows(self, rows: List[Dict[str, Any]]) -> None:
        """Saves one batch given as row dicts (``config_index`` numbering the sweep's configs):
        committed when this returns (see :meth:`append_columns`)."""
        self.submit_rows(rows)
        self.flush()

    def append_columns(self, cols: Dict[str, Any]) -> None:
        """Saves one batch given as columns, in one transaction: committed (on disk) when this
        returns, or not at all (an ``OSError`` naming the store, or :class:`~relucore.CheckpointError`)."""
        self.submit_columns(cols)
        self.flush()

    def submit_rows(self, rows: List[Dict[str, Any]]) -> None:
        """Hands one batch given as row dicts to the writer thread (see :meth:`submit_columns`)."""
        if rows:
            self.submit_columns(rows_to_columns(rows))

    def submit_columns(self, cols: Dict[str, Any]) -> None:
        """Hands one batch given as columns to the store's writer thread, which encodes and
        commits it (one transaction) while the caller goes on; the caller must not change
        ``cols`` afterwards. Batches are committed in the order handed over; a failure is
        raised here by the next call, by :meth:`flush` or by :meth:`close` (an ``OSError``
        naming the store, or :class:`~relucore.CheckpointError`), and the batches handed over
        after the failed one are not committed."""
        if len(cols["trial"]) == 0:
            return
        if self._background is None:
            self._background = Writer(self._commit)
        self._background.submit(cols)

    def flush(self) -> None:
        """Returns when every batch handed over is committed; raises the writer's failure if not."""
        if self._background is not None:
            self._background.flush()

    def _commit(self, cols: Dict[str, Any]) -> None:
        """One batch, on the writer thread: encoded and inserted in one transaction."""
        names, values, extras, bools = encode(cols, self._ids[np.asarray(cols["config_index"], dtype=np.int64)])
        try:
            self._insert(names, values, extras, bools)
        except sqlite3.Error as exc:
            raise sqlite_error(exc, self.path) from None

    def _insert(self, names, values: np.ndarray, extras, bools) -> None:
        conn = self.conn
        n, k = values.shape
        per = rows_per_statement(conn, k)
        full = n // per * per
        row = "(" + ", ".join("?" * k) + ")"
        insert = f"INSERT OR IGNORE INTO trials ({', '.join(map(_q, names))}) VALUES "
        known = self._extras

        def insert_batch():
            self._extras = known  # as before this transaction, also when it is run again
            self._add_extras(extras, bools)
            before = conn.total_changes
            if full:  # ``per`` rows a statement: one SQLite call (GIL released) inserts them all
                conn.executemany(insert + ", ".join([row] * per), values[:full].reshape(-1, per * k).tolist())
            if full < n:  # the rest in one shorter statement
                conn.execute(insert + ", ".join([row] * (n - full)), values[full:].ravel().tolist())
            inserted = conn.total_changes - before
            if inserted < n:
                self._same_as_stored(names, values.tolist())
            conn.execute(
                "INSERT INTO batches (at, rows, writer) VALUES (?, ?, ?)", (time.time(), inserted, self._writer)
            )

        try:
            self._write(insert_batch)
        except BaseException:
            self._extras = known
            raise
        self.n_rows += n

    def _add_extras(self, extras, bools) -> None:
        conn = self.conn
        new = [k for k in extras if k not in self._extras or (k in bools and not self._extras[k])]
        if not new:
            return
        self._extras = dict(conn.execute("SELECT name, bools FROM extras").fetchall())  # another writer's
        taken = {name.lower(): name for (name,) in conn.execute("SELECT name FROM pragma_table_info('trials')")}
        for k in extras:
            if k not in self._extras and k.lower() in taken:
                raise CheckpointError(
                    f"store {self.path!r} cannot hold the measure column {k!r}: SQLite column names ignore "
                    f"case and the trials table has {taken[k.lower()]!r}; rename the column"
                )
            if k not in self._extras:
                conn.execute(f"ALTER TABLE trials ADD COLUMN {_q(k)}")
                conn.execute("INSERT INTO extras (name, bools) VALUES (?, ?)", (k, int(k in bools)))
            elif k in bools and not self._extras[k]:
                conn.execute("UPDATE extras SET bools = 1 WHERE name = ?", (k,))
        self._extras = dict(conn.execute("SELECT name, bools FROM extras").fetchall())

    def _same_as_stored(self, names, params) -> None:
        """Rows already in the store (another writer's) must equal ours bit for bit."""
        sql = f"SELECT {', '.join(map(_q, names))} FROM trials WHERE config = ? AND trial = ?"
        for row in params:
            stored = self.conn.execute(sql, row[:2]).fetchone()
            if comparable(stored) != comparable(row):
                bad = [n for n, a, b in zip(names, comparable(stored), comparable(row)) if a != b]
                raise CheckpointError(
                    f"store {self.path!r}: configuration id {row[0]} trial {row[1]} was saved by another writer "
                    f"with other values in {bad}: the writers do not compute the same rows (different relucore "
                    f"builds?)"
                )

    def close(self) -> None:
        """Commits the batches handed over and closes the database; raises the writer's failure
        if no call raised it yet."""
        writer, self._background = self._background, None
        try:
            if writer is not None:
                writer.stop()
        finally:
            if self.conn is not None and (writer is None or not writer.alive):
                with contextlib.suppress(sqlite3.Error):
                    self.conn.close()
                self.conn = None


def rows_per_statement(conn: sqlite3.Connection, columns: int) -> int:
    """Rows of ``columns`` values one INSERT statement of the store binds."""
    getlimit = getattr(conn, "getlimit", None)  # Python 3.11+
    limit = getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) if getlimit is not None else _MAX_VARIABLES
    return max(1, min(ROWS_PER_INSERT, limit // columns))


def _remove_store_files(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.remove(path + suffix)


def _stored_names(conn: sqlite3.Connection) -> Dict[str, str]:
    """``{new name: old name}`` of the renamed columns (``RENAMED_COLUMNS``) this store's trials table
    holds under their old names (a store of an older sweep format); empty for a current store."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    return {new: old for old, new in RENAMED_COLUMNS.items() if old in have and new not in have}


def _selected(names, held: Dict[str, str]) -> str:
    """The SELECT list of ``names``, reading a renamed column under its old name."""
    return ", ".join(f"{_q(held[n])} AS {_q(n)}" if n in held else _q(n) for n in names)


def load_columns(conn: sqlite3.Connection, index: Dict[int, int], trials: Optional[int], extras: Dict[str, int]):
    """Yields the saved rows of the configurations ``index`` maps (store id -> index) with
    ``trial < trials`` (all trials when None), in chunks of columns (``config_index``
    numbered by ``index``). Numbers and text are read by two queries over one snapshot (a
    read transaction), in primary-key order, the numbers converted by one numpy call a chunk."""
    where, args = [], []
    if trials is not None:
        where.append("trial < ?")
        args.append(trials)
    if len(index) <= 30000:
        where.append(f"config IN ({', '.join('?' * len(index))})")
        args.extend(index)
    tail = (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY config, trial"
    held = _stored_names(conn)
    numeric = (
        ", ".join(map(_q, ["config", "trial", *NUMERIC_NAMES]))
        if not held
        else _selected(["config", "trial", *NUMERIC_NAMES], held)
    )
    other = ", ".join(map(_q, [*TEXT_NAMES, *extras])) if not held else _selected([*TEXT_NAMES, *extras], held)
    lookup = np.full(max(index, default=0) + 1, -1, dtype=np.int64)
    lookup[list(index)] = list(index.values())
    bools = {k for k, b in extras.items() if b}
    own = not conn.in_transaction

    def start():
        if own:
            conn.execute("BEGIN")
        try:
            return conn.execute(f"SELECT {numeric} FROM trials{tail}", args), conn.execute(
                f"SELECT {other} FROM trials{tail}", args
            )
        except BaseException:
            if own:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    cur_num, cur_other = retry_busy(start)
    try:
        while True:
            rows = cur_num.fetchmany(_FETCH)
            if not rows:
                return
            cols = decode(rows, cur_other.fetchmany(len(rows)), list(extras), bools)
            ids = cols.pop("config")
            ci = lookup[np.minimum(ids, len(lookup) - 1)]
            ci[ids >= len(lookup)] = -1
            cols["config_index"] = ci
            keep = ci >= 0
            if not keep.all():
                cols = {k: v[keep] for k, v in cols.items()}
            yield cols
    finally:
        if own:
            conn.execute("COMMIT")
