"""flow-events: the exact flow with its events beside GD at three step sizes."""

import numpy as np
import pytest

from relucore import experiments


@pytest.fixture(scope="module")
def quick():
    pytest.importorskip("matplotlib")
    return experiments.run("flow-events", quick=True)


def test_claims_hold(quick):
    assert all(c.passed for c in quick.claims), quick.claims
    assert [c.name for c in quick.claims] == [
        "flow_limit_certified",
        "gd_tracks_flow_order_eta",
        "gd_limit_to_flow_limit_order_eta",
        "gd_ends_on_flow_pattern",
    ]


def test_table_and_data(quick):
    rows = quick.table
    assert [r["steps_to_horizon"] for r in rows] == [25, 100, 400]
    eta = np.array([r["eta"] for r in rows])
    np.testing.assert_allclose(eta * [25, 100, 400], quick.data["horizon"], rtol=1e-15)
    # errors fall by about 4x for each 4x smaller step
    err = np.array([r["max_error_to_flow"] for r in rows])
    assert np.all(err[:-1] / err[1:] > 2.5) and np.all(err[:-1] / err[1:] < 6)
    assert quick.data["event_times"].size == len(quick.data["event_kinds"]) > 0
    assert quick.figure is not None


def test_flow_is_the_small_step_limit_of_the_recorded_gd(quick):
    """Independent of the experiment's own error measure: GD to time T at the smallest step,
    against the flow state at T returned for that time alone."""
    import relucore as rc
    from relucore.experiments._common import lai_data

    X, y = lai_data(np.random.default_rng(quick.params["rng"]), quick.params["n"], quick.params["d"])
    T = quick.data["horizon"]
    f = rc.flow(X, y, signs=(1.0, -1.0), times=[T])
    for s, bound in ((100, 0.05), (400, 0.015)):
        gd = rc.train(X, y, signs=(1.0, -1.0), eta=T / s, steps=s, tol=0)
        assert np.linalg.norm(gd.beta - f.beta_t[0]) / np.linalg.norm(f.beta_t[0]) < bound
