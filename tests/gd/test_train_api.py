"""train's batching, threads, history, statuses and input validation."""

import numpy as np
import pytest
from _problems import fig4_problem

import relucore
from relucore import Status, _core


def batch(B, n=10, d=300, seed=0):
    Xs, ys = zip(*(fig4_problem(seed + b, n=n, d=d) for b in range(B)))
    return np.stack(Xs), np.stack(ys)


FIELDS = ("W", "alpha", "beta", "loss", "grad_norm", "nit", "status", "pattern_stable_step", "eta")


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_batch_equals_separate_calls_bitwise(engine):
    X, y = batch(5)
    res = relucore.train(X, y, signs=(1, -1), engine=engine, record=3)
    assert res.batched and res.W.shape == (5, 2, 300)
    for b in range(5):
        one = relucore.train(X[b], y[b], signs=(1, -1), engine=engine, record=3)
        for f in FIELDS:
            assert np.array_equal(np.asarray(getattr(res, f))[b], np.asarray(getattr(one, f))), f
        r = int(res.history.n_records[b])
        assert r == one.history.n_records
        assert np.array_equal(res.history.beta[b, :r], one.history.beta)
        assert np.all(res.history.steps[b, r:] == -1)


def test_thread_count_does_not_change_results():
    X, y = batch(8, n=12, d=200, seed=10)
    kw = dict(signs=(1, 1, -1), init="gaussian", rng=5, init_scale=0.05, steps=400, tol=0.0)
    one = relucore.train(X, y, n_threads=1, **kw)
    two = relucore.train(X, y, n_threads=2, **kw)
    for f in FIELDS:
        assert np.array_equal(np.asarray(getattr(one, f)), np.asarray(getattr(two, f))), f


def test_repeated_runs_are_bitwise_identical():
    X, y = fig4_problem(3)
    a = relucore.train(X, y, signs=(1, -1), init="gaussian", rng=11)
    b = relucore.train(X, y, signs=(1, -1), init="gaussian", rng=11)
    assert np.array_equal(a.W, b.W) and a.nit == b.nit


def test_history_records_every_kth_state_and_the_last():
    X, y = fig4_problem(5)
    res = relucore.train(X, y, signs=(1, -1), record=4, steps=10, tol=0.0)
    h = res.history
    assert list(h.steps) == [0, 4, 8, 10]
    assert np.array_equal(h.beta[0], res.beta0)
    assert np.array_equal(h.beta[-1], res.beta)
    assert np.array_equal(h.mask, h.beta > 0)
    assert h.loss[-1] == res.loss
    # The loss in the history is the loss of the recorded beta.
    s = res.signs[:, None]
    hh = (s * np.maximum(h.beta, 0)).sum(1)
    assert np.allclose(h.loss, 0.5 * ((hh - y) ** 2).sum(-1), rtol=1e-12)


def test_pattern_stable_step_is_last_mask_change():
    X, y = fig4_problem(0, n=10, d=50)
    res = relucore.train(X, y, signs=(1,), init="gaussian", rng=2, record=1, steps=3000, tol=0.0)
    m = res.history.mask
    changes = [t for t in range(1, len(m)) if not np.array_equal(m[t], m[t - 1])]
    assert res.pattern_stable_step == (changes[-1] if changes else 0)


def test_status_and_messages():
    X, y = fig4_problem(1)
    ok = relucore.train(X, y, signs=(1, -1))
    assert ok.success and ok.status == Status.converged and "converged" in ok.message
    short = relucore.train(X, y, signs=(1, -1), steps=3)
    assert not short.success and short.status == Status.max_steps and short.nit == 3 and "step budget" in short.message
    zero = relucore.train(X, y, steps=0)
    assert zero.nit == 0 and np.array_equal(zero.beta, zero.beta0)


def test_step_budget_message_with_tol_zero():
    X, y = fig4_problem(1)
    res = relucore.train(X, y, tol=0, steps=100)
    assert res.status == Status.max_steps
    assert res.message.startswith("step budget of 100 used up (tol = 0: never stop early); gradient norm ")
    assert "> tol" not in res.message
    # A tol that prints like the gradient norm at 3 digits gets more digits.
    g = float(relucore.train(X, y, steps=5).grad_norm)
    close = relucore.train(X, y, steps=5, tol=g * (1 - 1e-9))
    printed = close.message.split("gradient norm ")[1].split(" still above tol ")
    assert close.status == Status.max_steps and float(printed[0]) > float(printed[1])


def test_rng_with_a_deterministic_init_warns_and_changes_nothing():
    X, y = fig4_problem(1)
    with pytest.warns(UserWarning, match="rng only affects init='gaussian'.*init='positive'.*rng=5 is ignored"):
        res = relucore.train(X, y, rng=5, steps=10)
    assert np.array_equal(res.W, relucore.train(X, y, steps=10).W)
    with pytest.warns(UserWarning, match="an array init"):
        relucore.train(X, y, init=res.W0, rng=5, steps=1)


def test_divergence_is_a_status_or_an_error():
    X, y = fig4_problem(2)
    res = relucore.train(X, y, signs=(1, -1), eta=1.0, steps=1000)
    assert res.status == Status.diverged and not res.success
    assert "smaller eta" in res.message and "diverged at step" in res.message
    with pytest.raises(relucore.DivergenceError, match="smaller eta"):
        relucore.train(X, y, signs=(1, -1), eta=1.0, steps=1000, on_divergence="raise")


def test_default_eta_is_inverse_sign_weighted_top_eigenvalue():
    X, y = fig4_problem(0)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    assert relucore.train(X, y, signs=(1,), steps=0).eta == pytest.approx(1 / mu1, rel=1e-12)
    assert relucore.train(X, y, signs=(1, -1), steps=0).eta == pytest.approx(1 / (2 * mu1), rel=1e-12)


def test_fortran_and_noncontiguous_inputs_are_accepted():
    X, y = fig4_problem(0, d=100)
    ref = relucore.train(X, y, steps=20, tol=0.0)
    a = relucore.train(np.asfortranarray(X), y, steps=20, tol=0.0)
    Xw = np.zeros((10, 200))
    Xw[:, ::2] = X
    b = relucore.train(Xw[:, ::2], list(y), steps=20, tol=0.0)
    assert np.array_equal(ref.W, a.W) and np.array_equal(ref.W, b.W)


@pytest.mark.parametrize(
    "X_fn, y_fn, kw, exc, match",
    [
        (
            lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X),
            lambda y: y,
            {},
            ValueError,
            "X contains NaN",
        ),
        (
            lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X),
            lambda y: y,
            {},
            ValueError,
            "X contains infinity",
        ),
        (lambda X: X, lambda y: np.r_[y[:-1], np.nan], {}, ValueError, "y contains NaN"),
        (lambda X: X, lambda y: y[:-1], {}, ValueError, "inconsistent numbers of samples"),
        (lambda X: X[0], lambda y: y, {}, ValueError, "X must be 2 or 3-dimensional"),
        (lambda X: X, lambda y: y[:, None], {}, ValueError, "disagree on batching"),
        (lambda X: X[:, :5], lambda y: y, {}, ValueError, "rank-deficient or badly conditioned"),
        (lambda X: X, lambda y: y, {"eta": -1.0}, ValueError, "eta must be positive"),
        (lambda X: X, lambda y: y, {"eta": np.nan}, ValueError, "eta must be finite"),
        (lambda X: X, lambda y: y, {"steps": -1}, ValueError, "steps must be >= 0"),
        (lambda X: X, lambda y: y, {"tol": -1.0}, ValueError, "tol must be non-negative"),
        (lambda X: X, lambda y: y, {"eps": -1.0}, ValueError, "eps must be positive"),
        (lambda X: X, lambda y: y, {"signs": (1, 0)}, ValueError, "must be non-zero"),
        (lambda X: X, lambda y: y, {"signs": ()}, ValueError, "signs is empty"),
        (lambda X: X, lambda y: y, {"init": "bogus"}, ValueError, "init must be one of"),
        (lambda X: X, lambda y: y, {"engine": "gpu"}, ValueError, "engine must be one of"),
        (lambda X: X.astype(complex), lambda y: y, {}, TypeError, "X must be real-valued"),
        (lambda X: X.astype(str), lambda y: y, {}, TypeError, "X must be a numeric array"),
        (lambda X: X, lambda y: y, {"loss": "logistic"}, ValueError, "labels in"),
        (lambda X: X, lambda y: y, {"init": np.zeros((2, 3))}, ValueError, "init array must have shape"),
        (lambda X: X, lambda y: y, {"n_threads": 0}, ValueError, "n_threads must be >= 1"),
    ],
)
def test_bad_input_raises_clear_errors(X_fn, y_fn, kw, exc, match):
    X, y = fig4_problem(0, d=60)
    with pytest.raises(exc, match=match):
        relucore.train(X_fn(X), y_fn(y), **kw)


def test_core_rejects_silent_copies():
    # The bindings take arrays with noconvert: a float32 buffer is an error, not a copy.
    K = np.eye(3, dtype=np.float32)[None]
    out = np.empty((1, 3, 3))
    with pytest.raises(TypeError):
        _core.gram_batch(K, out, 1)


def test_default_eps_is_per_problem_when_batch_size_equals_n():
    # Regression: with B == n a per-problem default eps was read as per-example.
    X, y = batch(5, n=5, d=300, seed=40)
    res = relucore.train(X, y, signs=(1, -1), steps=3)
    for b in range(5):
        one = relucore.train(X[b], y[b], signs=(1, -1), steps=3)
        assert np.array_equal(res.beta0[b], one.beta0)
        assert np.array_equal(res.W[b], one.W)


def test_scalar_eps_in_a_batch():
    X, y = batch(3, n=10, d=300, seed=50)
    res = relucore.train(X, y, eps=1e-3, steps=0)
    assert np.all(res.beta0 == 1e-3)
