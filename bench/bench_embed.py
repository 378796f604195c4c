"""What driving relucore step by step from a Python simulator costs.

A simulator calls ``Trainer.step(k)`` with small k, reads the state, changes
the labels, checkpoints. Side by side in this process:

- relucore.Trainer.step(1) called N times vs one Trainer.step(N) (per-call
  overhead of the binding) vs relucore.train(steps=N) (one call, all included);
- the numpy weight-space step a researcher would write for the same loop;
- reading the state (zero-copy views vs a copy), rebuilding W, set_labels;
- a pickle round trip of the whole trainer (checkpointing).

    python bench/bench_embed.py            # prints a Markdown table
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform

import numpy as np
from _common import best_of as _best_of
from _common import problem

import relucore


def best_of(fn, repeat):
    return _best_of(fn, repeat)[0]


def numpy_step(X, y, W, signs, eta):
    B = W @ X.T
    r = (signs[:, None] * np.maximum(B, 0)).sum(0) - y
    W -= eta * ((signs[:, None] * (B > 0) * r) @ X)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    R = args.repeat
    print(
        f"# bench_embed  relucore {relucore.__version__}, numpy {np.__version__}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}"
    )
    print()
    print(
        "| n | d | m | N | step(1) x N µs/step | step(N) µs/step | train(steps=N) µs/step | numpy µs/step | "
        "x numpy (step(1)) | view µs | copy µs | W µs | set_labels µs | pickle ms | pickle MB |"
    )
    print("|" + "---|" * 15)
    for n, d, m, N in [(10, 2000, 2, 2000), (100, 10000, 2, 1000)]:
        X, y, signs = problem(n, d, m)
        kw = dict(signs=signs, tol=0.0, n_threads=1)

        t = relucore.Trainer(X, y, **kw)
        # Stepping cost on a live trainer (the state keeps moving; the cost per step does not).
        t_single = best_of(lambda: [t.step(1) for _ in range(N)], R) / N
        t_bulk = best_of(lambda: t.step(N), R) / N
        t_train = best_of(lambda: relucore.train(X, y, steps=N, **kw), R) / N
        ref = relucore.train(X, y, steps=N, **kw)
        fresh = relucore.Trainer(X, y, **kw)
        for _ in range(N):
            fresh.step(1)
        assert np.array_equal(fresh.alpha, ref.alpha)  # same numbers, whichever way

        W = ref.W0.copy()
        steps_np = min(N, 200)
        t_np = best_of(lambda: [numpy_step(X, y, W, signs, ref.eta) for _ in range(steps_np)], R) / steps_np

        reps = 2000
        t_view = best_of(lambda: [t.beta for _ in range(reps)], R) / reps
        t_copy = best_of(lambda: [t.beta.copy() for _ in range(reps)], R) / reps
        t_W = best_of(lambda: [t.W for _ in range(50)], R) / 50
        t_lab = best_of(lambda: [t.set_labels(y) for _ in range(200)], R) / 200
        blob = pickle.dumps(t)
        t_pick = best_of(lambda: pickle.loads(pickle.dumps(t)), R)

        print(
            f"| {n} | {d} | {m} | {N} | {t_single * 1e6:.2f} | {t_bulk * 1e6:.3f} | "
            f"{t_train * 1e6:.3f} | {t_np * 1e6:.1f} | {t_np / t_single:.0f} | {t_view * 1e6:.2f} | "
            f"{t_copy * 1e6:.2f} | {t_W * 1e6:.0f} | {t_lab * 1e6:.2f} | {t_pick * 1e3:.2f} | {len(blob) / 1e6:.2f} |"
        )


if __name__ == "__main__":
    main()
