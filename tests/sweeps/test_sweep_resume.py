"""Sweeps with a store: SIGKILL mid-sweep and resume, more trials and configurations,
mismatched arguments, a failed table write."""

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

import relucore

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _sweep_helpers as H  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _records(path):
    """Batches committed to the store so far (0 while it is being created)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM batches").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.fixture(scope="module")
def uninterrupted():
    return relucore.sweep(H.GRID, trials=40, rng=7, measure=H.measure_slow, chunk_size=4, progress=False)


def test_resume_after_sigkill(tmp_path, uninterrupted):
    ckpt = str(tmp_path / "sweep.db")
    code = f"import sys; sys.path.insert(0, {HERE!r}); import _sweep_helpers; _sweep_helpers.run_slow({ckpt!r})"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(ckpt) and _records(ckpt) >= 3:
                break
            assert proc.poll() is None, "the sweep finished or failed before it could be killed"
            time.sleep(0.01)
        else:
            pytest.fail("no checkpoint record appeared")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    saved = _saved_rows(ckpt)
    assert 0 < len(saved) < 120  # killed mid-sweep
    # Resume with a different batch size and thread count: only missing trials run.
    calls = []
    orig = relucore.sweeps.api.run_batch

    def counting(task):
        calls.append(len(task["trials"]))
        return orig(task)

    relucore.sweeps.api.run_batch = counting
    try:
        resumed = relucore.sweep(
            H.GRID,
            trials=40,
            rng=7,
            measure=H.measure_slow,
            chunk_size=3,
            n_threads=1,
            checkpoint=ckpt,
            progress=False,
        )
    finally:
        relucore.sweeps.api.run_batch = orig
    assert sum(calls) == 120 - len(saved)
    pd.testing.assert_frame_equal(resumed, uninterrupted, check_exact=True)
    # Everything is now saved exactly once; a third run computes nothing.
    rows = _saved_rows(ckpt)
    keys = sorted({r["config_index"] for r in rows})
    assert len(keys) == 3
    assert sorted((r["config_index"], r["trial"]) for r in rows) == [(k, t) for k in keys for t in range(40)]
    relucore.sweeps.api.run_batch = counting
    calls.clear()
    try:
        again = relucore.sweep(H.GRID, trials=40, rng=7, measure=H.measure_slow, checkpoint=ckpt, progress=False)
    finally:
        relucore.sweeps.api.run_batch = orig
    assert calls == []
    pd.testing.assert_frame_equal(again, uninterrupted, check_exact=True)


def _saved_rows(path):
    """(config key, trial) of every row in the store, as dicts."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT c.key, t.trial FROM trials t JOIN configs c ON c.id = t.config").fetchall()
    return [{"config_index": k, "trial": t} for k, t in rows]


def _small(ckpt, **kw):
    return relucore.sweep({"n": [5, 6], "d": 200}, trials=4, rng=1, chunk_size=2, checkpoint=ckpt, progress=False, **kw)


def test_checkpoint_of_other_arguments_is_refused(tmp_path):
    ckpt = tmp_path / "c.db"
    _small(ckpt)
    with pytest.raises(relucore.CheckpointError, match="different arguments"):
        relucore.sweep({"n": [5, 6], "d": 200}, trials=4, rng=2, checkpoint=ckpt, progress=False)
    with pytest.raises(relucore.CheckpointError, match="different arguments"):
        _small(ckpt, measure=H.measure_norms)
    (tmp_path / "x.db").write_text("hello\n")
    with pytest.raises(relucore.CheckpointError, match="not a relucore sweep store"):
        _small(tmp_path / "x.db")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(relucore.CheckpointError, match="SQLite database but not a relucore sweep store"):
        _small(other)


def _disk_full(*args, **kwargs):
    raise OSError(28, "No space left on device")


def test_failed_table_write_names_the_path_and_leaves_no_temp_file(tmp_path, monkeypatch):
    table = _small(None)
    out = tmp_path / "t.csv"

    def partial_then_full(self, path, **kwargs):
        with open(path, "w") as f:
            f.write("config_index,tri")
        _disk_full()

    monkeypatch.setattr(pd.DataFrame, "to_csv", partial_then_full)
    with pytest.raises(OSError, match=re.escape(str(out))) as info:
        relucore.save_table(table, out)
    assert info.value.errno == 28 and os.listdir(tmp_path) == []


def _counted(monkeypatch):
    """Counts the trials that run (not read from a checkpoint)."""
    ran = []
    orig = relucore.sweeps.api.run_batch
    monkeypatch.setattr(relucore.sweeps.api, "run_batch", lambda task: ran.extend(task["trials"]) or orig(task))
    return ran


def test_more_trials_and_more_configurations_reuse_the_checkpoint(tmp_path, monkeypatch):
    ckpt = tmp_path / "c.db"

    def run(grid, trials, checkpoint):
        return relucore.sweep(
            grid, trials=trials, rng=7, measure=H.measure_norms, chunk_size=3, checkpoint=checkpoint, progress=False
        )

    run(H.GRID, 8, ckpt)
    ran = _counted(monkeypatch)
    more_trials = run(H.GRID, 10, ckpt)
    assert len(ran) == 3 * 2  # only trials 8 and 9 of each configuration
    pd.testing.assert_frame_equal(more_trials, run(H.GRID, 10, None), check_exact=True)
    # A configuration added in the middle of the grid: only its trials run, the others keep their rows.
    grid = H.GRID[:1] + [{"n": 7, "d": 250}] + H.GRID[1:]
    ran.clear()
    more_configs = run(grid, 10, ckpt)
    assert len(ran) == 10
    pd.testing.assert_frame_equal(more_configs, run(grid, 10, None), check_exact=True)
    # Fewer trials and configurations come from the file; it keeps every row for later.
    ran.clear()
    pd.testing.assert_frame_equal(run(H.GRID[1:], 4, ckpt), run(H.GRID[1:], 4, None), check_exact=True)
    pd.testing.assert_frame_equal(run(grid, 10, ckpt), more_configs, check_exact=True)
    assert len(ran) == 2 * 4  # the uninterrupted reference only
    assert len(_saved_rows(ckpt)) == 4 * 10


def test_incompatible_checkpoint_message_is_short_and_names_the_keys(tmp_path):
    ckpt = tmp_path / "c.db"
    relucore.sweep(H.GRID, trials=2, rng=1, checkpoint=ckpt, progress=False)
    with pytest.raises(relucore.CheckpointError) as info:
        relucore.sweep(H.GRID, trials=3, rng=2, measure=H.measure_norms, checkpoint=ckpt, progress=False)
    message = str(info.value)
    assert len(message) < 400 and 'rng: "1" in the file, "2" now' in message and str(ckpt) in message
    assert "measure: null in the file" in message and "same rng and measure" in message
    assert "configs" not in message and "relucore:" not in message
