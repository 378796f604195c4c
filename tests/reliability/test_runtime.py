"""Numerical failure as a status, Ctrl-C, threads and determinism of train.

Complements tests/test_train_api.py (which already checks batch == separate
calls for both engines, 1 vs 2 threads for the gaussian dual run and repeated
runs) with the configurations it does not cover.
"""

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from _problems import fig4_problem

import relucore
import relucore.gd.train as train_module
from relucore import Status

FIELDS = ("W", "alpha", "beta", "loss", "grad_norm", "nit", "status", "pattern_stable_step", "eta")


def assert_same(a, b):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or np.array_equal(np.asarray(x), np.asarray(y)), f
    if a.history is not None:
        for f in ("steps", "loss", "beta", "alpha", "mask"):
            assert np.array_equal(getattr(a.history, f), getattr(b.history, f), equal_nan=True), f


def all_finite(res):
    parts = (res.W, res.alpha, res.beta, res.loss, res.grad_norm)
    return all(np.isfinite(np.asarray(p)).all() for p in parts if p is not None)


# ------------------------------------------------------------ numerical failure


@pytest.mark.parametrize("engine", ["dual", "weights"])
@pytest.mark.parametrize("eta", [1.0, 1e3, 1e150, 1e300])
def test_huge_eta_is_a_diverged_status_naming_the_step(engine, eta):
    X, y = fig4_problem(2, n=8, d=100)
    res = relucore.train(X, y, signs=(1, -1), eta=eta, steps=2000, engine=engine)
    assert res.status == Status.diverged and not res.success
    assert f"diverged at step {res.nit}" in res.message and "try a smaller eta" in res.message
    assert res.nit < 2000
    default = relucore.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], (1, -1))
    assert f"the default step 1/(L ||s||^2 mu_1(K)) is {default:.3g}" in res.message
    with pytest.raises(relucore.DivergenceError, match=f"diverged at step {res.nit}"):
        relucore.train(X, y, signs=(1, -1), eta=eta, steps=2000, engine=engine, on_divergence="raise")


@pytest.mark.parametrize("eta", [1.0, 1e300])
def test_trainer_divergence_is_a_status_or_an_error(eta):
    X, y = fig4_problem(2, n=8, d=100)
    res = relucore.Trainer(X, y, signs=(1, -1), eta=eta, steps=2000).run()
    assert res.status == Status.diverged and not res.success and "try a smaller eta" in res.message
    with pytest.raises(relucore.DivergenceError, match="diverged at step"):
        relucore.Trainer(X, y, signs=(1, -1), eta=eta, steps=2000, on_divergence="raise").run()


def test_divergence_in_a_batch_stops_only_that_problem():
    X, y = fig4_problem(2, n=8, d=100)
    res = relucore.train(np.stack([X, X, X]), np.stack([y, y, y]), signs=(1, -1), eta=[1e-3, 1.0, 1e-3])
    assert list(res.status) == [0, 2, 0]
    assert "diverged" in res.message[1] and "converged" in res.message[0]
    alone = relucore.train(X, y, signs=(1, -1), eta=1e-3)
    assert np.array_equal(res.W[0], alone.W)
    with pytest.raises(relucore.DivergenceError, match="problem 1: diverged"):
        relucore.train(
            np.stack([X, X, X]), np.stack([y, y, y]), signs=(1, -1), eta=[1e-3, 1.0, 1e-3], on_divergence="raise"
        )


@pytest.mark.parametrize(
    "scale_X, scale_y",
    [(1e150, 1.0), (1e-150, 1.0), (1.0, 1e150), (1.0, 1e-150), (1e100, 1e-100), (2.0**-480, 2.0**480)],
)
@pytest.mark.parametrize("init", ["positive", "gaussian"])
def test_extreme_scales_give_the_rescaled_result_or_an_error(scale_X, scale_y, init):
    """Near overflow and underflow: either a finite, correctly rescaled result or a clear ValueError.

    GD is equivariant: X -> c X, y -> l y, W0 -> (l / c) W0, eta -> eta / c^2
    gives W -> (l / c) W and beta -> l beta (see the property tests); the
    default eta and the positive init follow these rules by themselves.
    """
    X, y = fig4_problem(4, n=6, d=80)
    kw = dict(signs=(1, -1), init=init, rng=1 if init == "gaussian" else None, init_scale=0.01, steps=300, tol=0.0)
    ref = relucore.train(X, y, **kw)
    kw_scaled = dict(kw, init_scale=0.01 * scale_y / scale_X)
    try:
        res = relucore.train(X * scale_X, y * scale_y, **kw_scaled)
    except ValueError as exc:
        assert "too large" in str(exc) or "too small" in str(exc), exc
        return
    assert res.status != Status.diverged or not res.success
    if res.status in (Status.converged, Status.max_steps):
        assert all_finite(res)
        np.testing.assert_allclose(res.beta / scale_y, ref.beta, rtol=1e-9, atol=1e-12 * np.abs(ref.beta).max())
        np.testing.assert_allclose(res.W * (scale_X / scale_y), ref.W, rtol=1e-9, atol=1e-12 * np.abs(ref.W).max())


# ------------------------------------------------------------ Ctrl-C

CHILD = textwrap.dedent(
    """
    import signal, sys, time
    import numpy as np
    import relucore
    # A shell may start us with SIGINT ignored; Python then installs no handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 40)); y = rng.uniform(0.1, 1, 12) * rng.choice([-1.0, 1.0], 12)
    kw = dict(signs=(1, -1), init="gaussian", rng=3, init_scale=0.1, steps=300, tol=0.0, record=10)
    before = relucore.train(X, y, **kw)
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        relucore.train(np.stack([X] * 4), np.stack([y] * 4), signs=(1, -1), steps=10**10, tol=0.0, n_threads=2)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    after = relucore.train(X, y, **kw)
    same = all(np.array_equal(getattr(before, f), getattr(after, f)) for f in ("W", "beta", "alpha", "loss", "nit"))
    same = same and np.array_equal(before.history.beta, after.history.beta)
    print("same" if same else "different", flush=True)
    # The Trainer stops after its current step: its state is exactly GD's after nit steps.
    trainer = relucore.Trainer(X, y, signs=(1, -1))
    print("ready", flush=True)
    try:
        trainer.step(10**10)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    nit = trainer.nit
    ref = relucore.train(X, y, signs=(1, -1), steps=nit, tol=0.0)
    ok = nit > 0 and np.array_equal(trainer.beta, ref.beta) and np.array_equal(trainer.alpha, ref.alpha)
    trainer.step(3)
    ok = ok and trainer.nit == nit + 3
    print("consistent" if ok else "corrupted", flush=True)
    # The mean-field weight-space engine (docs/math.md §11).
    from relucore import meanfield
    mf_kw = dict(m=40, steps=300, rng=1, record=0)
    mf_before = meanfield.train(X, y, **mf_kw)
    print("ready", flush=True)
    try:
        meanfield.train(X, y, m=200, steps=10**10, rng=1, record=0)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    mf_after = meanfield.train(X, y, **mf_kw)
    print("same" if np.array_equal(mf_before.theta, mf_after.theta) else "different", flush=True)
    """
)


@contextlib.contextmanager
def _python_child(code, env):
    """A ``python -c code`` child with piped text stdout/stderr, killed on the way out if still running."""
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()


def _interrupt_promptly(proc):
    """Sends the child SIGINT; it must print "interrupted" within 0.5 s (the engines poll every 5 ms)."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    line = proc.stdout.readline().strip()
    latency = time.monotonic() - sent
    assert line == "interrupted", (line, proc.stderr.read())
    assert latency < 0.5, latency


def test_ctrl_c_interrupts_a_long_run_quickly_and_leaves_the_process_healthy():
    with _python_child(CHILD, dict(os.environ)) as proc:
        for expected in ("same", "consistent", "same"):  # train, Trainer.step, meanfield.train
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            time.sleep(1.0)  # well inside the C++ loop, which would run for hours
            _interrupt_promptly(proc)
            assert proc.stdout.readline().strip() == expected
        assert proc.wait(timeout=60) == 0, proc.stderr.read()


# ------------------------------------------------------------ threads


def test_the_gil_is_released_during_the_cpp_run(monkeypatch):
    """A Python thread keeps running while train's C++ loop runs.

    The ticker records times; if the C++ call held the GIL no tick could fall
    between the moments the call started and returned.
    """
    X, y = fig4_problem(1, n=12, d=40)
    windows = []
    real = train_module._core.run_dual_batch

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            windows.append((start, time.perf_counter()))

    monkeypatch.setattr(train_module._core, "run_dual_batch", timed)
    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    def inside():
        """Most ticks seen inside one C++ call. With a held GIL the ticker could
        at best slip in once per call, at the moment the call releases it."""
        return max(sum(1 for t in ticks if a < t < b) for a, b in windows)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        # 4e5 steps of O(m n^2) take tens of milliseconds; longer runs if the
        # machine is so loaded that the ticker was rarely scheduled.
        for j in range(7):
            relucore.train(X, y, signs=(1, -1), init="gaussian", rng=0, init_scale=0.1, steps=400_000 * 2**j, tol=0.0)
            if inside() >= 20:
                break
    finally:
        stop.set()
        thread.join()
    assert inside() >= 20, (inside(), windows)


def test_four_python_threads_get_the_sequential_results():
    problems = [fig4_problem(20 + s, n=10, d=150) for s in range(4)]
    kw = dict(signs=(1, 1, -1), init="gaussian", init_scale=0.05, steps=4000, tol=0.0, record=250)

    def call(i):
        X, y = problems[i]
        if i % 2 == 0:
            return relucore.train(X, y, rng=i, **kw)
        # Odd threads run a batch with OpenMP inside: nested parallelism per call.
        return relucore.train(np.stack([X, X]), np.stack([y, y]), rng=i, n_threads=2, **kw)

    sequential = [call(i) for i in range(4)]
    results = {i: [] for i in range(4)}
    errors = []
    barrier = threading.Barrier(4)

    def worker(i):
        try:
            barrier.wait()
            for _ in range(3):
                results[i].append(call(i))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(4):
        assert len(results[i]) == 3
        for res in results[i]:
            assert_same(res, sequential[i])


# ------------------------------------------------------------ determinism

CONFIGS = {
    "weights engine": dict(engine="weights", signs=(1, -1), init="gaussian", init_scale=0.05),
    "logistic loss": dict(loss="logistic", signs=(1, -1), init="gaussian", init_scale=0.05),
    "leaky relu": dict(activation="leaky_relu", leaky_slope=0.1, signs=(1, -1), init="gaussian", init_scale=0.05),
    "disjoint init": dict(signs=(1, 1, -1, -1), init="disjoint"),
    "outer weights 1/m": dict(signs=(0.25, 0.25, -0.25, -0.25), init="positive"),
}


def _batch(B, n=8, d=60, seed=40, logistic=False):
    Xs, ys = zip(*(fig4_problem(seed + b, n=n, d=d) for b in range(B)))
    X, y = np.stack(Xs), np.stack(ys)
    return X, (np.sign(y) if logistic else y)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_one_vs_two_threads_and_batched_vs_single_are_bitwise_identical(name):
    kw = dict(CONFIGS[name], rng=7 if CONFIGS[name]["init"] == "gaussian" else None, steps=300, tol=0.0, record=7)
    X, y = _batch(5, logistic=kw.get("loss") == "logistic")
    one = relucore.train(X, y, n_threads=1, **kw)
    two = relucore.train(X, y, n_threads=2, **kw)
    assert_same(one, two)
    # A batch draws its gaussian init for all problems at once; pass it explicitly
    # so that the single runs start from the same weights.
    kw_single = dict(kw, init=None, rng=None)
    for b in (0, 3):
        init_b = one.W0[b] if kw["init"] == "gaussian" else kw["init"]
        single = relucore.train(X[b], y[b], **dict(kw_single, init=init_b))
        for f in ("W", "alpha", "beta", "loss", "nit", "pattern_stable_step"):
            assert np.array_equal(np.asarray(getattr(one, f))[b], np.asarray(getattr(single, f))), (name, f)
        r = int(one.history.n_records[b])
        assert np.array_equal(one.history.beta[b, :r], single.history.beta)


def test_gram_only_mode_with_per_problem_eta_is_deterministic():
    X, y = _batch(4, n=10, d=80, seed=60)
    K = np.matmul(X, np.swapaxes(X, 1, 2))
    eta = np.array([1e-3, 2e-3, 5e-4, 1e-3])
    one = relucore.train(None, y, gram=K, eta=eta, n_threads=1, signs=(1, -1), steps=500, tol=0.0)
    two = relucore.train(None, y, gram=K, eta=eta, n_threads=2, signs=(1, -1), steps=500, tol=0.0)
    assert_same(one, two)
    for b in range(4):
        single = relucore.train(None, y[b], gram=K[b], eta=eta[b], signs=(1, -1), steps=500, tol=0.0)
        assert np.array_equal(one.beta[b], single.beta) and one.loss[b] == single.loss


def test_results_do_not_depend_on_memory_alignment():
    """Misaligned input (an 8-byte offset into a buffer) reaches C++ without a copy;
    vectorised reductions must not change with it."""
    X, y = fig4_problem(9, n=10, d=301)
    buf = np.empty(X.size + 1)
    X_off = buf[1:].reshape(X.shape)
    X_off[...] = X
    assert X_off.flags.c_contiguous and X_off.ctypes.data % 16 != X.ctypes.data % 16 or X_off.ctypes.data % 16 == 8
    for engine in ("dual", "weights"):
        kw = dict(signs=(1, -1), init="gaussian", rng=2, init_scale=0.05, steps=200, tol=0.0, engine=engine)
        assert_same(relucore.train(X, y, **kw), relucore.train(X_off, y, **kw))


def test_repeated_runs_in_separate_processes_are_bitwise_identical():
    code = textwrap.dedent(
        """
        import hashlib, sys
        import numpy as np, relucore
        rng = np.random.default_rng(5)
        X = rng.standard_normal((4, 10, 120)); y = rng.uniform(0.1, 1, (4, 10)) * rng.choice([-1.0, 1.0], (4, 10))
        res = relucore.train(X, y, signs=(1, 1, -1), init="gaussian", rng=8, init_scale=0.05, steps=400, tol=0.0)
        h = hashlib.sha256()
        for a in (res.W, res.alpha, res.beta, res.loss, res.nit):
            h.update(np.ascontiguousarray(a).tobytes())
        print(h.hexdigest())
        """
    )
    digests = set()
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1


# ------------------------------------------------------------ Ctrl-C during a sweep

SWEEP_CHILD = textwrap.dedent(
    """
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {here!r})
    import _sweep_helpers
    print("ready", flush=True)
    try:
        _sweep_helpers.run_slow({ckpt!r})
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    """
)


def _committed_batches(path: str) -> int:
    """Batches a sweep has committed to its store (0 while the store is being created)."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM batches").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_ctrl_c_during_a_checkpointed_sweep_loses_no_saved_result(tmp_path):
    """Ctrl-C ends a sweep promptly; rerunning resumes and gives the uninterrupted table bitwise."""
    pd = pytest.importorskip("pandas")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, here)
    import _sweep_helpers as H

    ckpt = str(tmp_path / "sweep.db")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    code = SWEEP_CHILD.format(here=here, ckpt=ckpt)
    with _python_child(code, env) as proc:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        deadline = time.monotonic() + 120
        while _committed_batches(ckpt) < 3:
            assert time.monotonic() < deadline and proc.poll() is None, "no checkpoint records appeared"
            time.sleep(0.01)
        _interrupt_promptly(proc)
        proc.wait(timeout=120)
    resumed = relucore.sweep(
        H.GRID, trials=40, rng=7, measure=H.measure_slow, chunk_size=4, checkpoint=ckpt, progress=False
    )
    uninterrupted = relucore.sweep(H.GRID, trials=40, rng=7, measure=H.measure_slow, chunk_size=4, progress=False)
    pd.testing.assert_frame_equal(resumed, uninterrupted, check_exact=True)
