"""b4 and vardi-shamir: local minimum, closed form, and the gamma-dependence of the limit."""

import numpy as np

from relucore import experiments
from relucore.experiments.counterexamples import b4_limit


def test_b4_converges_to_a_non_global_local_minimum():
    r = experiments.run("b4", quick=True)
    assert all(c.passed for c in r.claims), [c for c in r.claims if not c.passed]
    res, X, y = r.data["result"], r.data["X"], r.data["y"]
    assert X[0] @ X[1] < 0 and abs(X[0] @ X[1]) < X[1] @ X[1]
    assert np.all(res.history.beta[:, 0, 0] < 0)
    assert abs(res.beta[0, 0] - b4_limit(X, y, r.data["delta"])) < 1e-10
    # Local minimum: the loss is y_1^2/2 and stays there along +- any small direction.
    w = res.W[0]
    rng = np.random.default_rng(0)
    for _ in range(50):
        u = rng.standard_normal(w.size)
        u *= 1e-3 / np.linalg.norm(u)
        for v in (w + u, w - u):
            p = X @ v
            assert 0.5 * np.sum((np.maximum(p, 0) - y) ** 2) >= res.loss - 1e-14
    assert res.loss > 0.1 * y[0] ** 2


def numpy_gd(X, y, w, eta, steps):
    for _ in range(steps):
        p = X @ w
        w = w - eta * X.T @ ((p > 0) * (np.maximum(p, 0) - y))
    return w


def test_vardi_shamir_limit_depends_on_gamma():
    r = experiments.run("vardi-shamir", quick=True, gammas=(1.0, 5.0))
    assert all(c.passed for c in r.claims)
    res, X, y = r.data["result"], r.data["X"], r.data["y"]
    assert np.linalg.norm(res.W[0, 0] - res.W[1, 0]) > 0.1
    # Independent numpy weight-space GD for gamma = 1 reaches the same limit.
    w = numpy_gd(X[0], y[0], np.full(3, 1e-6), 1e-4, int(res.nit[0]))
    np.testing.assert_allclose(w, res.W[0, 0], atol=1e-8)
