"""Property-based tests (hypothesis, profile "ci" of conftest.py) of relucore.sweep on random small grids.

A row depends on nothing but its configuration and its trial's seed (docs/sweeps.md,
"Reproducibility"), so for any grid:

- the table is bitwise the same whatever ``chunk_size``, ``n_threads`` and the order of
  the configurations in the grid;
- running more trials, or more configurations, leaves the rows already there unchanged;
- a checkpointed sweep stopped after any number of batches and resumed (with more trials)
  equals the uninterrupted run;
- every column has the dtype :mod:`relucore.sweeps.columns` states, and a row whose
  status is not ``error`` holds a NaN only where its meaning says so.
"""

import contextlib
import json
import math
import sqlite3

import numpy as np
import pytest

pd = pytest.importorskip("pandas")  # the sanitizer job installs relucore without its pandas
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import relucore  # noqa: E402
from relucore.sweeps.columns import LEADING, MEASURED, TRAILING  # noqa: E402

# Small configurations covering both sweep paths (the Gram fast path: use_gram, one neuron,
# positive init; the general path: everything else), the optional columns and failing trials.
POOL = [
    {"n": 4, "d": 30, "steps": 400},
    {"n": 5, "d": 40, "use_gram": True, "steps": 400},
    {"n": 4, "d": 30, "use_gram": True, "labels": "positive", "gram_stats": False},
    {"n": 4, "d": 25, "signs": [1, -1], "steps": 300, "minnorm": False},
    {"n": 3, "d": 20, "init": "gaussian", "signs": [1, -1], "steps": 200},
    {"n": 4, "d": 24, "init": "disjoint", "signs": [1, 1, -1], "steps": 300, "spectrum": ["power", 1.0]},
    {"n": 4, "d": 30, "use_gram": True, "signs": [1, -1], "steps": 200, "eta": 0.01},
    {"n": 6, "d": 3, "steps": 50},  # n > d: every trial fails (K singular)
    {"n": 3, "d": 30, "labels": "positive", "steps": 300},
    {"n": 4, "d": 30, "use_gram": True, "init": "gaussian", "signs": [1, -1], "steps": 200},
]

grids = st.lists(st.sampled_from(range(len(POOL))), min_size=1, max_size=3, unique=True)


def sweep(idx, trials, **kw):
    kw.setdefault("rng", 11)
    return relucore.sweep([POOL[i] for i in idx], trials=trials, progress=False, **kw)


def rows_of(table, config):
    """The rows of one configuration (identified by content), without the grid position."""
    cfg = relucore.sweeps.config.normalise_config(config)
    mask = np.ones(len(table), dtype=bool)
    for key in ("n", "d", "use_gram", "init", "steps", "minnorm", "gram_stats"):
        mask &= (table[key] == cfg[key]).to_numpy()
    mask &= (table["signs"] == json.dumps(cfg["signs"], separators=(",", ":"))).to_numpy()
    for key in ("labels", "spectrum", "eta"):
        value = cfg[key]
        col = table[key]
        if value is None:
            mask &= (col.isna() | (col == "")).to_numpy()
        else:
            cell = json.dumps(value, separators=(",", ":")) if isinstance(value, list) else value
            mask &= (col == cell).to_numpy()
    return table[mask].drop(columns=["config_index"]).reset_index(drop=True)


@settings(max_examples=8)
@given(idx=grids, trials=st.integers(1, 4), batch_size=st.sampled_from([1, 2, 3]), n_threads=st.sampled_from([1, 2]))
def test_rows_do_not_depend_on_batches_threads_or_the_order_of_the_grid(idx, trials, batch_size, n_threads):
    ref = sweep(idx, trials, n_threads=1)
    pd.testing.assert_frame_equal(sweep(idx, trials, chunk_size=batch_size, n_threads=n_threads), ref, check_exact=True)
    rev = sweep(idx[::-1], trials, chunk_size=batch_size)
    for i in idx:
        pd.testing.assert_frame_equal(rows_of(rev, POOL[i]), rows_of(ref, POOL[i]), check_exact=True)


@settings(max_examples=8)
@given(idx=grids, trials=st.integers(1, 3), more=st.integers(1, 3), extra=st.sampled_from(range(len(POOL))))
def test_more_trials_or_configurations_leave_the_earlier_rows_unchanged(idx, trials, more, extra):
    """Regression: a configuration column's type (and so its cells, NaN or '') depended on the other
    configurations of the grid."""
    ref = sweep(idx, trials)
    longer = sweep(idx, trials + more)
    pd.testing.assert_frame_equal(longer[longer.trial < trials].reset_index(drop=True), ref, check_exact=True)
    if extra not in idx:
        wider = sweep(idx + [extra], trials)
        pd.testing.assert_frame_equal(
            wider[wider.config_index < len(idx)].reset_index(drop=True), ref, check_exact=True
        )


@settings(max_examples=8)
@given(idx=grids, trials=st.integers(2, 4), more=st.integers(0, 2), keep=st.integers(0, 6))
def test_a_resumed_checkpoint_equals_the_uninterrupted_run(tmp_path_factory, idx, trials, more, keep):
    path = tmp_path_factory.mktemp("ckpt") / "sweep.db"
    full = sweep(idx, trials + more, chunk_size=1, n_threads=1)
    sweep(idx, trials, chunk_size=1, n_threads=1, checkpoint=path)
    # Interrupted with only `keep` trials committed: the store keeps a prefix of its rows.
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "DELETE FROM trials WHERE (config, trial) NOT IN "
            "(SELECT config, trial FROM trials ORDER BY config, trial LIMIT ?)",
            (keep,),
        )
    resumed = sweep(idx, trials + more, chunk_size=2, checkpoint=path)
    pd.testing.assert_frame_equal(resumed, full, check_exact=True)
    # Everything is now saved: a rerun computes nothing and returns the same table.
    pd.testing.assert_frame_equal(sweep(idx, trials + more, checkpoint=path), full, check_exact=True)


def allowed_nan(row, name):
    """The measured columns a successful row may leave NaN, as their meanings (sweeps.columns) say."""
    if name in ("gap", "gap_normalized") and not row["minnorm"]:
        return True
    if name.startswith("gram_") and not row["gram_stats"]:
        return True
    if name == "limit_margin" and not np.isinf(row["steps"]):
        return True  # the certificate of steps = inf only
    signs = json.loads(row["signs"])
    if name == "gap_normalized" and len(signs) == 1:
        n_off = row["n_neg"] if signs[0] > 0 else row["n_pos"]
        return n_off == 0
    return False


@settings(max_examples=8)
@given(idx=grids, trials=st.integers(1, 4))
def test_columns_have_their_documented_dtypes_and_successful_rows_no_undocumented_nan(idx, trials):
    table = sweep(idx, trials)
    for col in LEADING + MEASURED + TRAILING:
        if col.kind == "U":
            assert pd.api.types.is_string_dtype(table[col.name]), (col.name, table[col.name].dtype)
        else:
            assert table[col.name].dtype == col.dtype, (col.name, table[col.name].dtype)
    for _, row in table.iterrows():
        if row["status"] == "error":
            assert row["error"] and all(
                (math.isnan(row[c.name]) if c.kind == "f" else row[c.name] == -1) for c in MEASURED
            )
            continue
        assert row["error"] == ""
        assert row["status"] in ("converged", "stalled", "max_steps", "diverged")
        for c in MEASURED:
            value = row[c.name]
            if c.kind == "f" and not np.isfinite(value):
                assert math.isnan(value) and allowed_nan(row, c.name), (c.name, value, dict(row))
            if c.kind == "i":
                finite_budget = c.name.startswith("limit_") and not np.isinf(row["steps"])
                assert value == -1 if finite_budget else value >= 0, (c.name, value)


def test_every_configuration_key_has_a_fixed_column_type():
    """Regression: an unset text key (labels, spectrum, z) was a float64 NaN column in a grid that
    never set it and an empty-text cell in one that did, so adding a configuration changed rows."""
    from relucore.sweeps.config import CONFIG_KINDS, DEFAULTS

    assert set(CONFIG_KINDS) == set(DEFAULTS)
    alone = sweep([0], 1)
    assert alone.loc[0, "labels"] == "" and alone.loc[0, "spectrum"] == "" and alone.loc[0, "z"] == ""
    assert pd.api.types.is_string_dtype(alone["labels"]) and alone["init_scale"].dtype == np.float64
    assert alone["n"].dtype == np.int64 and alone["use_gram"].dtype == bool


def test_gaussian_inits_in_gram_mode_run():
    """Regression: every trial of a use_gram configuration with init='gaussian' failed with
    AttributeError ('GramDataset' object has no attribute 'X')."""
    table = sweep([len(POOL) - 1], 3, chunk_size=2)
    assert (table.status != "error").all(), table.error.tolist()
    assert np.isfinite(table.loss).all() and np.isfinite(table.gap).all()
