"""relucore.flow: exact gradient flow from event to event, with sliding (docs/math.md §13)."""

import numpy as np
import pytest
from _random_problems import fig4_problem, random_problems
from hypothesis import example, given, settings
from hypothesis import strategies as st

import relucore as rc
from relucore import Status


@pytest.fixture(scope="module")
def fig4_flow():
    X, y = fig4_problem(3)
    return X, y, rc.flow(X, y, signs=(1, -1), times=[2e-5, 1e-3])


def test_gd_approaches_the_flow_at_rate_eta(fig4_flow):
    # GD with step eta run for t / eta steps is at distance O(eta) of the flow at time t:
    # the fitted slope over three decades of eta is 1. t = 2e-5 lies among the events.
    X, y, f = fig4_flow
    assert f.event_times[0] < 2e-5 < f.event_times[-1]
    for T, beta_t in zip(f.times, f.beta_t):
        Ns = np.array([30, 300, 3000, 30000])
        errs = [np.abs(rc.train(X, y, signs=(1, -1), eta=T / N, steps=N, tol=0).beta - beta_t).max() for N in Ns]
        slope = np.polyfit(np.log(T / Ns), np.log(errs), 1)[0]
        assert 0.85 < slope < 1.2, (T, errs)


def test_flow_limit_is_the_small_step_limit_of_gd(fig4_flow):
    X, y, f = fig4_flow
    assert f.status == Status.certified and f.success and f.certificate.holds and f.t_final == np.inf
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    gaps = []
    for eta in (1e-2 / mu1, 1e-3 / mu1):
        g = rc.train(X, y, signs=(1, -1), eta=eta, steps=200_000)
        gaps.append(np.linalg.norm(g.W - f.W) / np.linalg.norm(f.W))
    assert gaps[1] < 1e-3 and 5 < gaps[0] / gaps[1] < 20, gaps


def test_sliding_entries_are_where_small_step_gd_chatters(fig4_flow):
    X, y, f = fig4_flow
    assert any(k.startswith("slide") for k in f.event_kinds)
    assert np.all(f.beta[f.sliding] == 0.0)
    eta = 1e-3 / np.linalg.eigvalsh(X @ X.T)[-1]
    g = rc.train(X, y, signs=(1, -1), eta=eta, steps=100_000, tol=0)
    near_zero = np.abs(g.beta) < 1e-6 * np.abs(y).max()
    # The flow's limit is zero there: held (sliding), or left onto a side so late that it moved
    # by less than 1e-6 (the sliding condition theta(t) tends to a limit of its slowest modes).
    flow_zero = f.sliding | (np.abs(f.beta) < 1e-6 * np.abs(y).max())
    assert near_zero.sum() >= 3
    np.testing.assert_array_equal(near_zero, flow_zero)
    # GD keeps switching those entries (chatter) until their amplitude falls below the rounding
    # level of beta = K alpha, which the engine restores every 1024 steps (docs/math.md §14;
    # measured: the last switch at step 40955).
    assert g.pattern_stable_step > 20_000


def test_events_and_states_are_consistent(fig4_flow):
    X, y, f = fig4_flow
    E = f.event_times.size
    assert E == len(f.event_kinds) == f.event_patterns.shape[0] == f.event_sliding.shape[0]
    assert np.all(np.diff(f.event_times) >= 0)
    # Between events the state at a requested time has the sign pattern of the last event before it.
    for t, beta_t in zip(f.times, f.beta_t):
        e = np.searchsorted(f.event_times, t) - 1
        pattern, sliding = f.event_patterns[e], f.event_sliding[e]
        assert np.all(beta_t[pattern & ~sliding] > 0) and np.all(beta_t[~pattern & ~sliding] <= 0)
        assert np.all(beta_t[sliding] == 0)
    assert "events" in repr(f)


def test_t_max_stops_there_and_times_agree():
    X, y = fig4_problem(4, d=500)
    full = rc.flow(X, y, signs=(1, -1), times=[0.0, 1e-5, 3e-4])
    part = rc.flow(X, y, signs=(1, -1), t_max=3e-4)
    assert part.status == Status.t_max and part.t_final == 3e-4
    np.testing.assert_allclose(part.beta, full.beta_t[2], atol=1e-13)
    np.testing.assert_array_equal(full.beta_t[0], full.beta0)
    assert part.certificate is None


def test_theorem1_flow_without_events_is_the_linear_regression_limit():
    # m = 1, all labels positive, positive init: no entry ever reaches zero, the flow is one
    # linear phase and its limit is the minimum-distance interpolant from the start.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 50))
    y = rng.uniform(0.5, 1.0, 6)
    f = rc.flow(X, y)
    assert f.event_times.size == 0 and f.status == Status.certified
    w0 = f.W0[0]
    w = w0 + X.T @ np.linalg.solve(X @ X.T, y - X @ w0)
    np.testing.assert_allclose(f.W[0], w, atol=1e-12 * np.linalg.norm(w))


def test_refusals():
    X, y = fig4_problem(5, d=40)
    with pytest.raises(ValueError, match="no finite limit"):
        rc.flow(X, np.sign(y), loss="logistic")
    with pytest.raises(ValueError, match="t_max"):
        rc.flow(X, y, t_max=-1.0)
    with pytest.raises(ValueError, match="one problem"):
        rc.flow(np.stack([X, X]), np.stack([y, y]))


@settings(deadline=None, max_examples=12)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 6), extra=st.integers(1, 20), m=st.integers(1, 3))
@example(seed=9154, n=3, extra=19, m=1)
def test_random_flows_match_small_step_gd(seed, n, extra, m):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n + extra))
    y = rng.standard_normal(n)
    signs = rng.choice([-1.0, 1.0], m)
    W0 = 0.3 * rng.standard_normal((m, n + extra))
    f = rc.flow(X, y, signs=signs, init=W0, t_max=1.0 / np.linalg.eigvalsh(X @ X.T)[0])
    assert f.status == Status.t_max
    T = f.t_final
    errs = []
    for N in (2000, 200000):
        g = rc.train(X, y, signs=signs, init=W0, eta=T / N, steps=N, tol=0)
        errs.append(np.abs(g.beta - f.beta).max())
    scale = np.abs(f.beta).max() + np.abs(y).max()
    # O(eta): a hundred times smaller step, at least ten times closer (or both at rounding level). The
    # constant of O(eta) depends on where an event falls between two GD steps, so a ratio of 10 in the
    # step can give a ratio of 3 in the error (seed 9154, n 3, extra 19, m 1: 1.7e-5, 5.9e-6, 3.4e-7 for
    # N = 2e3, 2e4, 2e5).
    assert errs[1] <= 0.1 * errs[0] or errs[1] < 1e-9 * scale, errs


@settings(deadline=None, max_examples=20)
@given(problem=random_problems(n_max=8, scales=[1e-6, 1e-2, 1.0]))
def test_random_flow_limits_are_stationary(problem):
    # Starts down to 1e-6 (near-degenerate: many entries start next to zero). The limit must be
    # a rest point: zero residual on every example some neuron is active on, sliding entries at
    # zero, and the reported pattern the sign pattern of the limit.
    X, y, signs, W0 = problem
    f = rc.flow(X, y, signs=signs, init=W0)
    assert f.status in (Status.certified, Status.stalled) and f.certificate.holds and f.certificate.margin >= 0
    h = signs @ np.maximum(f.beta, 0.0)
    assert np.abs((h - y)[f.pattern.any(axis=0)]).max(initial=0.0) <= 1e-9 * (1 + np.abs(y).max())
    assert np.all(f.beta[f.sliding] == 0.0)
    assert np.all(f.beta[f.pattern & ~f.sliding] >= 0) and np.all(f.beta[~f.pattern & ~f.sliding] <= 0)


@pytest.mark.parametrize(
    "kw", [dict(eta=0.1), dict(steps=100), dict(tol=1e-9), dict(record=1), dict(engine="dual"), dict(n_threads=2)]
)
def test_flow_refuses_the_options_it_cannot_implement(kw):
    """eta, steps, tol, ... of a GD run have no meaning for the flow: a TypeError names them (not ignored)."""
    ds = rc.sample(5, 40, rng=0)
    (name,) = kw
    with pytest.raises(TypeError, match=f"flow\\(\\) got {name}=.*cannot implement"):
        rc.flow(ds.X, ds.y, **kw)
    with pytest.raises(TypeError, match=f"got {name}="):
        rc.flow(ds.X, ds.y, options=rc.TrainOptions(**kw))
    # at their defaults they are harmless (a TrainOptions shared with train)
    rc.flow(ds.X, ds.y, options=rc.TrainOptions(signs=(1, -1)))
