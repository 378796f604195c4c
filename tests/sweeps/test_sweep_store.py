"""The SQLite store: many writers, SIGKILL at random moments, bitwise floats, writer conflicts,
format versions, status. Faults of the file system are in test_sweep_store_faults.py."""

import errno
import math
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import relucore
from relucore.sweeps import store_read
from relucore.sweeps.columns import MEASURED
from relucore.sweeps.store import Store

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _sweep_helpers as H  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = f"import sys; sys.path.insert(0, {HERE!r}); import _sweep_helpers; _sweep_helpers.run_slow(sys.argv[1])"


@pytest.fixture(scope="module")
def uninterrupted():
    return relucore.sweep(H.GRID, trials=40, rng=7, measure=H.measure_slow, chunk_size=4, progress=False)


def _child(path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path)], env=env, stderr=subprocess.PIPE)


def _resume_counting(path, monkeypatch):
    ran = []
    orig = relucore.sweeps.api.run_batch
    monkeypatch.setattr(relucore.sweeps.api, "run_batch", lambda task: ran.extend(task["trials"]) or orig(task))
    table = relucore.sweep(H.GRID, trials=40, rng=7, measure=H.measure_slow, checkpoint=path, progress=False)
    monkeypatch.undo()
    return table, ran


def _bits(table):
    """Every float column as its bit patterns (NaN signs and payloads included)."""
    return {c: table[c].to_numpy(np.float64).view(np.uint64) for c in table.columns if table[c].dtype == np.float64}


def test_two_writer_processes_on_one_store_give_the_uninterrupted_table(tmp_path, uninterrupted, monkeypatch):
    path = tmp_path / "two.db"
    procs = [_child(path), _child(path)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    with sqlite3.connect(path) as conn:
        n_rows, n_keys = conn.execute("SELECT count(*), count(DISTINCT config || '-' || trial) FROM trials").fetchone()
        inserted, writers = conn.execute("SELECT sum(rows), count(DISTINCT writer) FROM batches").fetchone()
    conn.close()
    assert n_rows == n_keys == inserted == 120  # every trial once, none lost or doubled
    assert writers == 2  # both processes committed batches
    table, ran = _resume_counting(path, monkeypatch)
    assert ran == []
    pd.testing.assert_frame_equal(table, uninterrupted, check_exact=True)
    pd.testing.assert_frame_equal(store_read.read_table(path), uninterrupted, check_exact=True)


def _saved(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.Error:
        return 0  # not created yet


def _check_partial(path, uninterrupted):
    """The rows saved so far, read while a sweep writes, are rows of the uninterrupted table."""
    partial = store_read.read_table(path)
    assert 0 < len(partial) < 120 and str(store_read.status(path)).count("\n") == 6
    key = ["config_index", "trial"]
    want = uninterrupted.set_index(key).loc[pd.MultiIndex.from_frame(partial[key])].reset_index()
    pd.testing.assert_frame_equal(partial, want, check_exact=True)


def test_sigkill_at_random_moments_then_resume_is_bitwise_equal(tmp_path, uninterrupted, monkeypatch):
    """Three runs killed with SIGKILL, each at a random moment (0-0.3 s) after it committed
    its first batch: mid-write, mid-transaction or mid-computation."""
    path = tmp_path / "killed.db"
    rng = random.Random(2026)
    saved = [0]
    for _ in range(3):
        proc = _child(path)
        deadline = time.monotonic() + 120
        while _saved(path) <= saved[-1]:
            assert proc.poll() is None and time.monotonic() < deadline, "no batch was committed"
            time.sleep(0.005)
        _check_partial(path, uninterrupted)  # readable while the sweep writes to it
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        conn.close()
        saved.append(_saved(path))
    assert saved == sorted(saved) and 0 < saved[-1] < 120  # nothing committed is lost; killed mid-sweep
    table, ran = _resume_counting(path, monkeypatch)
    assert len(ran) == 120 - saved[-1]
    pd.testing.assert_frame_equal(table, uninterrupted, check_exact=True)


def measure_special(data, result):
    """Values SQLite cannot hold as they are: NaNs of both signs, infinities, bools, None."""
    neg_nan = -np.float64(np.nan)
    first = bool(data.y[0] > 0)
    return {
        "neg_nan": float(neg_nan),
        "nan": math.nan,
        "inf": math.inf if first else -math.inf,
        "flag": first,
        "maybe": None if first else 1.5,
        "word": "up" if first else "down",
    }


def test_floats_nan_inf_bools_and_none_come_back_bitwise(tmp_path):
    grid = [{"n": 5, "d": 100, "gram_stats": False}, {"n": 5, "d": 100, "use_gram": True, "minnorm": False}]
    ref = relucore.sweep(grid, trials=6, rng=3, measure=measure_special, chunk_size=4, progress=False)
    assert np.signbit(ref["neg_nan"]).all() and not np.signbit(ref["nan"]).any()
    assert ref["flag"].dtype == bool and ref["gram_mu_max"].isna().any()
    path = tmp_path / "special.db"
    relucore.sweep(grid, trials=6, rng=3, measure=measure_special, checkpoint=path, progress=False)
    resumed = relucore.sweep(grid, trials=6, rng=3, measure=measure_special, checkpoint=path, progress=False)
    for table in (resumed, store_read.read_table(path)):
        pd.testing.assert_frame_equal(table, ref, check_exact=True)
        got, want = _bits(table), _bits(ref)
        assert got.keys() == want.keys() and all((got[c] == want[c]).all() for c in got)
    with sqlite3.connect(path) as conn:  # typed columns; the canonical NaN is NULL for SQL
        types = dict(conn.execute("SELECT name, type FROM pragma_table_info('trials')").fetchall())
        assert types["loss"] == "REAL" and types["nit"] == "INTEGER" and types["status"] == "TEXT"
        assert conn.execute("SELECT count(*) FROM trials WHERE gram_mu_max IS NULL").fetchone()[0] == 6
        assert conn.execute("SELECT DISTINCT typeof(neg_nan) FROM trials").fetchall() == [("blob",)]
    conn.close()


def _row(trial, **changes):
    row = {c.name: (1.25 if c.kind == "f" else 3) for c in MEASURED}
    row.update(config_index=0, trial=trial, status="converged", error="")
    row.update(changes)
    return row


def _small_store_args():
    """The identity and configurations of a small store written by hand (one configuration, n = 3)."""
    identity = {
        "seed": "1",
        "measure": None,
        "sweep_format": relucore.sweeps.config.SWEEP_FORMAT,
        "generator": relucore.sweeps.config.GENERATOR_VERSION,
    }
    return identity, relucore.sweeps.config.expand_grid({"n": 3})


def test_a_row_saved_with_other_values_by_another_writer_is_refused(tmp_path):
    identity, cfg = _small_store_args()
    a = Store(tmp_path / "s.db", identity, cfg, 4)
    b = Store(tmp_path / "s.db", identity, cfg, 4)
    try:
        a.append_rows([_row(0), _row(1, loss=0.0)])
        b.append_rows([_row(0), _row(1, loss=0.0), _row(2)])  # the same rows again: ignored, checked
        with pytest.raises(relucore.CheckpointError, match=r"s\.db.*trial 1 .*\['loss'\]"):
            b.append_rows([_row(1, loss=-0.0)])  # differs only in the sign bit
        rows = a.conn.execute("SELECT trial, loss FROM trials ORDER BY trial").fetchall()
        assert rows == [(0, 1.25), (1, 0.0), (2, 1.25)] and math.copysign(1, rows[1][1]) == 1
    finally:
        a.close()
        b.close()


def test_a_nan_saved_by_another_writer_is_the_same_row_other_nan_bits_are_not(tmp_path):
    """The canonical NaN is bound as a float and stored as NULL: the same row from a second writer
    is ignored, not refused; a NaN with other bits (its 8 bytes) is a different row."""
    identity = {"seed": "1", "measure": None, "sweep_format": relucore.sweeps.config.SWEEP_FORMAT}
    cfg = relucore.sweeps.config.expand_grid({"n": 3})
    a = Store(tmp_path / "s.db", identity, cfg, 4)
    b = Store(tmp_path / "s.db", identity, cfg, 4)
    try:
        a.append_rows([_row(0, gap=math.nan), _row(1, gap=-math.nan)])
        b.append_rows([_row(0, gap=math.nan), _row(1, gap=-math.nan)])  # the same rows: ignored
        with pytest.raises(relucore.CheckpointError, match=r"s\.db.*trial 0 .*\['gap'\]"):
            b.append_rows([_row(0, gap=-math.nan)])
        rows = a.conn.execute("SELECT trial, typeof(gap) FROM trials ORDER BY trial").fetchall()
        assert rows == [(0, "null"), (1, "blob")]
        assert a.conn.execute("SELECT count(*) FROM batches WHERE rows = 0").fetchone()[0] == 1
    finally:
        a.close()
        b.close()


def test_another_sweep_format_is_refused_with_the_reason(tmp_path, monkeypatch):
    path = tmp_path / "f.db"
    relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, checkpoint=path, progress=False)
    now = relucore.sweeps.config.SWEEP_FORMAT
    monkeypatch.setattr(relucore.sweeps.api, "SWEEP_FORMAT", now + 1)  # what the next bump does
    with pytest.raises(relucore.CheckpointError) as info:
        relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, checkpoint=path, progress=False)
    msg = str(info.value)
    assert str(path) in msg and f"sweep format {now}" in msg and f"computes format {now + 1}" in msg
    assert "relucore sweep export" in msg


def test_a_store_of_other_random_streams_is_refused_but_still_read(tmp_path, monkeypatch):
    """A format-2 store written before the generator version was recorded (numpy's streams), or under
    another version, is refused on resume with the file and the reason; it can still be read and exported."""
    path = tmp_path / "g.db"
    grid = {"n": 5, "d": 100}
    table = relucore.sweep(grid, trials=2, rng=1, checkpoint=path, progress=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'generator'").fetchone() == (
            relucore._core.defaults.generator_version,
        )
        conn.execute("DELETE FROM meta WHERE key = 'generator'")  # as written before this version
    with pytest.raises(relucore.CheckpointError) as info:
        relucore.sweep(grid, trials=2, rng=1, checkpoint=path, progress=False)
    msg = str(info.value)
    assert str(path) in msg and "an older generator (none recorded)" in msg
    assert "random streams changed" in msg and "relucore sweep export" in msg
    pd.testing.assert_frame_equal(store_read.read_table(path), table, check_exact=True)
    assert "generator unrecorded" in str(store_read.status(path))
    path2 = tmp_path / "g2.db"
    relucore.sweep(grid, trials=2, rng=1, checkpoint=path2, progress=False)
    now = relucore.sweeps.config.GENERATOR_VERSION
    monkeypatch.setattr(relucore.sweeps.api, "GENERATOR_VERSION", now + 1)  # what the next stream change does
    with pytest.raises(relucore.CheckpointError, match=f"generator version {now}.*generator version {now + 1}"):
        relucore.sweep(grid, trials=2, rng=1, checkpoint=path2, progress=False)


def test_a_generator_1_store_is_refused_with_what_version_2_changed(tmp_path):
    """A store written under generator version 1 (Gram-mode data from numpy's Philox) is refused on
    resume, naming both versions and what changed; a version-2 store resumes."""
    path = tmp_path / "v1.db"
    grid = {"n": 5, "d": 100, "use_gram": True}
    relucore.sweep(grid, trials=2, rng=1, checkpoint=path, progress=False)
    relucore.sweep(grid, trials=3, rng=1, checkpoint=path, progress=False)  # same version: resumes
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = 1 WHERE key = 'generator'")
    with pytest.raises(relucore.CheckpointError) as info:
        relucore.sweep(grid, trials=4, rng=1, checkpoint=path, progress=False)
    msg = str(info.value)
    assert "generator version 1" in msg and "generator version 2" in msg
    assert "version 2: Gram-mode data" in msg and "old seeds give new draws of the same law" in msg


def test_a_format_1_store_names_what_changed(tmp_path):
    """A store of relucore 0.1.0's rows (format 1) is refused with what format 2 changed."""
    path = tmp_path / "old.db"
    relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, checkpoint=path, progress=False)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = 1 WHERE key = 'sweep_format'")
    with pytest.raises(relucore.CheckpointError, match="format 2: runs that stop at a stationary point"):
        relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, checkpoint=path, progress=False)


def test_status_counts_errors_rate_and_eta(tmp_path):
    path = tmp_path / "st.db"
    table = relucore.sweep(
        H.GRID[:2], trials=6, rng=7, measure=H.measure_fail_some, chunk_size=3, progress=False, checkpoint=path
    )
    errors = table.status.eq("error")
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM trials WHERE config = 2 AND trial >= 2")  # 4 trials of config 2 to run
        conn.execute("DELETE FROM batches")
        t0 = time.time() - 30.0  # writers on other hosts, last heard from 10 s ago: running
        conn.executemany(
            "INSERT INTO batches (at, rows, writer) VALUES (?, ?, ?)",
            [(t0, 5, "a:1"), (t0 + 10, 10, "b:2"), (t0 + 20, 30, "a:1"), (t0 - 100, 99, "old:3")],
        )
    conn.close()
    st = store_read.status(path)
    want_errors = [
        int(errors[table.config_index == 0].sum()),
        int(errors[(table.config_index == 1) & (table.trial < 2)].sum()),
    ]
    assert 0 < sum(want_errors) < 8
    assert [(r["id"], r["done"], r["trials"], r["errors"]) for r in st.rows] == [
        (1, 6, 6, want_errors[0]),
        (2, 2, 6, want_errors[1]),
    ]
    # the window is the 60 s before the last batch; the first batch in it only marks its start
    assert st.rate == pytest.approx((10 + 30) / 20.0) and st.remaining == 4 and st.eta == pytest.approx(4 / 2.0)
    assert st.writers == 2
    text = str(st)
    assert f"total: 8 of 12 trials saved, {sum(want_errors)} errors, 4 to run" in text
    assert "2 trials/s" in text and "ETA 0:00:02" in text
    assert not st.stopped and st.last_writers == ["a:1", "b:2"] and st.interval == pytest.approx(10.0)


def _set_batches(path, rows):
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM batches")
        conn.executemany("INSERT INTO batches (at, rows, writer) VALUES (?, ?, ?)", rows)
    conn.close()


def test_status_marks_a_stopped_writer_and_gives_no_eta(tmp_path):
    path = tmp_path / "dead.db"
    relucore.sweep({"n": 5, "d": 100}, trials=4, rng=1, chunk_size=2, progress=False, checkpoint=path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM trials WHERE trial >= 2")
    conn.close()
    now, host = time.time(), socket.gethostname()
    # A writer of this host whose process is gone (a pid above the kernel's limit cannot exist).
    _set_batches(path, [(now - 3, 1, f"{host}:4194305"), (now - 2, 1, f"{host}:4194305")])
    st = store_read.status(path)
    assert st.stopped and st.eta is None and st.rate is not None and st.remaining == 2
    assert f"by {host}:4194305, which stopped with 2 trials to run: no ETA; run the same sweep again" in str(st)
    assert "ETA 0" not in str(st)
    # The same batches written by this (living) process: running, with an ETA.
    _set_batches(path, [(now - 3, 1, f"{host}:{os.getpid()}"), (now - 2, 1, f"{host}:{os.getpid()}")])
    st = store_read.status(path)
    assert not st.stopped and st.eta == pytest.approx(2.0) and "ETA 0:00:02" in str(st)
    # Another host: judged by silence, against STALE_INTERVALS times its usual interval.
    _set_batches(path, [(now - 32, 1, "elsewhere:1"), (now - 31, 1, "elsewhere:1")])
    assert not store_read.status(path).stopped  # silent 31 s < max(60 s, 10 x 1 s)
    _set_batches(path, [(now - 301, 1, "elsewhere:1"), (now - 300, 1, "elsewhere:1")])
    assert store_read.status(path).stopped
    # A finished sweep is never "stopped".
    relucore.sweep({"n": 5, "d": 100}, trials=4, rng=1, chunk_size=2, progress=False, checkpoint=path)
    assert not store_read.status(path).stopped and store_read.status(path).eta == 0.0


def measure_config_and_loss(data, result):
    return {"config": 1, "Loss": 2.0}


def test_measure_columns_sqlite_cannot_tell_apart_are_refused_by_name(tmp_path):
    path = tmp_path / "m.db"
    assert relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, measure=measure_config_and_loss, progress=False)[
        "Loss"
    ].tolist() == [2.0, 2.0]  # fine without a store
    with pytest.raises(relucore.CheckpointError, match=r"m\.db.*measure column 'Loss'.*'loss'"):
        relucore.sweep({"n": 5, "d": 100}, trials=2, rng=1, measure=measure_config_and_loss, checkpoint=path,
                       progress=False)  # fmt: skip


def _busy(name="SQLITE_BUSY"):
    exc = sqlite3.OperationalError("database is locked")
    exc.sqlite_errorname = name
    return exc


class _RefusesWrites:
    """A connection whose first ``refusals`` write transactions SQLite refuses at once with
    ``SQLITE_BUSY`` (as it does, without its busy handler, to avoid a deadlock or while a closing
    writer resets the WAL), after the transaction has begun and written."""

    def __init__(self, conn, refusals):
        self._conn, self.refusals = conn, refusals

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, sql, *args):
        if sql.startswith("INSERT INTO batches") and self.refusals > 0:
            self.refusals -= 1
            raise _busy("SQLITE_BUSY_SNAPSHOT")
        return self._conn.execute(sql, *args)


def test_a_write_refused_at_once_as_busy_is_rolled_back_and_run_again(tmp_path, monkeypatch):
    """The whole batch transaction (a new measure column and the rows) is rolled back and run again;
    the batch is saved once, with its column. Given up after BUSY_TIMEOUT: an OSError (EBUSY)."""
    identity, cfg = _small_store_args()
    store = Store(tmp_path / "s.db", identity, cfg, 4)
    conn = store.conn
    try:
        store.conn = _RefusesWrites(conn, refusals=3)
        store.append_rows([{**_row(0), "extra": 1.5}, {**_row(1), "extra": 2.5}])
        assert store.conn.refusals == 0
        assert conn.execute("SELECT trial, extra FROM trials ORDER BY trial").fetchall() == [(0, 1.5), (1, 2.5)]
        assert conn.execute("SELECT count(*), sum(rows) FROM batches").fetchone() == (1, 2)
        assert store.n_rows == 2
        monkeypatch.setattr("relucore.sweeps.store_errors.BUSY_TIMEOUT", 0.02)
        store.conn = _RefusesWrites(conn, refusals=10**9)
        with pytest.raises(OSError, match="locked by another writer") as info:
            store.append_rows([_row(2)])
        assert info.value.errno == errno.EBUSY and info.value.filename == str(tmp_path / "s.db")
        assert conn.execute("SELECT count(*) FROM trials").fetchone() == (2,) and not conn.in_transaction
    finally:
        store.conn = conn
        store.close()


def test_retry_busy_runs_again_only_while_busy():
    from relucore.sweeps.store_errors import retry_busy

    calls = []

    def step():
        calls.append(1)
        if len(calls) < 3:
            raise _busy()
        return "done"

    assert retry_busy(step, timeout=10) == "done" and len(calls) == 3
    calls.clear()

    def broken():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: trials")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_busy(broken, timeout=10)
    assert len(calls) == 1  # not busy: raised at once
    t0 = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_busy(lambda: (_ for _ in ()).throw(_busy()), timeout=0.05)
    assert time.monotonic() - t0 < 5


def test_a_format_2_store_with_the_old_column_name_is_read_under_the_new_one(tmp_path):
    """Format 3 renamed gap_normalised to gap_normalized: an older store is refused on resume with the reason,
    and still read and exported with the column under its new name and the same values."""
    path = tmp_path / "old.db"
    grid = {"n": 5, "d": 100}
    table = relucore.sweep(grid, trials=3, rng=1, checkpoint=path, progress=False)
    with sqlite3.connect(path) as conn:  # as format 2 wrote it
        conn.execute("DROP VIEW results")
        conn.execute("ALTER TABLE trials RENAME COLUMN gap_normalized TO gap_normalised")
        conn.execute("UPDATE meta SET value = 2 WHERE key = 'sweep_format'")
    old = relucore.sweeps.store_read.read_table(path)
    assert "gap_normalised" not in old.columns
    np.testing.assert_array_equal(old["gap_normalized"].to_numpy(), table["gap_normalized"].to_numpy())
    with pytest.raises(relucore.CheckpointError, match="gap_normalised is gap_normalized"):
        relucore.sweep(grid, trials=3, rng=1, checkpoint=path, progress=False)
