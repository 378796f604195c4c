"""The loss options (output_bias, reduction, sample_weight): the existing paths keep their speed.

The engines run their plain code unless an output bias or loss weights are set
(``EngineBase::plain_loss()``), so the existing paths should time as before; the new options
take the general (unfused) step. Per-step time of train's existing paths and of the same runs
with the new options, one thread, best of ``--repeat``, CPU time. Run it on two builds (this
branch, and the parent with ``PYTHONPATH`` pointing at its package) for the before/after row;
``--label`` names the build in the output.

    python bench/bench_loss_options.py [--repeat 5] [--label main]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import best_of, machine  # noqa: E402

import relucore  # noqa: E402

CASES = (
    # name, n, d, m, steps, train keywords
    ("dual, fixed outer (n=10, m=2)", 10, 2000, 2, 20000, dict(engine="dual")),
    ("dual, fixed outer (n=100, m=16)", 100, 2000, 16, 2000, dict(engine="dual", init="gaussian", rng=0)),
    ("dual, train_outer + bias (n=100, m=16)", 100, 50, 16, 2000, dict(engine="dual", train_outer=True, bias=True)),
    ("weights, fixed outer (n=500, d=20, m=50)", 500, 20, 50, 1000, dict(engine="weights", init="gaussian", rng=0)),
    ("weights, train_outer + bias (n=500, d=20, m=50)", 500, 20, 50, 1000, dict(engine="weights", train_outer=True)),
)
NEW = dict(output_bias=0.0, reduction="mean")


def case(n, d, m, kw, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.uniform(0.1, 1, n) * rng.choice([-1.0, 1.0], n)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0) / m
    kw = dict(kw)
    if kw.get("train_outer"):
        kw.setdefault("init", rng.standard_normal((m, d)) / np.sqrt(d))
    return X, y, signs, kw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--label", default="this build")
    ap.add_argument("--new", action="store_true", help="also time the new options (this branch only)")
    args = ap.parse_args()
    print(f"# {machine()}; {args.label}; load {os.getloadavg()[0]:.1f}")
    print("| path | steps | ns / step" + (" | with output_bias + reduction='mean' |" if args.new else " |"))
    for name, n, d, m, steps, kw in CASES:
        X, y, signs, kw = case(n, d, m, kw)
        # the default step, and 1 / ||relu(X W0^T)||^2 (the outer layer's curvature) when it moves
        eta = relucore.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], signs)
        if kw.get("train_outer"):
            eta = min(eta, 1.0 / np.linalg.norm(np.maximum(X @ kw["init"].T, 0), 2) ** 2)
        eta = 0.25 * min(eta, 1.0 / n)  # 1/n: the output bias's curvature in the new run

        def run(extra=None):
            opts = dict(kw, signs=signs, eta=eta, steps=steps, tol=0)
            opts.update(extra or {})
            return relucore.train(X, y, **opts)

        t, res = best_of(run, args.repeat, clock=time.process_time)
        assert res.nit == steps, res.message
        row = f"| {name} | {res.nit} | {1e9 * t / steps:.0f}"
        if args.new:
            t2, res2 = best_of(lambda: run(dict(NEW, eta=eta * n / 2)), args.repeat, clock=time.process_time)
            assert res2.nit == steps, res2.message
            row += f" | {1e9 * t2 / steps:.0f}"
        print(row + " |")


if __name__ == "__main__":
    main()
