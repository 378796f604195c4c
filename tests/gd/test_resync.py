"""The engines keep their derived state in step with alpha over long runs (docs/math.md §14).

The references are recomputed here from the returned alpha in long double: beta = X W with
W = W0 + (alpha - alpha0) X for the dual engine, W - W0 = (alpha - alpha0) X for the weight
engine. Without the resynchronisation both drift to 1e-11 to 1e-10 on these runs.
"""

import numpy as np
import pytest

import relucore as rc
from relucore import _core

GAMMAS = (0.0, 1.0, 5.0, 20.0)


def _vardi_shamir():
    X = np.stack([np.array([[3.0, -1.0, 0.0], [4.0, 2.0, 0.0], [0.0, g, g]]) for g in GAMMAS])
    y = np.tile(np.array([16.0, 18.0, 0.0]), (len(GAMMAS), 1))
    return X, y, np.full((len(GAMMAS), 1, 3), 1e-6)


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_resync_default_is_bound():
    assert _core.defaults.resync_every == 1024


def test_dual_beta_equals_X_W_after_2e6_steps():
    X, y, W0 = _vardi_shamir()
    res = rc.train(X, y, init=W0, eta=1e-4, steps=2_000_000, tol=0)
    XL = X.astype(np.longdouble)
    for b in range(len(GAMMAS)):
        W = W0[b].astype(np.longdouble) + (res.alpha[b] - res.alpha0[b]).astype(np.longdouble) @ XL[b]
        XW = W @ XL[b].T
        assert _rel(res.beta[b].astype(np.longdouble), XW) < 1e-12, GAMMAS[b]
        assert _rel(res.W[b].astype(np.longdouble), W) < 1e-15
    assert res.loss.max() < 1e-20


@pytest.mark.parametrize("gamma_index", [1, 2])
def test_weights_engine_alpha_stays_the_span_coordinates(gamma_index):
    X, y, W0 = _vardi_shamir()
    X, y, W0 = X[gamma_index], y[gamma_index], W0[gamma_index]
    res = rc.train(X, y, init=W0, eta=1e-4, steps=2_000_000, tol=0, engine="weights")
    span = (res.alpha - res.alpha0).astype(np.longdouble) @ X.astype(np.longdouble)
    assert _rel((res.W - W0).astype(np.longdouble), span) < 1e-12
    dual = rc.train(X, y, init=W0, eta=1e-4, steps=2_000_000, tol=0)
    assert _rel(res.W, dual.W) < 1e-12


def test_certified_limit_equals_a_1e6_step_run_figure_4():
    """Figure 4 setting (n = 10, d = 2000, m = 2) at eta / 50, a problem whose limit is certified."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2000))
    y = rng.uniform(0.1, 1.0, 10) * rng.choice([-1.0, 1.0], 10)
    signs = np.array([1.0, -1.0])
    eta = float(rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], signs)) / 50
    lim = rc.train(X, y, signs=signs, eta=eta, steps=np.inf)
    assert lim.certificate.holds
    ref = rc.train(X, y, signs=signs, eta=eta, steps=10**6, tol=0)
    assert _rel(lim.W, ref.W) < 1e-12
    assert _rel(lim.alpha, ref.alpha) < 1e-12
    assert _rel(ref.beta, ref.W @ X.T) < 1e-12


def test_trainer_checkpoint_resumes_bitwise_across_resyncs():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 30)) / np.sqrt(30)
    y = rng.uniform(0.5, 1.5, 12) * np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    a = rc.Trainer(X, y, signs=(1.0, -1.0, 1.0), init="gaussian", init_scale=0.2, rng=1, eta=0.05)
    a.step(1500)
    b = rc.Trainer.from_state(a.state_dict())
    a.step(3000)
    b.step(3000)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_array_equal(a.beta, b.beta)
