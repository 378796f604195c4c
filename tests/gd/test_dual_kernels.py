"""The dual step for n > 16 (gd/dual_kernels.hpp: AVX / AVX-512, two neurons per pass over K,
every neuron in one tiled pass for n > 512) and for 6 <= n <= 16 (gd/dual_small.hpp: the fused
step, one portable kernel in 2 lanes at sse2 and 4 at avx, the AVX-512F kernel at avx512) gives bitwise the state of the plain loop, and the same loss and gradient norm at
every SIMD level.

The reference is the step written here in numpy with the engine's operations in its order:
h = sum_k a_k relu(beta_k) (k increasing), g = h - y, d_alpha_k = -eta a_k g on the active
examples, d_beta_k = sum over the rows i with d_alpha_ki != 0, in increasing i, of
d_alpha_ki K_i (one rounded product and one rounded sum per term, as numpy's elementwise
operations). Every SIMD level this CPU has (RELUCORE_SIMD caps it, read when the engine is
built) must give exactly that state.
"""

import numpy as np
import pytest

import relucore
from relucore import _core

LEVELS = ("scalar", "sse2", "avx", "avx512")


def _reference(K, y, outer, alpha, beta, eta, steps):
    alpha, beta = alpha.copy(), beta.copy()
    for _ in range(steps):
        h = np.zeros_like(y)
        for a, b in zip(outer, beta):
            h += a * np.where(b > 0, b, 0.0)
        g = h - y
        for k in range(len(outer)):
            da = np.where(beta[k] > 0, (-eta * outer[k]) * g, 0.0)
            db = np.zeros_like(y)
            for i in np.flatnonzero(da):
                db += da[i] * K[i]
            alpha[k] += da
            beta[k] += db
    return alpha, beta


def _problem(n, m, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n + 7))
    K = X @ X.T
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    outer = np.where(np.arange(m) % 2 == 0, 1.0, -1.0) * rng.uniform(0.5, 1.5, m)
    alpha = rng.standard_normal((m, n)) * 0.05
    beta = alpha @ K  # mixed signs: some examples inactive for each neuron
    eta = 0.5 / np.linalg.eigvalsh(K)[-1]
    return K, y, outer, alpha, beta, eta


def _run(K, y, outer, alpha, beta, eta, steps, scalars=False):
    s = _core.GDSettings()
    s.eta = eta
    s.max_steps = 10**9
    s.tol = 0.0
    t = _core.DualTrainer(K, y, outer, alpha, beta, s)
    assert t.step(steps) == steps
    if scalars:  # the loss, the gradient norm and the predictions of the final state too
        return np.array(t.alpha), np.array(t.beta), np.array([t.loss, t.grad_norm])
    return np.array(t.alpha), np.array(t.beta)


# n <= 16 runs DualGD's padded kernels (gd/dual_small.hpp from n = 6 with AVX-512F), n > 16
# dual_kernels.hpp. n = 600 and 1100: every neuron in one pass over K, which spans several tiles
# of rows (dual_kernels::kTileBytes), and every neuron's sums go back to memory between tiles.
SIZES = [(6, 1, 12), (7, 2, 12), (10, 2, 12), (10, 3, 12), (13, 4, 12), (16, 2, 12), (16, 5, 12)]
SIZES += [(17, 1, 12), (17, 2, 12), (23, 3, 12), (40, 2, 12), (67, 5, 12), (133, 4, 12), (600, 3, 4), (1100, 2, 3)]


@pytest.mark.parametrize(("n", "m", "steps"), SIZES)
def test_dual_step_bitwise_the_numpy_reference_at_every_simd_level(monkeypatch, n, m, steps):
    K, y, outer, alpha, beta, eta = _problem(n, m, seed=n * 10 + m)
    ref_a, ref_b = _reference(K, y, outer, alpha, beta, eta, steps)
    # The reference moved and kept some examples inactive: the test sees both branches.
    assert np.abs(ref_a - alpha).max() > 1e-6
    assert 0 < np.count_nonzero(ref_b > 0) < ref_b.size
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        got_a, got_b = _run(K, y, outer, alpha, beta, eta, steps)
        np.testing.assert_array_equal(got_a, ref_a, err_msg=level)
        np.testing.assert_array_equal(got_b, ref_b, err_msg=level)


@pytest.mark.parametrize(("n", "m"), [(6, 2), (10, 2), (11, 3), (16, 4)])
def test_small_step_loss_and_gradient_norm_same_bits_at_every_simd_level(monkeypatch, n, m):
    """The fused AVX-512 step of n <= 16 (gd/dual_small.hpp) sums the loss and the gradient norm
    itself: 500 steps give the state, loss and gradient norm of the scalar loop bit for bit."""
    K, y, outer, alpha, beta, eta = _problem(n, m, seed=7 * n + m)
    runs = {}
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        runs[level] = _run(K, y, outer, alpha, beta, eta, 500, scalars=True)
    assert np.all(np.isfinite(runs["scalar"][2])) and runs["scalar"][2][1] > 0
    for level in LEVELS[1:]:
        for got, want in zip(runs[level], runs["scalar"]):
            np.testing.assert_array_equal(got, want, err_msg=level)


@pytest.mark.parametrize("n", [6, 7, 10, 11, 13, 16])
@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_small_step_train_same_bits_at_every_simd_level(monkeypatch, n, m):
    """train() with the fused small step (6 <= n <= 16; n not a multiple of 2, 4 or 8 included),
    outer weights of both signs, run to a tolerance or for 3000 steps (resynchronisations
    included): alpha, beta, W, the loss, the gradient norm, nit and the status are the scalar
    loop's, bit for bit, at every level; the runs change activation patterns on the way."""
    rng = np.random.default_rng(100 * n + m)
    d = 3 * n + 5
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.uniform(0.2, 1.0, n) * np.where(np.arange(n) % 3 == 1, -1.0, 1.0)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0) if m > 1 else np.array([-1.0 if n % 2 else 1.0])
    W0 = rng.standard_normal((m, d)) * 0.3  # mixed signs of beta: some examples start inactive
    runs = {}
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        runs[level] = relucore.train(X, y, signs=signs, init=W0, steps=3000, tol=1e-9, eta=0.5, engine="dual")
    ref = runs["scalar"]
    assert ref.pattern_stable_step > 0  # an activation pattern changed during the run
    assert np.abs(ref.W - W0).max() > 1e-3
    for level in LEVELS[1:]:
        got = runs[level]
        for name in ("alpha", "beta", "W", "loss", "grad_norm", "nit"):
            np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=f"{level} {name}")
        assert got.status == ref.status, level


@pytest.mark.parametrize(("n", "m"), [(3, 1), (10, 1), (10, 3), (16, 2), (40, 2)])
def test_an_exact_fixed_point_has_gradient_norm_zero_at_every_simd_level(monkeypatch, n, m):
    """No example active (beta < 0 everywhere): d_alpha = 0 and d_beta = 0, so each step leaves the
    state as it is, with the loss 1/2 ||y||^2 and a gradient norm of exactly 0 (the step functions
    skip the rescaled norm there). One active example makes the step move again: the numpy
    reference's state and a gradient norm > 0 at every level."""
    K, y, outer, alpha, beta, eta = _problem(n, m, seed=3 * n + m)
    beta = -np.abs(beta) - 0.1
    half_y2 = 0.0
    for v in y:  # the engine's order: one term at a time, increasing i
        half_y2 += v * v
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        got_a, got_b, (loss, grad_norm) = _run(K, y, outer, alpha, beta, eta, 30, scalars=True)
        np.testing.assert_array_equal(got_a, alpha, err_msg=level)
        np.testing.assert_array_equal(got_b, beta, err_msg=level)
        assert loss == half_y2 / 2 and grad_norm == 0.0, level
    moving = beta.copy()
    i = int(np.flatnonzero(y * outer[0] > 0)[0])  # the neuron moves towards y_i: it stays active
    moving[0, i] = 0.5
    ref_a, ref_b = _reference(K, y, outer, alpha, moving, eta, 12)
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        got_a, got_b, (_, grad_norm) = _run(K, y, outer, alpha, moving, eta, 12, scalars=True)
        np.testing.assert_array_equal(got_a, ref_a, err_msg=level)
        np.testing.assert_array_equal(got_b, ref_b, err_msg=level)
        assert grad_norm > 0, level


def test_dual_step_long_run_same_bits_at_every_simd_level(monkeypatch):
    """2000 steps (resynchronisations included) at n = 50, m = 3: all levels agree bit for bit."""
    K, y, outer, alpha, beta, eta = _problem(50, 3, seed=5)
    runs = {}
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        runs[level] = _run(K, y, outer, alpha, beta, eta, 2000)
    for level in LEVELS[1:]:
        np.testing.assert_array_equal(runs[level][0], runs["scalar"][0], err_msg=level)
        np.testing.assert_array_equal(runs[level][1], runs["scalar"][1], err_msg=level)


@pytest.fixture
def builtin_products():
    """relucore's built-in products (no BLAS) for the test."""
    _core._use_blas(False)
    yield
    _core._use_blas(True)


def test_builtin_weights_rows_together_equal_rows_alone(builtin_products):
    """W = W0 + (alpha - alpha0) X on the built-in kernel (two rows of W per pass over X):
    every row bitwise as computed alone, and within 1e-14 of a long-double reference."""
    rng = np.random.default_rng(7)
    n, d, m = 23, 1037, 5
    X = rng.standard_normal((1, n, d))
    W0 = rng.standard_normal((1, m, d))
    alpha0 = rng.standard_normal((1, m, n))
    alpha = alpha0 + rng.standard_normal((1, m, n))
    W = np.empty_like(W0)
    _core.weights_from_dual_batch(X=X, W0=W0, alpha0=alpha0, alpha=alpha, W=W, n_threads=1)
    for k in range(m):
        Wk = np.empty_like(W0[:, k : k + 1])
        _core.weights_from_dual_batch(
            X=X, W0=W0[:, k : k + 1].copy(), alpha0=alpha0[:, k : k + 1].copy(), alpha=alpha[:, k : k + 1].copy(),
            W=Wk, n_threads=1,
        )  # fmt: skip
        np.testing.assert_array_equal(W[:, k], Wk[:, 0])
    ref = W0[0].astype(np.longdouble) + (alpha[0] - alpha0[0]).astype(np.longdouble) @ X[0].astype(np.longdouble)
    assert float(np.abs(W[0] - ref).max() / np.abs(ref).max()) < 1e-14


@pytest.mark.parametrize("options", [dict(train_outer=True, output_scale=0.5), dict(loss="logistic")])
def test_general_dual_step_tiled_same_bits_at_every_simd_level(monkeypatch, options):
    """The general step (trained outer layer, logistic loss) at n = 600 > dual_kernels::kTiledMinRows
    sums every neuron's product in one tiled pass on the vector levels and row by row on the
    scalar level: the states agree bit for bit."""
    n, d, m = 600, 607, 5
    rng = np.random.default_rng(11)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    if options.get("loss") == "logistic":
        y = np.sign(y)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    W0 = rng.standard_normal((m, d)) * 0.5
    runs = {}
    for level in LEVELS:
        monkeypatch.setenv("RELUCORE_SIMD", level)
        runs[level] = relucore.train(X, y, signs=signs, init=W0, steps=6, tol=0.0, engine="dual", **options)
    ref = runs["scalar"]
    assert np.abs(ref.W - W0).max() > 1e-6  # the steps moved the weights
    assert 0 < np.count_nonzero(ref.beta > 0) < ref.beta.size  # active and inactive examples
    for level in LEVELS[1:]:
        np.testing.assert_array_equal(runs[level].alpha, ref.alpha, err_msg=level)
        np.testing.assert_array_equal(runs[level].beta, ref.beta, err_msg=level)
        np.testing.assert_array_equal(runs[level].W, ref.W, err_msg=level)
