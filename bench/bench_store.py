"""What the SQLite store costs a sweep: throughput with and without it, bytes per trial, load time.

The sweep: Gram-mode trials on the fast path (n = 10, d = 1e5, one ReLU, positive init; whole
trials in one C++ call per batch of up to 1024), ``trials`` of them, in this process with the
default threads. Peers, run side by side in this process, interleaved (none, store, none,
store, ...) so that a change of the machine's load hits both:

- ``no store``: ``relucore.sweep(...)``;
- ``store``: ``relucore.sweep(..., checkpoint="x.db")`` into a new file (WAL,
  ``synchronous=FULL``, one transaction per batch).

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
import tempfile
import time

import pandas as pd

import relucore
from relucore.sweeps import store_read

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
    plain_rates, store_rates, ref, table = [], [], None, None
    for r in range(args.repeat):
        path = os.path.join(folder, f"bench-{r}.db")
        ref, t_plain, c_plain = _timed(lambda: relucore.sweep(GRID, trials=args.trials, seed=r, progress=False))
        table, t_store, c_store = _timed(
            lambda: relucore.sweep(GRID, trials=args.trials, seed=r, checkpoint=path, progress=False)
        )
        pd.testing.assert_frame_equal(table, ref, check_exact=True)
        plain_rates.append(args.trials / t_plain)
        store_rates.append(args.trials / t_store)
        print(
            f"round {r}: no store {args.trials / t_plain:9,.0f} trials/s (cpu {c_plain:6.1f} s) | "
            f"store {args.trials / t_store:9,.0f} trials/s (cpu {c_store:6.1f} s) | "
            f"ratio {t_plain / t_store:.2f} | load {_load()}"
        )
    print(f"best rates: no store {max(plain_rates):,.0f}/s, store {max(store_rates):,.0f}/s, "
          f"ratio of bests {max(store_rates) / max(plain_rates):.2f}")  # fmt: skip
    path = os.path.join(folder, f"bench-{args.repeat - 1}.db")
    size = os.path.getsize(path)
    print(f"store size: {size / 1e6:.1f} MB, {size / args.trials:.0f} bytes per trial")
    back, t_read, c_read = _timed(lambda: store_read.read_table(path))
    pd.testing.assert_frame_equal(back, ref, check_exact=True)
    print(f"read_table: {t_read:.2f} s wall, {c_read:.2f} s cpu for {len(back)} rows (quick_check included)")
    _, t_resume, c_resume = _timed(
        lambda: relucore.sweep(GRID, trials=args.trials, seed=args.repeat - 1, checkpoint=path, progress=False)
    )
    print(f"resume with every trial saved: {t_resume:.2f} s wall, {c_resume:.2f} s cpu")
    print(f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"# load average at end: {_load()}")
    if args.dir is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
