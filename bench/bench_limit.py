"""Certified limits and exact gradient flow against plain GD runs (numbers in bench/README.md).

    python bench/bench_limit.py [--seeds 8] [--repeat 5]

On the Figure 4 setting (n = 10, d = 2000, m = 2, all-positive init), per problem:

- ``train(steps=np.inf)`` against ``train(steps=10**6, tol=0)`` at the default step and at
  eta / 50: time ratio, whether the limit is certified, its relative distance to the
  10^6-step run and to a run stopped at 2 * (steps the certificate needed) + 5000 (converged;
  the engines resynchronise beta from alpha, so the two references agree: docs/math.md §14);
  where the proof does not hold (GD chatters), ``steps=inf`` returns the exact continuation from
  its ``tol`` state, and the table counts its sliding entries;
- ``relucore.flow`` to t = inf (from the Gram matrix, so forming K is not counted): time per
  problem, number of events, status, and the proved remaining-motion bound where the flow ended
  by it (0: frozen pattern).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import best_of, problem  # noqa: E402

import relucore as rc  # noqa: E402


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def limit_rows(seeds, repeat):
    rows = []
    for seed in range(seeds):
        X, y, signs = problem(10, 2000, 2, seed)
        eta0 = float(rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], signs))
        for factor in (1.0, 1 / 50):
            eta = eta0 * factor
            t_lim, lim = best_of(lambda: rc.train(X, y, signs=signs, eta=eta, steps=np.inf), repeat)
            t_ref, ref = best_of(lambda: rc.train(X, y, signs=signs, eta=eta, steps=10**6, tol=0), 3)
            short = rc.train(X, y, signs=signs, eta=eta, steps=2 * lim.nit + 5000, tol=0)
            c = lim.certificate
            slid = 0 if c.sliding is None else int(c.sliding.sum())
            rows.append((seed, factor, c.holds, slid, lim.nit, t_lim, t_ref, _rel(lim.W, ref.W), _rel(lim.W, short.W)))
    return rows


def flow_rows(seeds, repeat):
    rows = []
    for seed in range(seeds):
        X, y, signs = problem(10, 2000, 2, seed)
        K = X @ X.T
        t, f = best_of(lambda: rc.flow(gram=K, y=y, signs=signs), repeat)
        slides = sum(k.startswith("slide") for k in f.event_kinds)
        rows.append((seed, t, f.event_times.size, slides, f.status, f.certificate.motion if f.certificate else np.nan))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        "\n| seed | eta | certified | sliding | steps taken | steps=inf s | 10^6 steps s | speed-up | vs 10^6 run "
        "| vs converged run |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed, factor, holds, slid, nit, t_lim, t_ref, d_ref, d_short in limit_rows(a.seeds, a.repeat):
        eta = "default" if factor == 1 else "default/50"
        print(
            f"| {seed} | {eta} | {holds} | {slid} | {nit} | {t_lim:.2e} | {t_ref:.3f} | {t_ref / t_lim:.0f}x "
            f"| {d_ref:.1e} | {d_short:.1e} |"
        )
    print("\n| seed | flow to t=inf s | events | of which slides | status | motion bound |")
    print("|---|---|---|---|---|---|")
    for seed, t, events, slides, status, motion in flow_rows(a.seeds, a.repeat):
        print(f"| {seed} | {t:.2e} | {events} | {slides} | {status} | {motion:.1e} |")
    print("\nload average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
