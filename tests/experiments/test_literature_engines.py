"""The logistic loss, the leaky ReLU and real-valued outer weights in both GD engines.

Checked against a numpy reference written here (loss, gradient, GD step), central
finite differences of that loss, and engine-vs-engine agreement (the losses and
activations of ``docs/math.md``; Kou et al. 2023 for the logistic loss and the leaky ReLU).
"""

import numpy as np
import pytest

import relucore


def _phi(u, act, gamma):
    return np.maximum(u, 0.0) if act == "relu" else np.where(u > 0, u, gamma * u)


def _dphi(u, act, gamma):
    return (u > 0).astype(float) if act == "relu" else np.where(u > 0, 1.0, gamma)


def np_loss(W, X, y, a, loss, act, gamma):
    f = _phi(W @ X.T, act, gamma).T @ a
    if loss == "square":
        return 0.5 * np.sum((f - y) ** 2)
    return np.mean(np.logaddexp(0.0, -y * f))


def np_grad(W, X, y, a, loss, act, gamma):
    """dR/dW: row k is a_k sum_i phi'(w_k.x_i) g_i x_i with g = dloss/df."""
    pre = W @ X.T  # (m, n)
    f = _phi(pre, act, gamma).T @ a
    if loss == "square":
        g = f - y
    else:
        g = -y / (1.0 + np.exp(y * f)) / len(y)
    return (a[:, None] * _dphi(pre, act, gamma) * g[None, :]) @ X


def np_gd(W0, X, y, a, eta, steps, loss, act, gamma):
    W = W0.copy()
    for _ in range(steps):
        W = W - eta * np_grad(W, X, y, a, loss, act, gamma)
    return W


def _problem(seed, n=12, d=300, m=8, scale=1e-2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.choice([-1.0, 1.0], n)
    y[:2] = (1.0, -1.0)
    a = np.r_[np.ones(m // 2), -np.ones(m // 2)] / m
    W0 = scale * rng.standard_normal((m, d))
    return X, y, a, W0


CASES = [("logistic", "leaky_relu", 0.1), ("logistic", "relu", 0.1), ("square", "leaky_relu", 0.3)]


@pytest.mark.parametrize("loss,act,gamma", CASES)
def test_engines_agree_with_each_other(loss, act, gamma):
    X, y, a, W0 = _problem(1)
    kw = dict(signs=a, loss=loss, activation=act, leaky_slope=gamma, init=W0, steps=400, record=40, tol=0)
    if loss == "square":
        kw["eta"] = 0.5 / (np.sum(a**2) * np.linalg.eigvalsh(X @ X.T)[-1])
    r1 = relucore.train(X, y, engine="dual", **kw)
    r2 = relucore.train(X, y, engine="weights", **kw)
    assert r1.nit == r2.nit == 400
    scale = np.abs(r2.W).max()
    assert np.abs(r1.W - r2.W).max() <= 1e-10 * scale
    assert np.abs(r1.beta - r2.beta).max() <= 1e-10 * np.abs(r2.beta).max()
    assert np.abs(r1.alpha - r2.alpha).max() <= 1e-10 * np.abs(r2.alpha).max()
    # Relative to the starting loss: the square loss reaches ~1e-20 here.
    L0 = r2.history.loss[0]
    assert abs(r1.loss - r2.loss) <= 1e-10 * L0
    np.testing.assert_allclose(r1.history.loss, r2.history.loss, rtol=1e-10, atol=1e-10 * L0)
    if loss == "logistic":
        assert r1.grad_norm == pytest.approx(r2.grad_norm, rel=1e-9)
    np.testing.assert_array_equal(r1.history.mask, r2.history.mask)


@pytest.mark.parametrize("loss,act,gamma", CASES)
@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_engine_matches_numpy_gd(loss, act, gamma, engine):
    X, y, a, W0 = _problem(2, n=9, d=120, m=6)
    eta = 0.7 if loss == "logistic" else 0.3 / (np.sum(a**2) * np.linalg.eigvalsh(X @ X.T)[-1])
    T = 150
    r = relucore.train(
        X, y, signs=a, loss=loss, activation=act, leaky_slope=gamma, init=W0, eta=eta, steps=T, engine=engine
    )
    W_ref = np_gd(W0, X, y, a, eta, T, loss, act, gamma)
    assert np.abs(r.W - W_ref).max() <= 1e-10 * np.abs(W_ref).max()
    assert r.loss == pytest.approx(np_loss(W_ref, X, y, a, loss, act, gamma), rel=1e-10)
    g = np_grad(W_ref, X, y, a, loss, act, gamma)
    assert r.grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-9)
    # The dual coordinates reproduce the weights and the predictions.
    np.testing.assert_allclose(r.beta, W_ref @ X.T, rtol=0, atol=1e-10 * np.abs(W_ref @ X.T).max())


@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_logistic_gradient_matches_finite_differences(act):
    """One engine step from W0 is -eta * gradient; compare with central differences of the loss."""
    rng = np.random.default_rng(3)
    n, d, m, gamma = 5, 7, 4, 0.2
    X = rng.standard_normal((n, d))
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    a = np.array([0.25, 0.25, -0.25, -0.25])
    W0 = rng.standard_normal((m, d))
    assert np.abs(W0 @ X.T).min() > 1e-3  # away from the kinks, where the loss is smooth
    eta = 0.37
    r = relucore.train(X, y, signs=a, loss="logistic", activation=act, leaky_slope=gamma, init=W0, eta=eta, steps=1)
    grad_engine = (W0 - r.W) / eta
    h = 1e-6
    fd = np.empty_like(W0)
    for k in range(m):
        for j in range(d):
            E = np.zeros_like(W0)
            E[k, j] = h
            fd[k, j] = (
                np_loss(W0 + E, X, y, a, "logistic", act, gamma) - np_loss(W0 - E, X, y, a, "logistic", act, gamma)
            ) / (2 * h)
    np.testing.assert_allclose(grad_engine, fd, rtol=0, atol=1e-8 * np.abs(fd).max())
    r0 = relucore.train(X, y, signs=a, loss="logistic", activation=act, leaky_slope=gamma, init=W0, eta=eta, steps=0)
    assert r0.loss == pytest.approx(np_loss(W0, X, y, a, "logistic", act, gamma), rel=1e-13)


def test_logistic_loss_is_stable_at_large_margins():
    """log(1 + exp(-z)) for |z| ~ 1e3 neither overflows nor loses the tiny values."""
    rng = np.random.default_rng(4)
    n, d = 4, 50
    X = rng.standard_normal((n, d))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    w = 200.0 * (y @ np.linalg.pinv(X).T)  # X w = 200 y: margins y_i f_i = 200 (single neuron, a = 1)
    W0 = np.stack([w, -w])  # f = relu(Xw) - relu(-Xw) = X w
    r = relucore.train(X, y, signs=(1.0, -1.0), loss="logistic", init=W0, eta=1.0, steps=0)
    assert np.isfinite(r.loss) and r.loss == pytest.approx(np.log1p(np.exp(-200.0)), rel=1e-10)
    r = relucore.train(X, -y, signs=(1.0, -1.0), loss="logistic", init=W0, eta=1.0, steps=0)
    assert r.loss == pytest.approx(200.0, rel=1e-12)


def test_default_logistic_eta_and_tol():
    X, y, a, W0 = _problem(5)
    r = relucore.train(X, y, signs=a, loss="logistic", init=W0, steps=3)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    assert r.eta == pytest.approx(4 * len(y) / (np.sum(a**2) * mu1), rel=1e-12)
    assert r.tol == 0.0 and r.nit == 3


def test_batched_logistic_leaky_matches_single_runs():
    probs = [_problem(s) for s in (6, 7)]
    X = np.stack([p[0] for p in probs])
    y = np.stack([p[1] for p in probs])
    W0 = np.stack([p[3] for p in probs])
    a = probs[0][2]
    kw = dict(signs=a, loss="logistic", activation="leaky_relu", leaky_slope=0.05, eta=0.5, steps=200)
    rb = relucore.train(X, y, init=W0, **kw)
    for b in range(2):
        rs = relucore.train(X[b], y[b], init=W0[b], **kw)
        np.testing.assert_array_equal(rb.W[b], rs.W)
