"""Certified limits and exact gradient flow against plain GD runs (numbers in bench/HISTORY.md).

    python bench/bench_limit.py [--seeds 8] [--repeat 30]

On the Figure 4 setting (n = 10, d = 2000, m = 2, all-positive init), per problem:

- ``train(steps=np.inf)`` against ``train(steps=10**6, tol=0)`` at the default step and at
  eta / 50: time ratio in wall time and in CPU time (``time.process_time``; the two runs alternate
  in one process, best of ``--repeat`` and of 3 runs), whether the limit is certified, its relative distance to the
  10^6-step run and to a run stopped at 2 * (steps the certificate needed) + 5000 (converged;
  the engines resynchronise beta from alpha, so the two references agree: docs/math.md §14);
  where the proof does not hold (GD chatters), ``steps=inf`` returns the exact continuation from
  its ``tol`` state, and the table counts its sliding entries;
- ``relucore.flow`` to t = inf (from the Gram matrix, so forming K is not counted): time per
  problem, number of events, status, and the proved remaining-motion bound where the flow ended
  by it (0: frozen pattern).

``--self-check`` times instead the calls the self-check of a certified limit (docs/math.md §13) is
measured against: ``train(steps=np.inf)`` and a Figure 4 ``train`` call (default steps, CPU time, best
of ``--repeat``); ``bench/bench_self_check.cpp`` times the check itself in C++, and bench/HISTORY.md
relates the two. A finite ``train`` call never runs the check.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import best_of, problem  # noqa: E402

import relucore as rc  # noqa: E402


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _timed(fn):
    """(wall seconds, CPU seconds of the process, return value) of one call."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def limit_rows(seeds, repeat):
    rows = []
    for seed in range(seeds):
        X, y, signs = problem(10, 2000, 2, seed)
        eta0 = float(rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], signs))
        for factor in (1.0, 1 / 50):
            eta = eta0 * factor
            lim_fn = lambda: rc.train(X, y, signs=signs, eta=eta, steps=np.inf)  # noqa: E731
            ref_fn = lambda: rc.train(X, y, signs=signs, eta=eta, steps=10**6, tol=0)  # noqa: E731
            best = np.full(4, np.inf)  # wall, CPU of steps=inf; wall, CPU of the 10^6-step run
            for _ in range(3):  # alternated, so that both see the same load
                for _ in range(-(-repeat // 3)):
                    w, c, lim = _timed(lim_fn)
                    best[:2] = np.minimum(best[:2], (w, c))
                w, c, ref = _timed(ref_fn)
                best[2:] = np.minimum(best[2:], (w, c))
            short = rc.train(X, y, signs=signs, eta=eta, steps=2 * lim.nit + 5000, tol=0)
            c = lim.certificate
            slid = 0 if c.sliding is None else int(c.sliding.sum())
            rows.append((seed, factor, c.holds, slid, lim.nit, *best, _rel(lim.W, ref.W), _rel(lim.W, short.W)))
    return rows


def flow_rows(seeds, repeat):
    rows = []
    for seed in range(seeds):
        X, y, signs = problem(10, 2000, 2, seed)
        K = X @ X.T
        t, f = best_of(lambda: rc.flow(gram=K, y=y, signs=signs), repeat)
        slides = sum(k.startswith("slide") for k in f.event_kinds)
        rows.append(
            (seed, t, f.event_times.size, slides, f.status.name, f.certificate.motion if f.certificate else np.nan)
        )
    return rows


def self_check_rows(seeds, repeat):
    rows = []
    for seed in range(seeds):
        X, y, signs = problem(10, 2000, 2, seed)
        t_inf, lim = best_of(lambda: rc.train(X, y, signs=signs, steps=np.inf), repeat, time.process_time)
        t_fin, run = best_of(lambda: rc.train(X, y, signs=signs), repeat, time.process_time)
        rows.append((seed, lim.certificate.holds, lim.nit, t_inf, run.nit, t_fin))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--self-check", action="store_true", help="time the calls the self-check is measured against")
    a = ap.parse_args(argv)
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if a.self_check:
        print("\n| seed | certified | steps | steps=inf CPU us | train() steps | train() CPU us |")
        print("|---|---|---|---|---|---|")
        for seed, holds, nit, t_inf, nit_fin, t_fin in self_check_rows(a.seeds, a.repeat):
            print(f"| {seed} | {holds} | {nit} | {t_inf * 1e6:.1f} | {nit_fin} | {t_fin * 1e6:.1f} |")
        print("\nload average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
        return
    print(
        "\n| seed | eta | certified | sliding | steps taken | steps=inf s | 10^6 steps s | speed-up "
        "| steps=inf CPU s | 10^6 steps CPU s | CPU speed-up | vs 10^6 run | vs converged run |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for seed, factor, holds, slid, nit, t_lim, c_lim, t_ref, c_ref, d_ref, d_short in limit_rows(a.seeds, a.repeat):
        eta = "default" if factor == 1 else "default/50"
        print(
            f"| {seed} | {eta} | {holds} | {slid} | {nit} | {t_lim:.2e} | {t_ref:.3f} | {t_ref / t_lim:.0f}x "
            f"| {c_lim:.2e} | {c_ref:.4f} | {c_ref / c_lim:.0f}x | {d_ref:.1e} | {d_short:.1e} |"
        )
    print("\n| seed | flow to t=inf s | events | of which slides | status | motion bound |")
    print("|---|---|---|---|---|---|")
    for seed, t, events, slides, status, motion in flow_rows(a.seeds, a.repeat):
        print(f"| {seed} | {t:.2e} | {events} | {slides} | {status} | {motion:.1e} |")
    print("\nload average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
