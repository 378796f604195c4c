"""The weight-space engine's products through the BLAS: where they win, and by how much.

A weight-space GD step (``engine="weights"``) is two products, ``beta = W X^T`` and
``G = (mask o r) X`` (relucore/linalg/blas.hpp ``gemm_nt`` and ``gemm``). From
``blas_gemm_min_rows`` neurons and ``blas_product_min_work`` multiply-adds (m n d) on they go
to scipy's BLAS; below, to Eigen's per-neuron products (the engine's earlier loop, bitwise).
For each (n, d, m) of a grid this times a GD step with the BLAS and with the built-in
products (``_core._use_blas``), alternating the two in this process, and reports the ratio and
the agreement of the final weights. One thread.

    python bench/bench_weights_blas.py
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
    """Per-step seconds with the BLAS and with the built-in products, runs alternating; and the final W's."""
    W0 = np.random.default_rng(2).standard_normal((len(signs), X.shape[1])) / np.sqrt(X.shape[1])
    eta = 1e-3 / (len(signs) * float(np.sum(X * X)))
    kw = dict(signs=signs, init=W0, eta=eta, tol=0.0, engine="weights", n_threads=1)
    best = {True: [np.inf, np.inf], False: [np.inf, np.inf]}
    W = {}
    for _ in range(repeat):
        for blas in (True, False):
            _core._use_blas(blas)
            for j, k in enumerate((steps, 2 * steps)):
                t0 = time.perf_counter()
                r = relucore.train(X, y, steps=k, **kw)
                best[blas][j] = min(best[blas][j], time.perf_counter() - t0)
                assert r.nit == k, r.message
            W[blas] = r.W
    _core._use_blas(True)
    per = {b: max(best[b][1] - best[b][0], 1e-9) / steps for b in best}
    return per[True], per[False], float(np.abs(W[True] - W[False]).max() / np.abs(W[False]).max())


def main():
    if not _core._use_blas(True):
        raise SystemExit(f"scipy's BLAS is not registered: {_core.blas_info()['scipy']}")
    dflt = _core.defaults
    print(
        f"# bench_weights_blas  load {os.getloadavg()[0]:.1f} (2 cores), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; blas_gemm_min_rows = {dflt.blas_gemm_min_rows}, "
        f"blas_product_min_work = {dflt.blas_product_min_work}"
    )
    print()
    print("| n | d | m | m n d | BLAS us/step | built-in us/step | built-in / BLAS | max rel diff of W |")
    print("|---|---|---|---|---|---|---|---|")
    for n, d, m in GRID:
        X, y, _ = problem(n, d, 1)
        signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        steps = int(max(20, min(4000, 3e7 / (n * m * d))))
        tb, tn, diff = step_seconds(X, y, signs, steps)
        print(f"| {n} | {d} | {m} | {n * d * m} | {tb * 1e6:.2f} | {tn * 1e6:.2f} | {tn / tb:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
