"""relucore.Trainer: bitwise agreement with train, zero-copy read-only views,
changes between steps, callbacks, checkpoints/pickling and Ctrl-C."""

import contextlib
import copy
import gc
import multiprocessing
import os
import pickle
import signal
import threading
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from _problems import fig4_problem
from _reference import numpy_gd

import relucore
from relucore import Status

STATE_FIELDS = ("alpha", "beta", "W", "loss", "grad_norm", "nit", "pattern_stable_step", "eta")

CONFIGS = [
    dict(signs=(1,)),
    dict(signs=(1, -1)),
    dict(signs=(1, 1, -1), init="gaussian", rng=4, init_scale=0.05),
    dict(signs=(0.5, -0.5), init="disjoint"),
    dict(signs=(1, -1), activation="leaky_relu", leaky_slope=0.1, init="gaussian", rng=1, init_scale=0.1),
]


def same_state(t, res):
    for f in STATE_FIELDS:
        a, b = getattr(t, f), getattr(res, f)
        assert np.array_equal(np.asarray(a), np.asarray(b)), f
    assert np.array_equal(t.mask, res.mask)


@pytest.mark.parametrize("kw", CONFIGS)
@pytest.mark.parametrize("k", [0, 1, 37])
def test_step_k_equals_train_k_steps_bitwise(kw, k):
    X, y = fig4_problem(3, n=10, d=300)
    t = relucore.Trainer(X, y, **kw)
    assert t.step(k) is t
    same_state(t, relucore.train(X, y, steps=k, tol=0.0, **kw))


def test_step_in_pieces_equals_train_bitwise_logistic():
    X, y = fig4_problem(5, n=12, d=200)
    y = np.sign(y)
    kw = dict(signs=(1, -1), loss="logistic", init="gaussian", rng=2, init_scale=0.1)
    t = relucore.Trainer(X, y, **kw)
    for k in (1, 10, 0, 89):
        t.step(k)
    same_state(t, relucore.train(X, y, steps=100, tol=0.0, **kw))


@pytest.mark.parametrize("kw", CONFIGS[:3])
def test_run_equals_train_bitwise(kw):
    X, y = fig4_problem(8, n=10, d=400)
    res = relucore.train(X, y, steps=3000, **kw)
    out = relucore.Trainer(X, y, steps=3000, **kw).run()
    for f in STATE_FIELDS + ("status", "success", "message", "tol", "W0", "alpha0", "beta0", "init"):
        assert np.array_equal(np.asarray(getattr(out, f)), np.asarray(getattr(res, f))), f
    assert out.history is None


def test_views_are_zero_copy_read_only_and_live():
    X, y = fig4_problem(1, n=8, d=100)
    t = relucore.Trainer(X, y, signs=(1, -1))
    beta, alpha, mask = t.beta, t.alpha, t.mask
    assert np.shares_memory(beta, t.beta) and np.shares_memory(alpha, t.alpha) and np.shares_memory(mask, t.mask)
    assert not np.shares_memory(alpha, beta)
    for v in (beta, alpha, mask, t.predictions, t.labels, t.K, t.signs):
        assert not v.flags.writeable
        assert v.flags.c_contiguous
    with pytest.raises(ValueError, match="read-only"):
        beta[0, 0] = 1.0
    assert beta.shape == alpha.shape == mask.shape == (2, 8) and mask.dtype == np.bool_
    before = beta.copy()
    t.step(5)
    assert not np.array_equal(before, beta)  # the view follows the engine
    assert np.array_equal(beta, t.beta) and np.array_equal(mask, t.beta > 0)
    # beta = K alpha for the positive init (w_perp = 0), mask = beta > 0.
    np.testing.assert_allclose(beta, alpha @ t.K, rtol=1e-10, atol=1e-14)
    # The views keep the engine alive.
    del t
    gc.collect()
    assert np.isfinite(beta.sum() + alpha.sum())


def test_scalars_and_W():
    X, y = fig4_problem(2, n=9, d=120)
    t = relucore.Trainer(X, y, signs=(1, -1), eta=0.002)
    t.step(20)
    s = np.array([1.0, -1.0])
    h = (s[:, None] * np.maximum(t.W @ X.T, 0)).sum(0)
    assert t.loss == pytest.approx(0.5 * np.sum((h - y) ** 2), rel=1e-12)
    np.testing.assert_allclose(t.predictions, h, rtol=1e-10, atol=1e-14)
    assert t.nit == 20 and t.eta == 0.002
    assert np.array_equal(t.labels, y) and np.array_equal(t.signs, s)


def test_set_eta_and_set_labels_follow_numpy_reference():
    X, y = fig4_problem(6, n=10, d=200)
    signs = np.array([1.0, -1.0])
    t = relucore.Trainer(X, y, signs=signs, init="gaussian", rng=0, init_scale=0.1, eta=0.05)
    W0 = t.W
    t.step(30)
    y2 = -0.5 * y
    t.set_labels(y2)
    t.set_eta(0.02)
    t.step(40)
    ref = numpy_gd(X, y, W0, signs, 0.05, 30)
    ref = numpy_gd(X, y2, ref, signs, 0.02, 40)
    np.testing.assert_allclose(t.W, ref, rtol=1e-10, atol=1e-12)
    assert t.eta == 0.02 and np.array_equal(t.labels, y2)


def test_run_with_callback_every_k_steps():
    X, y = fig4_problem(4, n=10, d=300)
    kw = dict(signs=(1, -1), steps=400, tol=0.0)
    seen = []
    t = relucore.Trainer(X, y, **kw)
    out = t.run(callback=lambda tr: seen.append((tr.nit, tr.loss)), every=50)
    assert [s for s, _ in seen] == list(range(50, 401, 50))
    assert out.status == Status.max_steps and out.nit == 400
    same_state(t, relucore.train(X, y, **kw))
    # A truthy return stops the run (status 4); the run then resumes where it stopped.
    t2 = relucore.Trainer(X, y, **kw)
    out2 = t2.run(callback=lambda tr: tr.nit >= 120, every=40)
    assert (out2.status, out2.nit, out2.success) == (4, 120, False)
    assert "callback" in out2.message
    out3 = t2.run()
    assert out3.nit == 400 and np.array_equal(t2.alpha, t.alpha)
    # until is an absolute step count.
    t3 = relucore.Trainer(X, y, **kw)
    assert t3.run(until=150).nit == 150 and t3.run(until=100).nit == 150


def test_callback_errors_propagate_and_nested_run_is_refused():
    X, y = fig4_problem(4, n=8, d=100)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)

    def boom(tr):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        t.run(until=100, callback=boom, every=10)
    assert t.nit == 10  # the state reached when the callback raised
    with pytest.raises(RuntimeError, match="own callback"):
        t.run(until=100, callback=lambda tr: tr.run(), every=5)
    assert t.nit == 15
    t.step(3)  # usable afterwards
    assert t.nit == 18


def test_callback_may_change_the_trainer_between_steps():
    """A simulator moving its targets every k steps from the callback equals doing it by hand."""
    X, y = fig4_problem(14, n=10, d=300)
    kw = dict(signs=(1, -1), tol=0.0, init="gaussian", rng=3, init_scale=0.1)
    shifts = {50: 0.5, 100: -0.25, 150: 0.1}

    def simulator(tr):
        if tr.nit in shifts:
            tr.set_labels(y + shifts[tr.nit])
            tr.set_eta(tr.eta * 0.9)
        if tr.nit == 150:
            tr.step(7)  # the callback may also step

    t = relucore.Trainer(X, y, **kw)
    out = t.run(until=260, callback=simulator, every=50)
    assert out.nit == 260 and out.status == Status.max_steps

    ref = relucore.Trainer(X, y, **kw)
    for step_to, shift in shifts.items():
        ref.step(step_to - ref.nit)
        ref.set_labels(y + shift)
        ref.set_eta(ref.eta * 0.9)
    ref.step(7)
    ref.step(260 - ref.nit)
    for f in STATE_FIELDS + ("pattern_stable_step",):
        assert np.array_equal(np.asarray(getattr(t, f)), np.asarray(getattr(ref, f))), f
    assert np.array_equal(t.labels, y + 0.1)


def test_second_thread_is_refused_while_stepping():
    X, y = fig4_problem(2, n=60, d=180)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    k = 400_000  # about a second of work on the helper thread
    worker = threading.Thread(target=t.step, args=(k,))
    worker.start()
    try:
        while t.nit == 0 and worker.is_alive():
            pass
        assert worker.is_alive()
        with pytest.raises(RuntimeError, match="already stepping"):
            t.step(1)
    finally:
        worker.join()
    assert t.nit == k  # the refused call took no step


def test_pickle_and_state_dict_resume_bitwise():
    X, y = fig4_problem(9, n=10, d=300)
    kw = dict(signs=(1, 1, -1), init="gaussian", rng=7, init_scale=0.05, tol=0.0)
    t = relucore.Trainer(X, y, **kw)
    t.step(60)
    t.set_eta(0.9 * t.eta)
    clone = pickle.loads(pickle.dumps(t))
    deep = copy.deepcopy(t)
    fresh = relucore.Trainer.from_state(t.state_dict())
    assert clone.nit == 60 and clone.pattern_stable_step == t.pattern_stable_step
    for other in (clone, deep, fresh):
        assert not np.shares_memory(other.alpha, t.alpha)
        other.step(140)
    t.step(140)
    for other in (clone, deep, fresh):
        for f in STATE_FIELDS + ("pattern_stable_step",):
            assert np.array_equal(np.asarray(getattr(other, f)), np.asarray(getattr(t, f))), f
        assert np.array_equal(other.mask, t.mask)


def _resume_elsewhere(blob, k):
    t = pickle.loads(blob)
    t.step(k)
    return t.alpha.copy(), t.beta.copy(), t.nit


def test_pickled_trainer_moves_to_another_process():
    X, y = fig4_problem(10, n=8, d=200)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    t.step(25)
    blob = pickle.dumps(t)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as ex:
        alpha, beta, nit = ex.submit(_resume_elsewhere, blob, 75).result(timeout=120)
    t.step(75)
    assert nit == 100 and np.array_equal(alpha, t.alpha) and np.array_equal(beta, t.beta)


def test_gram_only_mode():
    X, y = fig4_problem(11, n=8, d=200)
    t = relucore.Trainer(gram=X @ X.T, y=y, signs=(1, -1))
    assert t.W is None
    t.step(10)
    u = relucore.Trainer.from_state(t.state_dict())
    u.step(10)
    t.step(10)
    assert np.array_equal(u.beta, t.beta) and u.W is None


@contextlib.contextmanager
def _interrupted_after(seconds):
    """Send this process SIGINT after `seconds`; the body must end in KeyboardInterrupt. The handler a
    terminal's process has is installed for the body: a background job of a non-interactive shell starts
    with SIGINT ignored, and Python then installs none."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)


def test_keyboard_interrupt_stops_after_the_current_step():
    X, y = fig4_problem(0, n=120, d=240)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    k = 10**7  # hours of work: only the interrupt ends it
    with _interrupted_after(0.3):
        t.step(k)
    assert 0 < t.nit < k
    nit = t.nit
    state = (t.alpha.copy(), t.beta.copy())
    # The state is a consistent GD state: stepping on equals train from scratch.
    t.step(3)
    assert t.nit == nit + 3
    ref = relucore.Trainer(X, y, signs=(1, -1), tol=0.0).step(nit)
    assert np.array_equal(ref.alpha, state[0]) and np.array_equal(ref.beta, state[1])


def test_keyboard_interrupt_during_run_with_callback():
    X, y = fig4_problem(1, n=100, d=200)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    calls = []
    with _interrupted_after(0.3):
        t.run(until=10**7, callback=lambda tr: calls.append(tr.nit), every=100)
    assert 0 < t.nit < 10**7
    assert calls and calls == list(range(100, calls[-1] + 1, 100))
    t.step(2)  # still usable


def test_trainer_owns_its_data():
    X, y = fig4_problem(13, n=6, d=40)
    t = relucore.Trainer(X, y, signs=(1, -1), tol=0.0)
    W = t.W
    X[:] = 0.0
    y[:] = 0.0
    assert np.array_equal(t.W, W)
    t.step(5)
    assert t.loss > 0


def test_bad_input():
    X, y = fig4_problem(12, n=6, d=50)
    with pytest.raises(ValueError, match="engine='dual'"):
        relucore.Trainer(X, y, engine="weights")
    with pytest.raises(ValueError, match="one problem"):
        relucore.Trainer(X[None], y[None])
    with pytest.raises(ValueError, match="history"):
        relucore.Trainer(X, y, record=5)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        relucore.Trainer(X, y[:5])
    t = relucore.Trainer(X, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        t.set_labels(y[:5])
    with pytest.raises(ValueError, match="NaN"):
        t.set_labels(np.full(6, np.nan))
    with pytest.raises(ValueError, match="eta"):
        t.set_eta(-1.0)
    with pytest.raises(ValueError, match="k"):
        t.step(-1)
    with pytest.raises(TypeError, match="k"):
        t.step(1.5)
    with pytest.raises(ValueError, match="every"):
        t.run(every=0, callback=print)
    with pytest.raises(TypeError, match="callable"):
        t.run(callback=3)
    with pytest.raises(ValueError, match="missing"):
        relucore.Trainer.from_state({"version": 1})
    bad = t.state_dict()
    bad["alpha"] = bad["alpha"][:, :3]
    with pytest.raises(ValueError):
        relucore.Trainer.from_state(bad)
    assert t.nit == 0


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st


@settings(max_examples=30, deadline=None)
@given(
    chunks=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=6),
    pickle_at=st.integers(min_value=0, max_value=5),
)
def test_any_chunking_and_checkpoint_equals_one_train_call(chunks, pickle_at):
    X, y = fig4_problem(21, n=8, d=60)
    kw = dict(signs=(1, -1), init="gaussian", rng=9, init_scale=0.2, tol=0.0)
    t = relucore.Trainer(X, y, **kw)
    for i, k in enumerate(chunks):
        if i == pickle_at:
            t = pickle.loads(pickle.dumps(t))
        t.step(k)
    same_state(t, relucore.train(X, y, steps=sum(chunks), **kw))
