"""``relucore sweep CONFIG.toml`` (the subcommand function, run in-process)."""

import re

import pandas as pd
import pytest

from relucore import cli
from relucore.cli import sweep as _sweep_cli


def test_cli_runs_a_toml_sweep_and_resumes(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text(
        'trials = 3\nrng = 4\noutput = "out.csv"\ncheckpoint = "s.db"\n[grid]\nn = [5, 6]\nd = 300\nuse_gram = true\n'
    )
    assert cli.main(["sweep", str(cfg), "--no-progress", "--chunk-size", "2"]) == 0
    table = pd.read_csv(tmp_path / "out.csv")
    assert len(table) == 6 and set(table.n) == {5, 6} and (table.status == "converged").all()
    assert "trials" in capsys.readouterr().out
    import relucore

    direct = relucore.sweep({"n": [5, 6], "d": 300, "use_gram": True}, trials=3, rng=4, progress=False)
    assert table.loss.tolist() == direct.loss.tolist()
    # Same command again: everything comes from the checkpoint.
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 0
    assert pd.read_csv(tmp_path / "out.csv").loss.tolist() == direct.loss.tolist()


def _one_line_error(capsys, match):
    err = capsys.readouterr().err
    assert err.startswith("relucore sweep: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(match, err), err


@pytest.mark.parametrize(
    "text, match",
    [
        ("trials = 1\nrng = 0\n", "exactly one of"),
        ("trials = 1\n[grid]\nn = [5]\n", "missing required key 'rng'"),
        ("trials = 1\nseed = 0\n[grid]\nn = [5]\n", "sweep file key 'seed' was renamed in 1.0: use 'rng'"),
        (
            "trials = 1\nrng = 0\nbatch_size = 2\n[grid]\nn = [5]\n",
            "key 'batch_size' was renamed in 1.0: use 'chunk_size'",
        ),
        ("trials = 1\nrng = 0\nbogus = 1\n[grid]\nn = [5]\n", "unknown key"),
        ("trials = 1\nrng = 0\n[grid]\nn = [5]\nbogus = 1\n", r"unknown key\(s\) \['bogus'\]"),
        ("trials = 1\nrng = 0\n[grid]\nn = ['ten']\n", "n"),
        ("trials = 0\nrng = 0\n[grid]\nn = [5]\n", "trials"),
        ("trials = 1\nrng = -1\n[grid]\nn = [5]\n", "rng must be non-negative"),
        ("trials = 1\nrng = 0\n[grid]\nsigns = [1, -1]\n", "ambiguous"),
        ("trials = 1\nrng = \n", "Invalid value"),
        ("trials = 1\nrng = 0\noutput = 'out.xlsx'\n[grid]\nn = [5]\n", ".csv or .parquet"),
    ],
)
def test_cli_user_errors_are_one_line_with_exit_status_2(tmp_path, capsys, text, match):
    cfg = tmp_path / "s.toml"
    cfg.write_text(text)
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 2
    _one_line_error(capsys, match)


def test_cli_missing_file_and_bad_options_are_one_line_with_exit_status_2(tmp_path, capsys):
    assert cli.main(["sweep", str(tmp_path / "nope.toml")]) == 2
    _one_line_error(capsys, "cannot read .*nope.toml: No such file")
    cfg = tmp_path / "s.toml"
    cfg.write_text("trials = 1\nrng = 0\n[grid]\nn = [5]\n")
    assert cli.main(["sweep", str(cfg), "--workers", "2", "--dask", "tcp://x:1"]) == 2
    _one_line_error(capsys, "not both")
    assert cli.main(["sweep", str(cfg), "--workers", "0"]) == 2
    _one_line_error(capsys, "--workers must be at least 1")


def test_cli_checkpoint_of_another_sweep_is_one_line_with_exit_status_2(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('trials = 2\nrng = 0\ncheckpoint = "s.db"\n[grid]\nn = [5]\nd = 200\n')
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 0
    capsys.readouterr()
    cfg.write_text('trials = 2\nrng = 1\ncheckpoint = "s.db"\n[grid]\nn = [5]\nd = 200\n')
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 2
    _one_line_error(capsys, r"different arguments \(rng: ")


def test_cli_write_failure_is_one_line_with_exit_status_1(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('trials = 1\nrng = 0\noutput = "no/such/folder/out.csv"\n[grid]\nn = [5]\nd = 200\n')
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 1
    _one_line_error(capsys, r"no/such/folder/out\.csv: .*non-existent directory")


@pytest.mark.parametrize("exc", [RuntimeError("a bug"), ValueError("a bug raising ValueError")])
def test_cli_bugs_keep_their_traceback(tmp_path, monkeypatch, exc):
    import relucore

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(relucore, "sweep", broken)
    cfg = tmp_path / "s.toml"
    cfg.write_text("trials = 1\nrng = 0\n[grid]\nn = [5]\n")
    with pytest.raises(type(exc), match="a bug"):
        cli.main(["sweep", str(cfg), "--no-progress"])


def test_example_config_parses():
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sweep_fig2.toml")
    cfg = _sweep_cli.load_config(path)
    from relucore.sweeps.config import expand_grid

    assert len(expand_grid(cfg["grid"])) == 12 and cfg["trials"] > 0


# A background job of a non-interactive shell starts with SIGINT ignored, and Python then installs no
# handler: the child restores the handler a terminal's process has.
_CLI = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from relucore import cli; sys.exit(cli.main(sys.argv[1:]))"
)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_ctrl_c_prints_one_line_and_the_same_command_resumes(tmp_path, workers):
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    cfg = tmp_path / "s.toml"
    cfg.write_text('trials = 100000\nrng = 3\ncheckpoint = "s.db"\nchunk_size = 4\n[grid]\nn = [30]\nd = 3000\n')
    cmd = [sys.executable, "-c", _CLI, "sweep", str(cfg), "--no-progress", *workers]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    saved = 0
    while saved < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        try:
            with sqlite3.connect(f"file:{tmp_path / 's.db'}?mode=ro", uri=True) as conn:
                saved = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
            conn.close()
        except sqlite3.Error:
            pass
    assert saved >= 8, "the sweep did not start writing"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.fullmatch(
        r"relucore sweep: interrupted; (\d+) trials are saved in \S*s\.db, (\d+) to run: "
        r"run the same command again to resume\n",
        err,
    ), err
    kept = int(re.match(r"relucore sweep: interrupted; (\d+)", err).group(1))
    assert kept >= saved
    # The store passes its integrity check and holds exactly the rows the line reports.
    from relucore.sweeps import store_read

    table = store_read.read_table(tmp_path / "s.db", check=True)
    assert len(table) == kept and not table.status.eq("error").any()


def test_ctrl_c_without_a_store_says_nothing_was_saved(tmp_path, monkeypatch, capsys):
    import relucore

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(relucore, "sweep", interrupted)
    cfg = tmp_path / "s.toml"
    cfg.write_text("trials = 1\nrng = 0\n[grid]\nn = [5]\n")
    assert cli.main(["sweep", str(cfg), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert (
        err == 'relucore sweep: interrupted; nothing was saved (set checkpoint = "FILE.db" to make a sweep resumable)\n'
    )


def test_ctrl_c_in_other_commands_is_one_line(monkeypatch, capsys):
    from relucore.cli import app

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(app.SUBCOMMANDS, "demo", (app.SUBCOMMANDS["demo"][0], app.SUBCOMMANDS["demo"][1], interrupted))
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == "relucore demo: interrupted\n"


def test_no_minnorm_progress_bar_inside_the_sweeps_bar(monkeypatch):
    import relucore
    from relucore.theory.minnorm import search

    asked = []
    real = search._progress_bar

    def recording(progress, total):
        asked.append(progress)
        return real(False, total)

    monkeypatch.setattr(search, "_progress_bar", recording)
    relucore.sweep({"n": 6, "d": 200, "minnorm": True, "signs": [[1, -1]]}, trials=2, rng=0, progress=False)
    assert asked and set(asked) == {False}, asked  # None would draw a bar whenever stderr is a terminal


def test_cli_old_batch_size_flag_names_chunk_size(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text("trials = 1\nrng = 0\n[grid]\nn = [5]\n")
    assert cli.main(["sweep", str(cfg), "--batch-size", "2"]) == 2
    assert "--batch-size was renamed in 1.0: use --chunk-size" in capsys.readouterr().err
