"""Minimum-norm interpolating networks (Lai et al. 2026, eq. (7), (8)/(9) and (52); docs/math.md).

Everything is solved in Gram space: after ``K = X X^T`` is formed, d never
enters. For one neuron the dual of eq. (7) is a bound-constrained QP in R^n
with Hessian K (C++, :mod:`relucore._core`; :mod:`.single`). For several neurons the
problem is not convex; for a fixed activation pattern (Lemma 4) it is a convex QP in
the prediction coordinates ``beta_k = X w_k`` with objective
``1/2 sum_k beta_k^T K^{-1} beta_k`` (:mod:`.patterns`), and the global optimum is
found by an exact branch and bound over the patterns (:mod:`.search`).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from relucore._inputs import gram_of, single_problem
from relucore._renamed import removed_parameters
from relucore._validation import as_float_array, check_int, check_positive
from relucore.theory.minnorm.linalg import check_pd
from relucore.theory.minnorm.results import KKTCertificate, MinNormSolution, SearchCertificate
from relucore.theory.minnorm.scaling import normalize, scale_back
from relucore.theory.minnorm.search import minnorm_multi
from relucore.theory.minnorm.single import minnorm_single

__all__ = ["minnorm", "MinNormSolution", "KKTCertificate", "SearchCertificate", "gram_of"]


@removed_parameters("minnorm")
def minnorm(
    X=None,
    y=None,
    *,
    signs: Sequence[float] = (1,),
    gram=None,
    method: str = "bnb",
    max_nodes: int = 5_000,
    assignment=None,
    solver_tol: float = 1e-10,
    time_limit: Optional[float] = 60.0,
    progress: Optional[bool] = None,
) -> MinNormSolution:
    """Minimum-norm solution of a shallow ReLU network (Lai et al. 2026, Eq. 7, 8 and 52).

    * ``m = 1`` (Eq. 7, Lemma 3): ``min 1/2 ||w||^2`` s.t. ``X+ w = y+``,
      ``X- w <= 0`` (for ``s = -1`` the roles of the signs swap). Solved
      through its dual, ``min 1/2 z^T K z - y+^T z+`` s.t. ``z- <= 0``, a
      bound-constrained QP in R^n with Hessian K, by an active-set method in
      C++ (block principal pivoting, with a finite primal active-set method
      as fallback, and a final re-solve on the identified active set). Then
      ``w* = X^T z = X_S^T (X_S X_S^T)^{-1} y~_S`` with ``S`` = ``active_set``.
    * ``m >= 2`` (Eq. 8 / Eq. 52): ``min 1/2 sum ||w_k||^2`` s.t.
      ``sum_k s_k relu(w_k^T x_i) = y_i``. Not convex; for a fixed activation
      pattern (Lemma 4: for m = 2 the partition ``S+ = S1 u S2``,
      ``S- = S3 u S4`` and program (9)) it is a convex QP, solved in the
      prediction coordinates ``beta_k = X w_k`` with objective
      ``1/2 sum beta_k^T K^{-1} beta_k``. The best pattern is found by branch
      and bound with valid lower bounds (relaxations), proven optimal when the
      search completes (``search.complete``); otherwise the best candidate is
      returned as an upper bound with ``exact=False``.

    Parameters
    ----------
    X : array_like, shape (n, d), optional
        Training inputs (full row rank). May be None when ``gram`` is given.
    y : array_like, shape (n,)
        Labels, non-zero.
    signs : sequence of float, default (1,)
        Outer weights ``s_k``.
    gram : array_like, shape (n, n), optional
        ``K = X X^T`` for Gram-only mode: ``W`` is then None and the solution
        is given by its dual coordinates ``alpha`` (``w_k = X^T alpha_k``).
    method : {"bnb", "exhaustive"}, default "bnb"
        For m >= 2: branch and bound, or every pattern (for tests; small n only).
    max_nodes : int, default 5000
        Budget of QPs for m >= 2.
    assignment : array_like of int, optional
        For m >= 2: the pattern of the first incumbent (each example active on
        neuron ``assignment[i]`` only, as in Theorems 3/5); default round robin.
    solver_tol : float, default 1e-10
        For m >= 2: the search's relative pruning tolerance, a subtree is pruned when its lower
        bound is at least ``optimum * (1 - solver_tol)`` (``search.solver_tol``). Not a gradient
        threshold: ``tol`` is that in :func:`relucore.train`, and the 0.x ``minnorm(tol=)`` is
        refused naming this keyword.
    time_limit : float or None, default 60
        For m >= 2: seconds the search may take (None: no limit). When the time
        or ``max_nodes`` runs out, the best candidate is returned as an upper
        bound (``exact=False``) with ``search.lower_bound`` the smallest relaxed
        optimum of the subtrees still open (the open subtrees are solved for it
        for up to a tenth of ``time_limit`` more).
    progress : bool or None, default None
        For m >= 2: a tqdm progress bar of the search on stderr (None: only
        when stderr is a terminal).

    Returns
    -------
    MinNormSolution
    """
    if method not in ("bnb", "exhaustive"):
        raise ValueError(f"method must be 'bnb' or 'exhaustive', got {method!r}")
    max_nodes = check_int(max_nodes, "max_nodes", minimum=1)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    # Solved on an exactly rescaled copy (X / 2^ex, y / 2^ey) and scaled back: the
    # answer does not depend on the scale of the data, and no intermediate over- or underflows.
    Xs, ys, Gs, scaling = normalize(X, y, gram)
    Xs, K, ys = single_problem(Xs, ys, Gs)
    signs_arr = as_float_array(signs, "signs", ndim=1)
    if np.any(signs_arr == 0):
        raise ValueError("signs must be non-zero")
    if signs_arr.size == 1:
        check_pd(K)
        sol = minnorm_single(Xs, K, ys, float(signs_arr[0]))
    else:
        sol = minnorm_multi(
            Xs,
            K,
            ys,
            signs_arr,
            max_nodes=max_nodes,
            method=method,
            assignment=assignment,
            tol=solver_tol,
            time_limit=time_limit,
            progress=progress,
        )
    return scale_back(sol, scaling, "X" if X is not None else "gram")
