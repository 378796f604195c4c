"""Trials per second of a Fig. 2-style sweep: relucore.sweep against a numpy implementation.

Fig. 2 of Lai et al.: one ReLU, all-positive init, x ~ N(0, I_d), |y| ~ U(0.1, 1) with
random signs; per trial: sample, run GD to convergence (same eta = 1/mu_1(K), same
gradient tolerance), solve the minimum-norm QP for w*, measure ||w_inf - w*||.

Peers, run side by side in this process:

- ``numpy``: what a researcher would write: ``rng.standard_normal((n, d))``, a weight-space
  GD loop in numpy, and w* from the dual QP (``min 1/2 z^T K z - y+^T z+, z- <= 0``) with
  ``scipy.optimize.minimize(method="SLSQP")``; one trial at a time.
- ``relucore X``: ``relucore.sweep`` with explicit X (``relucore.sample``).
- ``relucore K``: ``relucore.sweep(use_gram=True)`` (K drawn without X by the Bartlett
  construction, cost independent of d; whole trials in one C++ call per batch: the fast
  path of ``relucore.sweeps.gram_trial``).

Also: thread scaling (in-process ``n_threads`` 1 vs 2, and 1 vs 2 spawned worker
processes), the breakdown of a relucore trial (sampling, K, GD, QP, the rest) against this
machine's limits (numpy's normal-variate rate, the BLAS GEMM rate), and the Gram-mode trial
time from d = 1e3 to 1e9.

    python bench/bench_sweep.py            # the full set (a few minutes)
    python bench/bench_sweep.py --quick    # smaller trial counts
"""

from __future__ import annotations

import os

# Every peer single-threaded unless a section says otherwise: on a shared machine a
# multi-threaded BLAS in the numpy peer mostly measures contention.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import multiprocessing
import platform
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import scipy.optimize

import relucore
from relucore import _core
from relucore.gd.prepare import prepare
from relucore.gd.train import run_prepared

SIZES = [(10, 1_000), (10, 10_000), (10, 100_000), (40, 1_000), (40, 10_000), (40, 100_000)]


# ----------------------------------------------------------------------------- numpy peer
def numpy_trial(n, d, rng, max_steps=100_000, times=None):
    """One Fig. 2 trial in plain numpy/scipy; returns the gap ||w_inf - w*||."""
    t0 = time.perf_counter()
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    t1 = time.perf_counter()
    K = X @ X.T
    t2 = time.perf_counter()
    mu1 = np.linalg.eigvalsh(K)[-1]
    eta = 1.0 / mu1
    eps = np.abs(y).min() / 10.0
    w = X.T @ np.linalg.solve(K, np.full(n, eps))  # all-positive init: X w0 = eps
    tol = 1e-12 * np.sqrt(mu1) * np.linalg.norm(y)
    for _ in range(max_steps):
        b = X @ w
        g = X.T @ ((b > 0) * (np.maximum(b, 0.0) - y))
        if np.linalg.norm(g) < tol:
            break
        w -= eta * g
    t3 = time.perf_counter()
    ypos = np.where(y > 0, y, 0.0)
    bounds = [(None, None) if yi > 0 else (None, 0.0) for yi in y]
    res = scipy.optimize.minimize(
        lambda z: (0.5 * z @ K @ z - ypos @ z, K @ z - ypos),
        np.zeros(n),
        jac=True,
        bounds=bounds,
        method="SLSQP",
        options={"ftol": 1e-16, "maxiter": 1000},
    )
    w_star = X.T @ res.x
    gap = float(np.linalg.norm(w - w_star))
    if times is not None:
        for k, v in zip(("sampling", "K", "GD", "QP"), (t1 - t0, t2 - t1, t3 - t2, time.perf_counter() - t3)):
            times[k] = times.get(k, 0.0) + v
    return gap


def numpy_rate(n, d, trials, seed=0):
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    gaps = [numpy_trial(n, d, rng) for _ in range(trials)]
    return trials / (time.perf_counter() - t0), gaps


# ----------------------------------------------------------------------------- relucore
def sweep_rate(n, d, trials, *, use_gram, n_threads=1, executor=None, seed=0, batch_size=None, gram_stats=False):
    t0 = time.perf_counter()
    c0 = time.process_time()
    t = relucore.sweep(
        {"n": n, "d": d, "use_gram": use_gram, "gram_stats": gram_stats},
        trials=trials,
        rng=seed,
        n_threads=n_threads,
        executor=executor,
        chunk_size=batch_size,
        progress=False,
    )
    dt = time.perf_counter() - t0
    sweep_rate.cpu_ms = 1e3 * (time.process_time() - c0) / trials  # this process only
    # Every trial ran to a stopping rule (a "stalled" run, stationary with an unfit example, is
    # an outcome of the law, e.g. at n = 10, d = 1000); none was refused or hit the budget.
    assert t["status"].isin(["converged", "stalled"]).all(), t["error"].unique()
    return trials / dt, t


def breakdown(n, d, trials, use_gram, seed=0):
    """Seconds per trial of each stage of a relucore trial, run stage by stage (1 thread)."""
    if use_gram:
        return breakdown_gram(n, d, trials, seed)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(trials)]
    out = {}
    t0 = time.perf_counter()
    datas = [relucore.sample(n, d, rng=r) for r in rngs]
    out["sampling"] = time.perf_counter() - t0
    y = np.stack([dt.y for dt in datas])
    X = np.stack([dt.X for dt in datas])
    K = np.empty((trials, n, n))
    t0 = time.perf_counter()
    _core.gram_batch(X, K, 1)
    out["K"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = prepare(None, y, gram=K, n_threads=1)
    out["prepare (eigvalsh, init)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = run_prepared(p, steps=10_000, record=0, n_threads=1, engine="dual", on_divergence="status")
    out["GD"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in range(trials):
        relucore.minnorm(None, y[b], gram=K[b])
    out["QP (minnorm)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in range(trials):
        relucore.gram_stats(gram=K[b], spectrum=datas[b].spectrum, y=y[b])
    out["gram_stats"] = time.perf_counter() - t0
    return {k: v / trials for k, v in out.items()}, int(np.max(res.nit))


def breakdown_gram(n, d, trials, seed=0):
    """The fast path's C++ stages on one batch: the Bartlett sampler alone; sampler + prepare + GD
    (sweep_gram_batch without the QP) minus the sampler; the batched m = 1 QP; batched gram_stats."""
    from relucore.sweeps.gram_trial import trial_keys
    from relucore.theory.sampling import bartlett_plan, sample_gram_keys

    plan = bartlett_plan(n, d)
    sp = plan.spectrum
    keys = trial_keys(seed, (1, 2), range(trials))
    out = {}
    t0 = time.perf_counter()
    K, y = sample_gram_keys(n, keys, plan)
    out["sampling"] = time.perf_counter() - t0
    out["K"] = 0.0
    settings = _core.GramTrialSettings(max_steps=10_000, minnorm=False, norm1=sp.norm1)
    t0 = time.perf_counter()
    out_gram = _core.sweep_gram_batch(keys, n=n, **plan.sampler_args(), settings=settings, n_threads=1)
    both = time.perf_counter() - t0
    out["prepare (eigenvalues, init)"] = float("nan")
    out["GD"] = both - out["sampling"]  # prepare + GD
    z = np.empty((trials, n))
    fz = np.empty((trials, 5))
    iz = np.empty((trials, 4), dtype=np.int32)
    t0 = time.perf_counter()
    _core.minnorm1_batch(K, y, 1.0, z, fz, iz, 1)
    out["QP (minnorm)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    relucore.gram_stats(gram=K, spectrum=sp, y=y)
    out["gram_stats"] = time.perf_counter() - t0
    return {k: v / trials for k, v in out.items()}, int(np.max(out_gram.nit))


def machine_limits():
    rng = np.random.default_rng(0)
    rng.standard_normal(10**6)
    t0 = time.perf_counter()
    rng.standard_normal(2 * 10**7)
    normal_rate = 2e7 / (time.perf_counter() - t0)
    A = rng.standard_normal((1000, 1000))
    A @ A
    t0 = time.perf_counter()
    for _ in range(3):
        A @ A
    gemm = 3 * 2e9 / (time.perf_counter() - t0)
    return normal_rate, gemm


def section(title, columns):
    """Prints a section heading and the head of its Markdown table."""
    print(f"\n## {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def fmt(x):
    return f"{x:,.0f}" if x >= 100 else (f"{x:.1f}" if x >= 1 else f"{x:.3g}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["ratios", "threads", "serial", "breakdown", "flat"], help="run one section")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    q = args.quick
    print(
        f"# relucore {relucore.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
    )
    normal_rate, gemm = machine_limits()
    sweep_rate(10, 1000, 4, use_gram=False)  # warm up (imports, first calls)
    sweep_rate(10, 1000, 4, use_gram=True)
    print(f"# machine: numpy normal variates {normal_rate / 1e6:.0f} M/s, BLAS GEMM {gemm / 1e9:.1f} GFLOP/s")
    if args.only in (None, "ratios"):
        ratios_section(q, normal_rate)
    if args.only in (None, "threads"):
        threads_section(q)
    if args.only in (None, "serial"):
        serial_section(q)
    if args.only in (None, "breakdown"):
        breakdown_section(normal_rate, gemm)
    if args.only in (None, "flat"):
        flat_section(q)


def ratios_section(q, normal_rate):
    """Trials per second of the numpy peer and relucore (X and K), one thread each."""
    section(
        "trials per second (1 thread each)",
        [
            "n",
            "d",
            "numpy",
            "relucore X",
            "relucore K",
            "X / numpy",
            "K / numpy",
            "sampling floor X",
            "mean gap, numpy draws",
            "mean gap, relucore draws",
        ],
    )
    for n, d in SIZES:
        tn = 2 if d >= 100_000 else (4 if q else 10)
        tx = 4 if d >= 100_000 else (16 if q else 64)
        tk = 256 if q else 2048
        r_np, gaps = numpy_rate(n, d, tn)
        r_x, tab = sweep_rate(n, d, tx, use_gram=False)
        r_k, _ = sweep_rate(n, d, tk, use_gram=True)
        floor = normal_rate / (n * d)
        print(
            f"| {n} | {d:.0e} | {fmt(r_np)} | {fmt(r_x)} | {fmt(r_k)} | {r_x / r_np:.1f} | {r_k / r_np:,.0f} | "
            f"{fmt(floor)} | {np.mean(gaps):.4g} | {tab['gap'].mean():.4g} |",
            flush=True,
        )


def threads_section(q):
    """In-process n_threads 1 vs 2 (alternating runs, best of each), and 1 vs 2 spawned worker
    processes. "cores obtained" is this process's CPU time over the wall time; "CPU bound" is
    2 c1 / c2, the speed-up two threads would reach with both cores to themselves at the CPU
    cost per trial measured (c1, c2: CPU ms per trial with 1 and 2 threads)."""
    section(
        "thread scaling (trials/s)",
        [
            "n",
            "d",
            "mode",
            "1 thread",
            "2 threads (in-process)",
            "x",
            "CPU ms/trial 1 -> 2 threads",
            "cores obtained 1 -> 2 threads",
            "CPU bound",
            "2 spawned workers",
            "x",
            "load",
        ],
    )
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex1, ProcessPoolExecutor(2, mp_context=ctx) as ex2:
        for n, d, use_gram, trials in [
            (40, 10_000, False, 32 if q else 96),
            (10, 100_000, True, 8192 if q else 32768),
            (40, 100_000, True, 2048 if q else 8192),
        ]:
            load = os.getloadavg()[0]
            best = {1: (0.0, 0.0), 2: (0.0, 0.0)}
            for _ in range(2 if q else 3):  # alternating 1- and 2-thread runs
                for nt in (1, 2):
                    r, _ = sweep_rate(n, d, trials, use_gram=use_gram, n_threads=nt, gram_stats=use_gram)
                    if r > best[nt][0]:
                        best[nt] = (r, sweep_rate.cpu_ms)
            (r1, c1), (r2, c2) = best[1], best[2]
            sweep_rate(n, d, 8, use_gram=use_gram, executor=ex1, batch_size=4)  # warm the workers
            sweep_rate(n, d, 8, use_gram=use_gram, executor=ex2, batch_size=4)
            bs = max(1, trials // 8)
            p1, _ = sweep_rate(n, d, trials, use_gram=use_gram, executor=ex1, batch_size=bs)
            p2, _ = sweep_rate(n, d, trials, use_gram=use_gram, executor=ex2, batch_size=bs)
            mode = "K" if use_gram else "X"
            print(
                f"| {n} | {d:.0e} | {mode} | {fmt(r1)} | {fmt(r2)} | {r2 / r1:.2f} | {c1:.3g} -> {c2:.3g} | "
                f"{c1 * r1 / 1e3:.2f} -> {c2 * r2 / 1e3:.2f} | {2 * c1 / c2:.2f} | "
                f"{fmt(p2)} (1 worker: {fmt(p1)}) | {p2 / p1:.2f} | {load:.2f} -> {os.getloadavg()[0]:.2f} |",
                flush=True,
            )


def serial_section(q):
    """What of a Gram-mode sweep holds the GIL or runs alone, independent of how many cores the
    machine gives us: the main thread's CPU outside ``_core.sweep_gram_batch`` per trial (one
    thread: the per-batch Python plus the table; the C++ call runs on a helper thread), and with
    two threads the wall time before the first batch starts, between the two threads' last
    batches and after the last batch (the table). Best of 5 runs (by total time)."""
    import threading

    import relucore.sweeps.api as api

    section(
        "Gram-mode serial work (default gram_stats=True, best of 5)",
        ["n", "d", "trials", "main-thread CPU us/trial (1 thread)", "before / between / after (ms, 2 threads)", "load"],
    )
    call, run_batch = _core.sweep_gram_batch, api.run_batch
    inside, ends, starts = [0.0], [], []

    def timed_call(*a, **k):
        c = time.thread_time()
        try:
            return call(*a, **k)
        finally:
            inside[0] += time.thread_time() - c

    def timed_batch(task):
        starts.append(time.perf_counter())
        out = run_batch(task)
        ends.append((time.perf_counter(), threading.get_ident()))
        return out

    _core.sweep_gram_batch, api.run_batch = timed_call, timed_batch
    try:
        for n, trials in [(10, 8192 if q else 32768), (40, 2048 if q else 8192)]:
            load = os.getloadavg()[0]
            cpu = []
            for _ in range(5):
                inside[0] = 0.0
                c0 = time.thread_time()
                sweep_rate(n, 100_000, trials, use_gram=True, n_threads=1, gram_stats=True)
                cpu.append(1e6 * (time.thread_time() - c0 - inside[0]) / trials)
            walls = []
            for _ in range(5):
                ends.clear()
                starts.clear()
                t0 = time.perf_counter()
                sweep_rate(n, 100_000, trials, use_gram=True, n_threads=2, gram_stats=True)
                t1 = time.perf_counter()
                last = {}
                for e, th in ends:
                    last[th] = max(last.get(th, 0.0), e)
                walls.append(
                    (t1 - t0, min(starts) - t0, max(last.values()) - min(last.values()), t1 - max(last.values()))
                )
            _, before, between, after = min(walls)
            print(
                f"| {n} | 1e5 | {trials} | {min(cpu):.2f} | {1e3 * before:.1f} / {1e3 * between:.1f} / {1e3 * after:.1f} | "
                f"{load:.2f} -> {os.getloadavg()[0]:.2f} |",
                flush=True,
            )
    finally:
        _core.sweep_gram_batch, api.run_batch = call, run_batch


def breakdown_section(normal_rate, gemm):
    """Milliseconds per trial of each stage, relucore and the numpy peer, against the machine's floors."""
    section(
        "where the time goes (ms per trial, 1 thread)",
        [
            "n",
            "d",
            "who",
            "sampling",
            "K",
            "prepare",
            "GD",
            "QP",
            "gram_stats",
            "total",
            "floor: normals",
            "floor: K (GEMM)",
        ],
    )
    for n, d, use_gram in [(40, 100_000, False), (40, 10_000, False), (40, 100_000, True), (10, 1_000, True)]:
        trials = (4 if d >= 100_000 else 32) if not use_gram else 2048
        parts, nit = breakdown(n, d, trials, use_gram)
        r, _ = sweep_rate(n, d, trials, use_gram=use_gram, gram_stats=True)
        floor_rng = (n * n if use_gram else n * d) / normal_rate
        floor_k = 0.0 if use_gram else n * n * d / gemm  # syrk: n^2 d flops
        cells = " | ".join(f"{1e3 * v:.3g}" for v in parts.values())
        who = "relucore K" if use_gram else "relucore X"
        print(
            f"| {n} | {d:.0e} | {who} | {cells} | {1e3 / r:.3g} | {1e3 * floor_rng:.3g} | {1e3 * floor_k:.3g} |",
            flush=True,
        )
        if not use_gram or d == 100_000:
            nt = 2 if d >= 100_000 else 8
            times = {}
            rng = np.random.default_rng(1)
            t0 = time.perf_counter()
            for _ in range(nt):
                numpy_trial(n, d, rng, times=times)
            tot = (time.perf_counter() - t0) / nt
            c = {k: f"{1e3 * v / nt:.3g}" for k, v in times.items()}
            print(
                f"| {n} | {d:.0e} | numpy | {c['sampling']} | {c['K']} | | {c['GD']} (incl. init) | {c['QP']} | | "
                f"{1e3 * tot:.3g} | {1e3 * n * d / normal_rate:.3g} | {1e3 * n * n * d / gemm:.3g} |",
                flush=True,
            )


def flat_section(q):
    """Gram-mode trial time from d = 1e3 to 1e9 (independent of d)."""
    section("Gram-mode trial time against d (n = 40, 1 thread)", ["d", "ms per trial", "relative to d = 1e3"])
    base = None
    for d in [10**3, 10**5, 10**7, 10**9]:
        r, _ = sweep_rate(40, d, 256 if q else 2048, use_gram=True)
        base = base or 1e3 / r
        print(f"| {d:.0e} | {1e3 / r:.3g} | {1e3 / r / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
