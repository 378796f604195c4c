import numpy as np
import pytest


def fig4_problem(seed, n=10, d=2000):
    """Lai et al. Fig. 4 data: x ~ N(0, I), |y| ~ U(0.1, 1) with random signs."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    return X, y


@pytest.fixture
def problem():
    return fig4_problem
