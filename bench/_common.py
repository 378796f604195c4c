"""Helpers shared by the benchmark scripts (run as ``python bench/NAME.py``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

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
