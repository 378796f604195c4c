"""The typed example that pyright checks in CI (``.ci/typecheck.sh``) also runs and gives right answers."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("typing_extensions")


def test_the_typed_example_runs():
    spec = importlib.util.spec_from_file_location("typed_usage", Path(__file__).with_name("typed_usage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # the flow's loss and the certified GD limit's loss on an interpolating problem: both fit exactly
    assert 0.0 <= mod.run() < 1e-20
