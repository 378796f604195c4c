"""Experiment names are hyphenated; the old underscore spellings still work, with a DeprecationWarning."""

import pytest

from relucore import experiments
from relucore.experiments import _base
from relucore.experiments.reproduce import _resolve


def test_names_are_hyphenated():
    assert all("_" not in name for name in experiments.names())
    assert {"meanfield-1d", "meanfield-grid", "meanfield-weight-decay", "meanfield-noise"} <= set(experiments.names())


def test_deprecated_underscore_alias():
    with pytest.warns(DeprecationWarning, match="'meanfield_noise' is deprecated.*use 'meanfield-noise'"):
        func = experiments.get("meanfield_noise")
    assert func is experiments.get("meanfield-noise")
    with pytest.warns(DeprecationWarning, match="meanfield_1d"):
        assert _resolve(["meanfield_1d", "meanfield-1d"]) == ["meanfield-1d"]
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.get("meanfield_nothing")


def test_run_reports_the_registered_name(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))
    monkeypatch.setattr(_base, "_DEPRECATED", dict(_base._DEPRECATED))

    @_base.register("new-style", "registered with a deprecated spelling", deprecated_names=("old_style",))
    def new_style(*, quick=False, seed=0, progress=None):
        return _base.ExperimentResult("old_style", {}, [], [])

    with pytest.warns(DeprecationWarning):
        assert experiments.run("old_style").name == "new-style"
    assert experiments.run("new-style").name == "new-style"
    with pytest.raises(ValueError, match="hyphenated"):
        _base.register("under_score")
