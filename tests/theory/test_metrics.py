"""relucore.training_metrics against direct computation from the explicit weights W."""

import numpy as np
import pytest

import relucore
from relucore.theory.metrics import margins, stable_rank, weight_gram


def _direct(W, X, y, a, act, gamma):
    """Reference metrics from an explicit W (m, d)."""
    fro = np.linalg.norm(W)
    spec = np.linalg.norm(W, 2)
    pre = W @ X.T
    phi = np.maximum(pre, 0) if act == "relu" else np.where(pre > 0, pre, gamma * pre)
    marg = y * (a @ phi)
    return fro, spec, fro**2 / spec**2, marg, marg / fro


def _data(seed, n=10, d=400, B=None):
    rng = np.random.default_rng(seed)
    shape = (n, d) if B is None else (B, n, d)
    X = rng.standard_normal(shape)
    y = rng.choice([-1.0, 1.0], shape[:-1])
    return X, y


def _check_all(res, met, X, y, a, act, gamma, rtol=1e-9):
    h = res.history
    for r in range(len(h.steps)):
        W = res.W0 + (h.alpha[r] - res.alpha0) @ X
        fro, spec, sr, marg, nm = _direct(W, X, y, a, act, gamma)
        assert met.fro_norm[r] == pytest.approx(fro, rel=rtol)
        assert met.spectral_norm[r] == pytest.approx(spec, rel=rtol)
        assert met.stable_rank[r] == pytest.approx(sr, rel=rtol)
        for field, rows in (("stable_rank_pos", a > 0), ("stable_rank_neg", a < 0)):
            _, _, sr_g, _, _ = _direct(W[rows], X, y, a[rows], act, gamma)
            assert getattr(met, field)[r] == pytest.approx(sr_g, rel=rtol)
        np.testing.assert_allclose(met.margins[r], marg, rtol=0, atol=rtol * np.abs(marg).max())
        np.testing.assert_allclose(met.normalized_margins[r], nm, rtol=0, atol=rtol * np.abs(nm).max())
        if marg.min() > 0:
            assert met.margin_ratio[r] == pytest.approx(marg.max() / marg.min(), rel=rtol)
        else:
            assert np.isnan(met.margin_ratio[r])
    np.testing.assert_array_equal(met.steps, h.steps)
    np.testing.assert_array_equal(met.loss, h.loss)


@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_metrics_with_X_general_gaussian_init(act):
    """W0 ~ N(0, s^2 I_d) has a component outside the data span: exact via W0 W0^T from X."""
    X, y = _data(0)
    m = 6
    a = np.r_[np.ones(3), -np.ones(3)] / m
    res = relucore.train(
        X,
        y,
        signs=a,
        loss="logistic",
        activation=act,
        leaky_slope=0.1,
        init="gaussian",
        init_scale=0.05,
        rng=1,
        steps=300,
        record=30,
    )
    met = relucore.training_metrics(res, X, y)
    _check_all(res, met, X, y, a, act, 0.1)
    # Early on the random init dominates (stable rank near m), then learning takes over.
    assert met.stable_rank[0] > 3 and met.stable_rank[-1] < met.stable_rank[0]
    assert np.isnan(met.margin_ratio[0]) or met.margin_ratio[0] > met.margin_ratio[-1]


def test_metrics_gram_only_with_W0_gram_matches_X():
    X, y = _data(1)
    a = np.array([0.5, 0.25, -0.5, -0.25])
    res = relucore.train(
        X,
        y,
        signs=a,
        loss="logistic",
        activation="leaky_relu",
        init="gaussian",
        init_scale=0.1,
        rng=2,
        steps=100,
        record=10,
    )
    K = X @ X.T
    m1 = relucore.training_metrics(res, X, y)
    m2 = relucore.training_metrics(res, y=y, gram=K, W0_gram=res.W0 @ res.W0.T)
    for f in ("fro_norm", "spectral_norm", "stable_rank", "normalized_margins"):
        np.testing.assert_allclose(getattr(m2, f), getattr(m1, f), rtol=1e-10)
    # Without W0_gram the part of W0 orthogonal to the data is dropped: Frobenius norm smaller.
    m3 = relucore.training_metrics(res, y=y, gram=K)
    assert np.all(m3.fro_norm < m1.fro_norm)
    W_span = res.alpha @ X  # = W minus its (constant) orthogonal part
    assert m3.fro_norm[-1] == pytest.approx(np.linalg.norm(W_span), rel=1e-10)
    assert m3.stable_rank[-1] == pytest.approx(np.linalg.norm(W_span) ** 2 / np.linalg.norm(W_span, 2) ** 2, rel=1e-9)


def test_metrics_positive_init_in_span_gram_only():
    """The positive init lies in the data span: K alone gives the exact metrics."""
    rng = np.random.default_rng(3)
    n, d = 8, 300
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.2, 1, n) * rng.choice([-1, 1], n)
    res = relucore.train(X, y, signs=(1, -1), steps=200, record=20)
    met = relucore.training_metrics(res, y=y, gram=X @ X.T)
    _check_all(res, met, X, y, np.array([1.0, -1.0]), "relu", 0.0)


def test_metrics_batched_with_padding_and_final_state_only():
    X, y = _data(4, n=8, d=200, B=3)
    a = np.array([0.5, 0.5, -0.5, -0.5])
    kw = dict(signs=a, loss="logistic", activation="leaky_relu", init="gaussian", init_scale=0.01, rng=5)
    res = relucore.train(X, y, steps=95, record=10, **kw)
    met = relucore.training_metrics(res, X, y)
    assert met.stable_rank.shape == res.history.steps.shape
    for b in range(3):
        r = int(res.history.n_records[b])
        for j in range(r):
            W = res.W0[b] + (res.history.alpha[b, j] - res.alpha0[b]) @ X[b]
            fro, spec, sr, marg, nm = _direct(W, X[b], y[b], a, "leaky_relu", 0.01)
            assert met.stable_rank[b, j] == pytest.approx(sr, rel=1e-9)
            np.testing.assert_allclose(met.normalized_margins[b, j], nm, atol=1e-9 * np.abs(nm).max(), rtol=0)
        assert np.all(np.isnan(met.stable_rank[b, r:]))
    res0 = relucore.train(X, y, steps=95, record=0, **kw)
    met0 = relucore.training_metrics(res0, X, y)
    assert met0.stable_rank.shape == (3, 1)
    for b in range(3):
        _, _, sr, _, _ = _direct(res0.W[b], X[b], y[b], a, "leaky_relu", 0.01)
        assert met0.stable_rank[b, 0] == pytest.approx(sr, rel=1e-9)


def test_weight_gram_and_stable_rank_helpers():
    rng = np.random.default_rng(6)
    n, d, m = 5, 30, 4
    X = rng.standard_normal((n, d))
    W0 = rng.standard_normal((m, d))
    alpha0 = rng.standard_normal((m, n))
    alpha = alpha0 + rng.standard_normal((3, m, n))
    W = W0 + (alpha - alpha0) @ X
    G = weight_gram(alpha, alpha0, W0 @ X.T, X @ X.T, W0 @ W0.T)
    np.testing.assert_allclose(G, W @ np.swapaxes(W, 1, 2), rtol=1e-12, atol=1e-12 * np.abs(G).max())
    sv = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(stable_rank(G), (sv**2).sum(-1) / sv[:, 0] ** 2, rtol=1e-12)
    # rank-one W has stable rank 1; orthonormal rows give m.
    u = rng.standard_normal(d)
    assert stable_rank(np.outer([1, 2, 3], [1, 2, 3]) * (u @ u)) == pytest.approx(1.0)
    assert stable_rank(np.eye(m)) == pytest.approx(m)
    # margins: leaky slope applies to negative pre-activations.
    beta = np.array([[1.0, -2.0], [-1.0, 3.0]])
    np.testing.assert_allclose(
        margins(beta, [1.0, -1.0], [1.0, -1.0], activation="leaky_relu", leaky_slope=0.5), [1.0 + 0.5, -(-1.0 - 3.0)]
    )


def test_metrics_needs_gram_or_X():
    X, y = _data(7, n=4, d=20)
    res = relucore.train(X, y, signs=(1, -1), loss="logistic", steps=2, init="gaussian", rng=0)
    with pytest.raises(TypeError, match="needs X or gram"):
        relucore.training_metrics(res, y=y)
    with pytest.raises(TypeError, match=r"needs y .*\(result, X, y\)"):
        relucore.training_metrics(res, X)
    with pytest.raises(TypeError, match=r"takes \(result, X, y\) since 1.0"):
        relucore.training_metrics(res, y, X=X)  # the 0.x order
