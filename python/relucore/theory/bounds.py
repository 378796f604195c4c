"""Distances between the GD limit and the minimum-norm solution (Lai et al. 2026, Theorems 2, 4, 6).

The theorems hold with unspecified universal constants ``C, C_g, C_alpha``;
the functions below take them as arguments. Defaults: ``C_g = 2`` and
``C_alpha = 10`` as in :func:`relucore.train`; ``C = 100`` for the lower
bounds. The step-size window of the theorems is
``1/(C C_g ||lambda||_1) <= eta <= 1/(C_g ||lambda||_1)``, so a run with step
``eta`` is covered with ``C_g = 1/(eta ||lambda||_1)`` (see
:func:`step_constant`).

In Gram-only mode vectors are given by dual coordinates ``alpha`` (``w = X^T alpha``)
and norms are the quadratic forms ``sqrt(alpha^T K alpha)``.
"""

from __future__ import annotations

from typing import Dict, NamedTuple

import numpy as np

from relucore._validation import as_float_array, check_positive

__all__ = [
    "GapBounds",
    "limit_gap",
    "normalized_gap",
    "theorem2_bounds",
    "theorem4_bounds",
    "theorem6_bound",
    "step_constant",
]

DEFAULT_C = 100.0
DEFAULT_C_G = 2.0
DEFAULT_C_ALPHA = 10.0


class GapBounds(NamedTuple):
    """Two-sided bound on ``||w^(inf) - w*||`` (Theorem 2); unpacks as ``lower, upper``.

    Attributes
    ----------
    lower : float
        ``sqrt(n y_min^2 / (C C_g ||lambda||_1))``.
    upper : float
        ``sqrt(16 n y_max^2 / (C_g ||lambda||_1))``.
    """

    lower: float
    upper: float


def limit_gap(W_inf, W_star, *, gram=None) -> float:
    """``sqrt(sum_k ||w_k^(inf) - w_k*||^2)`` (the quantity of Theorems 2, 4, 6).

    Parameters
    ----------
    W_inf, W_star : array_like, shape (m, d) or (d,)
        Weights; with ``gram`` given, dual coordinates of shape (m, n) or (n,).
    gram : array_like, shape (n, n), optional
        ``K = X X^T``: the distance is then ``sqrt(sum_k da_k^T K da_k)``.
    """
    a = np.atleast_2d(as_float_array(W_inf, "W_inf", ndim=(1, 2)))
    b = np.atleast_2d(as_float_array(W_star, "W_star", ndim=(1, 2)))
    if a.shape != b.shape:
        raise ValueError(f"W_inf and W_star must have the same shape, got {a.shape} and {b.shape}")
    diff = a - b
    if gram is None:
        return float(np.linalg.norm(diff))
    K = as_float_array(gram, "gram", ndim=2)
    if K.shape != (diff.shape[1], diff.shape[1]):
        raise ValueError(f"gram must have shape ({diff.shape[1]}, {diff.shape[1]}), got {K.shape}")
    return float(np.sqrt(max(np.einsum("ki,ij,kj->", diff, K, diff), 0.0)))


def normalized_gap(gap: float, norm1: float, n_minus: int) -> float:
    """``gap * sqrt(||lambda||_1 / n_-)``: Theta(1) by Theorem 2 (Fig. 2)."""
    check_positive(norm1, "norm1")
    if n_minus <= 0:
        raise ValueError("normalized_gap needs n_minus >= 1 (with no negative labels the gap is 0)")
    return float(gap * np.sqrt(norm1 / n_minus))


def theorem2_bounds(
    n_minus: int, y_min: float, y_max: float, norm1: float, *, C: float = DEFAULT_C, C_g: float = DEFAULT_C_G
) -> GapBounds:
    """Theorem 2: ``sqrt(n_- y_min^2 / (C C_g ||lambda||_1)) <= ||w^(inf) - w*|| <= sqrt(16 n_- y_max^2 / (C_g ||lambda||_1))``.

    Returns
    -------
    GapBounds
        ``(lower, upper)`` as a named tuple: ``lo, hi = theorem2_bounds(...)``
        and ``theorem2_bounds(...).upper`` both work.
    """
    norm1 = check_positive(norm1, "norm1")
    C = check_positive(C, "C")
    C_g = check_positive(C_g, "C_g")
    if n_minus < 0:
        raise ValueError("n_minus must be >= 0")
    lower = float(np.sqrt(n_minus * y_min**2 / (C * C_g * norm1)))
    upper = float(np.sqrt(16.0 * n_minus * y_max**2 / (C_g * norm1)))
    return GapBounds(lower, upper)


def theorem4_bounds(
    n_plus: int,
    n_minus: int,
    y_min: float,
    y_max: float,
    norm1: float,
    *,
    C: float = DEFAULT_C,
    C_g: float = DEFAULT_C_G,
) -> Dict[str, GapBounds]:
    """Theorem 4 (m = 2): Theorem 2's bounds for ``w_plus`` with ``n_-`` and for ``w_minus`` with ``n_+``.

    Returns
    -------
    dict
        ``{"plus": GapBounds, "minus": GapBounds}``: the bounds of the neuron
        with outer weight +1 and of the one with -1, each a ``(lower, upper)``
        named tuple as :func:`theorem2_bounds` returns.
    """
    return {
        "plus": theorem2_bounds(n_minus, y_min, y_max, norm1, C=C, C_g=C_g),
        "minus": theorem2_bounds(n_plus, y_min, y_max, norm1, C=C, C_g=C_g),
    }


def theorem6_bound(
    m: int, n: int, y_max: float, norm1: float, *, C_g: float = DEFAULT_C_G, C_alpha: float = DEFAULT_C_ALPHA
) -> float:
    """Theorem 6: ``sqrt(sum_k ||w_k^(inf) - w_k*||^2) <= sqrt(4 C_g C_alpha^2 m n y_max^2 / ||lambda||_1)``."""
    norm1 = check_positive(norm1, "norm1")
    return float(
        np.sqrt(4.0 * check_positive(C_g, "C_g") * check_positive(C_alpha, "C_alpha") ** 2 * m * n * y_max**2 / norm1)
    )


def step_constant(eta: float, norm1: float) -> float:
    """The ``C_g`` for which ``eta = 1/(C_g ||lambda||_1)`` (top of the theorems' step window)."""
    return 1.0 / (check_positive(eta, "eta") * check_positive(norm1, "norm1"))
