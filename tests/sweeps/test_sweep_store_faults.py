"""The store under file-system faults (disk full, read-only location, corruption), old
JSON-lines checkpoints (refused for resuming, imported), and the store commands of the CLI."""

import ctypes
import errno
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import relucore
from relucore.cli import app as cli
from relucore.sweeps import store_read
from relucore.sweeps.columns import MEASURED, TRAILING_COLUMNS
from relucore.sweeps.store import sqlite_error
from relucore.sweeps.store_read import read_table

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _sweep_helpers as H  # noqa: E402

GRID = {"n": [6, 8], "d": 1000, "use_gram": True}  # the Gram fast path: many rows quickly
# The folder holding the relucore under test (the checkout's python/ or site-packages).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(relucore.__file__)))


def _fast(path=None, trials=600):
    return relucore.sweep(GRID, trials=trials, rng=5, chunk_size=50, checkpoint=path, progress=False)


def _run_child(body, *, preexec_fn=None):
    """Runs ``body`` in a fresh interpreter; returns its JSON output (one line)."""
    code = f"import sys; sys.path.insert(0, {SRC!r})\n" + textwrap.dedent(body)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         preexec_fn=preexec_fn)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


DISK_FULL_CHILD = """
    import json, resource, signal
    import relucore
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail (EFBIG) instead
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
    try:
        relucore.sweep({grid!r}, trials=600, rng=5, chunk_size=50, checkpoint={path!r}, progress=False)
        print(json.dumps(None))
    except OSError as exc:
        print(json.dumps([type(exc).__name__, exc.errno, exc.filename, str(exc)]))
"""


@pytest.mark.parametrize("limit", [2048, 96 * 1024])
def test_disk_full_names_the_store_keeps_what_was_committed_and_leaves_no_stray_file(tmp_path, limit):
    """``RLIMIT_FSIZE`` makes every write past ``limit`` bytes fail, as a full disk does: while
    the store is created (2 KiB) or after some batches (96 KiB)."""
    path = str(tmp_path / "full.db")
    got = _run_child(DISK_FULL_CHILD.format(limit=limit, grid=GRID, path=path))
    assert got is not None, "the size limit was never reached"
    kind, code, filename, text = got
    assert kind == "OSError" and filename == path and path in text
    assert code in (errno.ENOSPC, errno.EIO, errno.EFBIG)
    if limit == 2048:  # nothing committed: no file at all
        assert os.listdir(tmp_path) == []
        return
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        committed = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
    conn.close()
    assert 0 < committed < 1200
    pd.testing.assert_frame_equal(_fast(path), _fast(), check_exact=True)
    assert os.listdir(tmp_path) == ["full.db"]  # WAL and shared memory merged and removed


def test_sqlite_errors_become_named_oserrors_or_checkpoint_errors():
    def err(name, text):
        exc = sqlite3.OperationalError(text)
        exc.sqlite_errorname = name
        return sqlite_error(exc, "x.db")

    full = err("SQLITE_FULL", "database or disk is full")
    assert isinstance(full, OSError) and full.errno == errno.ENOSPC and full.filename == "x.db"
    assert err("SQLITE_READONLY", "attempt to write a readonly database").errno == errno.EACCES
    assert err("SQLITE_IOERR_WRITE", "disk I/O error").errno == errno.EIO
    damaged = err("SQLITE_CORRUPT", "database disk image is malformed")
    assert isinstance(damaged, relucore.CheckpointError) and "'x.db' is damaged" in str(damaged)


def _drop_file_capabilities():
    """In the child, before exec: root loses the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


READ_ONLY_CHILD = """
    import json
    import relucore
    from relucore.sweeps import store_read
    out = {{}}
    for name in ("new.db", "done.db"):
        try:
            relucore.sweep({grid!r}, trials=600, rng=5, chunk_size=50, checkpoint={folder!r} + "/" + name,
                           progress=False)
            out[name] = None
        except OSError as exc:
            out[name] = [exc.errno, exc.filename]
    table = store_read.read_table({folder!r} + "/done.db")
    out["rows"] = len(table)
    out["digest"] = table.to_csv(index=False)
    out["status"] = str(store_read.status({folder!r} + "/done.db")).splitlines()[-2]
    print(json.dumps(out))
"""


def test_read_only_location_refuses_to_write_and_still_reads(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    done = _fast(folder / "done.db")
    os.chmod(folder / "done.db", 0o444)
    os.chmod(folder, 0o555)
    try:
        got = _run_child(READ_ONLY_CHILD.format(grid=GRID, folder=str(folder)), preexec_fn=_drop_file_capabilities)
    finally:
        os.chmod(folder, 0o755)
    assert got["new.db"] == [errno.EACCES, str(folder / "new.db")]
    assert got["done.db"][0] == errno.EACCES and got["done.db"][1] == str(folder / "done.db")
    assert got["rows"] == 1200 and got["digest"] == done.to_csv(index=False)
    assert got["status"] == "total: 1200 of 1200 trials saved, 0 errors, 0 to run"
    assert sorted(os.listdir(folder)) == ["done.db"]


def test_corrupted_store_is_a_clear_error_naming_the_file(tmp_path, capsys):
    path = tmp_path / "bad.db"
    _fast(path)
    size = os.path.getsize(path)
    assert size > 8 * 4096
    with open(path, "r+b") as f:  # scribble over the middle of some B-tree pages
        for page in (3, 5, 7):
            f.seek(page * 4096 + 8)
            f.write(b"\xff" * 600)
    with pytest.raises(relucore.CheckpointError, match=rf"store '{path}' is damaged \(SQLite"):
        _fast(path)
    with pytest.raises(relucore.CheckpointError, match="is damaged"):
        store_read.read_table(path)
    assert cli.main(["sweep", "export", str(path), str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "damaged" in err[0]


def _write_old_checkpoint(path, table, configs, seed, records, torn=b""):
    """A JSON-lines checkpoint as relucore wrote them before the store (format in legacy.py)."""
    keep = ["config_index", "trial", *(c.name for c in MEASURED), *TRAILING_COLUMNS]
    rows = [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
        for r in table[keep].to_dict("records")
    ]
    arguments = {"seed": str(seed), "measure": None, "relucore": "0.1.0", "configs": configs}
    header = {"format": "relucore-sweep", "version": 1, "fingerprint": "f" * 64, "arguments": arguments}
    lines = [json.dumps(header, sort_keys=True)]
    for start, stop in records:
        chunk = rows[start:stop]
        sha = hashlib.sha256(json.dumps(chunk, sort_keys=True).encode()).hexdigest()
        lines.append(json.dumps({"sha": sha, "rows": chunk}, sort_keys=True))
    path.write_bytes(("\n".join(lines) + "\n").encode() + torn)


def test_old_checkpoint_is_refused_for_resuming_and_imported_in_one_command(tmp_path, capsys, monkeypatch):
    configs = relucore.sweeps.config.expand_grid(H.GRID)
    full = relucore.sweep(H.GRID, trials=5, rng=7, progress=False)
    old = tmp_path / "old.ckpt"
    # 12 of 15 rows, one record written twice (two writers), a torn last record
    _write_old_checkpoint(old, full, configs, 7, [(0, 4), (4, 8), (4, 8), (8, 12)], torn=b'{"sha": "ab')
    with pytest.raises(relucore.CheckpointError, match=r"relucore sweep import .*old\.ckpt NEW\.db"):
        relucore.sweep(H.GRID, trials=5, rng=7, checkpoint=old, progress=False)
    new = tmp_path / "new.db"
    assert cli.main(["sweep", "import", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "imported 12 rows" in out and "4 rows were already in the store" in out and "(11 bytes)" in out
    # The imported rows read back as they were written (format 1: rows of relucore 0.1.0) ...
    part = read_table(new)
    key = ["config_index", "trial"]
    merged = part[key].merge(full.reset_index(drop=True), on=key, how="left")
    assert len(part) == 12
    pd.testing.assert_frame_equal(part[full.columns].reset_index(drop=True), merged[full.columns], check_exact=True)
    # ... but a sweep of this relucore (format 2) does not resume them: it says why.
    with pytest.raises(relucore.CheckpointError, match="sweep format 1.*computes format 3.*stalled"):
        relucore.sweep(H.GRID, trials=5, rng=7, checkpoint=new, progress=False)
    ran = []
    orig = relucore.sweeps.api.run_batch
    monkeypatch.setattr(relucore.sweeps.api, "run_batch", lambda task: ran.extend(task["trials"]) or orig(task))
    monkeypatch.setattr(relucore.sweeps.api, "SWEEP_FORMAT", 1)  # a relucore of format 1 resumes them
    monkeypatch.setattr(relucore.sweeps.api, "GENERATOR_VERSION", None)  # (it recorded no generator version)
    resumed = relucore.sweep(H.GRID, trials=5, rng=7, checkpoint=new, progress=False)
    assert len(ran) == 3  # only the rows the old file lacked
    pd.testing.assert_frame_equal(resumed, full, check_exact=True)
    # damage that is not a torn tail is an error naming the file and the line
    lines = old.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"rows"', b'"rowz"')
    old.write_bytes(b"\n".join(lines))
    assert cli.main(["sweep", "import", str(old), str(tmp_path / "other.db")]) == 2
    err = capsys.readouterr().err
    assert "record 2 (line 3) is damaged" in err and str(old) in err
    assert not (tmp_path / "other.db").exists()


def test_cli_status_and_export(tmp_path, capsys):
    path = tmp_path / "s.db"
    table = relucore.sweep(H.GRID, trials=3, rng=7, checkpoint=path, progress=False)
    assert cli.main(["sweep", "status", str(path)]) == 0
    out = capsys.readouterr().out
    assert "total: 9 of 9 trials saved, 0 errors, 0 to run" in out and '"init":"gaussian"' in out
    assert cli.main(["sweep", "export", str(path), str(tmp_path / "t.csv")]) == 0
    assert capsys.readouterr().err.strip() == f"wrote 9 rows to {tmp_path / 't.csv'}"
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv"), pd.read_csv(_csv(table, tmp_path)))
    for argv, text in [
        (["sweep", "status", str(tmp_path / "nope.db")], "nope.db: no such file"),
        (["sweep", "status"], "usage: relucore sweep status STORE"),
        (["sweep", "export", str(path), str(tmp_path / "t.txt")], "must end in .csv or .parquet"),
    ]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and text in err[0]


def _csv(table, folder):
    relucore.save_table(table, folder / "ref.csv")
    return folder / "ref.csv"
