"""What the SQLite store costs a sweep: throughput with and without it, bytes per trial, load time.

The sweep: Gram-mode trials on the fast path (n = 10, d = 1e5, one ReLU, positive init; whole
trials in one C++ call per batch of up to 1024), ``trials`` of them, in this process with the
default threads. Peers, run side by side in this process, interleaved (none, store, none,
store, ...) so that a change of the machine's load hits both:

- ``no store``: ``relucore.sweep(...)``;
- ``store``: ``relucore.sweep(..., checkpoint="x.db")`` into a new file (WAL,
  ``synchronous=NORMAL``, one transaction per batch, committed by the store's writer thread
  while the next batches compute: the default);
- ``store FULL``: the same with ``synchronous=FULL`` (an fsync per commit), to show what the
  default saves.

Then: the store's size per trial (after the sweep closed it: WAL merged), the time to read it
back as a table (``relucore.sweeps.store_read.read_table``) and the time of a resume that finds
every trial saved (the store's rows loaded column-wise into the sweep's results). Agreement
check: the tables with and without the store are equal bit for bit.

    python bench/bench_store.py                    # 1e6 trials (a few minutes)
    python bench/bench_store.py --trials 100000    # quicker
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import platform
import resource
import shutil
import statistics
import tempfile
import time

import pandas as pd

import relucore
from relucore.sweeps import store, store_read

GRID = {"n": 10, "d": 100_000, "use_gram": True}


def _timed(fn):
    """(result, wall seconds, CPU seconds of this process: user + sys, all threads)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="rounds of (no store, store)")
    ap.add_argument("--dir", default=None, help="folder for the store (default: a temporary folder)")
    args = ap.parse_args()
    folder = args.dir or tempfile.mkdtemp(prefix="relucore-bench-store-")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, relucore {relucore.__version__}")
    print(f"# sweep {GRID}, {args.trials} trials; store in {folder}")
    print(f"# load average at start: {_load()}")
    rates = {"no store": [], "store": [], "store FULL": []}
    ratios = {"wall": [], "cpu": []}  # store / no store, within each round
    ref = None
    for r in range(args.repeat):
        path = os.path.join(folder, f"bench-{r}.db")
        line = [f"round {r}:"]
        for peer in rates:
            target = None if peer == "no store" else (path if peer == "store" else path + "-full.db")
            store.SYNCHRONOUS = "FULL" if peer == "store FULL" else "NORMAL"
            table, wall, cpu = _timed(
                lambda: relucore.sweep(GRID, trials=args.trials, rng=r, checkpoint=target, progress=False)
            )
            if peer == "no store":
                ref, wall0, cpu0 = table, wall, cpu
            else:
                pd.testing.assert_frame_equal(table, ref, check_exact=True)
            rates[peer].append(args.trials / wall)
            ratio = ""
            if peer != "no store":
                extra = (cpu - cpu0) / args.trials * 1e6
                ratio = f", x{wall0 / wall:.2f} wall, x{cpu0 / cpu:.2f} cpu, {extra:+.1f} us cpu/trial"
            if peer == "store":
                ratios["wall"].append(wall0 / wall)
                ratios["cpu"].append(cpu0 / cpu)
            line.append(f"{peer} {args.trials / wall:8,.0f}/s (cpu {cpu:6.2f} s{ratio})")
        store.SYNCHRONOUS = "NORMAL"
        print(line[0] + " " + " | ".join(line[1:]) + f" | load {_load()}")
    best = {k: max(v) for k, v in rates.items()}
    print("best rates: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in best.items()) +
          f"; store/no store {best['store'] / best['no store']:.2f}")  # fmt: skip
    for kind, r in ratios.items():
        print(f"store/no store within a round, {kind}: best {max(r):.2f}, median {statistics.median(r):.2f}")
    path = os.path.join(folder, f"bench-{args.repeat - 1}.db")
    size = os.path.getsize(path)
    print(f"store size: {size / 1e6:.1f} MB, {size / args.trials:.0f} bytes per trial")
    back, t_read, c_read = _timed(lambda: store_read.read_table(path))
    pd.testing.assert_frame_equal(back, ref, check_exact=True)
    print(f"read_table: {t_read:.2f} s wall, {c_read:.2f} s cpu for {len(back)} rows (quick_check included)")
    _, t_resume, c_resume = _timed(
        lambda: relucore.sweep(GRID, trials=args.trials, rng=args.repeat - 1, checkpoint=path, progress=False)
    )
    print(f"resume with every trial saved: {t_resume:.2f} s wall, {c_resume:.2f} s cpu")
    print(f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"# load average at end: {_load()}")
    if args.dir is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
