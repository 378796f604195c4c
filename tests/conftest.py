import os

import pytest
from _problems import fig4_problem


@pytest.fixture
def problem():
    return fig4_problem


@pytest.fixture(params=["blas", "builtin"])
def blas_path(request):
    """Runs the test on scipy's BLAS (when registered) and on relucore's built-in products."""
    from relucore import _core

    available = _core._use_blas(True)
    if request.param == "blas" and not available:
        pytest.skip(f"scipy's BLAS not registered: {_core.blas_info().scipy}")
    if request.param == "builtin":
        _core._use_blas(False)
    yield request.param
    _core._use_blas(True)


# Hypothesis: the "ci" profile (the default) runs a fixed number of examples,
# derandomized, so every run of the suite checks the same cases; "dev" explores
# more. Choose with HYPOTHESIS_PROFILE=dev.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test extra; tests that need it import it themselves
    pass
else:
    settings.register_profile(
        "ci",
        max_examples=25,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("dev", max_examples=300, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
