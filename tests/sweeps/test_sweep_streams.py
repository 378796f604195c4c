"""Explicit-X sweep trials drawn by the fused C++ trial from the counter-based streams.

A row is a function of its configuration and seed only: bitwise the same table whatever the
thread count, the batch size, the executor, and whether X is kept (a ``measure``) or not; its
X and y are ``relucore.sample``'s for the trial's generator, and ``row_data`` returns them and
the K the trial trained on (checked through the row's ``gram_*`` columns, computed from that K).
"""

import numpy as np
import pandas as pd
import pytest

import relucore
from relucore.sweeps.gram_columns import gram_rows
from relucore.sweeps.row_data import row_data

GRID = [
    {"n": 6, "d": 3_000, "spectrum": ["power", 1.0]},
    {"n": 5, "d": 2_000, "z": "rademacher"},
    {"n": 40, "d": 700, "steps": 200},  # n >= 32: K by the registered BLAS when there is one
    {"n": 5, "d": 300, "init": "gaussian", "m": 2, "z": "uniform", "minnorm": False, "steps": 300},
]


def _run(**kw):
    return relucore.sweep(GRID, trials=4, rng=2026, progress=False, **kw)


@pytest.fixture(scope="module")
def reference():
    return _run(n_threads=1, chunk_size=1)


def _y_norm(data, result):
    return {"y_norm": float(np.linalg.norm(data.y))}


@pytest.mark.parametrize("kw", [dict(n_threads=2, chunk_size=3), dict(n_threads=2, chunk_size=4), dict(chunk_size=2)])
def test_rows_do_not_depend_on_threads_or_batches(reference, kw):
    pd.testing.assert_frame_equal(reference, _run(**kw), check_exact=True)


def test_rows_do_not_depend_on_keeping_x(reference):
    """With a measure the trial keeps X (and hands it over); its built-in columns stay the same bits."""
    out = _run(n_threads=2, chunk_size=3, measure=_y_norm)
    pd.testing.assert_frame_equal(reference, out[reference.columns], check_exact=True)


def test_rows_do_not_depend_on_the_dask_executor(reference, dask_client):
    out = _run(executor=dask_client.get_executor(), chunk_size=3)
    pd.testing.assert_frame_equal(reference, out, check_exact=True)


def test_row_data_is_the_trials_data_and_sample_draws_it(reference):
    for _, row in reference.iterrows():
        data = row_data(row)
        cfg = data.config
        kw = {k: (tuple(cfg[k]) if isinstance(cfg[k], list) else cfg[k]) for k in ("spectrum", "z") if cfg[k]}
        ds = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(data.seed), **kw)
        assert np.array_equal(ds.X, data.X) and np.array_equal(ds.y, data.y)
        # the trial's gram_* columns come from the K it trained on: rebuilt bit for bit from row_data's K
        g = gram_rows(np.asarray(ds.spectrum), data.K[None], data.y[None])[0]
        for name, value in g.items():
            assert np.array_equal(value, row[name], equal_nan=True), name
        np.testing.assert_allclose(data.K, data.X @ data.X.T, rtol=1e-12, atol=1e-9)
