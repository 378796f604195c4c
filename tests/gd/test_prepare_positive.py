"""The C++ pieces behind a fast train call: the Gram kernel and the all-positive
start (relucore/gd/positive_start.hpp, the positive mode of the one prepare step
of relucore/gd/prepare.hpp), each against numpy written here."""

import numpy as np
import pytest

import relucore
from relucore import _core
from relucore.gd import prepare as _prepare


@pytest.mark.parametrize("n,d", [(1, 1), (1, 7), (3, 3), (4, 4), (5, 9), (10, 2000), (13, 1001), (40, 130), (67, 300)])
def test_gram_batch_matches_numpy(n, d):
    """K = X X^T to 1e-14 relative for every row/column remainder of the 4 x 2 blocks
    and the 4-wide column lanes; exactly symmetric."""
    X = np.random.default_rng(n * 1000 + d).standard_normal((2, n, d))
    K = np.empty((2, n, n))
    _core.gram_batch(X, K, 1)
    ref = np.einsum("bij,bkj->bik", X, X)
    assert np.max(np.abs(K - ref)) <= 1e-14 * np.max(np.abs(ref)) * np.sqrt(d)
    assert np.array_equal(K, np.swapaxes(K, 1, 2))


def test_gram_batch_of_strided_rows_is_exact_on_integers():
    """Integer-valued data: every path must give the exact integer Gram matrix."""
    X = np.random.default_rng(3).integers(-50, 50, size=(3, 9, 203)).astype(float)
    K = np.empty((3, 9, 9))
    _core.gram_batch(X, K, 2)
    assert np.array_equal(K, np.einsum("bij,bkj->bik", X, X))


def _start(X, y, signs, eps=0.0, tol=-1.0, beta0=None, eta=None):
    """The all-positive mode of the one prepare step (``StartBeta.positive``); a refusal raises."""
    B, n, d = X.shape
    m = len(signs)
    out = dict(
        K=np.empty((B, n, n)),
        mu1=np.empty(B),
        beta0=np.empty((B, m, n)) if beta0 is None else beta0,
        alpha0=np.empty((B, m, n)),
        W0=np.empty((B, m, d)),
        eta=np.zeros(B) if eta is None else eta,
        tol=np.empty(B),
    )
    s = _core.PrepareSettings()
    s.beta = _core.StartBeta.positive
    s.eps, s.tol, s.C_alpha, s.tol_factor, s.max_condition = eps, tol, 10.0, 1e-12, 1e12
    _core.prepare_batch(X=X, y=y, outer=np.asarray(signs, float), settings=s, init="positive", n_threads=1, **out)
    return out


def test_positive_start_matches_numpy():
    rng = np.random.default_rng(11)
    B, n, d = 3, 8, 300
    X = rng.standard_normal((B, n, d))
    y = rng.uniform(0.1, 1, (B, n)) * rng.choice([-1, 1], (B, n))
    signs = (1.0, -0.5, 2.0)
    out = _start(X, y, signs)
    K = X @ np.swapaxes(X, 1, 2)
    mu = np.linalg.eigvalsh(K)
    eps = np.abs(y).min(axis=1) / (10.0 * 3)
    np.testing.assert_allclose(out["K"], K, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(out["mu1"], mu[:, -1], rtol=1e-12)
    assert np.all(out["beta0"] == eps[:, None, None])
    alpha0 = np.linalg.solve(K, np.broadcast_to(eps[:, None, None], (B, n, 3))).swapaxes(1, 2)
    np.testing.assert_allclose(out["alpha0"], alpha0, rtol=1e-10)
    np.testing.assert_allclose(out["W0"], alpha0 @ X, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out["eta"], 1 / (np.sum(np.square(signs)) * mu[:, -1]), rtol=1e-12)
    np.testing.assert_allclose(out["tol"], 1e-12 * np.sqrt(mu[:, -1]) * np.linalg.norm(y, axis=1), rtol=1e-12)


def test_positive_start_keeps_given_offsets_eta_and_tol():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((2, 5, 40))
    y = rng.uniform(0.1, 1, (2, 5))
    beta0 = rng.uniform(0.01, 0.02, (2, 2, 5))
    given = beta0.copy()
    out = _start(X, y, (1, -1), eps=-1.0, tol=0.25, beta0=beta0, eta=np.array([1e-3, 2e-3]))
    assert np.array_equal(out["beta0"], given)
    np.testing.assert_allclose(np.einsum("bij,bkj->bki", out["K"], out["alpha0"]), given, rtol=1e-10)
    assert np.array_equal(out["eta"], [1e-3, 2e-3]) and np.array_equal(out["tol"], [0.25, 0.25])


@pytest.mark.parametrize(
    "case,message",
    [
        ("nan label", "Input y contains NaN"),
        ("zero sign", r"signs \(outer-layer weights\) must be non-zero"),
        ("inf X", "Input X contains infinity"),
        ("zero X", "X is all zeros"),
        ("repeated row", r"X is rank-deficient or badly conditioned: cond\(K\) = .* \(n=4, d=30\); init='positive'"),
        ("tiny eta", r"eta = 1e-30 is too small: it is below machine epsilon times the default step"),
    ],
)
def test_positive_start_names_the_failed_check(case, message):
    """Each check of the C++ start raises, from C++, the message of docs/errors.md."""
    rng = np.random.default_rng(13)
    X = rng.standard_normal((1, 4, 30))
    y = rng.uniform(0.1, 1, (1, 4))
    signs, eta = (1.0, -1.0), None
    if case == "nan label":
        y[0, 2] = np.nan
    elif case == "zero sign":
        signs = (1.0, 0.0)
    elif case == "inf X":
        X[0, 1, 3] = np.inf
    elif case == "zero X":
        X[:] = 0
    elif case == "repeated row":
        X[0, 3] = X[0, 0]
    elif case == "tiny eta":
        eta = np.array([1e-30])
    with pytest.raises(ValueError, match=message):
        _start(X, y, signs, eta=eta)


def test_fast_and_general_paths_agree():
    """The same start through the C++ pass (eps scalar) and numpy's solvers (the
    weights W0 passed as an array init): same run to 1e-10."""
    rng = np.random.default_rng(14)
    X = rng.standard_normal((12, 500))
    y = rng.uniform(0.1, 1, 12) * rng.choice([-1, 1], 12)
    fast = relucore.train(X, y, signs=(1, -1), steps=3000)
    assert isinstance(
        _prepare._positive_start(
            X[None],
            y[None],
            False,
            np.array([1.0, -1.0]),
            eps=None,
            eta=None,
            tol=None,
            C_alpha=10.0,
            n_threads=1,
            activation="relu",
            leaky_slope=0.01,
        ),
        _prepare.Prepared,
    )
    general = relucore.train(X, y, signs=(1, -1), init=fast.W0, eta=fast.eta, tol=fast.tol, steps=3000)
    assert general.nit == fast.nit
    np.testing.assert_allclose(general.beta, fast.beta, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(general.W, fast.W, rtol=1e-10, atol=1e-13)


def test_a_cpp_refusal_is_explained_in_the_words_of_the_error_table():
    """A rank-deficient X is refused by the C++ checks; the error names the reason."""
    X = np.ones((3, 10))
    with pytest.raises(ValueError, match="rank-deficient or badly conditioned"):
        relucore.train(X, np.array([0.5, 0.6, 0.7]))


@pytest.mark.parametrize("m,n,d", [(1, 1, 1), (2, 3, 15), (3, 5, 16), (2, 10, 2000), (4, 7, 37)])
def test_weights_from_dual_matches_numpy(m, n, d):
    rng = np.random.default_rng(m * 100 + d)
    X, W0 = rng.standard_normal((2, n, d)), rng.standard_normal((2, m, d))
    a0, a = rng.standard_normal((2, m, n)), rng.standard_normal((2, m, n))
    W = np.empty((2, m, d))
    _core.weights_from_dual_batch(X, W0, a0, a, W, 1)
    np.testing.assert_allclose(W, W0 + (a - a0) @ X, rtol=1e-13, atol=1e-13 * np.sqrt(n))


def test_trainer_and_train_rebuild_the_same_weights():
    rng = np.random.default_rng(15)
    X = rng.standard_normal((6, 70))
    y = rng.uniform(0.1, 1, 6) * rng.choice([-1, 1], 6)
    res = relucore.train(X, y, signs=(1, -1), steps=200, tol=0.0)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    t.step(200)
    assert np.array_equal(t.W, res.W)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 17, 33])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_unrolled_and_runtime_steps_agree_with_the_weight_engine(n, m):
    """The dual engine's ReLU/square step is instantiated for n <= 16 and generic above:
    both against the O(m n d) weight-space engine, to 1e-10."""
    rng = np.random.default_rng(100 * n + m)
    d = 3 * n + 5
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1, n) * rng.choice([-1, 1], n)
    signs = [(-1) ** k for k in range(m)]
    W0 = 0.05 * rng.standard_normal((m, d))
    a = relucore.train(X, y, signs=signs, init=W0, steps=300, tol=0.0)
    b = relucore.train(X, y, signs=signs, init=W0, steps=300, tol=0.0, engine="weights")
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-10, atol=1e-12)
