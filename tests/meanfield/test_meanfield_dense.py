"""meanfield.train's batch steps as matrix products (meanfield/dense_step.hpp), on the BLAS and on the loops.

Checked against two references written here (PyTorch autograd in float64 where PyTorch is
installed, and numpy with the gradient written out, which runs everywhere), against
``relucore.train(engine="weights", train_outer=True)`` on the same problem, and for
independence of the thread count, of the cut into segments and of the block width.
"""

import numpy as np
import pytest

import relucore
from relucore import meanfield


def problem(seed, M=30, d=7, N=1500):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((M, d)) / np.sqrt(d)
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]
    theta0 = rng.standard_normal((N, d + 2)) * 0.7
    return X, y, theta0


def torch_reference(X, y, theta0, *, eta, lam, kappa, steps, samples, bias=True, train_outer=True):
    """SGD with step eta on (1/B) sum_{j in B_t} (h(x_j) - y_j)^2 + (lam/N) ||trained theta||^2 (autograd)."""
    torch = pytest.importorskip("torch")
    d, N = X.shape[1], theta0.shape[0]
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    a = torch.tensor(theta0[:, 0], requires_grad=train_outer)
    W = torch.tensor(theta0[:, 1 : 1 + d], requires_grad=True)
    b = torch.tensor(theta0[:, 1 + d] if bias else np.zeros(N), requires_grad=bias)
    params = [p for p in (a, W, b) if p.requires_grad]
    opt = torch.optim.SGD(params, lr=eta)
    for t in range(steps):
        idx = torch.from_numpy(samples[t])
        opt.zero_grad()
        h = kappa * (torch.relu(Xt[idx] @ W.T + b) @ a)
        reg = sum((p**2).sum() for p in params)
        loss = ((h - yt[idx]) ** 2).mean() + lam / N * reg
        loss.backward()
        opt.step()
    cols = [a.detach().numpy()[:, None], W.detach().numpy()] + ([b.detach().numpy()[:, None]] if bias else [])
    return np.concatenate(cols, axis=1)


def numpy_reference(X, y, theta0, *, eta, lam, kappa, steps, samples, bias=True, train_outer=True):
    """torch_reference's SGD with the gradient written out (no autograd): for the batch B,
    r = 2 (h - y) / |B|, u = kappa phi'(Z) * r a^T with Z = X_B W^T + b, and
    dL/da = kappa relu(Z)^T r, dL/dW = u^T X_B, dL/db = 1^T u, each plus (2 lam / N) times the parameter."""
    d, N = X.shape[1], theta0.shape[0]
    a, W = theta0[:, 0].copy(), theta0[:, 1 : 1 + d].copy()
    b = theta0[:, 1 + d].copy() if bias else np.zeros(N)
    for t in range(steps):
        Xb, yb = X[samples[t]], y[samples[t]]
        Z = Xb @ W.T + b
        A = np.maximum(Z, 0.0)
        r = 2.0 * (kappa * (A @ a) - yb) / len(yb)
        u = kappa * (Z > 0) * np.outer(r, a)
        grad_a = kappa * (A.T @ r) + 2 * lam / N * a
        grad_W = u.T @ Xb + 2 * lam / N * W
        grad_b = u.sum(axis=0) + 2 * lam / N * b
        if train_outer:
            a = a - eta * grad_a
        W = W - eta * grad_W
        if bias:
            b = b - eta * grad_b
    cols = [a[:, None], W] + ([b[:, None]] if bias else [])
    return np.concatenate(cols, axis=1)


@pytest.fixture(params=["widest", "sse2"])
def simd_cap(request, monkeypatch):
    """The widest SIMD path (the full batch with d + 1 >= 32 on the packed kernels where the CPU has
    AVX2 with FMA or AVX-512F) and a cap at SSE2 (never those kernels)."""
    if request.param == "sse2":
        monkeypatch.setenv("RELUCORE_SIMD", "sse2")
    return request.param


@pytest.mark.parametrize("batch", [None, 9])
@pytest.mark.parametrize("d", [7, 40])
@pytest.mark.parametrize("bias,train_outer", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("reference", [torch_reference, numpy_reference], ids=["torch", "numpy"])
def test_matches_reference(reference, blas_path, simd_cap, batch, d, bias, train_outer):
    X, y, theta0 = problem(1, d=d, N=300)
    M, d = X.shape
    N = theta0.shape[0]
    theta0 = theta0 if bias else theta0[:, : d + 1]
    steps, eta, lam = 40, 0.4, 0.3
    B = M if batch is None else batch
    rng = np.random.default_rng(2)
    samples = np.stack([rng.permutation(M)[:B] if batch else np.arange(M) for _ in range(steps)])
    r = meanfield.train(
        X, y, m=N, eta=eta, weight_decay=lam, temperature=0.0, steps=steps, batch_size=batch, bias=bias,
        train_outer=train_outer, output_scale="1/sqrt(m)", init=theta0, samples=samples, record=0, n_threads=1,
    )  # fmt: skip
    ref = reference(
        X, y, theta0, eta=eta, lam=lam, kappa=1 / np.sqrt(N), steps=steps, samples=samples, bias=bias,
        train_outer=train_outer,
    )  # fmt: skip
    assert np.max(np.abs(r.theta - theta0)) > 1e-3  # the run moved the neurons
    assert np.max(np.abs(r.theta - ref)) <= 1e-12 * np.max(np.abs(ref))


def test_matches_train_weights_with_trained_outer_layer(blas_path):
    # meanfield.train's objective (1/M) sum (h - y)^2 with step s is train's 1/2 sum (h - y)^2 with eta = 2 s / M.
    X, y, theta0 = problem(3, M=50, d=40, N=35)
    M, d = X.shape
    N, s, steps = theta0.shape[0], 0.5, 60
    kappa = 1 / np.sqrt(N)
    mf = meanfield.train(
        X, y, m=N, eta=s, weight_decay=0.0, temperature=0.0, steps=steps, batch_size=None, bias=True,
        train_outer=True, output_scale="1/sqrt(m)", init=theta0, record=0, n_threads=1,
    )  # fmt: skip
    r = relucore.train(
        X, y, signs=theta0[:, 0], init=theta0[:, 1:], eta=2 * s / M, steps=steps, tol=0, engine="weights",
        train_outer=True, output_scale=kappa, bias=True, n_threads=1,
    )  # fmt: skip
    assert np.max(np.abs(mf.theta - theta0)) > 1e-3
    assert np.max(np.abs(r.outer - mf.theta[:, 0])) <= 1e-12 * np.max(np.abs(mf.theta[:, 0]))
    assert np.max(np.abs(r.W - mf.theta[:, 1 : 1 + d])) <= 1e-12
    assert np.max(np.abs(r.bias - mf.theta[:, -1])) <= 1e-12


@pytest.mark.parametrize("d,batch", [(12, 6), (12, None), (40, None)])
def test_blas_and_loops_agree_to_rounding(monkeypatch, d, batch):
    from relucore import _core

    X, y, theta0 = problem(4, d=d)
    kw = dict(
        m=theta0.shape[0], eta=0.5, weight_decay=0.1, temperature=1e-4, steps=80, batch_size=batch, init=theta0,
        rng=5, record=0, n_threads=1,
    )  # fmt: skip
    if not _core._use_blas(True):
        pytest.skip("scipy's BLAS not registered")
    r_blas = meanfield.train(X, y, **kw)
    _core._use_blas(False)
    monkeypatch.setenv("RELUCORE_SIMD", "sse2")  # nor the packed kernels (AVX2 or AVX-512)
    try:
        r_loops = meanfield.train(X, y, **kw)
    finally:
        _core._use_blas(True)
    assert np.max(np.abs(r_blas.theta - theta0)) > 1e-3
    assert not np.array_equal(r_blas.theta, r_loops.theta)  # the two paths did run (they round differently)
    assert np.max(np.abs(r_blas.theta - r_loops.theta)) <= 1e-12 * np.max(np.abs(r_loops.theta))


@pytest.mark.parametrize("batch,d", [(None, 9), (4, 9), (None, 40)])
def test_threads_and_segments_do_not_change_results(blas_path, batch, d):
    # N = 2500 spans three blocks of neurons: thread counts 1, 2, 3 split them differently.
    X, y, theta0 = problem(5, M=20, d=d, N=2500)
    kw = dict(
        m=theta0.shape[0], eta=0.8, weight_decay=0.01, temperature=1e-3, steps=120, batch_size=batch,
        init=theta0, rng=11, record=30, track=4, snapshots=(0, 77, 120),
    )  # fmt: skip
    runs = [meanfield.train(X, y, n_threads=t, **kw) for t in (1, 2, 3)]
    runs.append(meanfield.train(X, y, n_threads=2, progress=True, **kw))  # cut into segments
    assert np.max(np.abs(runs[0].theta - theta0)) > 1e-3
    for r in runs[1:]:
        assert np.array_equal(r.theta, runs[0].theta)
        assert np.array_equal(r.objective, runs[0].objective)
        assert np.array_equal(r.trajectories, runs[0].trajectories)
        assert np.array_equal(r.snapshots, runs[0].snapshots)


@pytest.mark.parametrize("d,s", [(7, 0.3), (40, 0.45)])
def test_shares_the_weight_step_kernel_with_train_weights(blas_path, d, s):
    # meanfield.train's batch steps and train(engine="weights") take their products and backward
    # coefficients from the one kernel (gd/weight_step.hpp, gd/model.hpp): on a problem where the two
    # front ends' remaining arithmetic is exact, their results are bitwise equal. Exact here: M = 16
    # samples (the factors 2 / M and eta = 2 s / M are powers of two times s, which scale the rounding
    # exactly), output scale 1 (kappa = c = 1), no weight decay (decay = 1) and no noise, no bias (the
    # same X on both sides), N = 2 neurons (meanfield's chunk lanes and train's sum in neuron order
    # add the same two terms), and fewer steps than train's resynchronisation period. A second
    # implementation of either step (its own loops, another summation order) breaks the equality.
    X, y, theta0 = problem(7, M=16, d=d, N=2)
    theta0 = theta0[:, : d + 1]
    steps = 200
    mf = meanfield.train(
        X, y, m=2, eta=s, weight_decay=0.0, temperature=0.0, steps=steps, batch_size=None, bias=False,
        train_outer=True, output_scale=1.0, init=theta0, record=0, n_threads=1,
    )  # fmt: skip
    r = relucore.train(
        X, y, signs=theta0[:, 0], init=theta0[:, 1:], eta=2 * s / 16, steps=steps, tol=0, engine="weights",
        train_outer=True, output_scale=1.0, n_threads=1,
    )  # fmt: skip
    assert np.max(np.abs(mf.theta - theta0)) > 1e-3  # the run moved the neurons
    assert r.outer.tobytes() == mf.theta[:, 0].tobytes()
    assert r.W.tobytes() == np.ascontiguousarray(mf.theta[:, 1:]).tobytes()
