"""K = X X^T and W = W0 + C X through relucore/linalg/blas.hpp.

Each path (scipy's BLAS, registered by ``_core`` on first use; the built-in
kernels) is checked against long-double sums computed here: every entry within
1e-13 of the sum of the absolute values of its terms (the scale of a dot
product's rounding error; d * 2^-53 < 1e-13 for every d used), and the whole
matrix within 1e-13 in max-norm relative to the reference. The two paths agree
to that rounding (not bitwise), and a result does not depend on the thread
count (bitwise).
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy

from relucore import _core
from relucore._inputs import gram_of_batch

TOL = 1e-13
SIZES = [(1, 1), (3, 5), (8, 4), (17, 300), (40, 1001), (64, 333)]  # the BLAS from 32 rows on


def _scipy_uses_openblas() -> bool:
    try:
        blas = scipy.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # noqa: BLE001 - an unusual build reports differently: nothing to assert
        return False
    return "openblas" in str(blas.get("name", "")).lower()


@pytest.fixture
def path(blas_path):
    """The products' path under test (tests/conftest.py: blas_path)."""
    return blas_path


def exact_gram(X):
    Xl = X.astype(np.longdouble)
    return Xl @ np.swapaxes(Xl, -1, -2), np.abs(Xl) @ np.abs(np.swapaxes(Xl, -1, -2))


def assert_close(A, ref, scale):
    assert np.all(np.abs(A - ref) <= TOL * scale)
    assert np.max(np.abs(A - ref)) <= TOL * np.max(np.abs(ref))


@pytest.mark.skipif(
    os.environ.get("RELUCORE_BLAS") == "builtin",
    reason="RELUCORE_BLAS=builtin: relucore's own kernels, no BLAS registered",
)
def test_scipy_openblas_is_registered():
    info = _core.blas_info()
    assert isinstance(info, _core.BlasInfo)
    assert isinstance(info.in_use, str) and isinstance(info.scipy, str)
    assert isinstance(info.threads_controlled, bool)
    with pytest.raises(AttributeError):
        info.scipy = "x"  # read-only
    if _scipy_uses_openblas():
        assert info.scipy == "registered" and info.threads_controlled
        assert info.in_use.startswith("scipy.linalg.cython_blas")


@pytest.mark.parametrize("n, d", SIZES)
def test_gram_matches_long_double_reference(path, n, d):
    X = np.random.default_rng(n * 7919 + d).standard_normal((2, n, d))
    K = gram_of_batch(X)
    ref, scale = exact_gram(X)
    assert_close(K, ref, scale)
    assert np.array_equal(K, np.swapaxes(K, 1, 2))


def test_gram_of_strided_rows_and_view(path):
    # gram_of_batch takes C-contiguous batches; a slice of columns is copied first.
    X = np.random.default_rng(3).standard_normal((1, 6, 80))[:, :, 5:70]
    ref, scale = exact_gram(X)
    assert_close(gram_of_batch(np.ascontiguousarray(X)), ref, scale)


def test_weights_from_dual_matches_long_double_reference(path):
    rng = np.random.default_rng(5)
    B, m, n, d = 3, 4, 9, 203
    X, W0 = rng.standard_normal((B, n, d)), rng.standard_normal((B, m, d))
    alpha0, alpha = rng.standard_normal((B, m, n)), rng.standard_normal((B, m, n))
    W = np.empty_like(W0)
    _core.weights_from_dual_batch(X=X, W0=W0, alpha0=alpha0, alpha=alpha, W=W, n_threads=1)
    C = (alpha - alpha0).astype(np.longdouble)  # the difference the kernel forms, in double
    ref = W0.astype(np.longdouble) + C @ X.astype(np.longdouble)
    scale = np.abs(W0) + np.abs(C) @ np.abs(X.astype(np.longdouble))
    assert_close(W, ref, scale)


def test_fused_gram_matches_the_gram_of_its_x(path):
    K, X = _core.fused_gram(3, 1, 33, 517, z="gaussian", scale=None, keep_x=True, block_columns=64)
    ref, scale = exact_gram(X)
    assert_close(K, ref, scale)


def test_blas_and_builtin_agree_to_rounding():
    if not _core._use_blas(True):
        pytest.skip("scipy's BLAS not registered")
    X = np.random.default_rng(11).standard_normal((4, 48, 2000))
    K_blas = gram_of_batch(X)
    _core._use_blas(False)
    try:
        K_builtin = gram_of_batch(X)
    finally:
        _core._use_blas(True)
    _, scale = exact_gram(X)
    assert np.all(np.abs(K_blas - K_builtin) <= 2 * TOL * scale)


def test_results_do_not_depend_on_the_thread_count(path):
    rng = np.random.default_rng(13)
    X = rng.standard_normal((6, 40, 1500))
    K1, K2 = np.empty((6, 40, 40)), np.empty((6, 40, 40))
    _core.gram_batch(X, K1, 1)
    _core.gram_batch(X, K2, 2)
    assert np.array_equal(K1, K2)
    W0, a0, a = rng.standard_normal((6, 4, 1500)), rng.standard_normal((6, 4, 40)), rng.standard_normal((6, 4, 40))
    W1, W2 = np.empty_like(W0), np.empty_like(W0)
    _core.weights_from_dual_batch(X=X, W0=W0, alpha0=a0, alpha=a, W=W1, n_threads=1)
    _core.weights_from_dual_batch(X=X, W0=W0, alpha0=a0, alpha=a, W=W2, n_threads=2)
    assert np.array_equal(W1, W2)


def test_first_calls_from_many_threads_register_once_without_deadlock():
    # The registration imports scipy.linalg, which releases the GIL: threads racing to the first
    # call must neither deadlock nor see different kernels. A fresh interpreter, so that the
    # first call is the first.
    code = (
        "import concurrent.futures as cf, numpy as np\n"
        "from relucore import _core\n"
        "X = np.random.default_rng(1).standard_normal((1, 40, 700))\n"
        "def one(_):\n"
        "    K = np.empty((1, 40, 40)); _core.gram_batch(X, K, 1); return K\n"
        "with cf.ThreadPoolExecutor(6) as ex:\n"
        "    Ks = list(ex.map(one, range(24)))\n"
        "assert all(np.array_equal(K, Ks[0]) for K in Ks)\n"
        "print(_core.blas_info().scipy)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == _core.blas_info().scipy


def test_environment_keeps_the_builtin_kernels():
    code = (
        "import numpy as np\n"
        "from relucore import _core\n"
        "K = np.empty((1, 40, 40)); _core.gram_batch(np.ones((1, 40, 9)), K, 1)\n"
        "info = _core.blas_info(); print(info.in_use, '|', info.scipy, '|', _core._use_blas(True))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), RELUCORE_BLAS="builtin")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "builtin | RELUCORE_BLAS=builtin | False"
