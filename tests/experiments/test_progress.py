"""Every registered experiment reports its inner loop through ``progress``; None means "only on a terminal"."""

import sys

import pytest
import tqdm.auto
import tqdm.std

from relucore import experiments
from relucore.experiments._progress import progress_bar, show_progress
from relucore.plots._style import pyplot


class _RecordingBar(tqdm.std.tqdm):
    """A tqdm that remembers every bar made, with the count it reached."""

    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _RecordingBar.made.append(self)


@pytest.fixture
def bars(monkeypatch):
    _RecordingBar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", _RecordingBar)
    return _RecordingBar.made


def test_none_means_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert show_progress(None) is False and show_progress(True) is True
    assert progress_bar(None, "x", 3).disable
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert show_progress(None) is True and show_progress(False) is False
    bar = progress_bar(None, "x", 3)
    assert not bar.disable
    bar.close()


@pytest.mark.parametrize("name", experiments.names())
def test_every_experiment_reports_its_inner_loop(name, bars, capsys):
    result = experiments.run(name, quick=True, progress=True)
    if result.figure is not None:
        pyplot().close(result.figure)
    own = [b for b in bars if b.desc == name]
    assert own, f"{name} drew no progress bar of its own"
    # Each of its bars counts more than one unit and reaches its total.
    assert any(b.total > 1 for b in own) or name == "vardi-shamir"
    assert all(b.n == b.total for b in own), [(b.n, b.total) for b in own]
    assert name in capsys.readouterr().err


def test_progress_false_draws_nothing(capsys):
    pyplot().close(experiments.run("fig3", quick=True, progress=False).figure)
    assert capsys.readouterr().err == ""
