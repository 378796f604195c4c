"""What `import relucore` loads: the core API, not the optional or heavy parts.

The sub-packages meanfield, experiments, plots and cli load on first attribute
access, and no optional dependency (matplotlib, pandas, Dask, scikit-learn) nor
scipy.sparse (only the minimum-norm pattern search needs it; it cost ~75 ms of
the import) is imported by `import relucore` itself. Run in a fresh interpreter,
since this test process has imported most of them already.
"""

import json
import subprocess
import sys

import pytest

_NOT_AT_IMPORT = (
    "relucore.meanfield",
    "relucore.experiments",
    "relucore.plots",
    "relucore.cli",
    "scipy.sparse",
    "scipy.optimize",
    "matplotlib",
    "pandas",
    "dask",
    "sklearn",
    "tqdm",
)


def _modules_after(code: str) -> set:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_relucore_loads_no_optional_or_heavy_module():
    loaded = _modules_after("import relucore")
    assert "relucore._core" in loaded
    assert sorted(loaded & set(_NOT_AT_IMPORT)) == []


@pytest.mark.parametrize("name", ["meanfield", "experiments", "plots", "cli"])
def test_lazy_subpackage_loads_on_first_access(name):
    loaded = _modules_after(f"import relucore\nrelucore.{name}")
    assert f"relucore.{name}" in loaded


def test_minnorm_pattern_search_still_imports_scipy_sparse_when_used():
    # The import moved into the search's QP (PatternQP.solve_fast): a branch-and-bound
    # search for m = 2 must still run and agree with the exhaustive search.
    import numpy as np

    import relucore

    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 20))
    y = np.array([1.0, -0.5, 0.8, -0.3, 0.6, -0.9])
    bnb = relucore.minnorm(X, y, signs=[1.0, -1.0])
    every = relucore.minnorm(X, y, signs=[1.0, -1.0], method="exhaustive")
    assert bnb.exact and every.exact
    assert abs(bnb.objective - every.objective) <= 1e-10 * every.objective
