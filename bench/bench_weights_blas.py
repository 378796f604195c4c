"""The weight-space engine's products through the BLAS: where they win, and by how much.

A weight-space GD step (``engine="weights"``) is two products, ``beta = W X^T`` and
``G = (mask o r) X`` (relucore/linalg/blas.hpp ``gemm_nt`` and ``gemm``). From
``blas_gemm_min_rows`` neurons and ``blas_product_min_work`` multiply-adds (m n d) on they go
to scipy's BLAS; below, to Eigen's per-neuron products (the engine's earlier loop, bitwise).
For each (n, d, m) of a grid this times a GD step with the BLAS and with the built-in
products (``_core._use_blas``), alternating the two in this process, and reports the ratio and
the agreement of the final weights. One thread.

The grid runs with RELUCORE_SIMD=sse2: on a CPU with AVX2 and FMA or AVX-512F the engine
otherwise takes neither, but its packed kernels (packed.hpp ``gemm_nt_packed``, ``gemm_packed``).

Then Dana et al.'s Exp. 1 setting (n = 1300, d = 100, m = 36, outer layer fixed, 200 steps,
init and eta given) side by side in this process: relucore as it runs (the packed kernels
where the CPU has AVX2 with FMA or AVX-512F), relucore with the BLAS products and with the
built-in products (both RELUCORE_SIMD=sse2), the numpy loop and the PyTorch autograd + SGD loop of
bench_peers.py (when installed), float64, one thread each, everything included (set-up too).
Times are process CPU time, best of ``--repeat`` calls taken in turn, so that a loaded
machine inflates them less than wall time; the final W of every peer is checked against
relucore's first.

    python bench/bench_weights_blas.py [--repeat 7] [--skip-grid]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import problem  # noqa: E402

import relucore  # noqa: E402
from relucore import _core  # noqa: E402

GRID = [
    (10, 20, 4),
    (10, 50, 4),
    (20, 100, 4),
    (20, 20, 8),
    (50, 20, 4),
    (50, 50, 8),
    (100, 32, 12),
    (100, 200, 8),
    (200, 20, 8),
    (200, 200, 8),
    (400, 100, 36),
    (1300, 100, 36),
    (1000, 1000, 16),
]


def step_seconds(X, y, signs, steps, repeat=5):
    """Per-step CPU seconds with the BLAS and with the built-in products, runs alternating; the final W."""
    W0 = np.random.default_rng(2).standard_normal((len(signs), X.shape[1])) / np.sqrt(X.shape[1])
    eta = 1e-3 / (len(signs) * float(np.sum(X * X)))
    kw = dict(signs=signs, init=W0, eta=eta, tol=0.0, engine="weights", n_threads=1)
    best = {True: [np.inf, np.inf], False: [np.inf, np.inf]}
    W = {}
    for _ in range(repeat):
        for blas in (True, False):
            _core._use_blas(blas)
            for j, k in enumerate((steps, 2 * steps)):
                t0 = time.process_time()
                r = relucore.train(X, y, steps=k, **kw)
                best[blas][j] = min(best[blas][j], time.process_time() - t0)
                assert r.nit == k, r.message
            W[blas] = r.W
    _core._use_blas(True)
    per = {b: max(best[b][1] - best[b][0], 1e-9) / steps for b in best}
    return per[True], per[False], float(np.abs(W[True] - W[False]).max() / np.abs(W[False]).max())


def dana1(repeat):
    """CPU seconds of the Exp. 1 setting for relucore (BLAS, built-in), numpy and PyTorch, in turn."""
    from _common import numpy_gd
    from bench_peers import _rel, _torch, dana1_problem, torch_fixed_outer

    X, y, W0, signs, eta, steps = dana1_problem()
    (n, d), m = X.shape, len(signs)

    def rc(blas, simd=None):
        def run():
            _core._use_blas(blas)
            if simd is not None:
                os.environ["RELUCORE_SIMD"] = simd
            try:
                return relucore.train(
                    X, y, signs=signs, init=W0, eta=eta, steps=steps, tol=0.0, n_threads=1, engine="weights"
                ).W
            finally:
                _core._use_blas(True)
                os.environ.pop("RELUCORE_SIMD", None)

        return run

    runs = {
        "relucore weights": rc(True),
        "relucore weights (BLAS products)": rc(True, "sse2"),
        "relucore weights (built-in products)": rc(False, "sse2"),
        "numpy loop": lambda: numpy_gd(X, y, W0, signs, eta, steps),
    }
    if _torch() is not None:
        runs["PyTorch autograd+SGD"] = lambda: torch_fixed_outer(X, y, W0, signs, eta, steps)
    ref = runs["relucore weights"]()
    diffs = {name: _rel(fn(), ref) for name, fn in runs.items()}
    assert max(diffs.values()) < 1e-12, diffs
    best = dict.fromkeys(runs, np.inf)
    for _ in range(repeat):
        for name, fn in runs.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    t_rc = best["relucore weights"]
    print()
    print(f"Dana Exp. 1 (n={n}, d={d}, m={m}, {steps} steps), CPU s best of {repeat}, load {os.getloadavg()[0]:.1f}")
    print()
    print("| run | CPU s | / relucore | max rel diff of W |")
    print("|---|---|---|---|")
    for name, t in best.items():
        print(f"| {name} | {t:.4f} | {t / t_rc:.2f} | {diffs[name]:.1e} |")


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--skip-grid", action="store_true", help="only the Exp. 1 comparison")
    args = ap.parse_args()
    if not _core._use_blas(True):
        raise SystemExit(f"scipy's BLAS is not registered: {_core.blas_info().scipy}")
    dflt = _core.defaults
    print(
        f"# bench_weights_blas  load {os.getloadavg()[0]:.1f} (2 cores), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; blas_gemm_min_rows = {dflt.blas_gemm_min_rows}, "
        f"blas_product_min_work = {dflt.blas_product_min_work}"
    )
    if args.skip_grid:
        dana1(args.repeat)
        return
    os.environ["RELUCORE_SIMD"] = "sse2"  # the grid compares the BLAS with the built-in products
    print()
    print("| n | d | m | m n d | BLAS us/step | built-in us/step | built-in / BLAS | max rel diff of W |")
    print("|---|---|---|---|---|---|---|---|")
    for n, d, m in GRID:
        X, y, _ = problem(n, d, 1)
        signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        steps = int(max(20, min(4000, 3e7 / (n * m * d))))
        tb, tn, diff = step_seconds(X, y, signs, steps)
        print(f"| {n} | {d} | {m} | {n * d * m} | {tb * 1e6:.2f} | {tn * 1e6:.2f} | {tn / tb:.2f} | {diff:.1e} |")
    os.environ.pop("RELUCORE_SIMD", None)
    dana1(args.repeat)


if __name__ == "__main__":
    main()
