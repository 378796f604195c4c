"""The store's writer thread: batches committed in order, a failure raised once in the caller
(never lost, never a hang), closing and interrupting commit what was handed over, and the
encoding (several rows per INSERT statement) bit for bit."""

import sqlite3
import threading
import time

import numpy as np
import pandas as pd
import pytest

import relucore
from relucore.sweeps import api, store_read
from relucore.sweeps.columns import MEASURED
from relucore.sweeps.store import Store, rows_per_statement
from relucore.sweeps.store_codec import BUILTIN_NAMES, encode
from relucore.sweeps.store_writer import DEPTH, Writer

GRID = {"n": [6, 8], "d": 1000, "use_gram": True}  # the Gram fast path: many rows quickly


def _sweep(path=None, trials=300, chunk_size=50, **kw):
    return relucore.sweep(GRID, trials=trials, rng=5, chunk_size=chunk_size, checkpoint=path, progress=False, **kw)


def test_writer_commits_in_order_and_waits_while_full():
    done, gate = [], threading.Event()

    def commit(batch):
        gate.wait(10)
        done.append(batch)

    w = Writer(commit)
    for i in range(DEPTH + 1):  # one batch in commit (waiting), DEPTH in the queue
        w.submit(i)
    blocked = threading.Thread(target=w.submit, args=(DEPTH + 1,))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive() and done == []  # the next one waits for room
    gate.set()
    blocked.join(10)
    w.flush()
    assert done == list(range(DEPTH + 2))
    w.stop()
    assert not w.alive


def test_writer_failure_is_raised_once_later_batches_dropped_and_no_hang():
    done = []

    def commit(batch):
        if batch == 2:
            raise OSError(28, "No space left on device (SQLite: database or disk is full)", "x.db")
        time.sleep(0.01)
        done.append(batch)

    w = Writer(commit)
    with pytest.raises(OSError) as info:
        for i in range(100):  # more than DEPTH: a failed writer still empties the queue
            w.submit(i)
    assert info.value.filename == "x.db" and info.value.errno == 28
    assert done == [0, 1]  # nothing after the failed batch is committed
    with pytest.raises(RuntimeError, match="failed earlier"):
        w.submit(100)
    w.flush()  # reported already: not raised twice
    w.stop()
    assert done == [0, 1]


def test_writer_failure_not_yet_seen_is_raised_by_stop():
    def commit(batch):
        raise relucore.CheckpointError("store 'x.db': different rows")

    w = Writer(commit)
    w.submit(0)
    with pytest.raises(relucore.CheckpointError, match="different rows"):
        w.stop()
    assert not w.alive
    w.stop()  # once only


def test_a_lost_wake_up_does_not_hang_stop():
    """A KeyboardInterrupt inside ``Queue.put`` (between ``Condition.notify``'s release of a waiter and
    its removal) leaves a stale, already-woken waiter first in the queue's condition: the next
    ``notify`` releases that one and the idle writer is never woken. Reproduced here by placing such a
    waiter by hand (CPython's ``threading.Condition`` keeps its waiters in ``_waiters``); ``stop`` must
    still return (a sweep hung there after Ctrl-C, its writer asleep in ``Queue.get``)."""
    done = []
    w = Writer(done.append)
    cond = w._queue.not_empty
    deadline = time.monotonic() + 10
    while not cond._waiters:  # the writer waits in get()
        assert time.monotonic() < deadline
        time.sleep(0.001)
    stale = threading.Lock()
    stale.acquire()  # a waiter that was woken once already: held by the thread it woke

    def drive():
        for item in ("last", None):
            with cond:
                cond._waiters.appendleft(stale)  # the next wake-up goes to the stale waiter
            if item is None:
                w.stop()
            else:
                w.submit(item)
                w.flush()

    driver = threading.Thread(target=drive, daemon=True)  # a daemon: a hang fails the test, not the run
    driver.start()
    driver.join(10)
    assert not driver.is_alive() and not w.alive
    assert done == ["last"]


def test_rows_per_insert_and_the_rest_come_back_bitwise(tmp_path):
    """Batches of a statement and a half: statements of ``rows_per_statement`` rows (ROWS_PER_INSERT, or
    fewer, as many as SQLite's limit of bound values allows) and the rest in one shorter one."""
    path = tmp_path / "mixed.db"
    with sqlite3.connect(":memory:") as conn:
        per = rows_per_statement(conn, 2 + len(BUILTIN_NAMES))
    conn.close()
    batch = per + per // 8 + 1  # one full statement and a shorter rest
    assert batch < 300
    ref = _sweep(chunk_size=batch)
    pd.testing.assert_frame_equal(_sweep(path, chunk_size=batch), ref, check_exact=True)
    pd.testing.assert_frame_equal(store_read.read_table(path), ref, check_exact=True)
    with sqlite3.connect(path) as conn:
        batches = conn.execute("SELECT rows FROM batches ORDER BY id").fetchall()
    conn.close()
    assert sorted(r for (r,) in batches) == sorted(([batch] * (300 // batch) + [300 % batch]) * 2)


def test_close_commits_every_batch_handed_over(tmp_path):
    """The rows of a sweep handed over in 16 batches, more than the queue holds, then closed."""
    ref = _sweep()
    store = Store(tmp_path / "c.db", _identity(), _configs(), 300)
    for ci in range(2):
        for start in range(0, 300, 40):
            part = ref[(ref["config_index"] == ci) & (ref["trial"] >= start) & (ref["trial"] < start + 40)]
            store.submit_columns({k: part[k].to_numpy() for k in ("config_index", "trial", *BUILTIN_NAMES)})
    store.close()
    pd.testing.assert_frame_equal(store_read.read_table(tmp_path / "c.db"), ref, check_exact=True)


def _identity():
    from relucore.sweeps.config import GENERATOR_VERSION, SWEEP_FORMAT, root_entropy

    return {"seed": str(root_entropy(5)), "measure": None, "sweep_format": SWEEP_FORMAT, "generator": GENERATOR_VERSION}


def _configs():
    from relucore.sweeps.config import expand_grid

    return expand_grid(GRID)


def test_an_interrupted_sweep_commits_what_it_handed_over_and_resumes_bitwise(tmp_path, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) while the 5th batch computes: the 4 batches handed over
    before it, still waiting for a slow writer, are committed when the sweep closes the
    store; a resume runs only the others."""
    ref = _sweep()
    path = tmp_path / "ctrl-c.db"
    orig, ran = api.run_batch, []
    slow_commit, at_interrupt = Store._commit, []

    def slow(self, cols):
        time.sleep(0.2)
        slow_commit(self, cols)

    monkeypatch.setattr(Store, "_commit", slow)

    def interrupted(task):
        if len(ran) == 4:
            at_interrupt.append(len(store_read.read_table(path)))
            raise KeyboardInterrupt
        ran.append(task["trials"])
        return orig(task)

    monkeypatch.setattr(api, "run_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _sweep(path, n_threads=1)
    monkeypatch.undo()
    assert at_interrupt[0] < 4 * 50  # the interrupt came while batches waited for the writer
    saved = store_read.read_table(path)
    assert len(saved) == 4 * 50
    rerun = []
    monkeypatch.setattr(api, "run_batch", lambda task: rerun.extend(task["trials"]) or orig(task))
    pd.testing.assert_frame_equal(_sweep(path), ref, check_exact=True)
    assert len(rerun) == 600 - 4 * 50


def test_a_failing_commit_surfaces_in_the_sweep_as_the_stores_error(tmp_path, monkeypatch):
    """A batch whose commit fails on the writer thread (here: another connection holds the write
    lock from the 4th batch on, past the busy timeout) raises the store's OSError from ``sweep``,
    naming the file; the 3 batches committed before stay, and a resume completes the table bitwise."""
    ref = _sweep()
    path = tmp_path / "locked.db"
    orig, count = api.run_batch, [0]

    def deny_after_three(task):
        count[0] += 1
        if count[0] == 4:
            deadline = time.monotonic() + 60
            while len(store_read.read_table(path)) < 150:  # the first three batches are committed
                assert time.monotonic() < deadline
                time.sleep(0.01)
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")  # holds the write lock
            deny_after_three.conn = blocker
        return orig(task)

    monkeypatch.setattr("relucore.sweeps.store_errors.BUSY_TIMEOUT", 0.05)
    monkeypatch.setattr(api, "run_batch", deny_after_three)
    with pytest.raises(OSError) as info:
        _sweep(path, n_threads=1)
    deny_after_three.conn.execute("ROLLBACK")
    deny_after_three.conn.close()
    monkeypatch.undo()
    assert info.value.filename == str(path) and "locked by another writer" in str(info.value)
    saved = store_read.read_table(path)
    assert len(saved) == 150
    pd.testing.assert_frame_equal(_sweep(path), ref, check_exact=True)


def test_encoded_values_are_what_sqlite_binds():
    cols = {
        "config_index": np.array([0, 0]),
        "trial": np.array([3, 4]),
        **{c.name: np.zeros(2, dtype=c.dtype) for c in MEASURED},
        "status": np.array(["converged", "error"], dtype=object),
        "error": np.array(["", "boom"], dtype=object),
        "flag": [True, False],
    }
    cols["loss"] = np.array([np.nan, -np.float64(np.nan)])
    names, values, extras, bools = encode(cols, [7, 7])
    assert values.shape == (2, len(names)) and extras == ["flag"] and bools == {"flag"}
    row = values[1].tolist()
    assert row[:2] == [7, 4] and type(row[0]) is int and row[-1] == 0 and type(row[-1]) is int
    loss = names.index("loss")
    nan = values[0, loss]  # the canonical NaN, bound as a float (SQLite stores NULL)
    assert type(nan) is float and np.array(nan).view(np.uint64) == np.array(np.nan).view(np.uint64)
    assert values[1, loss] == (-np.float64(np.nan)).tobytes()
    with pytest.raises(ValueError, match="values for 2 rows"):
        encode(dict(cols, gap=np.zeros(1)), [7, 7])
