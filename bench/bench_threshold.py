"""relucore.threshold on a Dana-et-al.-style outcome, against a fixed grid, and its coverage.

(a) One trial of a user's outcome: Gaussian data x ~ N(0, I_d / d), labels ±U[1, 2], a Gaussian
    start (w_j ~ N(0, I_d / d), a_j ~ N(0, 1)), both layers trained (``train_outer=True``, width
    p = 12, output scale p^-1/2, step 0.25 / mu_1(K)); success when the loss falls below 1e-4 of the
    zero network's within ``STEPS`` steps (GD stops early at a stationary point).
(b) ``relucore.threshold`` of n in (d, 12 d) at d = 10 and 20 (90 % intervals, default relative
    width 0.25): both thresholds, their widths against 30 % of the estimate, the trials, the wall time.
(c) A fixed grid (12 points evenly spaced in log n over the same bounds) with r trials a point,
    r doubled until the profile interval of the same fit is as narrow as the adaptive one's:
    the trials it took against the adaptive search's.
(d) Coverage: the fraction of 90 % intervals that hold the known crossing of a synthetic Bernoulli
    outcome (P = 1 / (1 + (n / 50)^4)), over many seeds.

    python bench/bench_threshold.py [--seeds 200] [--workers 2] [--quick]

Each row names the CPU model and ISA.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import relucore  # noqa: E402
from relucore.sweeps.threshold_fit import Axis, fit_link, profile_interval  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine  # noqa: E402

P_WIDTH = 12
STEPS = 3000
LOSS_THRESHOLD = 1e-4
TARGET_WIDTH = 0.30


def gaussian_outcome(params, rng) -> bool:
    """One trial of (a): True when GD on both layers reaches 1e-4 of the zero network's loss."""
    n, d, p = int(params["n"]), int(params["d"]), P_WIDTH
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.uniform(1.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
    W0 = rng.standard_normal((p, d)) / np.sqrt(d)
    a0 = rng.standard_normal(p)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    r = relucore.train(
        X, y, signs=a0, init=W0, eta=0.25 / mu1, steps=STEPS, tol=1e-6, engine="weights",
        train_outer=True, output_scale=p**-0.5, n_threads=1,
    )  # fmt: skip
    loss = np.sum((np.asarray(r.predictions) - y) ** 2) / np.sum(y**2)
    return bool(loss < LOSS_THRESHOLD)


def synthetic(params, rng) -> bool:
    """P = 1 / (1 + (n / 50)^4): crosses 1/2 at n = 50."""
    return bool(rng.random() < 1.0 / (1.0 + (params["n"] / 50.0) ** 4))


def one_trial(reps: int) -> float:
    rng = np.random.default_rng(0)
    times = []
    for j in range(reps):
        t0 = time.perf_counter()
        gaussian_outcome({"n": 60 + j % 40, "d": 10}, rng)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def grid_trials_to_width(outcome, params, bounds, width: float, seed: int, points: int = 12) -> tuple:
    """(trials, width reached) of the smallest fixed grid (r = 8, 16, ... trials a point) whose
    profile interval is at most ``width`` (relative to its estimate); r capped at 512."""
    ax = Axis(float(bounds[0]), float(bounds[1]), True, True)
    x = np.unique(ax.points(np.linspace(-1, 1, points)))
    r = 8
    while True:
        rng = np.random.default_rng(seed)
        k = np.array([sum(outcome({**params, "n": int(v)}, rng) for _ in range(r)) for v in x], float)
        t = np.full(x.size, float(r))
        u = ax.to_u(x)
        fit = fit_link(u, k, t, p=0.5)
        lo, hi = profile_interval(fit, u, k, t, 0.9)
        est = float(ax.to_x(fit.u_star))
        rel = float((ax.to_x(hi) - ax.to_x(lo)) / est) if -1 < lo and hi < 1 else np.inf
        if rel <= width or r >= 512:
            return int(t.sum()), rel
        r *= 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    seeds = 20 if args.quick else args.seeds
    cpu = machine()
    print(f"# {cpu}; load average {os.getloadavg()[0]:.2f}")

    t1 = one_trial(10 if args.quick else 40)
    print(f"| (a) one trial, n = 60-99, d = 10, {STEPS} steps | median {1e3 * t1:.2f} ms | {cpu} |")

    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    rows = []
    with ThreadPoolExecutor(args.workers) as ex:
        for d in (10, 20):
            tab = relucore.threshold(
                gaussian_outcome, "n", (d, 12 * d), given={"d": [d]}, rng=1, executor=ex, progress=False
            )
            rows.append(tab.iloc[0])
    wall = time.perf_counter() - t0
    total = sum(int(r["trials"]) for r in rows)
    for r in rows:
        rel = (r["high"] - r["low"]) / r["estimate"]
        print(
            f"| (b) d = {int(r['d'])} | n* = {r['estimate']:.1f} [{r['low']:.1f}, {r['high']:.1f}] | width "
            f"{100 * rel:.1f} % ({'<' if rel < TARGET_WIDTH else '>='} 30 %) | {int(r['trials'])} trials | {cpu} |"
        )
    print(f"| (b) total | {total} trials (target <= 1500) | {wall:.1f} s wall, {args.workers} threads "
          f"(target <= 300 s) | {cpu} |")  # fmt: skip

    for d, r in zip((10, 20), rows):
        width = (r["high"] - r["low"]) / r["estimate"]
        g, reached = grid_trials_to_width(gaussian_outcome, {"d": d}, (d, 12 * d), width, seed=5)
        print(f"| (c) d = {d}, real outcome | adaptive {int(r['trials'])} vs grid {g} trials (width "
              f"{100 * reached:.1f} %) | ratio {int(r['trials']) / g:.2f} (target <= 0.33) | {cpu} |")  # fmt: skip
        g30, reached30 = grid_trials_to_width(gaussian_outcome, {"d": d}, (d, 12 * d), TARGET_WIDTH, seed=5)
        print(f"| (c) d = {d}, real outcome, grid to the 30 % target | grid {g30} trials (width "
              f"{100 * reached30:.1f} %); adaptive stops at >= 256 | {cpu} |")  # fmt: skip
    ratios = []
    for s in range(5 if args.quick else 20):
        tab = relucore.threshold(synthetic, "n", (5, 200), rng=1000 + s, progress=False)
        width = (tab["high"][0] - tab["low"][0]) / tab["estimate"][0]
        g, _ = grid_trials_to_width(synthetic, {}, (5, 200), width, seed=2000 + s)
        ratios.append(int(tab["trials"][0]) / g)
    print(f"| (c) synthetic, {len(ratios)} seeds | adaptive / grid trials: median {np.median(ratios):.2f} "
          f"[{min(ratios):.2f}, {max(ratios):.2f}] (target <= 0.33) | {cpu} |")  # fmt: skip

    t0 = time.perf_counter()
    hit, trials = 0, []
    for s in range(seeds):
        tab = relucore.threshold(synthetic, "n", (5, 200), rng=s, progress=False)
        hit += bool(tab["low"][0] <= 50.0 <= tab["high"][0])
        trials.append(int(tab["trials"][0]))
    cover = hit / seeds
    se = np.sqrt(0.9 * 0.1 / seeds)
    print(f"| (d) coverage, {seeds} seeds | {100 * cover:.1f} % (confidence 90 %, +- {100 * se:.1f} % s.e.) | "
          f"median {int(np.median(trials))} trials | {time.perf_counter() - t0:.1f} s | {cpu} |")  # fmt: skip
    print(f"# load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
