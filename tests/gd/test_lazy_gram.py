"""K = X X^T is not formed by the prepare step where nothing reads it (array init, n > d rows).

Prepared.K forms it on first read, bitwise the K of the other inits (the same C++ kernel), and
equal to numpy's X X^T to rounding; the engines and the refusals are those of an eager K.
"""

import math

import numpy as np
import pytest

import relucore
from relucore._inputs import gram_of
from relucore.gd.prepare import prepare


def _problem(n=60, d=7, m=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    return X, y, W0, signs


def test_an_array_init_with_more_rows_than_columns_leaves_K_unformed_until_read():
    X, y, W0, signs = _problem()
    p = prepare(X, y, signs=signs, init=W0, eta=1e-3, engine="weights", n_threads=1)
    assert p.gram is None
    K = p.K
    assert p.gram is K and K.shape == (1, 60, 60)
    # The one rule that forms K from X everywhere (relucore._inputs, the prepare step): bitwise.
    assert np.array_equal(K[0], gram_of(X))
    # The gaussian init too starts from weights: lazy as well.
    assert prepare(X, y, signs=signs, init="gaussian", rng=0, eta=1e-3, n_threads=1).gram is None
    # An independent reference: numpy's product, to rounding (entries are sums of d = 7 terms).
    ref = X @ X.T
    assert np.max(np.abs(K[0] - ref)) <= 8 * np.finfo(float).eps * np.max(np.abs(ref)) * 7


def test_the_prepare_step_keeps_K_where_it_reads_it():
    X, y, W0, signs = _problem(n=6, d=9)  # n <= d: alpha0 solves with K itself
    assert prepare(X, y, signs=signs, init=W0, eta=1e-3).gram is not None
    assert prepare(X, y, signs=signs, init="positive").gram is not None
    assert prepare(X, y, signs=signs, init="gaussian", rng=0).gram is not None


def test_both_engines_run_from_a_lazy_K_and_agree():
    X, y, W0, signs = _problem()
    kw = dict(signs=signs, init=W0, eta=1e-3, steps=300, tol=0.0, n_threads=1)
    w = relucore.train(X, y, engine="weights", **kw)
    d = relucore.train(X, y, engine="dual", **kw)
    assert np.max(np.abs(w.W - d.W)) <= 1e-12 * np.max(np.abs(w.W))
    assert np.max(np.abs(w.alpha - d.alpha)) <= 1e-10 * np.max(np.abs(w.alpha))
    t = relucore.Trainer(X, y, signs=signs, init=W0, eta=1e-3, tol=0.0, engine="dual")
    t.step(300)
    assert np.max(np.abs(t.W - d.W)) <= 1e-12 * np.max(np.abs(d.W))
    # mu_1 computed afterwards reads the lazy K: that of X^T X, to rounding.
    p = prepare(X, y, signs=signs, init=W0, eta=1e-3)
    mu1 = p.largest_eigenvalue()[0]
    assert abs(mu1 - np.linalg.eigvalsh(X.T @ X)[-1]) <= 1e-12 * mu1


def test_data_out_of_the_safe_range_run_on_the_exactly_rescaled_copy():
    X, y, W0, signs = _problem()
    X[3] = np.ldexp(X[3], 200)  # outside [2^-64, 2^64]: the data run rescaled by powers of two (exact)
    e = math.frexp(np.abs(X).max())[1]
    W0 = np.ldexp(W0, -e)  # a start of predictions of order one
    res = relucore.train(X, y, signs=signs, init=W0, eta=np.ldexp(1.0, -10 - 2 * e), steps=50, engine="weights")
    # The run is the one on X 2^-e, y 2^-f (f the exponent of max |y|), scaled back exactly.
    f = math.frexp(np.abs(y).max())[1]
    ref = relucore.train(
        np.ldexp(X, -e),
        np.ldexp(y, -f),
        signs=signs,
        init=np.ldexp(W0, e - f),
        eta=2.0**-10,
        steps=50,
        engine="weights",
    )
    assert res.status == ref.status and res.nit == ref.nit
    np.testing.assert_array_equal(res.W, np.ldexp(ref.W, f - e))
    np.testing.assert_array_equal(res.beta, np.ldexp(ref.beta, f))
    np.testing.assert_array_equal(res.alpha, np.ldexp(ref.alpha, f - 2 * e))
    # x_3 . x_3 overflows and the dual coordinates (~ 2^-1060) underflow: refused, with the reason.
    X[3] = np.ldexp(X[3], 330)
    with pytest.raises(ValueError, match=r"X is too large \(or y too small\).*cannot be represented in float64"):
        relucore.train(X, y, signs=signs, init=np.ldexp(W0, -330), eta=np.ldexp(1.0, -1070), steps=5, engine="weights")
    # Within the safe range nothing is rescaled: sum_i ||x_i|| = 1e18 leaves K finite, formed as before.
    X, y, W0, signs = _problem()
    c = 1e18 / np.linalg.norm(X, axis=1).sum()
    p = prepare(X * c, y, signs=signs, init=W0 / c, eta=1e-33)
    assert p.scaling is None and np.isfinite(p.K).all() and np.abs(p.K).sum() > 1e34
