"""Iterations per second of relucore.meanfield.train against the loops a researcher would write.

Peers, same settings, same process:
- numpy: one sample per step, vectorised over the N neurons (float64);
- PyTorch: the same loop with autograd and torch.optim.SGD (float64, CPU),
  skipped with a note when torch is not installed.

Setting (Liang et al. 2026, Figs. 1-2): N = 1000 neurons, 2-D inputs (the 3×3
grid, M = 9), single-sample SGD, step s = 1 (per-neuron 1e-3), lambda = 1e-2,
without noise and with temperature 1e-3. Before timing, all three are run
for a few hundred steps on the same sample indices (no noise) and their
parameters compared.

    python bench/bench_meanfield.py [--N 1000] [--quick]

The engine's fused kernels pick the widest SIMD path the CPU has (AVX-512F,
AVX, SSE2); RELUCORE_SIMD=avx (or sse2, scalar) caps it, e.g. to time the
paths against each other (they give bitwise the same numbers).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from relucore import meanfield
from relucore.experiments.meanfield import GRID_LABELS, GRID_X


def numpy_loop(X, y, theta0, *, iters, step, lam, T, rng, samples=None):
    """The paper's algorithm as a numpy script: one sample per step, vectorised over neurons."""
    N = theta0.shape[0]
    d = X.shape[1]
    a = theta0[:, 0].copy()
    W = theta0[:, 1 : 1 + d].copy()
    b = theta0[:, d + 1].copy()
    eta = step / N
    noise = np.sqrt(4 * eta * T)
    M = X.shape[0]
    for t in range(iters):
        j = samples[t] if samples is not None else rng.integers(M)
        x = X[j]
        z = W @ x + b
        act = np.maximum(z, 0.0)
        r = np.mean(a * act) - y[j]
        on = (z > 0) * a
        ga = 2 * r * act + 2 * lam * a
        gw = 2 * r * on[:, None] * x[None, :] + 2 * lam * W
        gb = 2 * r * on + 2 * lam * b
        a -= eta * ga
        W -= eta * gw
        b -= eta * gb
        if T > 0:
            a += noise * rng.standard_normal(N)
            W += noise * rng.standard_normal((N, d))
            b += noise * rng.standard_normal(N)
    return np.column_stack([a, W, b])


def torch_loop(X, y, theta0, *, iters, step, lam, T, seed=0, samples=None):
    """The same algorithm with autograd: SGD with lr = step on (h(x_j) - y_j)^2 + (lam/N) ||Theta||^2."""
    import torch

    g = torch.Generator().manual_seed(seed)
    N = theta0.shape[0]
    d = X.shape[1]
    Xt = torch.as_tensor(X)
    yt = torch.as_tensor(y)
    a = torch.tensor(theta0[:, 0], requires_grad=True)
    W = torch.tensor(theta0[:, 1 : 1 + d], requires_grad=True)
    b = torch.tensor(theta0[:, d + 1], requires_grad=True)
    opt = torch.optim.SGD([a, W, b], lr=step)
    noise = float(np.sqrt(4 * step / N * T))
    M = X.shape[0]
    for t in range(iters):
        j = int(samples[t]) if samples is not None else int(torch.randint(M, (1,), generator=g))
        h = torch.mean(a * torch.relu(W @ Xt[j] + b))
        loss = (h - yt[j]) ** 2 + lam / N * (a.square().sum() + W.square().sum() + b.square().sum())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if T > 0:
            with torch.no_grad():
                a.add_(noise * torch.randn(N, generator=g, dtype=torch.float64))
                W.add_(noise * torch.randn(N, d, generator=g, dtype=torch.float64))
                b.add_(noise * torch.randn(N, generator=g, dtype=torch.float64))
    return torch.column_stack([a, W, b]).detach().numpy()


def simd_path():
    """The fused kernels' SIMD path (from the CPU flags on Linux and RELUCORE_SIMD)."""
    order = ["scalar", "sse2", "avx", "avx512"]
    best = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        best = "avx512" if "avx512f" in flags else "avx" if "avx" in flags else "sse2"
    except OSError:
        pass
    cap = os.environ.get("RELUCORE_SIMD")
    if cap in order and best in order:
        return order[min(order.index(cap), order.index(best))]
    return best


def _rates(fn, iters):
    """(iterations per wall-clock second, per CPU second of this process) of one timing."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn(iters)
    return iters / (time.perf_counter() - t0), iters / max(time.process_time() - c0, 1e-9)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="shorter timings")
    ap.add_argument("--repeats", type=int, default=9, help="timings per peer; the best is reported")
    args = ap.parse_args(argv)
    N = args.N
    X, y = GRID_X, GRID_LABELS
    theta0 = np.random.default_rng(0).normal(0, 1e-3, (N, 4))
    step, lam = 1.0, 1e-2
    try:
        import torch

        torch_version = torch.__version__
        torch.set_num_threads(1)  # one sample of width N: intra-op threads only add overhead
    except ImportError:
        torch_version = None

    # Same samples, no noise: the three must agree.
    K = 300
    samples = np.random.default_rng(1).integers(0, X.shape[0], K)
    big = np.random.default_rng(2).normal(0, 0.5, (N, 4))  # large enough for ReLUs to switch
    engine_kw = dict(m=N, eta=step, weight_decay=lam, record=0)  # the setting of every engine call below
    ref = meanfield.train(X, y, steps=K, init=big, samples=samples[:, None], **engine_kw).theta
    diff_np = np.max(np.abs(numpy_loop(X, y, big, iters=K, step=step, lam=lam, T=0, rng=None, samples=samples) - ref))
    print(f"agreement after {K} steps on shared samples: max |engine - numpy| = {diff_np:.1e}", end="")
    if torch_version:
        diff_t = np.max(np.abs(torch_loop(X, y, big, iters=K, step=step, lam=lam, T=0, samples=samples) - ref))
        print(f", max |engine - torch| = {diff_t:.1e}")
    else:
        print()

    scale = 0.2 if args.quick else 1.0
    rows, cpu_rows = [], []
    for T in (0.0, 1e-3):
        it_engine = int((100_000 if T == 0 else 5_000) * scale)
        it_peer = int(2000 * scale)

        def engine(iters, n_threads=1):
            meanfield.train(X, y, temperature=T, steps=iters, init=theta0, rng=0, n_threads=n_threads, **engine_kw)

        rng = np.random.default_rng(0)
        peers = {
            "engine": (engine, it_engine),
            "engine2": (lambda i: engine(i, n_threads=2), it_engine // 4),
            "numpy": (lambda i: numpy_loop(X, y, theta0, iters=i, step=step, lam=lam, T=T, rng=rng), it_peer),
        }
        if torch_version:
            peers["torch"] = (lambda i: torch_loop(X, y, theta0, iters=i, step=step, lam=lam, T=T), it_peer // 2)
        best = {k: 0.0 for k in peers}
        best_cpu = {k: 0.0 for k in peers}
        # Interleaved repeats: every peer sees the same (shared, fluctuating) machine; keep each one's best.
        for _ in range(args.repeats):
            for k, (fn, iters) in peers.items():
                w, c = _rates(fn, iters)
                best[k] = max(best[k], w)
                best_cpu[k] = max(best_cpu[k], c)
        rows.append((T, best["engine"], best["engine2"], best["numpy"], best.get("torch")))
        cpu_rows.append((T, best_cpu["engine"], best_cpu["numpy"], best_cpu.get("torch")))

    print(
        f"\nN = {N}, d = 2, M = 9, single-sample SGD, float64, best of {args.repeats}; "
        f"torch {torch_version or 'not installed (skipped)'}; engine SIMD path {simd_path()}; "
        f"load average {os.getloadavg()[0]:.2f} at the end"
    )
    print(
        f"{'1/beta':>7} | {'engine 1 thr':>12} | {'engine 2 thr':>12} | {'numpy':>9} | {'torch':>9} | "
        f"{'vs numpy':>8} | {'vs torch':>8}"
    )
    for T, e1, e2, npy, tor in rows:
        best = max(e1, e2)
        tor_s = f"{tor:9.0f}" if tor else f"{'-':>9}"
        vs_t = f"{best / tor:7.0f}x" if tor else f"{'-':>8}"
        print(f"{T:7.0e} | {e1:10.0f}/s | {e2:10.0f}/s | {npy:7.0f}/s | {tor_s}/s | {best / npy:7.0f}x | {vs_t}")
    print("\nper CPU-second of the process (single-threaded peers; robust to a busy machine):")
    print(f"{'1/beta':>7} | {'engine 1 thr':>12} | {'numpy':>9} | {'torch':>9} | {'vs numpy':>8} | {'vs torch':>8}")
    for T, e1, npy, tor in cpu_rows:
        tor_s = f"{tor:9.0f}" if tor else f"{'-':>9}"
        vs_t = f"{e1 / tor:7.0f}x" if tor else f"{'-':>8}"
        print(f"{T:7.0e} | {e1:10.0f}/s | {npy:7.0f}/s | {tor_s}/s | {e1 / npy:7.0f}x | {vs_t}")


if __name__ == "__main__":
    main()
