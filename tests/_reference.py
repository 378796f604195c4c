"""Independent numpy references the engines are checked against (plain numpy, no pytest: the
benchmarks in bench/ time the same loops as the peer a researcher would write)."""

import numpy as np


def numpy_gd(X, y, W0, signs, eta, steps):
    """Plain weight-space GD on 1/2||sum_k s_k relu(X w_k) - y||^2, written from docs/math.md §1 in numpy
    (float64, numpy's own BLAS): the independent reference the engines are checked against."""
    W = W0.copy()
    for _ in range(steps):
        pre = W @ X.T
        r = signs @ np.maximum(pre, 0.0) - y
        W -= eta * ((signs[:, None] * (pre > 0)) * r) @ X
    return W
