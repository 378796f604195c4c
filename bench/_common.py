"""Helpers shared by the benchmark scripts (run as ``python bench/NAME.py``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import relucore
from relucore.experiments._common import lai_data

# The numpy loop a researcher writes is the tests' independent reference: one home, tests/_reference.py.
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from _reference import numpy_gd  # noqa: E402, F401  (the benchmarks' numpy peer)


def problem(n, d, m, seed=0):
    """Lai et al.'s Fig. 4 data: x ~ N(0, I_d), |y| ~ U(0.1, 1) with random signs; signs +1, -1, ..."""
    X, y = lai_data(np.random.default_rng(seed), n, d)
    signs = np.array([1.0, -1.0, 1.0, -1.0][:m])
    return X, y, signs


def best_of(fn, repeat=3, clock=time.perf_counter):
    """(best time over ``repeat`` calls, the last call's return value); wall time unless ``clock``
    is another (``time.process_time``: the process's CPU time, less inflated on a loaded machine)."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def machine() -> str:
    """CPU model and ISA (the widest vector extension the CPU reports, and relucore's generator path)."""
    model, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "SSE2")
    return f"{model}, {isa} (relucore path {relucore._core.counter_path()})"
