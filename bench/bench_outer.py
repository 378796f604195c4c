"""Two-layer GD (trained outer layer): relucore.train against meanfield.train, numpy and PyTorch.

The model of Dana, Bach, Pillaud-Vivien (2025) in its mean-field form:
h(x) = (1/p) sum_j a_j relu(w_j^T x), both layers trained by full-batch GD on
1/2 sum_i (h(x_i) - y_i)^2 with eta = p/n; x uniform on the sphere times U[1, 2], |y| ~ U[1, 2].
Every implementation runs the same steps from the same start; the final (W, a) are compared
before anything is timed. One thread everywhere.

    python bench/bench_outer.py [--repeat 5] [--quick]

Columns: relucore.train(train_outer=True, output_scale=1/p, eta=p/n) with the weight-space
and the primal-dual engine; relucore.meanfield.train on the same problem (output_scale="1/m",
step eta n / 2, full batch, no noise, no decay); a numpy loop and PyTorch autograd + SGD
(float64), when torch imports. Also a batch of B problems in one train call against the
batched numpy loop of the convergence-probability experiment.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import best_of  # noqa: E402

import relucore  # noqa: E402
from relucore import meanfield  # noqa: E402
from relucore.experiments import dana2025  # noqa: E402


def problem(n, d, p, seed=0):
    rng = np.random.default_rng(seed)
    X, y = dana2025._sphere_data(rng, 1, n, d)
    W0 = rng.standard_normal((p, d)) / np.sqrt(d)
    a0 = rng.standard_normal(p)
    return X[0], y[0], W0, a0


def numpy_loop(X, y, W, a, eta, c, steps):
    for _ in range(steps):
        pre = W @ X.T
        act = np.maximum(pre, 0.0)
        r = c * (a @ act) - y
        ga = c * (act @ r)
        gW = (c * a[:, None] * (pre > 0) * r[None, :]) @ X
        W, a = W - eta * gW, a - eta * ga
    return W, a


def torch_loop(torch, X, y, W0, a0, eta, c, steps):
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    W = torch.from_numpy(W0.copy()).requires_grad_()
    a = torch.from_numpy(a0.copy()).requires_grad_()
    opt = torch.optim.SGD([W, a], lr=eta)
    for _ in range(steps):
        opt.zero_grad()
        h = c * (torch.relu(Xt @ W.T) @ a)
        loss = 0.5 * torch.sum((h - yt) ** 2)
        loss.backward()
        opt.step()
    return W.detach().numpy(), a.detach().numpy()


def run_config(n, d, p, steps, repeat, torch):
    X, y, W0, a0 = problem(n, d, p)
    eta, c = p / n, 1.0 / p
    runs = {
        "train weights": lambda: relucore.train(
            X, y, signs=a0, init=W0, eta=eta, steps=steps, tol=0, engine="weights",
            train_outer=True, output_scale=c, n_threads=1,
        ),
        "train dual": lambda: relucore.train(
            X, y, signs=a0, init=W0, eta=eta, steps=steps, tol=0, engine="dual",
            train_outer=True, output_scale=c, n_threads=1,
        ),
        "meanfield": lambda: meanfield.train(
            X, y, m=p, eta=eta * n / 2, weight_decay=0.0, temperature=0.0, steps=steps, batch_size=None,
            bias=False, train_outer=True, output_scale="1/m", init=np.column_stack([a0, W0]), record=0,
            n_threads=1, progress=False,
        ),
        "numpy": lambda: numpy_loop(X, y, W0, a0, eta, c, steps),
    }  # fmt: skip
    if torch is not None:
        runs["torch"] = lambda: torch_loop(torch, X, y, W0, a0, eta, c, steps)

    def final(name, out):
        if name.startswith("train"):
            return out.W, out.outer
        if name == "meanfield":
            return out.theta[:, 1:], out.theta[:, 0]
        return out

    # agreement first
    W_ref, a_ref = final("numpy", runs["numpy"]())
    diff = 0.0
    for name, fn in runs.items():
        W, a = final(name, fn())
        diff = max(
            diff, np.max(np.abs(W - W_ref)) / np.max(np.abs(W_ref)), np.max(np.abs(a - a_ref)) / np.max(np.abs(a_ref))
        )
    if diff > 1e-9:
        raise SystemExit(f"n={n} d={d} p={p}: the implementations disagree (max rel diff {diff:.2e})")
    times = {name: best_of(fn, repeat if name.startswith("train") or name == "meanfield" else max(2, repeat // 2))[0]
             for name, fn in runs.items()}  # fmt: skip
    return times, diff


def run_batch(B, n, d, p, steps, repeat):
    rng = np.random.default_rng(1)
    X, y = dana2025._sphere_data(rng, B, n, d)
    W0 = rng.standard_normal((B, p, d)) / np.sqrt(d)
    a0 = rng.standard_normal((B, p))
    eta = 0.25 / np.linalg.eigvalsh(X @ np.swapaxes(X, 1, 2))[:, -1]
    loss_tr = dana2025.train_trials(X, y, W0, a0, eta, steps, n_threads=1)
    loss_np, _, _ = dana2025.trained_outer_gd(X, y, np.ones((B, n)), W0, a0, eta, steps)
    ok = np.isfinite(loss_np)
    # losses relative to the zero network's: compared absolutely (tiny final losses differ
    # relatively where the runs interpolate)
    diff = float(np.max(np.abs(loss_tr[ok] - loss_np[ok])))
    if diff > 1e-9 or not np.array_equal(loss_tr < 1e-4, loss_np < 1e-4):
        raise SystemExit(f"batch: train and the numpy loop disagree (max rel diff {diff:.2e})")
    t_tr, _ = best_of(lambda: dana2025.train_trials(X, y, W0, a0, eta, steps, n_threads=1), repeat)
    t_np, _ = best_of(lambda: dana2025.trained_outer_gd(X, y, np.ones((B, n)), W0, a0, eta, steps), max(2, repeat // 2))
    return t_tr, t_np, diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_default_dtype(torch.float64)
    except ImportError:
        torch = None
    print(f"load average: {os.getloadavg()}")
    # step counts short enough that rounding differences stay below 1e-9 (the runs with n >> d
    # reach a chaotic phase where they grow: at n = 96, d = 16, 1000 steps part the runs by 0.3)
    configs = [(24, 8, 12, 2000), (96, 16, 12, 300), (200, 50, 64, 200)]
    if args.quick:
        configs = configs[:1]
    names = ["train weights", "train dual", "meanfield", "numpy"] + (["torch"] if torch is not None else [])
    print("| n | d | p | steps | " + " | ".join(f"{k} s" for k in names) + " | max rel diff |")
    print("|" + "---|" * (len(names) + 5))
    for n, d, p, steps in configs:
        times, diff = run_config(n, d, p, steps, args.repeat, torch)
        print(f"| {n} | {d} | {p} | {steps} | " + " | ".join(f"{times[k]:.4g}" for k in names) + f" | {diff:.1e} |")
    print()
    print(
        "| B | n | d | p | steps | train (one call) s | numpy batched loop s | x numpy | max abs diff of loss/loss(0) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for B, n, d, p, steps in [(50, 32, 8, 12, 3000), (50, 96, 16, 12, 1000)][: 1 if args.quick else 2]:
        t_tr, t_np, diff = run_batch(B, n, d, p, steps, args.repeat)
        print(f"| {B} | {n} | {d} | {p} | {steps} | {t_tr:.4g} | {t_np:.4g} | {t_np / t_tr:.1f} | {diff:.1e} |")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
