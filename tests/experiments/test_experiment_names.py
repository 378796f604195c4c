"""Experiment names are hyphenated; an old underscore spelling is refused with the hyphenated name."""

import pytest

from relucore import experiments
from relucore.experiments import _base
from relucore.experiments.reproduce import _resolve


def test_names_are_hyphenated():
    assert all("_" not in name for name in experiments.names())
    assert {"meanfield-1d", "meanfield-grid", "meanfield-weight-decay", "meanfield-noise"} <= set(experiments.names())


def test_old_underscore_spelling_is_refused_with_the_new_name():
    with pytest.raises(ValueError, match="unknown experiment 'meanfield_noise': .*hyphenated, use 'meanfield-noise'"):
        experiments.get("meanfield_noise")
    with pytest.raises(ValueError, match="use 'meanfield-1d'"):
        _resolve(["meanfield_1d", "meanfield-1d"])
    with pytest.raises(ValueError, match="unknown experiment 'meanfield_nothing'; known: "):
        experiments.get("meanfield_nothing")


def test_run_reports_the_registered_name(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))

    @_base.register("new-style", "registered")
    def new_style(*, quick=False, rng=0, progress=None):
        return _base.ExperimentResult("old_style", {}, [], [])

    assert experiments.run("new-style").name == "new-style"
    with pytest.raises(ValueError, match="hyphenated"):
        _base.register("under_score")
