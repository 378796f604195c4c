"""Steps per second of relucore.train against a numpy loop and a PyTorch loop.

All three run the same problem (x ~ N(0, I), |y| ~ U(0.1, 1) with random
signs, all-positive init, the same eta) for the same number of GD steps with
no early stopping, side by side in this process. relucore's time includes
everything train does (forming K, the eigenvalues for the default step, the
init solve, the run and rebuilding W).

    python bench/bench_train.py            # the issue's configurations
    python bench/bench_train.py --quick    # a smaller, faster set

Results are printed as a table (Markdown) with the ratios.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
from _common import best_of, problem

import relucore
from relucore import _core

CONFIGS = [
    # (n, d, m, steps)
    (10, 2000, 1, 2000),
    (10, 2000, 2, 2000),
    (100, 10000, 2, 500),
    (200, 50000, 2, 100),
]
QUICK = [(10, 2000, 1, 500), (10, 2000, 2, 500), (100, 10000, 2, 100)]
BATCH = 64
#: Best-of count for relucore's sub-millisecond calls.
FAST_REPEAT = 200


def numpy_loop(X, y, W0, signs, eta, steps):
    """GD as a researcher would write it in numpy (weight space)."""
    W = W0.copy()
    for _ in range(steps):
        B = W @ X.T
        r = (signs[:, None] * np.maximum(B, 0)).sum(0) - y
        W -= eta * ((signs[:, None] * (B > 0) * r) @ X)
    return W


def torch_loop(X, y, W0, signs, eta, steps):
    """GD with autograd and torch.optim.SGD (float64, CPU)."""
    import torch

    Xt = torch.from_numpy(X)
    yt = torch.from_numpy(y)
    st = torch.from_numpy(signs)
    W = torch.nn.Parameter(torch.from_numpy(W0.copy()))
    opt = torch.optim.SGD([W], lr=eta)
    for _ in range(steps):
        opt.zero_grad()
        h = (st[:, None] * torch.relu(W @ Xt.T)).sum(0)
        loss = 0.5 * ((h - yt) ** 2).sum()
        loss.backward()
        opt.step()
    return W.detach().numpy()


def gram_time(X, repeat):
    K = np.empty((1, X.shape[0], X.shape[0]))
    Xb = X[None]
    t, _ = best_of(lambda: _core.gram_batch(Xb, K, 1), repeat)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
        have_torch = True
    except ImportError:
        have_torch = False
    configs = QUICK if args.quick else CONFIGS
    print(
        f"# bench_train  relucore {relucore.__version__}, numpy {np.__version__}, "
        f"torch {torch.__version__ if have_torch else 'absent'}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cpus; single problem, 1 thread everywhere (torch.set_num_threads(1))"
    )
    print()
    print(
        "| n | d | m | steps | relucore s | numpy s | torch s | steps/s relucore | x numpy | x torch | K share | max rel diff |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows, t_first = [], 0.0
    for n, d, m, steps in configs:
        X, y, signs = problem(n, d, m)
        run = lambda: relucore.train(X, y, signs=signs, steps=steps, tol=0.0, n_threads=1)
        # A sub-millisecond call is at the mercy of a scheduler hiccup on a shared
        # machine: best of many more calls (the peers run for 10-1000 ms each). The
        # first call of a process also loads scipy's BLAS and LAPACK (about 0.1 s,
        # once): the count is chosen from a warm call.
        t_call, _ = best_of(run, 1)
        if not rows:
            t_first = t_call
        t_rc, res = best_of(run, 1)
        t_rc, res = best_of(run, max(args.repeat, FAST_REPEAT) if t_rc < 0.02 else args.repeat)
        reps_slow = 1 if n * d * steps > 1e9 else args.repeat
        t_np, W_np = best_of(lambda: numpy_loop(X, y, res.W0, signs, res.eta, steps), reps_slow)
        diff = np.linalg.norm(W_np - res.W) / np.linalg.norm(res.W)
        if have_torch:
            t_th, W_th = best_of(lambda: torch_loop(X, y, res.W0, signs, res.eta, steps), reps_slow)
            diff = max(diff, np.linalg.norm(W_th - res.W) / np.linalg.norm(res.W))
            th_txt, ratio_th = f"{t_th:.4f}", f"{t_th / t_rc:.0f}"
        else:
            th_txt, ratio_th = "-", "-"
        k_share = gram_time(X, args.repeat) / t_rc
        print(
            f"| {n} | {d} | {m} | {steps} | {t_rc:.4f} | {t_np:.4f} | {th_txt} | {steps / t_rc:,.0f} | "
            f"{t_np / t_rc:.0f} | {ratio_th} | {k_share:.0%} | {diff:.1e} |"
        )
        rows.append((n, d, m, steps, t_rc, t_np, t_th if have_torch else None))
    print()
    print(f"The process's first call (in none of the rows): {t_first * 1e3:.0f} ms (it loads scipy's BLAS and LAPACK)")
    # The fixed cost of a call (validation, K, eigenvalues, init, packaging) is
    # paid once per call: B problems in one batched call share it.
    print()
    print(f"Batched: B = {BATCH} problems of the first configurations in one call, time per problem (1 thread)")
    print()
    print("| n | d | m | steps | relucore s/problem | x numpy | x torch |")
    print("|---|---|---|---|---|---|---|")
    for n, d, m, steps, _, t_np, t_th in rows[:2]:
        Xs, ys = zip(*(problem(n, d, m, seed=b)[:2] for b in range(BATCH)))
        Xb, yb = np.stack(Xs), np.stack(ys)
        signs = problem(n, d, m)[2]
        t_b, _ = best_of(lambda: relucore.train(Xb, yb, signs=signs, steps=steps, tol=0.0, n_threads=1), args.repeat)
        per = t_b / BATCH
        th = f"{t_th / per:.0f}" if t_th is not None else "-"
        print(f"| {n} | {d} | {m} | {steps} | {per:.6f} | {t_np / per:.0f} | {th} |")


if __name__ == "__main__":
    main()
