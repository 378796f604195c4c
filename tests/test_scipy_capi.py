"""relucore._scipy_capi: scipy's BLAS and LAPACK function tables without importing scipy.linalg.

Run in fresh interpreters (this test process has imported scipy.linalg already): the first
`train` call registers scipy's BLAS without `scipy.linalg` in `sys.modules`, and a later
ordinary import of `scipy.linalg.cython_blas` still works as usual (the package attribute
set, the same capsules), as do scipy.linalg's own routines.
"""

import json
import os
import subprocess
import sys

import pytest

_SCRIPT = """
import json, sys
import numpy as np
import pytest
import relucore
from relucore import _core
rng = np.random.default_rng(0)
relucore.train(rng.standard_normal((40, 300)), rng.uniform(0.1, 1, 40), signs=[1.0], steps=5)
out = {"linalg_after_train": "scipy.linalg" in sys.modules, "blas": _core.blas_info().scipy}
caps = relucore._scipy_capi.capi("cython_blas")
import scipy.linalg.cython_blas as cb
import scipy.linalg
out["attribute"] = scipy.linalg.cython_blas is cb
out["same_capsule"] = cb.__pyx_capi__["dgemm"] is caps["dgemm"]
A = rng.standard_normal((30, 30)); A = A @ A.T + 30 * np.eye(30)
out["solve"] = bool(np.allclose(A @ scipy.linalg.solve(A, np.ones(30)), 1.0))
print(json.dumps(out))
"""


@pytest.mark.skipif(
    os.environ.get("RELUCORE_BLAS") == "builtin",
    reason="RELUCORE_BLAS=builtin: relucore's own kernels, no BLAS registered",
)
def test_first_train_call_registers_the_blas_without_scipy_linalg():
    import relucore  # noqa: F401 - the module under test must import

    out = subprocess.run([sys.executable, "-c", _SCRIPT], check=True, capture_output=True, text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {
        "linalg_after_train": False,
        "blas": "registered",
        "attribute": True,
        "same_capsule": True,
        "solve": True,
    }


def test_capi_takes_the_ordinary_import_once_scipy_linalg_is_loaded():
    import scipy.linalg.cython_lapack

    from relucore._scipy_capi import capi

    assert capi("cython_lapack") is scipy.linalg.cython_lapack.__pyx_capi__
    assert "dsyevd" in capi("cython_lapack")
