"""The C++ prepare step of every init (relucore/gd/prepare.hpp through gd/prepare.py) against
references computed here with numpy: the minimum-norm solution of K alpha0 = beta0 (lstsq),
mu_1 (eigvalsh), beta0 = W0 X^T, W0 = alpha0 X; and the work it skips."""

import numpy as np
import pytest

from relucore.gd.defaults import TOL_FACTOR, default_eta
from relucore.gd.prepare import prepare

SIGNS = (1.0, -1.0, 1.0, -1.0)


def _problem(n, d, seed=0, B=None):
    rng = np.random.default_rng(seed)
    shape = (n, d) if B is None else (B, n, d)
    X = rng.standard_normal(shape) / np.sqrt(d)
    y = np.sign(rng.standard_normal(shape[:-1])) * rng.uniform(0.5, 1.5, shape[:-1])
    return X, y


def _lstsq(K, beta0):
    return np.stack([np.linalg.lstsq(K[b], beta0[b].T, rcond=None)[0].T for b in range(K.shape[0])])


def _check_start(p, rtol):
    """alpha0 is the minimum-norm solution of K alpha0 = beta0, to rtol relative to its largest entry."""
    K = np.einsum("bij,bkj->bik", p.X, p.X) if p.X is not None else p.K
    ref = _lstsq(K, p.beta0)
    assert np.max(np.abs(p.alpha0 - ref)) <= rtol * np.max(np.abs(ref))
    assert np.max(np.abs(p.K - K)) <= 1e-13 * np.max(np.abs(K))


@pytest.mark.parametrize("n,d", [(12, 40), (40, 12), (30, 30)])
@pytest.mark.parametrize("init", ["gaussian", "array"])
def test_weight_inits_solve_like_lstsq(n, d, init):
    """Weights given (gaussian with X, an array): beta0 = W0 X^T exactly as numpy's product to
    1e-14, alpha0 = lstsq(K, beta0) to 1e-8 (K singular when n > d: the minimum-norm solution)."""
    X, y = _problem(n, d, seed=n + d)
    W = np.random.default_rng(5).standard_normal((len(SIGNS), d)) * 0.1 if init == "array" else "gaussian"
    p = prepare(X, y, signs=SIGNS, init=W, rng=1 if init == "gaussian" else None)
    assert p.W0.shape == (1, len(SIGNS), d)
    if init == "array":
        assert np.array_equal(p.W0[0], W)
    np.testing.assert_allclose(p.beta0, p.W0 @ np.swapaxes(p.X, 1, 2), rtol=0, atol=1e-14 * np.abs(p.beta0).max())
    _check_start(p, 1e-8 if n > d else 1e-10)


@pytest.mark.parametrize("init", ["positive", "disjoint"])
def test_span_inits_solve_and_rebuild_weights(init):
    """positive (eta given, which leaves the C++ all-positive start) and disjoint: alpha0 = K^{-1} beta0
    to 1e-10 against lstsq, W0 = alpha0 X to 1e-13."""
    X, y = _problem(15, 60, seed=2)
    p = prepare(X, y, signs=SIGNS, init=init, eta=0.3, engine="weights")
    _check_start(p, 1e-10)
    np.testing.assert_allclose(p.W0, p.alpha0 @ p.X, rtol=0, atol=1e-13 * np.abs(p.W0).max())


def test_gram_only_inits_against_numpy():
    """Gram-only mode: positive and disjoint solve K alpha0 = beta0; gaussian draws beta0 = L z with
    numpy's Cholesky factor L to 1e-12 (the same draws z as numpy's generator gives)."""
    X, y = _problem(10, 30, seed=4, B=2)
    K = np.einsum("bij,bkj->bik", X, X)
    for init in ("positive", "disjoint"):
        p = prepare(None, y, gram=K, signs=SIGNS, init=init)
        _check_start(p, 1e-10)
    p = prepare(None, y, gram=K, signs=SIGNS, init="gaussian", rng=3, init_scale=0.5)
    z = 0.5 * np.random.default_rng(3).standard_normal((2, 10, len(SIGNS)))
    ref = np.matmul(np.linalg.cholesky(K), z).swapaxes(1, 2)
    np.testing.assert_allclose(p.beta0, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    _check_start(p, 1e-10)


def test_mu1_only_when_a_default_needs_it():
    """mu_1 = eigvalsh(K)[-1] to 1e-12 when the default step or tolerance needs it, NaN when
    eta and tol are given (then the given step is checked from tr(K) alone)."""
    X, y = _problem(40, 12, seed=7)
    W = np.random.default_rng(1).standard_normal((len(SIGNS), 12)) * 0.1
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    p = prepare(X, y, signs=SIGNS, init=W)
    assert p.mu1[0] == pytest.approx(mu1, rel=1e-12)
    assert p.eta[0] == pytest.approx(default_eta(mu1, np.array(SIGNS)), rel=1e-12)
    assert p.tol[0] == pytest.approx(TOL_FACTOR * np.sqrt(mu1) * np.linalg.norm(y), rel=1e-12)
    p = prepare(X, y, signs=SIGNS, init=W, eta=0.05)  # default tol still needs mu_1
    assert p.mu1[0] == pytest.approx(mu1, rel=1e-12)
    p = prepare(X, y, signs=SIGNS, init=W, eta=0.05, tol=1e-9)
    assert np.isnan(p.mu1[0])
    assert p.largest_eigenvalue()[0] == pytest.approx(mu1, rel=1e-12)


def test_refusals_keep_their_texts():
    """The refusals of the C++ step are raised with the texts of docs/errors.md."""
    X, y = _problem(8, 3, seed=1)
    with pytest.raises(ValueError, match=r"X is rank-deficient or badly conditioned: cond\(K\) = .* \(n=8, d=3\)"):
        prepare(X, y, signs=SIGNS, init="disjoint")
    with pytest.raises(ValueError, match="X is all zeros"):
        prepare(np.zeros((4, 5)), y[:4], signs=SIGNS, init="gaussian")
    with pytest.raises(ValueError, match=r"scale of the data is out of range for bias=True: max \|x_ij\| ~ 2\^532"):
        prepare(X * 1e160, y, signs=SIGNS, init="gaussian", bias=True)
    K = X @ X.T
    with pytest.raises(ValueError, match="rank-deficient or badly conditioned"):
        prepare(None, y, gram=K, signs=SIGNS, init="gaussian")
    with pytest.raises(ValueError, match="gram is not positive semidefinite"):
        prepare(None, y[:3], gram=np.diag([1.0, 1.0, -1.0]), signs=SIGNS, init="positive")
    with pytest.raises(ValueError, match="eta = 1e-30 is too small"):
        prepare(X, y, signs=SIGNS, init="gaussian", eta=1e-30, tol=0.0)
