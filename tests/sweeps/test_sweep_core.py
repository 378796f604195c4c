"""relucore.sweep: configurations, seeds, determinism, measures, failures, tables."""

import os
import re
import sys

import numpy as np
import pandas as pd
import pytest

import relucore
from relucore.sweeps.config import config_key, expand_grid, trial_seed

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _sweep_helpers as H  # noqa: E402


def _run(**kw):
    kw.setdefault("progress", False)
    return relucore.sweep(H.GRID, trials=5, rng=3, **kw)


@pytest.fixture(scope="module")
def reference():
    return _run(measure=H.measure_norms)


def test_grid_expansion_product_order():
    configs = expand_grid({"n": [5, 10], "d": [100, 200, 300], "init": "gaussian"})
    assert [(c["n"], c["d"]) for c in configs] == [(5, 100), (5, 200), (5, 300), (10, 100), (10, 200), (10, 300)]
    assert all(c["init"] == "gaussian" and c["signs"] == [1.0] and c["m"] == 1 for c in configs)
    assert expand_grid([{"m": 2}])[0]["signs"] == [1.0, -1.0]
    assert expand_grid([{"m": 3}])[0]["signs"] == [1.0, 1.0, -1.0]


@pytest.mark.parametrize(
    "bad, exc, text",
    [
        ({"n": [5], "dd": [3]}, ValueError, "unknown key"),
        ([{"n": 5}, {"n": 5}], ValueError, "identical"),
        ({"n": []}, ValueError, "empty"),
        ({"m": 2, "signs": [1]}, ValueError, "disagrees"),
        ({"n": [object()]}, TypeError, "must be a number"),
        ("n=5", TypeError, "grid must be"),
    ],
)
def test_bad_grids_raise(bad, exc, text):
    with pytest.raises(exc, match=text):
        relucore.sweep(bad, trials=1, rng=0, progress=False)


def test_flat_signs_in_a_grid_are_refused_as_ambiguous():
    with pytest.raises(
        ValueError,
        match=re.escape("Write [[1, -1]] for one network with 2 neurons, or [[1], [-1]] for one run per sign"),
    ):
        relucore.sweep({"n": 5, "signs": [1, -1]}, trials=1, rng=0, progress=False)
    with pytest.raises(ValueError, match="mixes lists and single signs"):
        expand_grid({"signs": [[1], -1]})
    assert [c["signs"] for c in expand_grid({"signs": [[1, -1]]})] == [[1.0, -1.0]]
    assert [c["signs"] for c in expand_grid({"signs": [[1], [-1]]})] == [[1.0], [-1.0]]
    # Unambiguous: one sign, a single setting, and a configuration given as a dict of a list.
    assert [c["signs"] for c in expand_grid({"signs": [1]})] == [[1.0]]
    assert [c["signs"] for c in expand_grid({"signs": -1})] == [[-1.0]]
    assert [c["signs"] for c in expand_grid([{"signs": [1, -1]}])] == [[1.0, -1.0]]


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="rng must be a non-negative int or a SeedSequence"):
        relucore.sweep({"n": 5}, trials=1, rng=1.5)
    with pytest.raises(TypeError, match="not a numpy Generator.*cannot be resumed"):
        relucore.sweep({"n": 5}, trials=1, rng=np.random.default_rng(0))
    for old, new in (("seed", "rng"), ("batch_size", "chunk_size")):
        with pytest.raises(TypeError, match=f"0.x keyword {old}=.*use {new}="):
            relucore.sweep({"n": 5}, trials=1, **{"rng": 1, old: 1})
    with pytest.raises(ValueError, match="trials"):
        relucore.sweep({"n": 5}, trials=0, rng=1)
    with pytest.raises(TypeError, match="executor"):
        relucore.sweep({"n": 5}, trials=1, rng=1, executor=object())


def test_seeds_keyed_by_content_not_position():
    a = relucore.sweep([{"n": 6, "d": 300}, {"n": 8, "d": 300}], trials=3, rng=11, progress=False)
    b = relucore.sweep([{"n": 4, "d": 50}, {"n": 8, "d": 300}, {"n": 6, "d": 300}], trials=5, rng=11, progress=False)
    cols = [c for c in a.columns if c != "config_index"]
    for n in (6, 8):
        ra = a[a.n == n][cols].reset_index(drop=True)
        rb = b[(b.n == n) & (b.trial < 3)][cols].reset_index(drop=True)
        pd.testing.assert_frame_equal(ra, rb, check_exact=True)
    # Different root seeds give different data.
    c = relucore.sweep([{"n": 6, "d": 300}], trials=3, rng=12, progress=False)
    assert not np.array_equal(c.loss.values, a[a.n == 6].loss.values)


def test_seed_column_rebuilds_the_trial(reference):
    """A row is reproduced by sampling with its printed seed and calling train directly."""
    from numpy.random import SeedSequence  # noqa: F401  (used by eval)

    row = reference[(reference.config_index == 0) & (reference.trial == 2)].iloc[0]
    ss = eval(row.seed)
    cfg = expand_grid(H.GRID)[0]
    assert ss.spawn_key == (*config_key(cfg), 2)
    assert ss.spawn_key == trial_seed(3, config_key(cfg), 2).spawn_key
    from relucore.sweeps.row_data import row_data

    # the trial's X and y are relucore.sample's for its generator; it trained on the fused K
    data = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(ss))
    res = relucore.train(data.X, data.y, gram=row_data(row).K)
    assert res.loss == row.loss and res.nit == row.nit and res.pattern_stable_step == row.pattern_stable_step
    assert row.y_norm == float(np.linalg.norm(data.y))
    assert row.w_norm == pytest.approx(float(np.linalg.norm(res.W)), rel=1e-13)
    assert reference[reference.use_gram].w_norm.isna().all()


def test_measured_values_match_theory(reference):
    """Theorem 1 (one ReLU, all-positive init, d >> n): positives fitted, negatives inactive,
    so the final loss is 1/2 sum of the squared negative labels; pattern fixed after step 1."""
    r = reference[reference.config_index == 0]
    assert (r.status == "converged").all()
    assert (r.pattern_stable_step <= 1).all()
    assert (r.n_pos + r.n_neg == 6).all()
    from numpy.random import SeedSequence  # noqa: F401

    cfg = expand_grid(H.GRID)[0]
    for _, row in r.iterrows():
        y = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(eval(row.seed))).y
        assert row.loss == pytest.approx(0.5 * np.sum(y[y < 0] ** 2), rel=1e-9)
        assert row.n_active == int(np.sum(y > 0))
    assert (reference.norm1 == reference.d).all()  # isotropic: ||lambda||_1 = d


@pytest.mark.parametrize(
    "kw", [dict(n_threads=1), dict(n_threads=2), dict(chunk_size=1), dict(chunk_size=3, n_threads=1)]
)
def test_bitwise_identical_across_threads_and_batches(reference, kw):
    pd.testing.assert_frame_equal(reference, _run(measure=H.measure_norms, **kw), check_exact=True)


def test_identical_whatever_the_completion_order(reference):
    """An executor whose batches finish in reverse order of submission."""
    import concurrent.futures as cf
    import threading

    finished = []
    events = [threading.Event() for _ in range(16)]
    events[15].set()

    class Reverse(cf.ThreadPoolExecutor):
        def submit(self, fn, task):
            def delayed():
                b = task["batch"]
                assert events[b + 1].wait(60)  # batch b finishes only after batch b + 1
                out = fn(task)
                finished.append(b)
                events[b].set()
                return out

            return super().submit(delayed)

    with Reverse(max_workers=15) as ex:
        out = _run(measure=H.measure_norms, executor=ex, chunk_size=1)
    assert finished == sorted(finished, reverse=True) and len(finished) == 15
    pd.testing.assert_frame_equal(reference, out, check_exact=True)


def test_failing_trials_are_recorded_and_the_sweep_goes_on():
    grid = [{"n": 6, "d": 300}, {"n": 20, "d": 10}]  # n > d: the positive init needs K invertible
    t = relucore.sweep(grid, trials=6, rng=5, measure=H.measure_fail_some, chunk_size=3, progress=False)
    assert len(t) == 12
    bad_cfg = t[t.config_index == 1]
    assert (bad_cfg.status == "error").all()
    assert bad_cfg.error.str.contains("rank-deficient").all()
    assert (bad_cfg.nit == -1).all() and bad_cfg.loss.isna().all()
    good_cfg = t[t.config_index == 0]
    failed = good_cfg[good_cfg.status == "error"]
    ok = good_cfg[good_cfg.status != "error"]
    assert len(failed) >= 1 and len(ok) >= 1  # with seed 5 both kinds occur
    assert failed.error.str.startswith("RuntimeError: deliberate failure").all()
    assert (ok.y0 > 0).all() and failed.y0.isna().all()
    assert (ok.error == "").all()
    # Batches made only of failures lack the measure column: the table is the same anyway.
    t1 = relucore.sweep(grid, trials=6, rng=5, measure=H.measure_fail_some, chunk_size=1, progress=False)
    pd.testing.assert_frame_equal(t, t1, check_exact=True)


def test_measure_column_clash_is_an_error_row():
    t = relucore.sweep({"n": 5, "d": 200}, trials=2, rng=0, measure=lambda data, res: {"loss": 1.0}, progress=False)
    assert (t.status == "error").all() and t.error.str.contains("clash").all()


def test_config_values_and_measure_columns_share_the_plain_scalar_rule():
    # numpy scalars (and, in a measure, 0-d arrays) become Python scalars on both paths; a
    # configuration refuses non-finite numbers, a measure column keeps them (NaN is a measurement).
    (cfg,) = expand_grid({"n": np.int64(5), "d": np.uint16(200), "eta": np.float32(0.5), "use_gram": np.bool_(True)})
    assert (cfg["n"], cfg["d"], cfg["eta"], cfg["use_gram"]) == (5, 200, 0.5, True)
    assert type(cfg["d"]) is int and type(cfg["eta"]) is float and type(cfg["use_gram"]) is bool
    with pytest.raises(ValueError, match=re.escape("config 0['eta'] must be finite, got nan")):
        expand_grid({"eta": np.float64("nan")})
    t = relucore.sweep(
        {"n": 5, "d": 200},
        trials=2,
        rng=0,
        measure=lambda data, res: {"a": np.array(2.5), "b": np.float64("nan"), "c": np.int32(3)},
        progress=False,
    )
    assert (t.status != "error").all() and (t.a == 2.5).all() and t.b.isna().all() and (t.c == 3).all()
    t = relucore.sweep({"n": 5, "d": 200}, trials=1, rng=0, measure=lambda data, res: {"v": [1.0]}, progress=False)
    assert t.error[0].startswith("TypeError: measure returned a non-scalar value for column 'v': list")


def test_gram_mode_runs_without_X(reference):
    r = reference[reference.config_index == 2]
    # Theorem 1 holds with high probability only: at d/n = 37 one of these five draws stalls
    assert r.status.isin(["converged", "stalled"]).all() and (r.status == "converged").sum() >= 4
    assert (r.use_gram).all()
    assert np.all(r.gram_mu_max >= r.gram_mu_min) and np.all(r.gram_mu_min > 0)


def test_save_csv_round_trip(tmp_path, reference):
    path = tmp_path / "t.csv"
    relucore.save_table(reference, path)
    back = pd.read_csv(path, keep_default_na=False, na_values=["NaN", ""])
    np.testing.assert_array_equal(back.loss.values, reference.loss.values)
    np.testing.assert_array_equal(back.gap_normalized.values, reference.gap_normalized.values)
    assert list(back.seed) == list(reference.seed)
    with pytest.raises(ValueError, match=".csv or .parquet"):
        relucore.save_table(reference, tmp_path / "t.xlsx")


def test_save_parquet(tmp_path, reference):
    pytest.importorskip("pyarrow")
    relucore.save_table(reference, tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(back, reference, check_exact=True, check_dtype=False)


def test_gap_matches_an_independent_qp(reference):
    """gap = ||W_inf - w*|| with w* from scipy's SLSQP on the dual of Eq. 7 (not relucore.minnorm)."""
    import scipy.optimize
    from numpy.random import SeedSequence  # noqa: F401

    cfg = expand_grid(H.GRID)[0]
    for _, row in reference[reference.config_index == 0].head(3).iterrows():
        data = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(eval(row.seed)))
        X, y = data.X, data.y
        K = X @ X.T
        ypos = np.where(y > 0, y, 0.0)
        res = scipy.optimize.minimize(
            lambda z: (0.5 * z @ K @ z - ypos @ z, K @ z - ypos),
            np.zeros(len(y)),
            jac=True,
            bounds=[(None, None) if v > 0 else (None, 0.0) for v in y],
            method="SLSQP",
            options={"ftol": 1e-20, "maxiter": 500},
        )
        w_star = X.T @ res.x
        w_inf = relucore.train(X, y).W[0]
        gap = np.linalg.norm(w_inf - w_star)
        assert row.gap == pytest.approx(gap, rel=1e-8)  # measured agreement ~1e-11
        assert row.gap_normalized == pytest.approx(row.gap * np.sqrt(row.d / row.n_neg), rel=1e-12)


@pytest.mark.parametrize(
    "batches, complete",
    [
        ([(0, [4, 5, 6]), (1, range(7)), (0, [0, 1, 2, 3])], True),  # disjoint runs, out of order
        ([(1, [1, 3, 5]), (0, range(7)), (1, [0, 2, 4, 6])], True),  # interleaved trials
        ([(1, [6]), (0, [2, 3]), (1, [0, 4])], False),  # a store's sparse rows
    ],
)
@pytest.mark.parametrize("dense", [False, True])
def test_table_sorted_whatever_the_batches(batches, complete, dense):
    """Results.table: the rows of batches added in any order and split, sorted by
    (config_index, trial), against pandas sorting the rows, kept as batches or in
    table-order arrays (dense, as sweep does); with the leading columns built
    beforehand (Results.leading, as sweep does) the same frame."""
    from relucore.sweeps.columns import MEASURED
    from relucore.sweeps.table import Results

    configs = expand_grid({"n": [5, 6], "d": [50]})
    rng = np.random.default_rng(1)
    res, rows = Results(len(configs), 7, dense=dense), []
    for ci, trials in batches:
        trials = list(trials)
        cols = {"config_index": np.full(len(trials), ci), "trial": np.array(trials)}
        for c in MEASURED:
            cols[c.name] = rng.random(len(trials)) if c.kind == "f" else rng.integers(-1, 99, len(trials))
        cols["status"] = np.array(["converged"] * len(trials), dtype=object)
        cols["error"] = np.array([f"e{ci}.{t}" for t in trials], dtype=object)
        cols["extra"] = np.array([float(ci) + t / 10 for t in trials], dtype=object)
        res.add_columns(cols)
        rows.append(pd.DataFrame({k: list(v) for k, v in cols.items()}))
    want = pd.concat(rows).sort_values(["config_index", "trial"]).reset_index(drop=True)
    got = res.table(configs, 5)
    assert len(got) == len(want) and got["trial"].tolist() == want["trial"].tolist()
    for k in want.columns:
        assert got[k].tolist() == want[k].tolist(), k
    seeds = [eval(s, {"SeedSequence": np.random.SeedSequence}) for s in got["seed"]]
    want_seeds = [trial_seed(5, config_key(configs[c]), t) for c, t in zip(want.config_index, want.trial)]
    assert [(s.entropy, s.spawn_key) for s in seeds] == [(s.entropy, s.spawn_key) for s in want_seeds]
    pd.testing.assert_frame_equal(got, res.table(configs, 5, leading=res.leading(configs, 5)), check_exact=True)
    assert complete == (len(got) == 14)


@pytest.mark.parametrize(
    "count, size, threads", [(32768, 1024, 2), (5000, 1024, 4), (100, 50, 2), (10, 3, 0), (1, 1, 2)]
)
def test_batch_bounds_cover_the_trials_and_shrink_at_the_end(count, size, threads):
    """Batches tile 0..count; on a pool they shrink towards the end (never below TAIL_BATCH
    but for the last), so that the threads finish together; without one they are all ``size``."""
    from relucore.sweeps.api import TAIL_BATCH, batch_bounds

    b = batch_bounds(count, size, threads)
    assert b[0][0] == 0 and b[-1][1] == count and all(p[1] == q[0] for p, q in zip(b, b[1:]))
    sizes = [stop - start for start, stop in b]
    assert max(sizes) <= size and sizes == sorted(sizes, reverse=True)
    assert all(s >= min(size, TAIL_BATCH) for s in sizes[:-1])
    if threads > 1 and count > 4 * threads * size:
        assert sizes[-1] <= TAIL_BATCH and sizes[0] == size
    if threads <= 1:
        assert sizes[:-1] == [size] * (len(sizes) - 1)
