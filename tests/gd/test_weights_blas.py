"""The weight-space engine's products through scipy's BLAS (relucore/linalg/blas.hpp).

A step of ``engine="weights"`` is ``beta = W X^T`` (``blas::gemm_nt``) and ``G = C X``
(``blas::gemm``); from ``blas_gemm_min_rows`` neurons and ``blas_product_min_work``
multiply-adds (m n d) on they run on the registered BLAS, below on Eigen's per-neuron
products. Checked on both paths against a long-double GD loop written here (relative 1e-12
after 60 steps: both paths round each product differently, the loop sums exactly enough to
tell), against each other and against the dual engine (1e-12), bitwise below the threshold,
and bitwise across thread counts.
"""

import numpy as np
import pytest

import relucore
from relucore import _core

STEPS = 60
# (n, d, m): all above the threshold, shapes chosen so that a transposed operand cannot pass.
ABOVE = [(37, 23, 5), (120, 9, 12), (15, 200, 6)]


@pytest.fixture
def path(blas_path):
    """The products' path under test (tests/conftest.py: blas_path)."""
    return blas_path


def problem(n, d, m, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    a0 = rng.standard_normal(m)
    # a step well inside the stable range of the two-layer model
    eta = 0.05 / (np.linalg.norm(X, 2) ** 2 * (np.sum(a0**2) + np.sum(W0**2)))
    return X, y, W0, a0, eta


def reference(X, y, W0, a0, eta, steps, *, train_outer, scale=1.0):
    """GD on 1/2 ||scale sum_k a_k relu(X w_k) - y||^2 in long double (simultaneous update)."""
    Xl, yl = X.astype(np.longdouble), y.astype(np.longdouble)
    W, a = W0.astype(np.longdouble), a0.astype(np.longdouble)
    for _ in range(steps):
        B = W @ Xl.T
        act = np.maximum(B, 0)
        r = scale * (a @ act) - yl
        G = (scale * a[:, None] * (B > 0) * r) @ Xl
        if train_outer:
            a = a - eta * scale * (act @ r)
        W = W - eta * G
    return W.astype(float), a.astype(float)


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def run(X, y, W0, a0, eta, engine, steps=STEPS, **kw):
    return relucore.train(X, y, signs=a0, init=W0, eta=eta, steps=steps, tol=0.0, engine=engine, n_threads=1, **kw)


@pytest.mark.parametrize("train_outer", [False, True])
@pytest.mark.parametrize("n, d, m", ABOVE)
def test_weights_engine_matches_long_double_reference(path, n, d, m, train_outer):
    assert m >= _core.defaults.blas_gemm_min_rows and n * d * m >= _core.defaults.blas_product_min_work
    X, y, W0, a0, eta = problem(n, d, m, seed=n + d + m)
    scale = 0.5 if train_outer else 1.0
    r = run(X, y, W0, a0, eta, "weights", train_outer=train_outer, output_scale=scale)
    W_ref, a_ref = reference(X, y, W0, a0, eta, STEPS, train_outer=train_outer, scale=scale)
    assert r.nit == STEPS
    assert rel(r.W, W_ref) < 1e-12
    if train_outer:
        assert rel(r.outer, a_ref) < 1e-12
    assert rel(r.beta, r.W @ X.T) < 1e-12


@pytest.mark.parametrize("n, d, m", ABOVE)
def test_blas_builtin_and_dual_engine_agree(n, d, m):
    if not _core._use_blas(True):
        pytest.skip("scipy's BLAS not registered")
    X, y, W0, a0, eta = problem(n, d, m, seed=7 * n + d)
    try:
        blas = run(X, y, W0, a0, eta, "weights", steps=200)
        dual = run(X, y, W0, a0, eta, "dual", steps=200)
        _core._use_blas(False)
        builtin = run(X, y, W0, a0, eta, "weights", steps=200)
    finally:
        _core._use_blas(True)
    for other in (builtin, dual):
        assert rel(blas.W, other.W) < 1e-12
        assert rel(blas.beta, other.beta) < 1e-12
        assert rel(blas.alpha, other.alpha) < 1e-12
        assert blas.loss == pytest.approx(other.loss, rel=1e-11)


@pytest.mark.parametrize(
    "n, d, m",
    [
        (200, 150, 3),  # fewer neurons than blas_gemm_min_rows
        (10, 49, 4),  # m n d = 1960 < blas_product_min_work
    ],
)
def test_below_the_threshold_results_are_bitwise_the_builtin_ones(n, d, m):
    assert m < _core.defaults.blas_gemm_min_rows or n * d * m < _core.defaults.blas_product_min_work
    if not _core._use_blas(True):
        pytest.skip("scipy's BLAS not registered")
    X, y, W0, a0, eta = problem(n, d, m, seed=3)
    try:
        on = run(X, y, W0, a0, eta, "weights", steps=100, train_outer=True)
        _core._use_blas(False)
        off = run(X, y, W0, a0, eta, "weights", steps=100, train_outer=True)
    finally:
        _core._use_blas(True)
    for field in ("W", "alpha", "beta", "outer", "predictions"):
        assert np.array_equal(getattr(on, field), getattr(off, field)), field


def test_results_do_not_depend_on_the_thread_count(path):
    rng = np.random.default_rng(5)
    B, n, d, m = 4, 60, 30, 8
    X = rng.standard_normal((B, n, d))
    y = rng.uniform(0.1, 1.0, (B, n)) * rng.choice([-1.0, 1.0], (B, n))
    W0 = rng.standard_normal((B, m, d)) / np.sqrt(d)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    kw = dict(signs=signs, init=W0, steps=80, tol=0.0, engine="weights", train_outer=True)
    one = relucore.train(X, y, n_threads=1, **kw)
    two = relucore.train(X, y, n_threads=2, **kw)
    assert np.array_equal(one.W, two.W) and np.array_equal(one.outer, two.outer)
