"""Module-level helpers for the sweep tests (picklable; importable by subprocesses)."""

import time

import numpy as np

GRID = [
    {"n": 6, "d": 400},
    {"n": 6, "d": 400, "init": "gaussian", "signs": [1, -1]},
    {"n": 8, "d": 300, "use_gram": True},
]


def measure_norms(data, result):
    """Adds columns: ||y||, the number of active examples at the end, ||W|| (NaN without X)."""
    w_norm = float("nan") if result.W is None else float(np.linalg.norm(result.W))
    return {"y_norm": float(np.linalg.norm(data.y)), "n_active": int(np.sum(result.beta > 0)), "w_norm": w_norm}


def measure_fail_some(data, result):
    """Fails for every data set whose first label is negative."""
    if data.y[0] < 0:
        raise RuntimeError("deliberate failure")
    return {"y0": float(data.y[0])}


def measure_slow(data, result):
    """Sleeps so that a sweep takes long enough to be killed mid-way."""
    time.sleep(0.03)
    return {"y_norm": float(np.linalg.norm(data.y))}


def run_slow(checkpoint):
    import relucore

    relucore.sweep(GRID, trials=40, rng=7, measure=measure_slow, chunk_size=2, checkpoint=checkpoint, progress=False)
