"""The constants of ``engine="auto"``: cost of a GD step of each engine on this machine, at this
process's SIMD level (``relucore._core.simd_level()``; ``RELUCORE_SIMD`` caps it, so run once
natively and once per capped level, each in its own process).

For each (n, d, m) of a small grid, times ``relucore.train`` with both engines at two step
counts (each engine's sized for about ``WORK`` units of its cost model; eta and tol given, so no
early stop) and takes the difference, which leaves the cost of the steps alone (the prepare step is the same for both engines). Fits

    dual step    ~ c_dual * n^2 m      (K alpha for every neuron)
    weights step ~ c_weights * n d m   (W X^T and the gradient's product with X)

as the median over the grid of seconds / (n^2 m) and seconds / (n d m), in nanoseconds (the
weight engine's separately over the cells whose products go to a BLAS and the others), and
prints the table, the fitted constants and the row of ``auto_step_ns_table`` in
relucore/defaults.hpp they suggest for this level (fields dual, weights, weights_blas), with the
CPU model, the level and the load. One thread, CPU time; a few seconds on an idle machine.

    python bench/bench_auto.py
    RELUCORE_SIMD=avx OPENBLAS_CORETYPE=Haswell python bench/bench_auto.py   # an AVX2 machine's path
"""

from __future__ import annotations

import os
import time

import numpy as np
from _common import best_of, machine, problem

import relucore
from relucore import _core
from relucore.gd.defaults import resolve_engine

LEVELS = ("scalar", "sse2", "avx", "avx512")  # simd::level(), narrowest first
WORK = 1e8  # units of n^2 m (dual) or n d m (weights) per timed run
GRID = [(n, d, m) for n in (10, 50, 200) for d in (20, 200, 2000) for m in (2, 8)]


def step_seconds(X, y, signs, engine, steps):
    """CPU seconds per GD step: the difference of two runs, best of 5 each."""
    # A random start (about half the neurons active on each example) and a step far below the
    # default one, so that no run stops early.
    W0 = np.random.default_rng(2).standard_normal((len(signs), X.shape[1])) / np.sqrt(X.shape[1])
    eta = 1e-3 / (len(signs) * float(np.sum(X * X)))
    kw = dict(signs=signs, init=W0, eta=eta, tol=0.0, engine=engine, n_threads=1)
    t1, r1 = best_of(lambda: relucore.train(X, y, steps=steps, **kw), 5, time.process_time)
    t2, r2 = best_of(lambda: relucore.train(X, y, steps=2 * steps, **kw), 5, time.process_time)
    assert (r1.nit, r2.nit) == (steps, 2 * steps), (r1.message, r2.message)
    return max(t2 - t1, 1e-9) / steps


def main():
    rows = []
    for n, d, m in GRID:
        X, y, _ = problem(n, d, 1)
        signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        # Steps per engine for about WORK units of its own cost model per run, so that the
        # difference of two runs is well above the clock's resolution and the calls' overhead.
        steps_dual, steps_weights = (int(np.clip(WORK / w, 20, 10**6)) for w in (n * n * m, n * d * m))
        dual = step_seconds(X, y, signs, "dual", steps_dual)
        weights = step_seconds(X, y, signs, "weights", steps_weights)
        rows.append((n, d, m, f"{steps_dual} / {steps_weights}", dual, weights))
    print(
        "| n | d | m | steps dual / weights | dual us/step | weights us/step | ns / (n^2 m) | ns / (n d m) | faster |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n, d, m, steps, dual, weights in rows:
        print(
            f"| {n} | {d} | {m} | {steps} | {dual * 1e6:.3f} | {weights * 1e6:.2f} | "
            f"{dual * 1e9 / (n * n * m):.3f} | {weights * 1e9 / (n * d * m):.3f} | "
            f"{'dual' if dual < weights else 'weights'} |"
        )
    c_dual = float(np.median([r[4] * 1e9 / (r[0] ** 2 * r[2]) for r in rows]))
    # The weight engine's constant per path of its products (built-in, or a BLAS from
    # blas_gemm_min_rows neurons and blas_product_min_work multiply-adds on).
    blas = [_core.products_use_blas_by_size(r[2], r[0], r[1]) for r in rows]
    c_weights = float(np.median([r[5] * 1e9 / (r[0] * r[1] * r[2]) for r, b in zip(rows, blas) if not b]))
    c_blas = float(np.median([r[5] * 1e9 / (r[0] * r[1] * r[2]) for r, b in zip(rows, blas) if b]))
    print(
        f"\nc_dual = {c_dual:.3f} ns per n^2 m, c_weights = {c_weights:.3f} ns per n d m (built-in products), "
        f"c_weights_blas = {c_blas:.3f} ns per n d m (products on the BLAS)"
    )
    chosen = [resolve_engine("auto", r[0], r[1], r[2]) for r in rows]
    agree = sum(c == ("dual" if r[4] < r[5] else "weights") for c, r in zip(chosen, rows))
    level = _core.simd_level()
    built = _core.auto_step_ns(level)
    print(f"engine='auto' with the constants of this build picks the faster engine in {agree} of {len(rows)} cells")
    print(f"built-in row: {{{built.dual}, {built.weights}, {built.weights_blas}}}")
    print(f"suggested row of auto_step_ns_table: {{{c_dual:.3f}, {c_weights:.3f}, {c_blas:.3f}}},  // {LEVELS[level]}")
    print(f"machine: {machine()}; SIMD level {LEVELS[level]}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}")
    print(f"load: {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
