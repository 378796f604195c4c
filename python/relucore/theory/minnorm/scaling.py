"""Exact rescaling of the minimum-norm problems, so that their answer does not depend on the scale of X or y.

The constraints ``sum_k s_k relu(w_k^T x_i) = y_i`` are positively homogeneous:
``X -> c X`` and ``y -> l y`` map the solution ``W`` to ``(l / c) W``, so
``alpha -> (l / c^2) alpha``, ``beta = X w_k -> l beta`` and the objective
``1/2 sum ||w_k||^2 -> (l / c)^2`` times itself. With c and l powers of two
(chosen from the binary exponents of ``max |X|`` and ``max |y|``) the rescaling
is exact, so X and ``2^k X`` give bitwise the same answer up to the factor.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from relucore._scaling import binary_exponent
from relucore._validation import as_float_array
from relucore.theory.minnorm.results import MinNormSolution

__all__ = ["Scaling", "normalize", "scale_back"]


@dataclasses.dataclass(frozen=True)
class Scaling:
    """``X = 2^ex X'``, ``K = 4^ex K'``, ``y = 2^ey y'``."""

    ex: int
    ey: int


def _shifted(a: Optional[np.ndarray], power: int) -> Optional[np.ndarray]:
    """``a 2^power`` (exact); ``a`` itself when power is 0 (entries already of order one: no copy)."""
    return a if a is None or power == 0 else np.ldexp(a, power)


def normalize(X, y, gram):
    """Converts and checks X, y and gram, and rescales them exactly to entries of order one.

    Returns ``(X', y', gram', Scaling)``.
    """
    y = as_float_array(y, "y", ndim=1)
    if X is not None:
        X = as_float_array(X, "X", ndim=2)
    if gram is not None:
        gram = as_float_array(gram, "gram", ndim=2)
    # From X when it is given; else half the exponent of K (floor, so K -> 4^k K shifts it by k).
    ex = binary_exponent(X) if X is not None else (binary_exponent(gram) // 2 if gram is not None else 0)
    ey = binary_exponent(y)
    return _shifted(X, -ex), _shifted(y, -ey), _shifted(gram, -2 * ex), Scaling(ex, ey)


def _scaled(value: Optional[float], power: int) -> Optional[float]:
    return None if value is None else float(np.ldexp(value, power))


def scale_back(sol: MinNormSolution, sc: Scaling, name: str = "X") -> MinNormSolution:
    """The solution of the original problem from that of the rescaled one; refuses what float64 cannot hold."""
    p_obj = 2 * (sc.ey - sc.ex)
    with np.errstate(over="ignore", under="ignore"):
        objective = float(np.ldexp(sol.objective, p_obj))
        W = None if sol.W is None else np.ldexp(sol.W, sc.ey - sc.ex)
        alpha = np.ldexp(sol.alpha, sc.ey - 2 * sc.ex)
        beta = np.ldexp(sol.beta, sc.ey)
    representable = (
        math.isfinite(objective)
        and (sol.objective == 0 or objective >= np.finfo(np.float64).tiny)
        and bool(np.isfinite(alpha).all())
        and (W is None or bool(np.isfinite(W).all()))
    )
    if not representable:
        _refuse(sol.objective, sc, p_obj, name)
    search = sol.search
    if search is not None:
        search = dataclasses.replace(
            search,
            optimum=_scaled(search.optimum, p_obj),
            lower_bound=_scaled(search.lower_bound, p_obj),
            min_pruned_bound=_scaled(search.min_pruned_bound, p_obj),
            runner_up=_scaled(search.runner_up, p_obj),
        )
    message = sol.message
    if search is not None and not search.complete:
        message = (
            f"not proven optimal: an upper bound 1/2 sum ||w_k||^2 = {search.optimum:.6g} with a proven lower "
            f"bound {search.lower_bound:.6g}; {message}"
        )
    out = dataclasses.replace(sol, W=W, alpha=alpha, beta=beta, objective=objective, search=search, message=message)
    if out.success and not (
        math.isfinite(out.certificate.max_residual) and math.isfinite(out.certificate.stationarity)
    ):
        # A success never carries a NaN: a residual that could not be evaluated is a failure.
        out = dataclasses.replace(
            out,
            success=False,
            exact=False,
            status=2,
            kind="failed",
            message=f"the KKT residuals of the solution are not finite; {sol.message}",
        )
    return out


def _refuse(objective: float, sc: Scaling, p_obj: int, name: str) -> None:
    log2_obj = (math.log2(objective) if objective > 0 else 0.0) + p_obj
    small = sc.ex < sc.ey  # the weights are large: X small for the labels
    what = f"{name} is too small (or y too large)" if small else f"{name} is too large (or y too small)"
    raise ValueError(
        f"{what}: max |x_ij| ~ 2^{sc.ex} and max |y_i| ~ 2^{sc.ey}, so the minimum-norm weights have "
        f"1/2 sum ||w_k||^2 ~ 2^{log2_obj:.0f} (and dual coordinates ~ 2^{sc.ey - 2 * sc.ex}), which float64 "
        "cannot represent even after an exact rescaling; rescale X or y "
        "(X -> c X, y -> l y maps W -> (l / c) W)"
    )
