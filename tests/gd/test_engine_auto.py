"""engine="auto": the rule of relucore.gd.defaults.resolve_engine, its constants from
_core.defaults, and runs with "auto" equal bitwise to the engine it chose."""

import numpy as np
import pytest

import relucore
from relucore import _core
from relucore.gd.defaults import AUTO_DUAL_STEP_NS, AUTO_WEIGHTS_BLAS_STEP_NS, AUTO_WEIGHTS_STEP_NS, resolve_engine


def test_constants_come_from_cpp():
    assert AUTO_DUAL_STEP_NS == _core.defaults.auto_dual_step_ns > 0
    assert AUTO_WEIGHTS_STEP_NS == _core.defaults.auto_weights_step_ns > 0
    assert AUTO_WEIGHTS_BLAS_STEP_NS == _core.defaults.auto_weights_blas_step_ns > 0


def test_the_size_rule_of_the_blas_products():
    dflt = _core.defaults
    m0, work = dflt.blas_gemm_min_rows, dflt.blas_product_min_work
    assert not _core.products_use_blas_by_size(m0 - 1, 10**4, 10**4)
    k = -(-work // m0)  # the least n (or d) with m0 * n * 1 >= work
    assert _core.products_use_blas_by_size(m0, k, 1) and not _core.products_use_blas_by_size(m0, k - 1, 1)
    assert _core.products_use_blas_by_size(m0, 1, k) and not _core.products_use_blas_by_size(m0, 1, k - 1)


def test_rule_picks_dual_for_wide_and_weights_for_tall_data():
    assert resolve_engine("auto", 10, 2000, 2) == "dual"
    assert resolve_engine("auto", 1300, 100, 36) == "weights"
    assert resolve_engine("auto", 1300, None, 36) == "dual"  # Gram-only mode
    assert resolve_engine("weights", 10, 2000, 2) == "weights"
    assert resolve_engine("dual", 1300, 100, 36) == "dual"
    # The boundary: dual exactly when AUTO_DUAL_STEP_NS n < c d, c the weight engine's constant
    # for its products' path (built-in below blas_gemm_min_rows neurons, a BLAS from there on).
    n = 400
    for m, c in ((3, AUTO_WEIGHTS_STEP_NS), (8, AUTO_WEIGHTS_BLAS_STEP_NS)):
        d_star = AUTO_DUAL_STEP_NS * n / c
        assert resolve_engine("auto", n, int(np.floor(d_star)) - 1, m) == "weights"
        assert resolve_engine("auto", n, int(np.ceil(d_star)) + 1, m) == "dual"


def _fields(r):
    return [r.W, r.alpha, r.beta, r.W0, r.alpha0, r.beta0, r.loss, r.grad_norm, r.nit, r.status]


@pytest.mark.parametrize(
    "n,d,want,init",
    [(10, 2000, "dual", "positive"), (10, 2000, "dual", "gaussian"), (300, 20, "weights", "gaussian")],
)
def test_auto_equals_the_chosen_engine_bitwise(n, d, want, init):
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1, n) * rng.choice([-1.0, 1.0], n)
    kw = dict(signs=(1, -1, 1), init=init, rng=1 if init == "gaussian" else None, steps=50)
    auto = relucore.train(X, y, engine="auto", **kw)
    chosen = relucore.train(X, y, engine=want, **kw)
    assert auto.engine == chosen.engine == want
    assert "engine" in auto.to_dict() and auto.to_dict()["engine"] == want
    for a, b in zip(_fields(auto), _fields(chosen)):
        assert np.array_equal(a, b)


def test_auto_in_trainer_and_limit_runs_the_dual_engine():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 40))
    y = rng.uniform(0.1, 1, 6) * rng.choice([-1.0, 1.0], 6)
    t = relucore.Trainer(X, y, signs=(1, -1), engine="auto")
    t.step(20)
    ref = relucore.Trainer(X, y, signs=(1, -1), engine="dual")
    ref.step(20)
    assert np.array_equal(t.alpha, ref.alpha)
    lim = relucore.train(X, y, signs=(1, -1), engine="auto", steps=np.inf)
    ref_lim = relucore.train(X, y, signs=(1, -1), engine="dual", steps=np.inf)
    assert np.array_equal(lim.W, ref_lim.W)


def test_auto_in_sweeps():
    """Sweeps take engine="auto" and resolve it per configuration (the seed of a trial depends on
    the configuration, so rows are compared with the rule, not with an engine="dual" sweep)."""
    from relucore.sweeps.config import engine_of

    pytest.importorskip("pandas")  # sweep tables are DataFrames (the sanitizer job has no pandas)
    wide = {"n": 8, "d": 200, "m": 2, "steps": 50, "engine": "auto"}
    tall = {"n": 60, "d": 5, "m": 2, "steps": 50, "engine": "auto", "init": "gaussian"}
    table = relucore.sweep(wide, trials=2, rng=0)
    assert len(table) == 2 and set(table["error"]) == {""} and set(table["status"]) == {"max_steps"}
    # n > d: the run trains; only the min-norm columns, which need n <= d, report an error.
    table = relucore.sweep(tall, trials=2, rng=0)
    assert all("minimum-norm" in e for e in table["error"])
    for grid, want in ((wide, "dual"), (tall, "weights")):
        assert engine_of({**grid, "use_gram": False, "signs": [1.0, -1.0]}) == want
    assert engine_of({**tall, "use_gram": True, "signs": [1.0, -1.0]}) == "dual"
