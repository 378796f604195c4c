"""Property-based tests (hypothesis, profile "ci" of conftest.py) of relucore.minnorm.

Independent checks, none a restatement of the solver:

- scale: the constraints ``sum_k s_k relu(w_k^T x_i) = y_i`` are positively homogeneous,
  so ``X -> c X``, ``y -> l y`` maps the solution to ``(l / c) W`` (objective times
  ``(l / c)^2``). For powers of two (2^+-500 included) the answer is bitwise the scaled
  one with the same flags; for ``c = 1e+-150`` to 1e-12;
- the problem does not depend on the order of the examples nor on the labelling of the
  neurons, and ``(y, s) -> (-y, -s)`` leaves it unchanged;
- optimality against feasible points built here: ``w_k = X^T K^{-1} t_k`` with
  ``t_+ = relu(y) + r``, ``t_- = relu(-y) + r`` (any ``r >= 0``) interpolates, so its norm
  bounds the minimum; so do a GD run's limit when it interpolates, and (m = 1) any
  ``w = X^T K^{-1} t`` with ``t = y`` on ``S+`` and ``t <= 0`` elsewhere;
- KKT conditions recomputed here from W alone when ``exact``;
- a result with ``success=True`` holds only finite numbers, whatever the scale of the data.
"""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from _strategies import problem, seeds  # noqa: E402
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import relucore  # noqa: E402

SIGNS = [(1.0,), (-1.0,), (1.0, -1.0), (1.0, 1.0, -1.0), (2.0, -0.5)]


def solve(X, y, signs, **kw):
    return relucore.minnorm(X, y, signs=signs, max_nodes=400, time_limit=None, **kw)


def assert_finite_if_success(sol):
    if sol.success:
        for part in (sol.W, sol.alpha, sol.beta, sol.objective, sol.certificate.max_residual):
            if part is not None:
                assert np.all(np.isfinite(part)), "a result marked success holds a NaN or an infinity"


@settings(max_examples=20)
@given(
    seed=seeds,
    n=st.integers(2, 6),
    signs=st.sampled_from(SIGNS),
    kc=st.sampled_from([-500, -200, -1, 3, 200, 500]),
    kl=st.sampled_from([-300, -2, 0, 5, 300]),
)
def test_powers_of_two_scale_the_answer_bitwise(seed, n, signs, kc, kl):
    # W ~ l / c, the objective ~ (l / c)^2 and alpha ~ l / c^2 must fit in float64 (else a ValueError).
    assume(abs(kl - kc) <= 500 and abs(kl - 2 * kc) <= 1000)
    X, y = problem(seed, n, 3 * n + 2)
    c, lam = 2.0**kc, 2.0**kl
    ref = solve(X, y, signs)
    res = solve(c * X, lam * y, signs)
    assert (res.success, res.exact, res.status) == (ref.success, ref.exact, ref.status)
    assert np.array_equal(res.W, (lam / c) * ref.W)
    assert np.array_equal(res.beta, lam * ref.beta)
    assert res.objective == (lam / c) ** 2 * ref.objective
    assert np.array_equal(res.active_set, ref.active_set)
    # Gram-only mode: K -> c^2 K gives alpha -> (l / c^2) alpha, bitwise too.
    g = solve(None, lam * y, signs, gram=(c * c) * (X @ X.T))
    g0 = solve(None, y, signs, gram=X @ X.T)
    assert g.W is None and g.exact == g0.exact
    assert np.array_equal(g.alpha, (lam / (c * c)) * g0.alpha)


@settings(max_examples=15)
@given(seed=seeds, n=st.integers(2, 6), signs=st.sampled_from(SIGNS), c=st.sampled_from([1e-150, 1e150, 3.0, 0.7]))
def test_decimal_scales_give_the_same_answer_to_rounding(seed, n, signs, c):
    X, y = problem(seed, n, 3 * n + 2)
    ref = solve(X, y, signs)
    res = solve(c * X, y, signs)
    assert (res.success, res.exact) == (ref.success, ref.exact)
    scale = np.abs(ref.W).max()
    np.testing.assert_allclose(c * res.W, ref.W, rtol=0, atol=1e-12 * scale)
    assert res.objective * c * c == pytest.approx(ref.objective, rel=1e-12)
    assert_finite_if_success(res)


@settings(max_examples=20)
@given(seed=seeds, n=st.integers(2, 6), signs=st.sampled_from(SIGNS), data=st.data())
def test_order_of_examples_and_neurons_and_the_sign_flip_do_not_matter(seed, n, signs, data):
    assume(len(signs) < 3 or n <= 4)  # so that the search finishes within its budget
    X, y = problem(seed, n, 3 * n + 2)
    m = len(signs)
    pe = np.array(data.draw(st.permutations(range(n)), label="examples"))
    pk = np.array(data.draw(st.permutations(range(m)), label="neurons"))
    ref = solve(X, y, signs)
    assert ref.success and ref.exact
    s = np.asarray(signs)
    for res, W_expected in (
        (solve(X[pe], y[pe], signs), ref.W),
        (solve(X, y, tuple(s[pk])), ref.W[pk]),
        (solve(X, -y, tuple(-s)), ref.W),
    ):
        assert res.success and res.exact
        # The optimum value is unique; W too when no two neurons share a sign.
        assert res.objective == pytest.approx(ref.objective, rel=1e-9)
        if len(set(signs)) == m:
            np.testing.assert_allclose(res.W, W_expected, rtol=0, atol=1e-8 * np.abs(ref.W).max())


def target(y, signs):
    """What a feasible network fits: y itself for m >= 2 (Eq. 8); for m = 1 (Eq. 7) the labels
    of the neuron's sign, the others sent to 0."""
    s = np.asarray(signs)
    return y if s.size > 1 else np.where(s[0] * y > 0, y, 0.0)


def feasible_points(X, y, signs, rng, count=4):
    """Feasible weights built independently: w_k = X^T K^{-1} t_k with sum_k s_k relu(t_k) = target(y)."""
    K = X @ X.T
    s = np.asarray(signs)
    out = []
    pos = np.flatnonzero(s > 0)
    neg = np.flatnonzero(s < 0)
    for _ in range(count):
        r = rng.uniform(0, 1, y.size) * rng.integers(0, 2, y.size)
        T = np.zeros((s.size, y.size))
        if pos.size and neg.size:
            kp, kn = pos[0], neg[0]
            T[kp] = (np.maximum(y, 0) + r) / s[kp]
            T[kn] = (np.maximum(-y, 0) + r) / -s[kn]
        else:
            k = 0  # m = 1: fit the labels of the neuron's sign, keep the others off
            fit = s[k] * y > 0
            T[k] = np.where(fit, y / s[k], -r)
        # The other neurons stay inactive everywhere (beta <= 0).
        for k in range(s.size):
            if not T[k].any():
                T[k] = -rng.uniform(0, 1, y.size)
        out.append(np.linalg.solve(K, T.T).T @ X)
    return out


def kkt_residuals_single(X, y, s, w):
    """Eq. (7), m = 1, from w alone: w = X^T phi, phi <= 0 where the neuron must stay off, complementarity."""
    t = y / s
    fit = t > 0
    phi = np.linalg.solve(X @ X.T, X @ w)
    Xw = X @ w
    tmax = np.abs(t).max()
    pmax = max(np.abs(phi).max(), 1e-300)
    return {
        "stationarity": np.linalg.norm(w - X.T @ phi) / max(np.linalg.norm(w), 1e-300),
        "primal": max(np.abs(Xw[fit] - t[fit]).max(initial=0), np.maximum(Xw[~fit], 0).max(initial=0)) / tmax,
        "dual": np.maximum(phi[~fit], 0).max(initial=0) / pmax,
        "complementarity": np.abs(phi[~fit] * Xw[~fit]).max(initial=0) / (pmax * tmax),
    }


@settings(max_examples=20)
@given(seed=seeds, n=st.integers(2, 7), ratio=st.integers(2, 5), signs=st.sampled_from(SIGNS))
def test_no_feasible_point_has_a_smaller_norm(seed, n, ratio, signs):
    X, y = problem(seed, n, ratio * n)
    sol = solve(X, y, signs)
    # Out of budget (m >= 2), the answer is an upper bound (best_candidate, not a success) and
    # search.lower_bound a proven lower one.
    assert sol.success == sol.exact and sol.certificate.max_residual <= 1e-8
    assert sol.status in (relucore.Status.optimal, relucore.Status.best_candidate)
    lower = sol.objective if sol.exact else sol.search.lower_bound
    assert lower <= sol.objective
    s = np.asarray(signs)
    h = s @ np.maximum(X @ sol.W.T, 0).T
    np.testing.assert_allclose(h, target(y, signs), rtol=0, atol=1e-9 * np.abs(y).max())
    for W in feasible_points(X, y, signs, np.random.default_rng(seed + 1)):
        assert np.allclose(s @ np.maximum(W @ X.T, 0), target(y, signs), rtol=0, atol=1e-9)  # feasible
        assert lower <= 0.5 * np.sum(W**2) * (1 + 1e-9)
    if s.size == 1:
        r = kkt_residuals_single(X, y, s[0], sol.W[0])
        assert max(r.values()) <= 1e-8, r


@settings(max_examples=10)
@given(seed=seeds, n=st.integers(2, 6), signs=st.sampled_from(SIGNS[2:4]))
def test_the_gd_limit_bounds_the_minimum_when_it_interpolates(seed, n, signs):
    X, y = problem(seed, n, 4 * n)
    sol = solve(X, y, signs)
    lower = sol.objective if sol.exact else sol.search.lower_bound
    init = "positive" if len(signs) <= 2 else "disjoint"
    gd = relucore.train(X, y, signs=signs, init=init, steps=20000)
    if gd.success and gd.loss <= 1e-20 * np.sum(y**2):
        assert lower <= 0.5 * np.sum(gd.W**2) * (1 + 1e-9)


row_scales = st.lists(st.integers(-60, 60), min_size=2, max_size=6)


@settings(max_examples=30)
@given(
    seed=seeds,
    ex=row_scales,
    ey=st.lists(st.integers(-60, 60), min_size=6, max_size=6),
    signs=st.sampled_from(SIGNS),
    gram=st.booleans(),
)
def test_success_never_carries_nan_or_inf_and_exact_means_small_kkt_residuals(seed, ex, ey, signs, gram):
    """Rows and labels of wildly different magnitudes: a clear ValueError, or a finite answer."""
    n = len(ex)
    X, y = problem(seed, n, 3 * n)
    X = X * (10.0 ** np.array(ex, dtype=float))[:, None]
    y = y * 10.0 ** np.array(ey[:n], dtype=float)
    try:
        sol = solve(None, y, signs, gram=X @ X.T) if gram else solve(X, y, signs)
    except ValueError as exc:
        assert str(exc)
        return
    assert_finite_if_success(sol)
    if sol.exact:
        assert sol.success and sol.certificate.max_residual <= 1e-6, sol.certificate
