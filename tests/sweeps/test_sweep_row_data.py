"""relucore.sweeps.row_data: a row's data drawn again from the row equal, bitwise, what the trial used.

The reference is the trial itself: a ``measure`` function receives the data and the train
result of each trial and records digests of X (or K), y and the start, which the rebuilt data
must reproduce. Rows of the fast Gram path (which takes no measure) are checked against the
general path's rows of the same configuration (same seed, same data by construction).
"""

import hashlib

import numpy as np
import pytest

import relucore
from relucore.sweeps.row_data import row_config, row_data


def _digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()


def _measure(data, res):
    X = getattr(data, "X", None)
    start = res.W0 if res.W0 is not None else res.beta0
    return {"h_x": _digest(data.K if X is None else X), "h_y": _digest(data.y), "h_init": _digest(start)}


GRID = [
    {"n": 5, "d": 20},  # explicit X, positive init
    {"n": 4, "d": 30, "init": "gaussian", "m": 2, "z": "rademacher", "minnorm": False},
    {"n": 6, "d": 400, "use_gram": True, "labels": ["uniform", 0.2, 0.9]},  # the Bartlett sampler
    {"n": 4, "d": 50, "use_gram": True, "init": "gaussian", "m": 2, "minnorm": False, "steps": 50},
    {"n": 4, "d": 6, "use_gram": True, "spectrum": ["power", 1.0], "gram_stats": False},  # sample_gram
]


@pytest.fixture(scope="module")
def table():
    return relucore.sweep(GRID, trials=3, rng=11, measure=_measure, n_threads=1, progress=False)


def test_rows_rebuild_the_trials_data(table):
    assert len(table) == 3 * len(GRID) and (table["status"] != "error").all()
    for _, row in table.iterrows():
        data = row_data(row)
        assert data.config == row_config(row)
        assert _digest(data.K if data.X is None else data.X) == row["h_x"]
        assert _digest(data.y) == row["h_y"]
        if isinstance(data.init, str):
            assert data.init == data.config["init"] == "positive"
        else:
            assert _digest(data.init) == row["h_init"]
        if data.X is not None:
            np.testing.assert_allclose(data.K, data.X @ data.X.T, rtol=1e-12, atol=1e-12)


def test_fast_path_rows_rebuild_the_same_data():
    cfg = dict(GRID[2])
    fast = relucore.sweep([cfg], trials=3, rng=11, n_threads=1, progress=False)
    general = relucore.sweep([cfg], trials=3, rng=11, measure=_measure, n_threads=1, progress=False)
    for (_, f), (_, g) in zip(fast.iterrows(), general.iterrows()):
        assert f["seed"] == g["seed"]
        data = row_data(f)
        assert data.X is None and _digest(data.K) == g["h_x"] and _digest(data.y) == g["h_y"]
        assert f["n_pos"] == int(np.sum(data.y > 0))


def test_edited_rows_are_refused(table):
    row = table.iloc[0].copy()
    row["d"] = 21
    with pytest.raises(ValueError, match="hashes to"):
        row_data(row)
    row = table.iloc[0].copy()
    row["seed"] = "not a seed"
    with pytest.raises(ValueError, match="not a sweep seed"):
        row_data(row)
    with pytest.raises(KeyError, match="no column 'n'"):
        row_data({"seed": table.iloc[0]["seed"]})


def test_explicit_rows_are_relucore_sample_draws(table):
    """An explicit-X row's X and y are relucore.sample's for the trial's generator (z from the
    counter-based stream keyed by one 64-bit draw of it), and its K the fused trial's (the row's
    gram_* columns are computed from it)."""
    from relucore.sweeps.gram_columns import gram_rows

    for _, row in table[~table.use_gram].iterrows():
        data = row_data(row)
        cfg = data.config
        kw = {k: (tuple(cfg[k]) if isinstance(cfg[k], list) else cfg[k]) for k in ("spectrum", "z") if cfg[k]}
        ds = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(data.seed), **kw)
        assert np.array_equal(ds.X, data.X) and np.array_equal(ds.y, data.y)
        g = gram_rows(ds.spectrum, data.K[None], data.y[None])[0]
        assert all(np.array_equal(v, row[k], equal_nan=True) for k, v in g.items())


def test_gram_rows_are_the_counter_streams_of_the_seed(table):
    """A Gram-mode row's K and y: sample_gram_batch for the row's seed (Bartlett configurations:
    the counter streams keyed by seed.generate_state(1, uint64)[0]), or sample_gram for the
    trial's generator (others: key = one 64-bit draw of it, labels by numpy after it). For one
    group the Cholesky factor of K is the Bartlett factor: its entries below the diagonal are
    the stream's normals."""
    from relucore import _core

    assert _core.defaults.generator_version == 2
    for _, row in table[table.use_gram].iterrows():
        data = row_data(row)
        cfg = data.config
        if cfg["spectrum"] is None:
            labels = tuple(cfg["labels"]) if isinstance(cfg["labels"], list) else (cfg["labels"] or "uniform")
            K, y = relucore.sample_gram_batch(cfg["n"], cfg["d"], [data.seed], labels=labels)
            assert np.array_equal(K[0], data.K) and np.array_equal(y[0], data.y)
            key = data.seed.generate_state(1, np.uint64)[0]
            z = np.empty(cfg["n"] * (cfg["n"] - 1) // 2)
            _core.counter_normals(int(key), 1 << 32, 0, z)  # the first group's factor below the diagonal
            L = np.linalg.cholesky(data.K)
            np.testing.assert_allclose(L[np.tril_indices(cfg["n"], -1)], z, rtol=1e-9, atol=1e-9)
        else:
            ds = relucore.sample_gram(
                cfg["n"], cfg["d"], spectrum=tuple(cfg["spectrum"]), rng=np.random.default_rng(data.seed)
            )
            assert np.array_equal(ds.K, data.K) and np.array_equal(ds.y, data.y)
