"""engine="auto": the rule of relucore.gd.defaults.resolve_engine, its constants per SIMD level
from _core.auto_step_ns, and runs with "auto" equal bitwise to the engine it chose."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import relucore
from relucore import _core
from relucore.gd.defaults import _auto_engine, resolve_engine

LEVELS = ("scalar", "sse2", "avx", "avx512")  # simd::level(), narrowest first
SHAPES = [(10, 2000, 2), (10, 3, 2), (50, 20, 8), (200, 20, 2), (200, 100, 8), (400, 150, 8), (1300, 100, 36)]


def _reference(n, d, m, row):
    """The rule written out: dual when row.dual n^2 m < w n d m, w the weight engine's constant
    for its products' path (a BLAS from blas_gemm_min_rows neurons and blas_product_min_work
    multiply-adds on, the built-in products below)."""
    dflt = _core.defaults
    blas = m >= dflt.blas_gemm_min_rows and m * n * d >= dflt.blas_product_min_work
    w = row.weights_blas if blas else row.weights
    return "dual" if row.dual * n * n * m < w * n * d * m else "weights"


def test_a_row_per_level():
    rows = [_core.auto_step_ns(level) for level in range(len(LEVELS))]
    for row in rows:
        assert 0 < row.dual < 10 and 0 < row.weights < 10 and 0 < row.weights_blas < 10
    # The AVX-512 path's products run on the packed kernel, the others' on the BLAS (measured slower).
    assert rows[3].weights_blas < rows[2].weights_blas
    for bad in (-1, len(LEVELS)):
        with pytest.raises(ValueError, match="SIMD level"):
            _core.auto_step_ns(bad)


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_rule_per_level_against_the_reference(level):
    row = _core.auto_step_ns(level)
    for n, d, m in SHAPES:
        assert _auto_engine(n, d, m, level) == _reference(n, d, m, row), (LEVELS[level], n, d, m)
    # The boundary d* = row.dual n / w: weights just below, dual just above.
    n = 400
    for m, w in ((3, row.weights), (8, row.weights_blas)):
        d_star = row.dual * n / w
        assert _auto_engine(n, int(np.floor(d_star)) - 1, m, level) == "weights"
        assert _auto_engine(n, int(np.ceil(d_star)) + 1, m, level) == "dual"


def _in_process(simd, shapes):
    """The level, its row and the rule's picks at shapes in a fresh process with RELUCORE_SIMD=simd."""
    code = (
        "import json; from relucore import _core; from relucore.gd.defaults import resolve_engine as r; "
        f"S = {shapes!r}; c = _core.auto_step_ns(_core.simd_level()); "
        "print(json.dumps([_core.simd_level(), [c.dual, c.weights, c.weights_blas], "
        "[r('auto', n, d, m) for n, d, m in S]]))"
    )
    env = dict(os.environ)
    env.pop("RELUCORE_SIMD", None)
    if simd is not None:
        env["RELUCORE_SIMD"] = simd
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_relucore_simd_sets_the_constants_of_the_process():
    # A shape between the avx and avx512 rows' boundaries d* = dual n / weights_blas, where the
    # two levels pick different engines.
    avx, avx512 = _core.auto_step_ns(2), _core.auto_step_ns(3)
    n, m = 400, 8
    d_mid = round((avx.dual * n / avx.weights_blas + avx512.dual * n / avx512.weights_blas) / 2)
    assert _reference(n, d_mid, m, avx) != _reference(n, d_mid, m, avx512)
    shapes = [*SHAPES, (n, d_mid, m)]
    native = _in_process(None, shapes)[0]
    assert 0 <= native < len(LEVELS)
    picks = {}
    for level in range(native + 1):
        got_level, got_row, picks[level] = _in_process(LEVELS[level], shapes)
        row = _core.auto_step_ns(level)
        assert got_level == level
        assert got_row == [row.dual, row.weights, row.weights_blas]
        assert picks[level] == [_reference(n, d, m, row) for n, d, m in shapes], LEVELS[level]
    if native == 3:
        assert picks[2][-1] != picks[3][-1]


def test_simd_level_refuses_an_unknown_name(monkeypatch):
    monkeypatch.setenv("RELUCORE_SIMD", "avx3")
    with pytest.raises(ValueError, match="RELUCORE_SIMD"):
        _core.simd_level()


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
