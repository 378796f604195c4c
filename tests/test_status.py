"""relucore.Status: one table of outcomes (relucore/core/status.hpp), on every result with one meaning.

The header's table is read here as text and compared with the bound enum, so a row added to the
header but bound differently (or a Python copy of a message) fails; every result type is then run
to a known outcome and its ``status`` must be a member with ``success == status.success``.
"""

import re
from pathlib import Path

import numpy as np
import pytest

import relucore
from relucore import Status

HEADER = Path(__file__).resolve().parents[1] / "cpp" / "include" / "relucore" / "core" / "status.hpp"

#: The outcomes whose claim holds (docs/errors.md, "One rule for success").
SUCCESSES = {"converged", "certified", "completed", "optimal"}


def _header_rows():
    """(name, success, message) of every row of status_table, parsed from the header's text."""
    text = HEADER.read_text()
    body = text[text.index("status_table[] = {") : text.index("};", text.index("status_table[] = {"))]
    rows = re.findall(r'\{Status::(\w+),\s*"(\w+)",\s*(true|false),\s*((?:"[^"]*"\s*)+)\}', body)
    return [(key, name, flag == "true", "".join(re.findall(r'"([^"]*)"', msg))) for key, name, flag, msg in rows]


def test_every_member_has_a_unique_name_a_message_and_a_success_flag():
    members = list(Status)
    assert [int(s) for s in members] == list(range(len(members)))  # the values index the table
    names = [s.name for s in members]
    assert len(set(names)) == len(names)
    for s in members:
        assert isinstance(s.message, str) and s.message.strip(), s
        assert isinstance(s.success, bool)
    assert {s.name for s in members if s.success} == SUCCESSES
    assert "error" in names  # a sweep trial that raised


@pytest.mark.skipif(not HEADER.exists(), reason="not running from a source checkout")
def test_the_bound_enum_is_the_header_table():
    rows = _header_rows()
    assert len(rows) == len(Status)
    for s, (key, name, success, message) in zip(Status, rows):
        assert (s.name, s.success, s.message) == (key, success, message) and name == key


def _check(res, expected):
    assert isinstance(res.status, Status), type(res.status)
    assert res.status is Status[expected], (res.status, res.message)
    assert res.success is res.status.success or res.success == res.status.success


def _data(seed=0, n=6, d=40):
    ds = relucore.sample(n, d, rng=seed)
    return ds.X, ds.y


def test_train_and_trainer():
    X, y = _data()
    _check(relucore.train(X, y, signs=(1, -1)), "converged")
    _check(relucore.train(X, y, signs=(1, -1), steps=3), "max_steps")
    _check(relucore.train(X, y, eta=1e3), "diverged")
    tr = relucore.Trainer(X, y, signs=(1, -1))
    _check(tr.run(callback=lambda t: True), "stopped")
    _check(tr.run(), "converged")
    batch = relucore.train(np.stack([X, X]), np.stack([y, y]), signs=(1, -1), eta=[0.01, 1e3])
    assert batch.status.tolist() == [Status.converged, Status.diverged]
    assert batch.success.tolist() == [Status(v).success for v in batch.status]


def test_limits_flow_and_stalled():
    X, y = _data()
    _check(relucore.train(X, y, signs=(1, -1), steps=np.inf), "certified")
    _check(relucore.Trainer(X, y, signs=(1, -1)).run_to_limit(), "certified")
    _check(relucore.flow(X, y, signs=(1, -1)), "certified")
    _check(relucore.flow(X, y, signs=(1, -1), t_max=1e-6), "t_max")
    # A start where every neuron is inactive on every example: stalled in every front end.
    W0 = -np.linalg.pinv(X).T.sum(axis=0, keepdims=True).repeat(2, axis=0)
    assert (X @ W0.T < 0).all()
    for res in (
        relucore.train(X, y, signs=(1, -1), init=W0),
        relucore.train(X, y, signs=(1, -1), init=W0, steps=np.inf),
        relucore.flow(X, y, signs=(1, -1), init=W0),
    ):
        _check(res, "stalled")


def test_minnorm():
    ds = relucore.sample(5, 60, rng=2)
    _check(relucore.minnorm(ds.X, ds.y, signs=(1,)), "optimal")
    _check(relucore.minnorm(ds.X, ds.y, signs=(1, -1, 1, -1), time_limit=None), "optimal")
    cut = relucore.minnorm(ds.X, ds.y, signs=(1, -1, 1, -1), max_nodes=3)
    _check(cut, "best_candidate")  # not proved optimal: no success
    assert not cut.success and not cut.exact


def test_meanfield():
    X, y = _data(n=20, d=3)
    _check(relucore.meanfield.train(X, y, steps=20, record=0, rng=0), "completed")
    _check(relucore.meanfield.train(X, y, steps=200, eta=1e9, record=0, rng=0), "diverged")


def test_sweep_status_column_holds_names():
    grid = [{"n": 4, "d": 30, "steps": 200}, {"n": 6, "d": 3, "steps": 50}]  # the second: K singular, errors
    table = relucore.sweep(grid, trials=2, rng=1, progress=False)
    names = {s.name for s in Status}
    assert set(table["status"]) <= names
    assert Status.error.name in set(table["status"]) and Status.converged.name in set(table["status"])


def test_the_stalled_rule_touches_only_stationary_outcomes():
    """``_core.stalled_if_unfit`` (the rule run_to_stop, the flow and the certified limit apply)."""
    from relucore import _core

    for s in Status:
        assert _core.stalled_if_unfit(status=s, leaves_unfit=False) is s
        expected = Status.stalled if s in (Status.converged, Status.certified) else s
        assert _core.stalled_if_unfit(status=s, leaves_unfit=True) is expected
