"""The two C++ engines and an independent numpy loop agree (docs/math.md §2)."""

import numpy as np
import pytest
from _problems import fig4_problem
from _reference import numpy_gd

import relucore


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


@pytest.mark.parametrize("signs", [(1,), (1, -1), (1, 1, -1, -1)])
@pytest.mark.parametrize("init", ["positive", "gaussian"])
@pytest.mark.parametrize("n,d", [(10, 400), (8, 10)])
def test_dual_and_weight_engines_agree(signs, init, n, d):
    X, y = fig4_problem(n * 100 + d, n=n, d=d)
    # rng only drives init="gaussian" (with a deterministic init it would be ignored, with a warning).
    kw = dict(signs=signs, init=init, steps=300, tol=0.0, rng=3 if init == "gaussian" else None, init_scale=0.1)
    dual = relucore.train(X, y, engine="dual", **kw)
    dense = relucore.train(X, y, engine="weights", **kw)
    assert dual.nit == dense.nit == 300
    # Relative agreement to 1e-10 in every coordinate system.
    assert rel(dual.W, dense.W) < 1e-10
    assert rel(dual.beta, dense.beta) < 1e-10
    assert rel(dual.alpha, dense.alpha) < 1e-10
    assert dual.loss == pytest.approx(dense.loss, rel=1e-8, abs=1e-20)


@pytest.mark.parametrize("signs", [(1,), (1, -1), (1, 1, -1)])
def test_train_matches_numpy_reference(signs):
    X, y = fig4_problem(7, n=12, d=300)
    res = relucore.train(X, y, signs=signs, init="gaussian", init_scale=0.05, rng=1, steps=150, tol=0.0)
    ref = numpy_gd(X, y, res.W0, np.asarray(signs, float), res.eta, 150)
    assert rel(res.W, ref) < 1e-10
    # beta is X w and W = W0 + (alpha - alpha0) X.
    assert rel(res.beta, res.W @ X.T) < 1e-10
    assert rel(res.W, res.W0 + (res.alpha - res.alpha0) @ X) < 1e-12
    h = (np.asarray(signs)[:, None] * np.maximum(res.W @ X.T, 0)).sum(0)
    assert res.loss == pytest.approx(0.5 * np.sum((h - y) ** 2), rel=1e-9)


def test_gradient_norm_is_the_weight_space_gradient():
    X, y = fig4_problem(2, n=6, d=50)
    res = relucore.train(X, y, signs=(1, -1), init="gaussian", init_scale=0.1, rng=0, steps=5, tol=0.0)
    s = np.array([1.0, -1.0])
    B = res.W @ X.T
    r = (s[:, None] * np.maximum(B, 0)).sum(0) - y
    G = (s[:, None] * (B > 0) * r) @ X
    assert res.grad_norm == pytest.approx(np.linalg.norm(G), rel=1e-9)


def test_gram_only_mode_matches_explicit_X():
    X, y = fig4_problem(4, n=10, d=500)
    a = relucore.train(X, y, signs=(1, -1), steps=50, tol=0.0)
    b = relucore.train(None, y, gram=X @ X.T, signs=(1, -1), steps=50, tol=0.0)
    assert b.W is None
    assert rel(a.beta, b.beta) < 1e-12
    assert rel(a.alpha, b.alpha) < 1e-10


def test_gaussian_init_in_gram_only_mode_has_the_right_law():
    # beta0 = X w0 with w0 ~ N(0, s^2 I) has covariance s^2 K: check the empirical covariance.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 40))
    K = X @ X.T
    y = np.ones(3)
    res = relucore.train(
        None, y[None].repeat(4000, 0), gram=K[None].repeat(4000, 0), init="gaussian", init_scale=0.5, rng=1, steps=0
    )
    betas = res.beta0[:, 0, :]
    cov = np.cov(betas.T)
    # 4000 samples: relative standard error of a covariance entry ~ sqrt(2/4000) = 2.2%.
    assert np.allclose(cov, 0.25 * K, rtol=0.1, atol=0.1 * 0.25 * np.sqrt(np.outer(np.diag(K), np.diag(K))).max())
