"""predicted_limit / check_limit: the closed forms of Theorems 1, 3, 5 (docs/math.md §5)."""

import warnings

import numpy as np
import pytest

import relucore as rc
from relucore.theory.limits import PremiseWarning


def test_theorem1_formula_written_out():
    ds = rc.sample(10, 2000, rng=0)
    X, y = ds.X, ds.y
    K = X @ X.T
    eta, eps = 1e-4, 0.005
    W = rc.predicted_limit(X, y, eta=eta, eps=eps)
    e = np.full(10, eps)
    w1 = eta * X.T @ (y - e + np.linalg.solve(K, e) / eta)  # Theorem 1's w^(1)
    P = X[y > 0]
    w_inf = w1 + P.T @ np.linalg.solve(P @ P.T, y[y > 0] - P @ w1)  # argmin_{X+ w = y+} ||w - w1||
    np.testing.assert_allclose(W[0], w_inf, atol=1e-12 * np.linalg.norm(w_inf))


def test_theorem3_formula_written_out():
    ds = rc.sample(10, 2000, rng=1)
    X, y = ds.X, ds.y
    K = X @ X.T
    eta, ep, em = 2e-4, np.full(10, 0.004), np.full(10, 0.003)
    W = rc.predicted_limit(X, y, signs=(1, -1), eta=eta, eps=np.stack([ep, em]))
    wp1 = eta * X.T @ (y - ep + em + np.linalg.solve(K, ep) / eta)
    wm1 = eta * X.T @ (-y + ep - em + np.linalg.solve(K, em) / eta)
    Pp, Pm = X[y > 0], X[y <= 0]
    wp = wp1 + Pp.T @ np.linalg.solve(Pp @ Pp.T, y[y > 0] - Pp @ wp1)
    wm = wm1 + Pm.T @ np.linalg.solve(Pm @ Pm.T, -y[y <= 0] - Pm @ wm1)
    np.testing.assert_allclose(W, np.stack([wp, wm]), atol=1e-12 * np.linalg.norm(wp))


@pytest.mark.parametrize(
    "signs,init", [((1,), "positive"), ((1, -1), "positive"), ((1, 1, -1, -1), "disjoint"), ((1, -1, -1), "disjoint")]
)
def test_matches_gradient_descent_in_high_dimension(signs, init):
    ds = rc.sample(10, 2000, rng=2)
    res = rc.train(ds.X, ds.y, signs=signs, init=init, record=1, steps=50_000)
    assert res.success
    chk = rc.check_limit(res, ds.X, ds.y)
    assert chk.frozen_after_step1 and chk.pattern_as_predicted and chk.applies
    assert chk.relative_distance < 1e-9
    W = rc.predicted_limit(ds.X, ds.y, signs=signs, init=init)
    np.testing.assert_allclose(W, res.W, atol=1e-9 * np.linalg.norm(W))
    # Gram-only mode gives the dual coordinates of the same limit.
    A = rc.predicted_limit(gram=ds.X @ ds.X.T, y=ds.y, signs=signs, init=init)
    np.testing.assert_allclose(A @ ds.X, W, atol=1e-9 * np.linalg.norm(W))
    chk_g = rc.check_limit(
        rc.train(gram=ds.X @ ds.X.T, y=ds.y, signs=signs, init=init, steps=50_000), gram=ds.X @ ds.X.T, y=ds.y
    )
    assert chk_g.W_closed is None and chk_g.relative_distance < 1e-9


def test_low_dimension_is_reported_as_not_applying():
    # Fig. 6 setting (d = 15): the regime split fails on most draws.
    applies = []
    for seed in range(6):
        ds = rc.sample(10, 15, rng=100 + seed)
        res = rc.train(ds.X, ds.y, signs=(1, -1), record=1, steps=200_000)
        chk = rc.check_limit(res, ds.X, ds.y)
        applies.append(chk.applies)
        if not chk.applies:
            assert chk.relative_distance > 1e-6 or not chk.pattern_as_predicted
    assert not all(applies)


def test_errors():
    ds = rc.sample(6, 100, rng=3)
    with pytest.raises(ValueError, match="disjoint"):
        rc.predicted_limit(ds.X, ds.y, signs=(1, 1, -1))
    with pytest.raises(ValueError, match="init"):
        rc.predicted_limit(ds.X, ds.y, init="gaussian")


def test_batched_runs():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3, 10, 1000))
    y = rng.uniform(0.1, 1, (3, 10)) * rng.choice([-1.0, 1.0], (3, 10))
    res = rc.train(X, y, signs=(1, -1), record=1, steps=50_000)
    checks = rc.check_limit(res, X, y)
    assert len(checks) == 3
    # At d = 1000 problem 1 of this draw keeps changing its pattern until step 4: the
    # closed form does not apply there (GD ends 1% away), and the check says so.
    assert [c.applies for c in checks] == [True, False, True]
    assert checks[1].pattern_stable_step == 4 and checks[1].relative_distance > 1e-3
    # The closed form of problem 1 contradicts its theorem's premise by itself: predicted_limit warns.
    with pytest.warns(PremiseWarning, match="premise of Theorems 1/3/5 fails"):
        W = rc.predicted_limit(X, y, signs=(1, -1))
    assert W.shape == (3, 2, 1000)
    for b in (0, 2):
        rc.predicted_limit(X[b], y[b], signs=(1, -1))  # no warning (the suite turns warnings into errors)
    for b in range(3):
        single = rc.check_limit(rc.train(X[b], y[b], signs=(1, -1), record=1, steps=50_000), X[b], y[b])
        assert single.applies == checks[b].applies
        assert single.distance == pytest.approx(checks[b].distance, rel=1e-6, abs=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PremiseWarning)  # problem 1's (checked above)
            np.testing.assert_allclose(W[b], rc.predicted_limit(X[b], y[b], signs=(1, -1)), rtol=0, atol=0)
        if checks[b].applies:
            np.testing.assert_allclose(W[b], res.W[b], atol=1e-9 * np.linalg.norm(W[b]))
    K = np.einsum("bnd,bmd->bnm", X, X)
    with pytest.warns(PremiseWarning):
        A = rc.predicted_limit(gram=K, y=y, signs=(1, -1))
    np.testing.assert_allclose(np.einsum("bkn,bnd->bkd", A, X), W, atol=1e-9 * np.abs(W).max())


def test_predicted_limit_stays_a_plain_array():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((5, 300)), rng.uniform(0.1, 1.0, 5)
    W = rc.predicted_limit(X, y)
    assert type(W) is np.ndarray and W.shape == (1, 300)
    np.testing.assert_array_equal(W - 0.0, W)  # arithmetic works as on any array


def test_check_limit_names_shapes_of_data_that_is_not_the_runs():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 40))
    y = np.array([0.5, -0.3, 0.8, -1.0, 0.2])
    res = rc.train(X, y)
    with pytest.raises(ValueError, match=r"X has d=10 features .* but the run has d=40"):
        rc.check_limit(res, X[:, :10], y)
    with pytest.raises(ValueError, match=r"X has n=4 examples but the run has n=5"):
        rc.check_limit(res, X[:4], y[:4])
    with pytest.raises(ValueError, match=r"gram has n=4 examples but the run has n=5"):
        rc.check_limit(res, None, y[:4], gram=(X @ X.T)[:4, :4])
    assert rc.check_limit(res, X, y).applies


def test_results_without_gd_steps_are_refused_by_name_and_verify_takes_them():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 50))
    y = rng.uniform(0.1, 1, 5) * rng.choice([-1, 1], 5)
    flow = rc.flow(X, y, signs=(1, -1))
    sol = rc.minnorm(X, y, signs=(1, -1))
    for res, why in ((flow, "not a FlowResult .the flow has no first step"), (sol, "not a MinNormSolution")):
        with pytest.raises(TypeError, match=why + r".*relucore\.verify\(result, X, y\)"):
            rc.check_limit(res, X, y)
        assert rc.verify(res, X, y).holds  # the alternative the message names works
    with pytest.raises(TypeError, match="not a dict .it takes the result of relucore.train"):
        rc.check_limit({}, X, y)
