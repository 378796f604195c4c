"""The problems and the example budget of the scale-family tests (test_scaling.py, test_scaling_frontends.py)."""

import os

import numpy as np

# CI runs a fixed budget; a longer run:
#   RELUCORE_PROPERTY_EXAMPLES=2000 python -m pytest tests/gd/test_scaling.py tests/gd/test_scaling_frontends.py
BUDGET = int(os.environ.get("RELUCORE_PROPERTY_EXAMPLES", "25"))


def mixed(seed=1, n=5, d=40):
    """X (n, d) with rows of norm ~1 and labels of alternating signs, |y_i| in [0.2, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.uniform(0.2, 1, n) * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return X, y


def shaped(shape, seed):
    """``(X, y, W0)`` of a family: "plain", "collinear" (x_1 = x_0 / 2), "duplicate" (example 2 = example 0)
    or "n>d" (12 x 4); W0 an explicit start (the default positive one needs K invertible)."""
    rng = np.random.default_rng(seed)
    X, y = mixed(seed=3)
    if shape == "collinear":
        X[1] = 0.5 * X[0]
    elif shape == "duplicate":
        X[2], y[2] = X[0], y[0]
    elif shape == "n>d":
        X = rng.standard_normal((12, 4))
        y = rng.uniform(0.2, 1, 12) * rng.choice([-1.0, 1.0], 12)
    return X, y, rng.standard_normal((2, X.shape[1])) * 0.3
