"""Result classes of :func:`relucore.minnorm`: the solution and its certificates."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from relucore import _core
from relucore._summary import sizes, summarized

__all__ = ["KKTCertificate", "SearchCertificate", "MinNormSolution"]


@summarized(title=lambda c: f"max residual {c.max_residual:.2e}")
@dataclasses.dataclass(frozen=True)
class KKTCertificate:
    """Relative KKT residuals of a convex minimum-norm QP (0 = exact).

    The optimality conditions of the QP of Eq. (7) of Lai et al. (2026), or of one activation
    pattern of Eq. (8)/(52) (docs/math.md §9).

    Attributes
    ----------
    stationarity : float
        ``||w_k - X^T phi_k|| / ||w||`` with the Lagrange multipliers ``phi``
        projected onto their sign constraints (in Gram-only mode measured in the
        K-norm, ``sqrt(v^T K v)``).
    primal_feasibility : float
        Largest violation of the constraints (equalities and sign conditions on
        ``x_i^T w_k``) over ``max |y|``.
    dual_feasibility : float
        Largest multiplier of the wrong sign over the largest multiplier.
    complementarity : float
        ``max |multiplier * slack|`` over ``max|multiplier| * max|y|``.
    """

    stationarity: float
    primal_feasibility: float
    dual_feasibility: float
    complementarity: float

    @property
    def max_residual(self) -> float:
        """The largest of the four KKT residuals."""
        return float(max(self.stationarity, self.primal_feasibility, self.dual_feasibility, self.complementarity))

    def __str__(self) -> str:
        return (
            f"KKT residuals: stationarity {self.stationarity:.2e}, primal feasibility {self.primal_feasibility:.2e}, "
            f"dual feasibility {self.dual_feasibility:.2e}, complementarity {self.complementarity:.2e}"
        )


def _search_title(c: "SearchCertificate") -> str:
    state = "complete" if c.complete else "incomplete"
    return f"{state}, optimum {c.optimum:.6g}, lower bound {c.lower_bound:.6g}, {c.nodes} nodes"


@summarized(
    title=_search_title,
    rows=(
        "optimum",
        "lower_bound",
        "complete",
        "n_patterns",
        "nodes",
        ("pruned", "closed_feasible", "leaves"),
        "patterns_pruned",
        "patterns_by_symmetry",
        "min_pruned_bound",
        "runner_up",
        "solver_tol",
    ),
)
@dataclasses.dataclass(frozen=True)
class SearchCertificate:
    """Evidence of global optimality from the branch and bound over activation patterns.

    Every pattern (one admissible set of active neurons per example; for m = 2
    the partitions S1..S4 of Lemma 4) lies in exactly one closed node of the
    search tree. A node is closed when

    * its relaxed QP (constraints of undecided examples dropped or relaxed to a
      valid convex superset) is no better than the incumbent: ``pruned``, with
      the smallest such lower bound in ``min_pruned_bound``;
    * its relaxed optimum already satisfies every example's constraint: it is
      then optimal for the whole subtree (``closed_feasible``);
    * or it is a leaf (a full pattern) whose convex QP was solved (``leaves``).

    Attributes
    ----------
    optimum : float
        ``1/2 sum ||w_k||^2`` of the returned solution (the incumbent).
    lower_bound : float
        A proven lower bound on the global optimum: equals ``optimum`` (up to the
        tolerance) when ``complete``; otherwise the smallest bound of any open node.
    complete : bool
        True when the search finished (the answer is the exact global optimum).
    n_patterns : int
        Number of admissible activation patterns (product over examples).
    nodes : int
        Relaxed or leaf QPs solved.
    pruned, closed_feasible, leaves : int
        The number of search nodes that ended each of the three ways above.
    patterns_pruned : int
        Patterns inside pruned subtrees.
    patterns_by_symmetry : int
        Patterns skipped because they are a permutation of neurons with equal
        outer weights (interchangeable so far) of an explored pattern: same optimum.
    min_pruned_bound : float
        Smallest lower bound among pruned nodes (``inf`` if none): every pruned
        pattern has objective >= this value >= ``optimum`` (up to ``solver_tol``).
    runner_up : float
        Best objective among full patterns seen with a different pattern from
        the winner (``inf`` if none was solved).
    solver_tol : float
        Relative tolerance of the pruning test (``minnorm(solver_tol=)``).
    """

    optimum: float
    lower_bound: float
    complete: bool
    n_patterns: int
    nodes: int
    pruned: int
    closed_feasible: int
    leaves: int
    patterns_pruned: int
    patterns_by_symmetry: int
    min_pruned_bound: float
    runner_up: float
    solver_tol: float


def _solution_title(s: "MinNormSolution") -> str:
    m, n = s.alpha.shape
    d = None if s.W is None else s.W.shape[1]
    return sizes(m=m, n=n, d=d) + ("" if d is not None else " (Gram-only)") + f"; {s.kind}"


@summarized(
    title=_solution_title,
    rows=("message", ("success", "status"), "nit", "objective", "norm", "exact", "certificate", "search"),
)
@dataclasses.dataclass(frozen=True)
class MinNormSolution:
    """Minimum-norm solution of ``sum_k s_k relu(w_k^T x_i) = y_i`` (Eq. 7, 8, 52).

    Attributes
    ----------
    W : ndarray, shape (m, d), or None
        The weights ``w_k = X^T alpha_k`` (None in Gram-only mode).
    alpha : ndarray, shape (m, n)
        Dual coordinates: ``w_k = X^T alpha_k``.
    beta : ndarray, shape (m, n)
        Predictions of every neuron, ``beta_k = X w_k = K alpha_k``.
    signs : ndarray, shape (m,)
        The outer weights ``s_k``.
    objective : float
        ``1/2 sum_k ||w_k||^2 = 1/2 sum_k alpha_k^T K alpha_k``.
    active_set : ndarray of bool, shape (m, n)
        For m = 1 the set S of Lemma 3 (``S+`` plus the examples whose
        constraint ``x_j^T w <= 0`` binds with a positive multiplier), so that
        ``w* = X_S^T (X_S X_S^T)^{-1} y~_S``. For m >= 2 the activation pattern
        of the winning convex piece: ``active_set[k, i]`` when neuron k is on
        the active side (``x_i^T w_k >= 0``) for example i.
    partition : ndarray of int, shape (n,), or None
        For m = 2 with opposite signs: the Lemma 4 label of every example (1, 2
        for ``S+ = S1 u S2``; 3, 4 for ``S- = S3 u S4``; 0 for a zero label
        with both neurons inactive).
    certificate : KKTCertificate
        KKT residuals of the convex QP of the returned piece.
    search : SearchCertificate or None
        Global-optimality evidence (m >= 2).
    exact : bool
        True when the returned solution is the proven global optimum; False
        when the search budget ran out and the solution is the best feasible
        candidate found (an upper bound; ``search.lower_bound`` is a valid lower bound).
    kind : str
        ``"exact"`` or ``"upper bound (best candidate)"``.
    status : relucore.Status
        ``optimal`` (the minimum-norm solution, proved), ``best_candidate`` (the search budget
        ran out: an upper bound, not proved optimal), ``max_iter``, ``singular`` or
        ``infeasible_start`` (the QP solver failed), ``nonfinite`` (the KKT residuals are not finite).
    success : bool
        ``status.success``: True only for ``optimal``.
    message, nit
        The outcome in words; ``nit``: active-set iterations for m = 1, nodes for m >= 2.
    """

    W: Optional[np.ndarray]
    alpha: np.ndarray
    beta: np.ndarray
    signs: np.ndarray
    objective: float
    active_set: np.ndarray
    partition: Optional[np.ndarray]
    certificate: KKTCertificate
    search: Optional[SearchCertificate]
    exact: bool
    kind: str
    success: bool
    status: _core.Status
    message: str
    nit: int

    @property
    def norm(self) -> float:
        """``sqrt(sum_k ||w_k||^2)``."""
        return float(np.sqrt(2.0 * self.objective))

    @property
    def active_indices(self) -> list:
        """``active_set`` as index arrays, one per neuron (for m = 1: the S of Lemma 3)."""
        return [np.flatnonzero(row) for row in self.active_set]

    @property
    def w(self) -> Optional[np.ndarray]:
        """The weight vector of a single neuron (m = 1), shape (d,)."""
        return None if self.W is None else self.W[0]


# ----------------------------------------------------------------------------- helpers
