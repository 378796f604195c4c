"""The random problems the tests of the certified limit and of the flow run on."""

import numpy as np
from hypothesis import strategies as st

from relucore.experiments._common import lai_data


def fig4_problem(seed, n=10, d=2000):
    """Lai et al. Fig. 4 data drawn from ``seed``: x ~ N(0, I), |y| ~ U(0.1, 1) with random signs."""
    return lai_data(np.random.default_rng(seed), n, d)


@st.composite
def random_problems(draw, *, n_max, scales):
    """``(X, y, signs, W0)``: n in [2, n_max] examples x, y ~ N(0, I) in d = n + (1..30) > n
    dimensions, m in [1, 3] neurons of random signs, a start ``W0 = scale * N(0, I)`` with
    ``scale`` drawn from ``scales`` (near zero at small scale, so near-degenerate patterns occur)."""
    seed = draw(st.integers(0, 10**6))
    n = draw(st.integers(2, n_max))
    extra = draw(st.integers(1, 30))
    m = draw(st.integers(1, 3))
    scale = draw(st.sampled_from(scales))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n + extra))
    y = rng.standard_normal(n)
    signs = rng.choice([-1.0, 1.0], m)
    W0 = scale * rng.standard_normal((m, n + extra))
    return X, y, signs, W0
