"""Set-up cost of relucore.train: seconds in ``prepare`` (K, mu_1, the init's solve, checks) and
in the whole call, for a few inits and sizes, best of ``--repeat``. One thread.

    python bench/bench_setup.py            # this checkout
    PYTHONPATH=OTHER/python python bench/bench_setup.py   # another build, for a before/after

The settings include the tall case n = 1300, d = 100, m = 36, 200 steps with the init and
eta given (K singular: least squares), where the set-up used to dominate, and n = 800,
d = 2000 with the default step, where the eigenvalues of K dominate it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import best_of

import relucore
from relucore.gd.prepare import prepare

# (label, n, d, m, init, eta given, steps, engine)
SETTINGS = [
    ("array, eta given", 1300, 100, 36, "array", True, 200, "weights"),
    ("gaussian, eta given", 1300, 100, 36, "gaussian", True, 200, "weights"),
    ("gaussian, defaults", 1300, 100, 36, "gaussian", False, 200, "weights"),
    ("disjoint, defaults", 200, 2000, 4, "disjoint", False, 200, "dual"),
    ("gaussian, defaults", 200, 2000, 4, "gaussian", False, 200, "dual"),
    ("positive, defaults", 200, 2000, 4, "positive", False, 200, "dual"),
    ("gaussian, defaults", 800, 2000, 4, "gaussian", False, 20, "dual"),
    ("positive, defaults", 800, 2000, 4, "positive", False, 20, "dual"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# bench_setup  relucore from {os.path.dirname(relucore.__file__)}")
    print(f"# start: load {os.getloadavg()}, {time.strftime('%H:%M:%S UTC', time.gmtime())}")
    print()
    print("| setting | n | d | m | steps | engine | set-up s | total s |")
    print("|---|---|---|---|---|---|---|---|")
    for label, n, d, m, init, eta_given, steps, engine in SETTINGS:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d))
        y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
        signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        kw = dict(signs=signs, n_threads=1, engine=engine, tol=None)
        kw["init"] = rng.standard_normal((m, d)) * 1e-3 if init == "array" else init
        if init == "gaussian":
            kw["rng"] = 1
        if eta_given:
            kw["eta"] = 0.5 / (m * float(np.sum(X * X)))
        t_prep, _ = best_of(lambda: prepare(X, y, **kw), args.repeat)
        t_all, _ = best_of(lambda: relucore.train(X, y, steps=steps, **kw), args.repeat)
        print(f"| {label} | {n} | {d} | {m} | {steps} | {engine} | {t_prep:.4f} | {t_all:.4f} |")
    print()
    print(f"# end: load {os.getloadavg()}, {time.strftime('%H:%M:%S UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
