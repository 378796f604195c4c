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

import numpy as np

from relucore import _core
from relucore import _scaling as units
from relucore._scaling import Scaling, exponents_of
from relucore._validation import as_float_array
from relucore.theory.minnorm.results import MinNormSolution

__all__ = ["Scaling", "normalize", "scale_back"]


def normalize(X, y, gram):
    """Converts and checks X, y and gram, and rescales them exactly to entries of order one (the exponent rule
    of relucore._scaling, applied at every scale).

    Returns ``(X', y', gram', Scaling)`` (``relucore._scaling.Scaling`` of one problem).
    """
    y = as_float_array(y, "y", ndim=1)
    if X is not None:
        X = as_float_array(X, "X", ndim=2)
    if gram is not None:
        gram = as_float_array(gram, "gram", ndim=2)
    sc = exponents_of(X, gram, y)
    # Entries already of order one (a power 0) are not copied.
    out = [a if a is None or sc.power(u, 0)[0] == 0 else sc.down(a[None], u)[0] for a, u in zip((X, y, gram), _DATA)]
    return (*out, sc)


_DATA = (units.X, units.Y, units.K)


def scale_back(sol: MinNormSolution, sc: Scaling, name: str = "X") -> MinNormSolution:
    """The solution of the original problem from that of the rescaled one; refuses what float64 cannot hold."""
    p_obj = int(sc.power(units.OBJECTIVE, 0)[0])
    objective = sc.up(sol.objective, units.OBJECTIVE, 0)
    W, alpha, beta = (sc.up(a, u, 0) for a, u in ((sol.W, units.W), (sol.alpha, units.ALPHA), (sol.beta, units.Y)))
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
            optimum=sc.up(search.optimum, units.OBJECTIVE, 0),
            lower_bound=sc.up(search.lower_bound, units.OBJECTIVE, 0),
            min_pruned_bound=sc.up(search.min_pruned_bound, units.OBJECTIVE, 0),
            runner_up=sc.up(search.runner_up, units.OBJECTIVE, 0),
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
            status=_core.Status.nonfinite,
            kind="failed",
            message=f"the KKT residuals of the solution are not finite; {sol.message}",
        )
    return out


def _refuse(objective: float, sc: Scaling, p_obj: int, name: str) -> None:
    log2_obj = (math.log2(objective) if objective > 0 else 0.0) + p_obj
    raise ValueError(
        _core.minnorm_unrepresentable_message(ex=int(sc.ex[0]), ey=int(sc.ey[0]), data=name, log2_objective=log2_obj)
    )
