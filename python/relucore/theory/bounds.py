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

import math
import sys
from typing import Dict, NamedTuple

import numpy as np

from relucore._docstrings import shared_sections
from relucore._validation import as_float_array, check_int, check_nonnegative, check_positive
from relucore.gd.defaults import C_ALPHA, C_G

__all__ = [
    "GapBounds",
    "limit_gap",
    "normalized_gap",
    "theorem2_bounds",
    "theorem4_bounds",
    "theorem6_bounds",
    "step_constant",
]

DEFAULT_C = 100.0
#: Theorems 2, 4, 6 of Lai et al. (2026): C of the lower bound; C_g and C_alpha as ``train`` uses them.
DEFAULT_C_G = C_G
DEFAULT_C_ALPHA = C_ALPHA


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


#: The parameters Theorem 2's bounds and Theorem 4's (two of Theorem 2's) share.
_theorem2_doc = shared_sections(
    theorem2_parameters="""
    n_minus : int
        The number of examples with ``y_i <= 0`` (``n_-``).
    y_min, y_max : float
        ``min_i |y_i|`` and ``max_i |y_i|`` (``0 <= y_min <= y_max``).
    norm1 : float
        ``||lambda||_1``, the trace of the data covariance (``Dataset.norm1``).
    C : float, default 100
        The theorem's universal constant of the lower bound.
    C_g : float, default 2
        The step constant: the theorem covers ``eta <= 1/(C_g ||lambda||_1)``
        (see :func:`step_constant` for the ``C_g`` of a given step).
    """
)


def limit_gap(W_inf, W_star, *, gram=None) -> float:
    """``sqrt(sum_k ||w_k^(inf) - w_k*||^2)`` (the quantity of Theorems 2, 4, 6).

    Parameters
    ----------
    W_inf, W_star : array_like, shape (m, d) or (d,)
        Weights; with ``gram`` given, dual coordinates of shape (m, n) or (n,).
    gram : array_like, shape (n, n), optional
        ``K = X X^T``: the distance is then ``sqrt(sum_k da_k^T K da_k)``.

    Returns
    -------
    float
        The Frobenius distance between the two weight matrices (computed on an exactly
        rescaled copy, so it never over- or underflows where the result is a float).
    """
    a = np.atleast_2d(as_float_array(W_inf, "W_inf", ndim=(1, 2)))
    b = np.atleast_2d(as_float_array(W_star, "W_star", ndim=(1, 2)))
    if a.shape != b.shape:
        raise ValueError(f"W_inf and W_star must have the same shape, got {a.shape} and {b.shape}")
    with np.errstate(over="ignore"):
        diff = a - b
    if not np.isfinite(diff).all():
        raise ValueError("W_inf - W_star overflows float64: rescale the weights (the gap is homogeneous)")
    # Computed on an exactly rescaled copy (powers of two) so that no square over- or underflows:
    # bitwise the plain formula whenever that formula does not, and covariant under W -> c W.
    e = _exponent(diff)
    diff = np.ldexp(diff, -e)
    if gram is None:
        return _scaled(np.linalg.norm(diff), e, "limit_gap")
    K = as_float_array(gram, "gram", ndim=2)
    if K.shape != (diff.shape[1], diff.shape[1]):
        raise ValueError(f"gram must have shape ({diff.shape[1]}, {diff.shape[1]}), got {K.shape}")
    k = _exponent(K) // 2
    q = np.einsum("ki,ij,kj->", diff, np.ldexp(K, -2 * k), diff)
    return _scaled(np.sqrt(max(q, 0.0)), e + k, "limit_gap")


def _exponent(a) -> int:
    """The binary exponent of ``max |a|`` (0 for zeros): ``a / 2^e`` has entries of order one."""
    top = float(np.max(np.abs(a), initial=0.0))
    return math.frexp(top)[1] if top > 0 else 0


def _scaled(value, e: int, what: str) -> float:
    """``value * 2^e`` as a float; a ValueError (never inf or NaN) when float64 cannot hold it."""
    try:
        v = math.ldexp(float(value), e)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise ValueError(f"{what} overflows float64: rescale the data (the quantities are homogeneous in y and X)")
    return v


def _root_ratio(count: float, y: float, factors, what: str) -> float:
    """``sqrt(count y^2 / (f_1 f_2 ...))`` for ``factors = (f_1, f_2, ...)``, never over- or underflowing.

    The plain formula when ``y^2``, the product and the ratio are normal floats (bitwise
    the formula as written); otherwise the same formula on y and the factors rescaled
    exactly by powers of two (``y = 2^e y'``, ``f_j = 2^k_j f_j'``), scaled back at the end.
    """
    tiny = sys.float_info.min
    try:
        y2 = y**2
        z = count * y2 / math.prod(factors)
    except (OverflowError, ZeroDivisionError):
        y2 = z = math.inf
    if math.isfinite(z) and (y == 0 or (y2 >= tiny and z >= tiny)):
        return _scaled(math.sqrt(z), 0, what)
    e = _exponent(y)
    yy = math.ldexp(y, -e)
    denom, shift = 1.0, 0
    for f in factors:
        k = _exponent(f)
        denom *= math.ldexp(f, -k)
        shift += k
    if shift % 2:
        denom, shift = 2.0 * denom, shift - 1
    return _scaled(math.sqrt(count * (yy * yy) / denom), e - shift // 2, what)


def _labels(y_min, y_max):
    """``y_min`` and ``y_max`` checked: finite, ``0 <= y_min <= y_max``."""
    y_min = check_nonnegative(y_min, "y_min")
    y_max = check_nonnegative(y_max, "y_max")
    if y_min > y_max:
        raise ValueError(f"y_min must be <= y_max (they are min_i |y_i| and max_i |y_i|), got {y_min} > {y_max}")
    return y_min, y_max


def normalized_gap(gap: float, norm1: float, n_minus: int) -> float:
    """``gap * sqrt(||lambda||_1 / n_-)``: Theta(1) by Theorem 2 of Lai et al. (2026) (their Fig. 2).

    Parameters
    ----------
    gap : float
        ``||w^(inf) - w*||``, e.g. from :func:`limit_gap`.
    norm1 : float
        ``||lambda||_1``, the trace of the data covariance (``Dataset.norm1``).
    n_minus : int
        The number of examples with ``y_i <= 0`` (at least 1).

    Returns
    -------
    float
        The gap in the units of Theorem 2's bounds: between ``sqrt(y_min^2 / (C C_g))``
        and ``sqrt(16 y_max^2 / C_g)`` whenever the theorem applies.
    """
    gap = check_nonnegative(gap, "gap")
    norm1 = check_positive(norm1, "norm1")
    if check_int(n_minus, "n_minus") <= 0:
        raise ValueError("normalized_gap needs n_minus >= 1 (with no negative labels the gap is 0)")
    return _scaled(gap * np.sqrt(norm1 / n_minus), 0, "normalized_gap")


@_theorem2_doc
def theorem2_bounds(
    n_minus: int, y_min: float, y_max: float, norm1: float, *, C: float = DEFAULT_C, C_g: float = DEFAULT_C_G
) -> GapBounds:
    """Theorem 2: ``sqrt(n_- y_min^2 / (C C_g ||lambda||_1)) <= ||w^(inf) - w*|| <= sqrt(16 n_- y_max^2 / (C_g ||lambda||_1))``.

    The two-sided bound of Theorem 2 of Lai et al. (2026) on the distance between the
    limit of GD on one ReLU neuron and the minimum-norm interpolant (docs/math.md §6).

    Parameters
    ----------
    {theorem2_parameters}

    Returns
    -------
    GapBounds
        ``(lower, upper)`` as a named tuple: ``lo, hi = theorem2_bounds(...)``
        and ``theorem2_bounds(...).upper`` both work.
    """
    norm1 = check_positive(norm1, "norm1")
    C = check_positive(C, "C")
    C_g = check_positive(C_g, "C_g")
    n_minus = check_int(n_minus, "n_minus", minimum=0)
    y_min, y_max = _labels(y_min, y_max)
    lower = _root_ratio(n_minus, y_min, (C, C_g, norm1), "theorem2_bounds")
    upper = _root_ratio(16.0 * n_minus, y_max, (C_g, norm1), "theorem2_bounds")
    return GapBounds(lower, upper)


@_theorem2_doc
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

    Theorem 4 of Lai et al. (2026): the two-neuron model ``s = (1, -1)``.

    Parameters
    ----------
    n_plus : int
        The number of examples with ``y_i > 0`` (``n_+``), which bounds ``w_minus``.
    {theorem2_parameters}

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


def theorem6_bounds(
    m: int, n: int, y_max: float, norm1: float, *, C_g: float = DEFAULT_C_G, C_alpha: float = DEFAULT_C_ALPHA
) -> GapBounds:
    """Theorem 6: ``sqrt(sum_k ||w_k^(inf) - w_k*||^2) <= sqrt(4 C_g C_alpha^2 m n y_max^2 / ||lambda||_1)``.

    The upper bound of Theorem 6 of Lai et al. (2026) for m neurons from the disjoint
    initialisation of Assumption 4 (``init="disjoint"`` of :func:`relucore.train`).

    Parameters
    ----------
    m : int
        The number of neurons (at least 1).
    n : int
        The number of examples (at least 1).
    y_max : float
        ``max_i |y_i|``.
    norm1 : float
        ``||lambda||_1``, the trace of the data covariance (``Dataset.norm1``).
    C_g : float, default 2
        The step constant (``eta <= 1/(C_g ||lambda||_1)``).
    C_alpha : float, default 10
        The constant of the init offsets ``eps = y_min / (C_alpha m)``.

    Returns
    -------
    GapBounds
        ``(lower, upper)`` as :func:`theorem2_bounds` returns: ``upper`` bounds :func:`limit_gap` of
        the GD limit and the minimum-norm network; Theorem 6 states no lower bound, so ``lower``
        is 0. (0.x: ``theorem6_bound``, which returned the upper bound alone.)
    """
    norm1 = check_positive(norm1, "norm1")
    m = check_int(m, "m", minimum=1)
    n = check_int(n, "n", minimum=1)
    y_max = check_nonnegative(y_max, "y_max")
    count = 4.0 * check_positive(C_g, "C_g") * check_positive(C_alpha, "C_alpha") ** 2 * m * n
    return GapBounds(0.0, _root_ratio(count, y_max, (norm1,), "theorem6_bounds"))


def step_constant(eta: float, norm1: float) -> float:
    """The ``C_g`` for which ``eta = 1/(C_g ||lambda||_1)`` (top of the theorems' step window).

    Theorems 1-6 of Lai et al. (2026) assume ``1/(C C_g ||lambda||_1) <= eta <=
    1/(C_g ||lambda||_1)``; this is the ``C_g`` that puts a given step at the top.

    Parameters
    ----------
    eta : float
        The step size of a run (``TrainResult.eta``).
    norm1 : float
        ``||lambda||_1``, the trace of the data covariance (``Dataset.norm1``).

    Returns
    -------
    float
        ``1 / (eta ||lambda||_1)``, computed without over- or underflow.
    """
    eta, norm1 = check_positive(eta, "eta"), check_positive(norm1, "norm1")
    product = eta * norm1
    if sys.float_info.min <= product < math.inf:
        return 1.0 / product
    # The product over- or underflows: the same formula on the mantissas, scaled back (or a ValueError).
    (a, p), (b, q) = math.frexp(eta), math.frexp(norm1)
    return _scaled(1.0 / (a * b), -(p + q), "step_constant")
