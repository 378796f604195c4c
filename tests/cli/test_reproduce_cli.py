"""`relucore reproduce`: outputs, summary, exit codes (failed claim vs raising experiment)."""

import json
import os
import sys

import pytest

from relucore import cli
from relucore.experiments import _base
from relucore.experiments._base import Claim, ExperimentResult


def test_reproduce_writes_outputs_and_summary(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["reproduce", "b4", "vardi-shamir", "--quick", "--out", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "PASS example1_inactive" in text and "expected:" in text and "measured:" in text
    assert "2 experiments" in text
    for name in ("b4", "vardi-shamir"):
        for ext in ("csv", "json", "png"):
            assert (out / f"{name}.{ext}").stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert [e["name"] for e in summary["experiments"]] == ["b4", "vardi-shamir"]
    assert all(c["passed"] for e in summary["experiments"] for c in e["claims"])
    assert (out / "summary.txt").read_text().startswith("relucore reproduce (quick settings")


def test_list_and_unknown_name(capsys, tmp_path):
    assert cli.main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out
    for name in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "b4", "vardi-shamir"):
        assert name in listed
    assert cli.main(["reproduce", "no-such-figure", "--out", str(tmp_path)]) == 2
    assert "unknown experiment" in capsys.readouterr().err


@pytest.fixture
def fake_registry(monkeypatch):
    reg = dict(_base._REGISTRY)
    monkeypatch.setattr(_base, "_REGISTRY", reg)

    def failing(*, quick=False, rng=0, progress=None):
        return ExperimentResult("failing-claim", {}, [{"x": 1}], [Claim("c", "1", "2", False)])

    def raising(*, quick=False, rng=0, progress=None):
        raise RuntimeError("boom")

    _base.register("failing-claim", "a claim that fails")(failing)
    _base.register("raising", "an experiment that raises")(raising)
    return reg


def test_failed_claim_is_reported_not_fatal(fake_registry, tmp_path, capsys):
    code = cli.main(["reproduce", "failing-claim", "--out", str(tmp_path), "--no-progress"])
    text = capsys.readouterr().out
    assert code == 0
    assert "FAIL c" in text and "failed claims" in text
    assert cli.main(["reproduce", "failing-claim", "--out", str(tmp_path), "--no-progress", "--strict"]) == 1


def test_raising_experiment_exits_1_and_others_still_run(fake_registry, tmp_path, capsys):
    code = cli.main(["reproduce", "raising", "b4", "--quick", "--out", str(tmp_path), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    assert "ERROR" in captured.out and "RuntimeError: boom" in captured.out
    assert "PASS example1_inactive" in captured.out
    assert "Traceback" in captured.err
    assert os.path.exists(tmp_path / "b4.png")


def test_reproduce_names_missing_extras(monkeypatch, capsys):
    from relucore import cli
    from relucore.experiments import reproduce as _reproduce

    monkeypatch.setattr(_reproduce, "REQUIRED_EXTRAS", (("relucore_no_such_module", "plots"),))
    assert cli.main(["reproduce", "all", "--quick", "--out", "unused"]) == 2
    assert "pip install 'relucore[plots]'" in capsys.readouterr().err


@pytest.mark.parametrize("width", [60, 100, 200])
def test_list_is_an_aligned_table_wrapped_to_the_terminal(width, monkeypatch, capsys):
    from relucore import experiments

    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    names = experiments.names()
    col = max(map(len, names)) + 2
    assert all(len(line) < width for line in lines)
    starts = [line for line in lines if not line.startswith(" ")]
    assert [line.split()[0] for line in starts] == names  # one row per experiment, names whole
    assert all(line[col - 2 : col] == "  " and line[col] != " " for line in lines)  # one description column
    if width == 200:
        assert len(lines) == len(names)


def test_old_name_on_the_command_line_is_one_line_naming_the_new(tmp_path, capsys):
    assert cli.main(["reproduce", "meanfield_noise", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hyphenated, use 'meanfield-noise'" in err, err


@pytest.fixture
def two_tiny(monkeypatch):
    """A registry of two tiny experiments; the second records what had been printed and written when it started."""
    monkeypatch.setattr(_base, "_REGISTRY", {})
    seen = {}

    def first(*, quick=False, rng=0, progress=None):
        seen["first_progress"] = progress
        return ExperimentResult("tiny-first", {}, [{"x": 1}], [Claim("first_claim", "1", "1", True)])

    def second(*, quick=False, rng=0, progress=None):
        seen["stdout_before_second"] = seen["capsys"].readouterr().out
        seen["files_before_second"] = sorted(os.listdir(seen["out"]))
        return ExperimentResult("tiny-second", {}, [{"x": 2}], [Claim("second_claim", "2", "3", False)])

    _base.register("tiny-first", "first")(first)
    _base.register("tiny-second", "second")(second)
    return seen


@pytest.mark.parametrize("tty", [False, True])
def test_claims_stream_as_each_experiment_finishes(two_tiny, tmp_path, capsys, monkeypatch, tty):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    two_tiny.update(capsys=capsys, out=str(tmp_path))
    assert cli.main(["reproduce", "all", "--out", str(tmp_path)]) == 0
    before = two_tiny["stdout_before_second"]
    assert before.startswith("relucore reproduce (full settings, rng 0)")
    assert "PASS first_claim" in before and "second_claim" not in before
    # The first experiment's outputs and the summary so far are on disk before the second starts.
    assert {"tiny-first.csv", "tiny-first.json", "summary.json", "summary.txt"} <= set(two_tiny["files_before_second"])
    # progress=None (no --no-progress) reaches the experiments as "on a terminal or not".
    assert two_tiny["first_progress"] is tty
    captured = capsys.readouterr()
    assert "FAIL second_claim" in captured.out and "2 experiments" in captured.out
    assert ("reproduce:" in captured.err) is tty
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [e["name"] for e in summary["experiments"]] == ["tiny-first", "tiny-second"]


def test_no_progress_reaches_the_experiments(two_tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    two_tiny.update(capsys=capsys, out=str(tmp_path))
    assert cli.main(["reproduce", "all", "--out", str(tmp_path), "--no-progress"]) == 0
    assert two_tiny["first_progress"] is False
    assert capsys.readouterr().err == ""
