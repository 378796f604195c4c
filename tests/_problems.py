"""Problems shared by the tests (a module of its own: ``from conftest import ...`` resolves to
whichever ``conftest`` module pytest imported first, tests/conftest.py or tests/sweeps/conftest.py)."""

import numpy as np

from relucore.experiments._common import lai_data


def fig4_problem(seed, n=10, d=2000):
    """Lai et al. Fig. 4 data: x ~ N(0, I), |y| ~ U(0.1, 1) with random signs."""
    return lai_data(np.random.default_rng(seed), n, d)
