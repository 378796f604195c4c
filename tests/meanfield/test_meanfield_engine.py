"""The mean-field SGD engine (relucore/meanfield/weight_gd.hpp) and its generator (rng.hpp).

Independent references: numpy's Philox bit generator (bitwise), a numpy loop
written here (same sample indices and noise), central finite differences of
the objective written here, and exact distributional facts about the noise.
"""

import re

import numpy as np
import pytest
from scipy import stats

from relucore import _core, meanfield


# ----------------------------------------------------------------- generator
@pytest.mark.parametrize(
    "counter,key", [([5, 7, 9, 11], [123, 456]), ([1, 0, 0, 0], [0, 0]), ([2**64 - 1, 3, 2**63, 1], [2**64 - 1, 2**40])]
)
def test_philox_matches_numpy(counter, key):
    # numpy's Philox increments the (first word of the) counter before each block: start one below.
    c = np.array(counter, dtype=np.uint64)
    c[0] -= np.uint64(1)
    ref = np.random.Philox(counter=c, key=np.array(key, dtype=np.uint64)).random_raw(4)
    assert np.array_equal(_core.philox4x64(counter, key), ref)


def _box_muller(words):
    u = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    u1, u2 = 1.0 - u[0::2], u[1::2]
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(words.size)
    z[0::2] = r * np.cos(2 * np.pi * u2)
    z[1::2] = r * np.sin(2 * np.pi * u2)
    return z


def test_normals_are_box_muller_of_philox_blocks():
    key, step, neuron, stream = (11, 22), 33, 44, 0
    nb = 2500
    words = np.concatenate([_core.philox4x64([step, neuron, stream, j], key) for j in range(nb)])
    got = _core.rng_normals(*key, step, neuron, stream, 4 * nb - 2)
    # relucore evaluates log and sincos by its own polynomials: a few ulp from libm's
    np.testing.assert_allclose(got, _box_muller(words)[: 4 * nb - 2], rtol=1e-14, atol=2e-15)
    u = _core.rng_uniforms(*key, step, neuron, 1, 5)
    w = _core.philox4x64([step, neuron, 1, 0], key)
    np.testing.assert_array_equal(u[:4], (w >> np.uint64(11)).astype(float) * 2.0**-53)


def test_init_stream():
    theta = _core.weight_gd_init(7, 4, 0.5, 3, 4, False)
    ref = np.array([0.5 * _core.rng_normals(3, 4, 0, i, 2, 4) for i in range(7)])
    np.testing.assert_array_equal(theta, ref)
    fixed = _core.weight_gd_init(7, 4, 0.5, 3, 4, True)
    np.testing.assert_array_equal(fixed[:, 0], np.where(ref[:, 0] >= 0, 1.0, -1.0))
    np.testing.assert_array_equal(fixed[:, 1:], ref[:, 1:])


def _noise(key, t, N, P):
    """The engine's noise of step t (meanfield/noise.hpp): coordinate q of neuron i is normal i of
    stream t P + q of the vectorised generator under word 0 of the Philox4x64 block (0, 0, 0, 0)."""
    noise_key = int(_core.philox4x64([0, 0, 0, 0], [int(key[0]), int(key[1])])[0])
    xi = np.empty((N, P))
    col = np.empty(N)
    for q in range(P):
        _core.counter_normals(noise_key, t * P + q, 0, col)
        xi[:, q] = col
    return xi


# ----------------------------------------------------------- numpy reference
def _batch(key, t, M, B):
    if B == M:
        return np.arange(M)
    u = _core.rng_uniforms(int(key[0]), int(key[1]), t, 0, 1, B)
    perm = np.arange(M)
    out = np.empty(B, dtype=np.int64)
    for k in range(B):
        j = k + min(int(u[k] * (M - k)), M - k - 1)
        perm[k], perm[j] = perm[j], perm[k]
        out[k] = perm[k]
    return out


def _reference(
    X, y, theta0, *, steps, eta, weight_decay, temperature, batch_size, bias, train_outer, kappa, key, samples=None
):
    """The update of relucore.meanfield.train written with whole-array numpy (the engine's
    keywords, so that a test hands the same settings to both)."""
    iters, step, lam, T, B = steps, eta, weight_decay, temperature, batch_size
    theta = theta0.copy()
    N, P = theta.shape
    M, d = X.shape
    trained = np.ones(P, bool)
    trained[0] = train_outer
    for t in range(iters):
        batch = samples[t] if samples is not None else _batch(key, t, M, B)
        a, W = theta[:, 0], theta[:, 1 : 1 + d]
        b = theta[:, d + 1] if bias else 0.0
        Xb = X[batch]
        Z = Xb @ W.T + b
        r = kappa * (np.maximum(Z, 0) @ a) - y[batch]
        g = 2 * kappa * r / len(batch)
        act = (Z > 0).astype(float)
        grad = np.zeros_like(theta)
        grad[:, 0] = g @ np.maximum(Z, 0)
        grad[:, 1 : 1 + d] = a[:, None] * ((g[:, None] * act).T @ Xb)
        if bias:
            grad[:, d + 1] = a * (g @ act)
        grad += (2 * lam / N) * theta
        theta = theta - step * grad * trained
        if T > 0:
            xi = _noise(key, t, N, P)
            theta = theta + np.sqrt(4 * (step / N) * T) * xi * trained
    return theta


def _objective(theta, X, y, *, lam, kappa, bias, train_outer):
    d = X.shape[1]
    a, W = theta[:, 0], theta[:, 1 : 1 + d]
    b = theta[:, d + 1] if bias else 0.0
    h = kappa * (np.maximum(X @ W.T + b, 0) @ a)
    reg = theta[:, (0 if train_outer else 1) :]
    return np.mean((h - y) ** 2) + lam / theta.shape[0] * np.sum(reg**2)


def _train_from_normal_start(X, y, start, *, m, bias, **kw):
    """``meanfield.train`` from theta0 ~ N(0, sd^2) of shape (N, 4 or 3), ``start = (seed, sd)``; returns (theta0, result)."""
    seed, sd = start
    theta0 = np.random.default_rng(seed).normal(0, sd, (m, 4 if bias else 3))
    return theta0, meanfield.train(X, y, m=m, bias=bias, init=theta0, **kw)


@pytest.fixture
def data2d():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 2))
    y = rng.standard_normal(6)
    return X, y


@pytest.mark.parametrize(
    "B,T,scale,bias,outer",
    [
        (1, 0.0, "1/m", True, True),
        (1, 0.05, "1/m", True, True),
        (3, 0.05, "1/sqrt(m)", True, False),
        (6, 0.0, 1.0, False, True),
        (2, 0.01, "1/m", False, False),
        (1, 0.01, "1/sqrt(m)", False, False),
    ],
)
def test_engine_matches_numpy_loop(data2d, B, T, scale, bias, outer):
    X, y = data2d
    N, iters, step, lam = 9, 60, 0.5, 0.1
    run = dict(eta=step, weight_decay=lam, temperature=T, steps=iters, batch_size=B, bias=bias, train_outer=outer)
    theta0, res = _train_from_normal_start(X, y, (1, 0.7), m=N, output_scale=scale, rng=42, record=10, **run)
    kappa = meanfield.output_scale_factor(scale, N)
    ref = _reference(X, y, theta0, kappa=kappa, key=res.key, **run)
    np.testing.assert_allclose(res.theta, ref, rtol=1e-10, atol=1e-12)
    if not outer:
        np.testing.assert_array_equal(res.theta[:, 0], theta0[:, 0])
    # The recorded objective is L of the recorded state (checked at the end).
    np.testing.assert_allclose(
        res.objective[-1], _objective(ref, X, y, lam=lam, kappa=kappa, bias=bias, train_outer=outer), rtol=1e-10
    )
    assert res.steps.tolist() == list(range(0, iters + 1, 10))


def test_given_samples_are_used(data2d):
    X, y = data2d
    N, iters = 5, 40
    theta0 = np.random.default_rng(2).normal(0, 0.5, (N, 4))
    samples = np.random.default_rng(3).integers(0, 6, (iters, 2))
    samples[:, 1] = (samples[:, 0] + 1) % 6
    run = dict(eta=0.3, weight_decay=0.05, temperature=0.0, steps=iters, batch_size=2, bias=True, train_outer=True)
    res = meanfield.train(X, y, m=N, init=theta0, samples=samples, rng=0, **run)
    ref = _reference(X, y, theta0, kappa=1 / N, key=res.key, samples=samples, **run)
    np.testing.assert_allclose(res.theta, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("scale,bias,outer", [("1/m", True, True), ("1/sqrt(m)", False, True), (1.0, True, False)])
def test_gradient_matches_finite_differences(data2d, scale, bias, outer):
    """One full-batch noiseless step is theta - s grad L: compare (theta - theta')/s with central differences."""
    X, y = data2d
    N, step, lam = 4, 1e-4, 0.3
    P = 4 if bias else 3
    theta0, res = _train_from_normal_start(
        X,
        y,
        (4, 0.8),
        m=N,
        eta=step,
        weight_decay=lam,
        steps=1,
        batch_size=None,
        bias=bias,
        train_outer=outer,
        output_scale=scale,
        rng=0,
    )
    grad = (theta0 - res.theta) / step
    kappa = meanfield.output_scale_factor(scale, N)
    fd = np.zeros_like(theta0)
    eps = 1e-6
    for i in range(N):
        for q in range(P):
            if q == 0 and not outer:
                continue
            tp, tm = theta0.copy(), theta0.copy()
            tp[i, q] += eps
            tm[i, q] -= eps
            f = lambda th: _objective(th, X, y, lam=lam, kappa=kappa, bias=bias, train_outer=outer)  # noqa: E731
            fd[i, q] = (f(tp) - f(tm)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    # The engine's own objective at theta0 agrees with the one written here.
    np.testing.assert_allclose(
        res.objective[0], _objective(theta0, X, y, lam=lam, kappa=kappa, bias=bias, train_outer=outer), rtol=1e-13
    )


def test_objective_decreases_full_batch(data2d):
    X, y = data2d
    res = meanfield.train(
        X, y, m=300, eta=0.5, weight_decay=0.01, init_scale=0.3, steps=3000, batch_size=None, rng=5, record=10
    )
    assert res.success
    assert np.all(np.diff(res.objective) <= 1e-12)
    assert res.objective[-1] < 0.5 * res.objective[0]


def test_engine_call_returns_its_bound_summary(data2d):
    """_core.weight_gd_run returns a WeightGDRunOutput (no dict): status, nit, the final objective and the records
    written; train's result shows the same run."""
    X, y = data2d
    theta0 = np.random.default_rng(2).normal(0, 0.5, (7, 4))
    theta = theta0.copy()
    settings = _core.WeightGDSettings()
    settings.step, settings.weight_decay, settings.record_every, settings.key = 0.3, 0.05, 4, (9, 10)
    steps, objective = np.zeros(6, np.int64), np.zeros(6)
    out = _core.weight_gd_run(
        X=X, y=y, theta=theta, settings=settings, start=0, iters=10, record_final=True, steps=steps, objective=objective
    )
    assert isinstance(out, _core.WeightGDRunOutput)
    assert out.status == _core.Status.completed and out.nit == 10
    assert out.n_records == 4 and steps[:4].tolist() == [0, 4, 8, 10]
    assert out.objective == objective[3]
    kappa = meanfield.output_scale_factor("1/m", 7)
    ref = _objective(theta, X, y, lam=0.05, kappa=kappa, bias=True, train_outer=True)  # the defaults
    np.testing.assert_allclose(out.objective, ref, rtol=1e-12)
    res = meanfield.train(X, y, m=7, eta=0.3, weight_decay=0.05, steps=10, record=4, init=theta0, key=(9, 10))
    assert res.status == out.status and res.nit == out.nit
    np.testing.assert_array_equal(res.objective, objective[:4])
    np.testing.assert_array_equal(res.theta, theta)


@pytest.mark.parametrize("batch_size,bias", [(1, True), (1, False), (3, True)])  # fused and general kernels
def test_thread_count_and_segmentation_do_not_change_results(data2d, batch_size, bias):
    X, y = data2d
    kw = dict(
        m=700,
        eta=1.0,
        weight_decay=0.01,
        temperature=1e-3,
        steps=400,
        batch_size=batch_size,
        bias=bias,
        rng=7,
        record=50,
        track=5,
        snapshots=(0, 123, 400),
    )
    runs = [meanfield.train(X, y, n_threads=t, **kw) for t in (1, 2, 3)]
    runs.append(meanfield.train(X, y, n_threads=2, progress=True, **kw))  # cut into segments
    for r in runs[1:]:
        assert np.array_equal(r.theta, runs[0].theta)
        assert np.array_equal(r.objective, runs[0].objective)
        assert np.array_equal(r.trajectories, runs[0].trajectories)
        assert np.array_equal(r.snapshots, runs[0].snapshots)
    np.testing.assert_array_equal(runs[0].snapshots[-1], runs[0].theta)
    assert np.array_equal(runs[0].trajectories[-1], runs[0].theta[runs[0].track])


def test_seed_and_key_reproduce(data2d):
    X, y = data2d
    a = meanfield.train(X, y, m=50, steps=100, temperature=0.01, rng=3)
    b = meanfield.train(X, y, m=50, steps=100, temperature=0.01, key=a.key)
    c = meanfield.train(X, y, m=50, steps=100, temperature=0.01, rng=4)
    assert np.array_equal(a.theta, b.theta)
    assert not np.array_equal(a.theta, c.theta)


def test_noise_increment_is_standard_normal():
    """From theta = 0 the gradient vanishes (relu'(0) = 0), so one step is pure noise sqrt(4 s T / N) xi."""
    X = np.array([[1.0, 2.0], [-1.0, 0.5]])
    N, step, T = 20000, 2.0, 0.3
    res = meanfield.train(
        X,
        np.array([1.0, -1.0]),
        m=N,
        eta=step,
        temperature=T,
        weight_decay=0.1,
        init=np.zeros((N, 4)),
        steps=1,
        rng=9,
    )
    sd = np.sqrt(4 * step / N * T)
    # bitwise the generator's normals (the engine's chunks of neurons = the whole streams)
    np.testing.assert_array_equal(res.theta, sd * _noise(res.key, 0, N, 4))
    z = (res.theta / sd).ravel()
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)
    assert stats.kstest(z, "norm").pvalue > 1e-4
    # neurons and coordinates are uncorrelated
    C = np.corrcoef(res.theta.T)
    assert np.max(np.abs(C - np.eye(4))) < 5 / np.sqrt(N)


def test_single_sample_indices_are_uniform():
    key = meanfield.seed_key(0)
    M = 7
    draws = np.array([_batch(key, t, M, 1)[0] for t in range(7000)])
    counts = np.bincount(draws, minlength=M)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_divergence_is_reported(data2d):
    X, y = data2d
    res = meanfield.train(
        X, 1e3 * y, m=20, eta=50.0, output_scale=1.0, init_scale=1.0, steps=2000, batch_size=None, rng=0, record=0
    )
    assert not res.success and res.status == _core.Status.diverged
    assert res.nit < 2000
    assert res.steps[-1] == res.nit


@pytest.mark.parametrize(
    "kw,err",
    [
        (dict(eta=0.0), ValueError),
        (dict(batch_size=7), ValueError),
        (dict(output_scale="N"), ValueError),
        (dict(init=np.zeros((3, 4))), ValueError),
        (dict(snapshots=(11,)), ValueError),
        (dict(m=0), ValueError),
        (dict(samples=np.zeros((10, 1), int) + 6), ValueError),
        (dict(rng=True), TypeError),
        (dict(temperature=-1.0), ValueError),
    ],
)
def test_validation(data2d, kw, err):
    X, y = data2d
    args = dict(m=5, steps=10)
    args.update(kw)
    with pytest.raises(err):
        meanfield.train(X, y, **args)


def test_inconsistent_lengths(data2d):
    X, y = data2d
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        meanfield.train(X, y[:-1], m=5, steps=1)


class _Stop(Exception):
    pass


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="needs POSIX interval timers")
def test_signal_cancels_a_long_run(data2d):
    """A Python signal handler that raises interrupts the engine (run_without_gil -> cancel flag)."""
    import signal

    X, y = data2d

    def handler(signum, frame):
        raise _Stop()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Stop):
            meanfield.train(X, y, m=1000, steps=30_000_000, record=0, rng=0)  # minutes if not cancelled
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("d", [1, 3, 5])  # fused kernels for d <= 3, general loops above
def test_engine_matches_numpy_loop_other_dimensions(d):
    rng = np.random.default_rng(d)
    X, y = rng.standard_normal((5, d)), rng.standard_normal(5)
    N, iters = 11, 50
    theta0 = rng.normal(0, 0.7, (N, d + 2))
    run = dict(eta=0.5, weight_decay=0.1, temperature=0.02, steps=iters, batch_size=1, bias=True, train_outer=True)
    res = meanfield.train(X, y, m=N, init=theta0, rng=1, **run)
    ref = _reference(X, y, theta0, kappa=1 / N, key=res.key, **run)
    np.testing.assert_allclose(res.theta, ref, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ SIMD paths
# The fused single-sample kernels (d <= 3) have scalar, SSE2, AVX and (noiseless) AVX-512F
# paths chosen at run time; RELUCORE_SIMD caps the widest one (a cap above
# what the CPU has falls back to the best available path, so every value is
# safe to set here). All paths must give bitwise the same numbers.
SIMD_PATHS = ("scalar", "sse2", "avx", "avx512")


@pytest.mark.parametrize(
    "d,bias,outer,T",
    [
        (2, True, True, 0.0),
        (2, True, True, 1e-3),
        (1, False, True, 0.0),
        (3, True, False, 0.02),
        (2, False, False, 1e-3),
    ],
)
def test_simd_paths_are_bitwise_identical(monkeypatch, d, bias, outer, T):
    rng = np.random.default_rng(10 + d)
    X, y = rng.standard_normal((7, d)), rng.standard_normal(7)
    N, iters = 301, 60  # chunks of 128, 128 and 45 neurons: full vectors and every kind of tail
    theta0 = rng.normal(0, 0.7, (N, d + (2 if bias else 1)))
    run = dict(eta=0.5, weight_decay=0.1, temperature=T, steps=iters, batch_size=1, bias=bias, train_outer=outer)
    runs = {}
    for path in SIMD_PATHS:
        monkeypatch.setenv("RELUCORE_SIMD", path)
        for n_threads in (1, 3):
            runs[path, n_threads] = meanfield.train(
                X, y, m=N, init=theta0, rng=3, record=20, n_threads=n_threads, **run
            )
    ref = runs["scalar", 1]
    for r in runs.values():
        assert r.theta.tobytes() == ref.theta.tobytes()  # bitwise, signed zeros included
        assert r.objective.tobytes() == ref.objective.tobytes()
    expect = _reference(X, y, theta0, kappa=1 / N, key=ref.key, **run)
    np.testing.assert_allclose(ref.theta, expect, rtol=1e-10, atol=1e-12)


def test_simd_paths_agree_in_the_benchmark_setting(monkeypatch):
    # bench/bench_meanfield.py's setting (N = 1000, the 3x3 grid, s = 1, lambda = 1e-2, no noise).
    X = np.array([[i, j] for i in (-1.0, 0.0, 1.0) for j in (-1.0, 0.0, 1.0)])
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    theta0 = np.random.default_rng(2).normal(0, 0.5, (1000, 4))
    out = []
    for path in SIMD_PATHS:
        monkeypatch.setenv("RELUCORE_SIMD", path)
        out.append(
            meanfield.train(X, y, m=1000, eta=1.0, weight_decay=1e-2, steps=500, init=theta0, rng=0, record=0).theta
        )
    assert all(t.tobytes() == out[0].tobytes() for t in out)


def test_simd_cap_is_validated(monkeypatch, data2d):
    X, y = data2d
    monkeypatch.setenv("RELUCORE_SIMD", "avx9")
    with pytest.raises(ValueError, match="RELUCORE_SIMD"):
        meanfield.train(X, y, m=5, steps=3)


@pytest.mark.parametrize("old,new", [("N", "m"), ("M", "n"), ("step", "eta"), ("iters", "steps"), ("seed", "rng")])
def test_old_names_are_refused_naming_the_new_one(data2d, old, new):
    """The 0.x keywords are gone in 1.0: each is a TypeError that names its replacement."""
    X, y = data2d
    with pytest.raises(TypeError, match=f"0.x keyword {old}=.*use {new}="):
        meanfield.train(X, y, steps=1, **{old: 3})


@pytest.mark.parametrize("old,new", [("1/N", '"1/m"'), ("1/sqrt(N)", '"1/sqrt(m)"'), ("1", "1.0")])
def test_old_output_scales_are_refused_naming_the_new_one(data2d, old, new):
    X, y = data2d
    with pytest.raises(ValueError, match=re.escape(f"use output_scale={new}")):
        meanfield.train(X, y, m=5, steps=1, output_scale=old)


@pytest.mark.parametrize("rule,kappa", [("1/m", lambda m: 1.0 / m), ("1/sqrt(m)", lambda m: 1.0 / np.sqrt(m))])
def test_float_output_scale_equals_the_named_rule_bitwise(data2d, rule, kappa):
    """kappa given as a float runs the engine with that kappa: the named rule's float gives its run bit for bit."""
    X, y = data2d
    run = dict(m=7, eta=0.5, steps=40, rng=3, record=10, temperature=0.01)
    named = meanfield.train(X, y, output_scale=rule, **run)
    given = meanfield.train(X, y, output_scale=kappa(7), **run)
    np.testing.assert_array_equal(given.theta, named.theta)
    np.testing.assert_array_equal(given.objective, named.objective)
    assert given.kappa == named.kappa == kappa(7)
    other = meanfield.train(X, y, output_scale=2 * kappa(7), **run)  # a float that is not the rule changes the run
    assert not np.array_equal(other.theta, named.theta)


def test_predict_takes_the_result(data2d):
    X, y = data2d
    res = meanfield.train(X, y, m=7, steps=30, rng=1, record=0, output_bias=0.25)
    np.testing.assert_array_equal(meanfield.predict(res, X), res.predict(X))
    np.testing.assert_array_equal(
        meanfield.predict(res.theta, X, kappa=res.kappa, bias=True) + 0.25 - (0.25 - res.output_bias), res.predict(X)
    )
    with pytest.raises(TypeError, match="takes kappa and bias from the result"):
        meanfield.predict(res, X, kappa=1.0)
    with pytest.raises(TypeError, match="needs kappa="):
        meanfield.predict(res.theta, X)


def test_a_run_that_uses_its_whole_budget_is_completed(data2d):
    """A run that uses its whole budget is completed, a success (no convergence test, no numerical failure)."""
    X, y = data2d
    res = meanfield.train(X, y, m=5, steps=3)
    assert res.status == _core.Status.completed and res.success and res.nit == 3
