"""The weight engine's products on an X packed once per run (relucore/linalg/blas.hpp).

Checked against a gradient descent written here in numpy (float64, its own BLAS), on shapes that
exercise every tail of the kernels: n not a multiple of 16 points, d not a multiple of 8
features, m with each remainder of the blocks of 9 (AVX-512) and 6 (AVX2) neurons.
RELUCORE_SIMD=sse2 turns the kernels off (the products go to the BLAS): both agree to rounding,
and differ in the last bits at Dana et al.'s Exp. 1 sizes (so the kernels do run). The AVX2 and
the AVX-512 kernels sum every entry in the same chain of FMAs: the same bits.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _reference import numpy_gd

import relucore

SHAPES = [(37, 13, 7), (100, 8, 5), (17, 101, 13), (300, 64, 4), (33, 200, 9), (1301, 100, 36), (50, 17, 26)]


@pytest.mark.parametrize("n,d,m", SHAPES)
def test_weight_engine_matches_a_numpy_loop_on_every_tail(n, d, m):
    rng = np.random.default_rng(n * 1000 + d * 10 + m)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    eta = 0.1 / np.linalg.norm(X, 2) ** 2
    res = relucore.train(X, y, signs=signs, init=W0, eta=eta, steps=60, tol=0.0, n_threads=1, engine="weights")
    ref = numpy_gd(X, y, W0, signs, eta, 60)
    # 60 steps of products of up to 1301 terms: rounding only.
    assert np.max(np.abs(res.W - ref)) <= 1e-14 * np.max(np.abs(ref)) * 10
    # beta is X W of the final weights, to rounding.
    assert np.max(np.abs(res.beta - res.W @ X.T)) <= 1e-13 * np.max(np.abs(res.beta))


@pytest.mark.parametrize("n,d,m", [(13, 37, 7), (16, 40, 4)])  # m n = 91 (a tail of 3 masks), 64 (none)
def test_the_pattern_tracker_finds_the_last_mask_change_of_a_numpy_loop(n, d, m):
    rng = np.random.default_rng(7 + n)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    W = rng.standard_normal((m, d)) / np.sqrt(d)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    eta = 0.2 / np.linalg.norm(X, 2) ** 2
    steps, last, mask = 150, 0, W @ X.T > 0
    res = relucore.train(X, y, signs=signs, init=W, eta=eta, steps=steps, tol=0.0, n_threads=1, engine="weights")
    for s in range(1, steps + 1):
        W = numpy_gd(X, y, W, signs, eta, 1)
        now = W @ X.T > 0
        last = s if np.any(now != mask) else last
        mask = now
    assert 0 < last < steps  # the test sees masks change, then settle
    assert res.pattern_stable_step == last


_DANA = """
import numpy as np, relucore
rng = np.random.default_rng(1)
X = rng.standard_normal((1300, 100)); y = rng.standard_normal(1300)
W0 = rng.standard_normal((36, 100)) / 10.0
signs = np.where(np.arange(36) % 2 == 0, 1.0, -1.0)
eta = 0.1 / np.linalg.norm(X, 2) ** 2
r = relucore.train(X, y, signs=signs, init=W0, eta=eta, steps=50, tol=0.0, n_threads=1, engine="weights")
np.save(__import__("sys").argv[1], r.W)
"""


def _dana_W(tmp_path, simd):
    out = tmp_path / f"W_{simd}.npy"
    env = dict(os.environ, RELUCORE_SIMD=simd)
    subprocess.run([sys.executable, "-c", _DANA, str(out)], env=env, check=True)
    return np.load(out)


def _cpu_flags():
    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text() if cpuinfo.exists() else ""
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split())


@pytest.mark.skipif(not {"avx2", "fma"} <= _cpu_flags(), reason="the packed kernels need AVX2 with FMA or AVX-512F")
def test_the_packed_kernels_run_and_agree_with_the_blas_path(tmp_path):
    packed, blas = _dana_W(tmp_path, "avx"), _dana_W(tmp_path, "sse2")
    assert np.max(np.abs(packed - blas)) <= 1e-13 * np.max(np.abs(blas))
    assert not np.array_equal(packed, blas)  # the packed kernels did run (their sums round differently)


@pytest.mark.skipif(not {"avx512f", "avx2", "fma"} <= _cpu_flags(), reason="needs AVX-512F to compare with AVX2")
def test_the_avx512_and_avx2_kernels_give_the_same_bits(tmp_path):
    assert np.array_equal(_dana_W(tmp_path, "avx512"), _dana_W(tmp_path, "avx"))
