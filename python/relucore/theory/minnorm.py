"""Minimum-norm interpolating networks (Lai et al. 2026, Eq. 7, 8/9 and 52; SPEC section 5).

Everything is solved in Gram space: after ``K = X X^T`` is formed, d never
enters. For one neuron the dual of Eq. (7) is a bound-constrained QP in R^n
with Hessian K (C++, :mod:`relucore._core`). For several neurons the problem is
not convex; for a fixed activation pattern (Lemma 4) it is a convex QP in the
prediction coordinates ``beta_k = X w_k`` with objective
``1/2 sum_k beta_k^T K^{-1} beta_k``, and the global optimum is found by an
exact branch and bound over the patterns.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import List, Optional, Sequence, Tuple

import numpy as np
from scipy import sparse as _sparse

from relucore import _core
from relucore._validation import as_float_array, check_consistent_length, check_gram_finite, check_int

__all__ = ["minnorm", "MinNormSolution", "KKTCertificate", "SearchCertificate"]


@dataclasses.dataclass(frozen=True)
class KKTCertificate:
    """Relative KKT residuals of a convex minimum-norm QP (0 = exact).

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
        return float(max(self.stationarity, self.primal_feasibility, self.dual_feasibility, self.complementarity))

    def __str__(self) -> str:
        return (
            f"KKT residuals: stationarity {self.stationarity:.2e}, primal feasibility {self.primal_feasibility:.2e}, "
            f"dual feasibility {self.dual_feasibility:.2e}, complementarity {self.complementarity:.2e}"
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
    patterns_pruned : int
        Patterns inside pruned subtrees.
    patterns_by_symmetry : int
        Patterns skipped because they are a permutation of neurons with equal
        outer weights (interchangeable so far) of an explored pattern: same optimum.
    min_pruned_bound : float
        Smallest lower bound among pruned nodes (``inf`` if none): every pruned
        pattern has objective >= this value >= ``optimum`` (up to ``tol``).
    runner_up : float
        Best objective among full patterns seen with a different pattern from
        the winner (``inf`` if none was solved).
    tol : float
        Relative tolerance of the pruning test.
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
    tol: float


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
    success, status, message, nit
        scipy-style outcome (``nit``: active-set iterations for m = 1, nodes for m >= 2).
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
    status: int
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


def _gram(X: np.ndarray) -> np.ndarray:
    K = np.empty((1, X.shape[0], X.shape[0]))
    _core.gram_batch(X[None], K, 0)
    check_gram_finite(K, X)
    return K[0]


def _prepare(X, y, gram) -> Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]:
    y = as_float_array(y, "y", ndim=1)
    if X is None and gram is None:
        raise TypeError("X is required (or pass gram= for Gram-only mode)")
    if X is not None:
        X = as_float_array(X, "X", ndim=2)
        check_consistent_length(["X", "y"], [X.shape[0], y.shape[0]])
    if gram is not None:
        K = as_float_array(gram, "gram", ndim=2)
        check_gram_finite(K)
        if K.shape[0] != K.shape[1]:
            raise ValueError(f"gram must be square, got shape {K.shape}")
        check_consistent_length(["gram", "y"], [K.shape[0], y.shape[0]])
        if not np.allclose(K, K.T, rtol=1e-10, atol=0):
            raise ValueError("gram must be symmetric")
        K = 0.5 * (K + K.T)
    else:
        K = _gram(X)
    return X, K, y


def _check_pd(K: np.ndarray) -> np.ndarray:
    """Cholesky factor of K, or a ValueError saying X must have full row rank."""
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        raise ValueError(
            "K = X X^T is singular: the minimum-norm problems need X of full row rank (n <= d, independent examples)"
        ) from None
    if np.min(np.diag(L)) ** 2 < 1e-13 * np.max(np.diag(K)):
        raise ValueError("K = X X^T is numerically singular (condition number > 1e13): X needs full row rank")
    return L


def _kinv(L: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve

    n = L.shape[0]
    Ki = cho_solve((L, True), np.eye(n))
    return 0.5 * (Ki + Ki.T)


def _ksolve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve

    return cho_solve((L, True), B)


def _knorm(K: np.ndarray, a: np.ndarray) -> float:
    """sqrt(sum_k a_k^T K a_k) for a of shape (m, n) or (n,)."""
    a2 = np.atleast_2d(a)
    return float(np.sqrt(max(np.einsum("ki,ij,kj->", a2, K, a2), 0.0)))


# ----------------------------------------------------------------------------- m = 1


def _minnorm_single(X, K, y, s: float) -> MinNormSolution:
    n = y.size
    t = y / s
    fit = t > 0  # examples the neuron must interpolate (S+ for s = +1)
    c = np.where(fit, t, 0.0)
    lower = np.full(n, -np.inf)
    upper = np.where(fit, np.inf, 0.0)
    z = np.empty(n)
    r = np.empty(n)
    state = np.empty(n, dtype=np.int8)
    info = _core.qp_box(np.ascontiguousarray(K), c, lower, upper, z, r, state)
    status = int(info["status"])
    alpha = z[None, :].copy()
    beta = (K @ z)[None, :]
    W = None if X is None else alpha @ X
    if W is not None:
        beta = W @ X.T  # the primal check uses X directly, not K
    nu = np.where(fit, z, 0.0)  # multipliers of x_i^T w = t_i
    mu = np.where(fit, 0.0, -z)  # multipliers of x_j^T w <= 0 (>= 0)
    mu_proj = np.maximum(mu, 0.0)
    phi = nu - mu_proj
    ymax = max(float(np.max(np.abs(t))), 1e-300)
    if W is not None:
        wn = max(float(np.linalg.norm(W)), 1e-300)
        stat = float(np.linalg.norm(W[0] - X.T @ phi)) / wn
    else:
        wn = max(_knorm(K, alpha), 1e-300)
        stat = _knorm(K, alpha[0] - phi) / wn
    pred = beta[0]
    primal = max(
        float(np.max(np.abs(pred[fit] - t[fit]), initial=0.0)),
        float(np.max(np.maximum(pred[~fit], 0.0), initial=0.0)),
    ) / ymax
    mscale = max(float(np.max(np.abs(z))), 1e-300)
    dual = float(np.max(np.maximum(-mu, 0.0), initial=0.0)) / mscale
    comp = float(np.max(np.abs(mu * pred) * (~fit), initial=0.0)) / max(mscale * ymax, 1e-300)
    cert = KKTCertificate(stat, primal, dual, comp)
    active = (fit | (z < 0))[None, :]
    obj = 0.5 * float(z @ K @ z)
    ok = status == 0
    msg = (
        f"solved the dual QP of Eq. (7) in {info['block_iterations']} block pivots"
        + (f" and {info['primal_iterations']} primal active-set steps" if info["used_fallback"] else "")
        + f"; |S| = {int(active.sum())}; {cert}"
        if ok
        else f"active-set solver failed (status {status}); {cert}"
    )
    return MinNormSolution(
        W=W, alpha=alpha, beta=beta, signs=np.array([s]), objective=obj, active_set=active, partition=None,
        certificate=cert, search=None, exact=ok, kind="exact" if ok else "failed", success=ok, status=status,
        message=msg, nit=int(info["block_iterations"]) + int(info["primal_iterations"]),
    )


# ----------------------------------------------------------------------------- m >= 2


def _admissible_pieces(yi: float, signs: np.ndarray) -> List[Tuple[int, ...]]:
    """Activation sets A (neurons with x_i^T w_k >= 0) under which sum_{k in A} s_k beta_k = y_i is feasible.

    Pieces contained in another piece are left out (for a zero label only the
    empty set and sets holding both signs remain).
    """
    m = signs.size
    out = []
    for r in range(m + 1):
        for A in itertools.combinations(range(m), r):
            sa = signs[list(A)]
            if yi > 0 and np.any(sa > 0) or yi < 0 and np.any(sa < 0):
                out.append(A)
            elif yi == 0 and (r == 0 or (np.any(sa > 0) and np.any(sa < 0))):
                out.append(A)
    # Try the most natural pieces first: fewer active neurons, matching sign.
    out.sort(key=len)
    return out


class _PatternQP:
    """Convex QPs of one (partial) activation pattern in prediction coordinates.

    Variables ``beta[k, i]`` (flattened k * n + i), objective
    ``1/2 sum_k beta_k^T K^{-1} beta_k``. A decided example i with piece A has
    bounds ``beta_k,i >= 0`` (k in A) / ``<= 0`` (k not in A) and the equality
    ``sum_{k in A} s_k beta_k,i = y_i``. An undecided example keeps only the
    valid relaxation ``beta_k+,i >= y_i / s_k+`` when a single neuron k+ has
    the sign of y_i (every piece implies it since the other neurons of that
    sign do not exist), else nothing.
    """

    def __init__(self, Kinv: np.ndarray, y: np.ndarray, signs: np.ndarray):
        self.n = y.size
        self.m = signs.size
        self.y = y
        self.signs = signs
        m, n = self.m, self.n
        H = np.zeros((m * n, m * n))
        for k in range(m):
            H[k * n:(k + 1) * n, k * n:(k + 1) * n] = Kinv
        self.H = H
        self.c = np.zeros(m * n)
        self.nsolves = 0

    def solve(self, pieces: Sequence[Optional[Tuple[int, ...]]], z0: Optional[np.ndarray] = None):
        """Raw prediction coordinates with one equality row per decided example (primal active-set method).

        ``z0``: a feasible starting point (e.g. the optimum found by :meth:`solve_fast`);
        the bounds it touches start in the working set, except one variable per
        equality row, which keeps the working set linearly independent.
        """
        m, n, y, s = self.m, self.n, self.y, self.signs
        N = m * n
        lower = np.full(N, -np.inf)
        upper = np.full(N, np.inf)
        z = np.zeros(N)
        rows = []
        rhs = []
        for i, A in enumerate(pieces):
            if A is None:
                match = [k for k in range(m) if s[k] * y[i] > 0]
                if len(match) == 1 and y[i] != 0:
                    k = match[0]
                    lower[k * n + i] = y[i] / s[k]
                    z[k * n + i] = y[i] / s[k]
                continue
            for k in range(m):
                if k in A:
                    lower[k * n + i] = 0.0
                else:
                    upper[k * n + i] = 0.0
            if len(A) > 0:
                row = np.zeros(N)
                for k in A:
                    row[k * n + i] = s[k]
                rows.append(row)
                rhs.append(y[i])
                if y[i] != 0:
                    k0 = next(k for k in A if s[k] * y[i] > 0)
                    z[k0 * n + i] = y[i] / s[k0]
        E = np.array(rows) if rows else np.zeros((0, N))
        e = np.array(rhs, dtype=float)
        state = np.zeros(N, dtype=np.int8)
        if z0 is not None:
            z = np.clip(z0, lower, upper)
            state[np.isfinite(lower) & (z == lower)] = -1
            state[np.isfinite(upper) & (z == upper) & (state == 0)] = 1
            for row in E:
                support = np.flatnonzero(row)
                if np.all(state[support] != 0):
                    state[support[np.argmax(np.abs(z[support]))]] = 0
        nu = np.empty(len(rhs))
        r = np.empty(N)
        info = _core.qp_primal(self.H, self.c, np.ascontiguousarray(E), e, lower, upper, z, state, nu, r)
        self.nsolves += 1
        obj = 0.5 * float(z @ self.H @ z)
        return {"z": z, "nu": nu, "r": r, "state": state, "E": E, "lower": lower, "upper": upper, "_e": e,
                "status": int(info["status"]), "iterations": int(info["primal_iterations"]), "objective": obj}

    def solve_fast(self, pieces: Sequence[Optional[Tuple[int, ...]]]):
        """Same optimum as :meth:`solve`, faster: equality rows of pieces with at most two active
        neurons are eliminated (``beta = T t + f``), which leaves bounds only; the block
        pivoting method then needs a handful of Cholesky solves. Pieces with three or
        more active neurons fall back to :meth:`solve`."""
        m, n, y, s = self.m, self.n, self.y, self.signs
        N = m * n
        if any(A is not None and len(A) >= 3 for A in pieces):
            return self.solve(pieces)
        cols = []  # (list of (row, coef)), lower, upper
        f = np.zeros(N)
        for i, A in enumerate(pieces):
            if A is None:
                match = [k for k in range(m) if s[k] * y[i] > 0]
                if m == 2 and len(match) == 1:
                    # Convex hull of the two pieces: with a = beta_kp (sign of y_i) and
                    # b = beta_ko, the constraint is a = y/s_kp + rho relu(b), whose hull
                    # is {a >= y/s_kp, a >= y/s_kp + rho b}; the cone is simplicial, so
                    # a = y/s_kp + p, b = (p - q)/rho with p, q >= 0 parametrises it.
                    kp = match[0]
                    ko = 1 - kp
                    rho = abs(s[ko] / s[kp])
                    f[kp * n + i] = y[i] / s[kp]
                    cols.append(([(kp * n + i, 1.0), (ko * n + i, 1.0 / rho)], 0.0, np.inf))
                    cols.append(([(ko * n + i, -1.0 / rho)], 0.0, np.inf))
                    continue
                for k in range(m):
                    lo = y[i] / s[k] if (len(match) == 1 and y[i] != 0 and k == match[0]) else -np.inf
                    cols.append(([(k * n + i, 1.0)], lo, np.inf))
                continue
            for k in range(m):
                if k not in A:
                    cols.append(([(k * n + i, 1.0)], -np.inf, 0.0))
            if len(A) == 1:
                k0 = A[0]
                f[k0 * n + i] = y[i] / s[k0]
            elif len(A) == 2:
                k0, k1 = A
                if s[k0] * y[i] <= 0 and s[k1] * y[i] > 0:
                    k0, k1 = k1, k0
                rho = s[k1] / s[k0]
                f[k0 * n + i] = y[i] / s[k0]
                lo, hi = 0.0, np.inf
                if rho > 0:
                    hi = y[i] / s[k1]
                else:
                    lo = max(0.0, y[i] / s[k1])
                cols.append(([(k1 * n + i, 1.0), (k0 * n + i, -rho)], lo, hi))
        nt = len(cols)
        lower = np.empty(nt)
        upper = np.empty(nt)
        ti, tj, tv = [], [], []
        for j, (entries, lo, hi) in enumerate(cols):
            for row, coef in entries:
                ti.append(row)
                tj.append(j)
                tv.append(coef)
            lower[j], upper[j] = lo, hi
        # T has at most two non-zeros per column: sparse products keep a node O(N nt).
        T = _sparse.csc_matrix((tv, (ti, tj)), shape=(N, nt))
        TtH = np.asarray(T.T @ self.H)  # (nt, N); H symmetric, so this is (H T)^T
        Ht = np.ascontiguousarray(np.asarray(T.T @ TtH.T))
        Ht = 0.5 * (Ht + Ht.T)
        ct = -(TtH @ f)
        t = np.empty(nt)
        r = np.empty(nt)
        state = np.empty(nt, dtype=np.int8)
        info = _core.qp_box(Ht, ct, lower, upper, t, r, state)
        self.nsolves += 1
        z = T @ t + f
        obj = 0.5 * float(z @ (self.H @ z))
        return {"z": z, "status": int(info["status"]), "objective": obj}


def _violations(beta: np.ndarray, y: np.ndarray, signs: np.ndarray) -> np.ndarray:
    return np.abs(signs @ np.maximum(beta, 0.0) - y)


def _pattern_of(beta: np.ndarray, y: np.ndarray, signs: np.ndarray, pieces_all, tol: float) -> List[Tuple[int, ...]]:
    """An admissible piece per example containing the (feasible) point beta."""
    out = []
    for i in range(y.size):
        col = beta[:, i]
        best = None
        for A in pieces_all[i]:
            inA = np.zeros(signs.size, bool)
            inA[list(A)] = True
            if np.all(col[inA] >= -tol) and np.all(col[~inA] <= tol):
                scale = abs(y[i]) + float(np.max(np.abs(col)))
                if abs(float(np.sum(signs[inA] * col[inA])) - y[i]) <= 1e-9 * scale or len(A) == 0:
                    best = A
                    break
        if best is None:  # fall back to the strict sign pattern
            best = tuple(int(k) for k in np.flatnonzero(col > 0))
        out.append(best)
    return out


def _certificate_multi(res: dict, K: np.ndarray, Kinv: np.ndarray, X, signs, y, m, n) -> KKTCertificate:
    z, nu, r, E = res["z"], res["nu"], res["r"], res["E"]
    lower, upper = res["lower"], res["upper"]
    beta = z.reshape(m, n)
    alpha = beta @ Kinv  # K^{-1} beta_k (K symmetric)
    # Bound multipliers: r_j on the bound side (>= 0 at lower, <= 0 at upper), 0 for free variables.
    zs = float(np.max(np.abs(z)))
    at_lo = np.isfinite(lower) & (np.abs(z - lower) <= 1e-12 * zs)
    at_up = np.isfinite(upper) & (np.abs(z - upper) <= 1e-12 * zs)
    rho = np.where(at_lo, np.maximum(r, 0.0), 0.0) + np.where(at_up & ~at_lo, np.minimum(r, 0.0), 0.0)
    wrong = np.where(at_lo, np.maximum(-r, 0.0), 0.0) + np.where(at_up & ~at_lo, np.maximum(r, 0.0), 0.0)
    phi = (rho - (E.T @ nu if E.size else 0.0)).reshape(m, n)  # alpha_k should equal phi_k
    if X is not None:
        Wm = alpha @ X
        stat = float(np.linalg.norm(Wm - phi @ X)) / max(float(np.linalg.norm(Wm)), 1e-300)
    else:
        stat = _knorm(K, alpha - phi) / max(_knorm(K, alpha), 1e-300)
    ymax = max(float(np.max(np.abs(y))), 1e-300)
    eq = float(np.max(np.abs(E @ z - res["_e"]), initial=0.0)) if E.size else 0.0
    bnd = float(np.max(np.maximum(lower - z, 0.0), initial=0.0)) + float(np.max(np.maximum(z - upper, 0.0), initial=0.0))
    fitres = float(np.max(_violations(beta, y, signs)))
    primal = max(eq, bnd, fitres) / ymax
    mscale = max(float(np.max(np.abs(np.concatenate([rho, nu]))) if (rho.size + nu.size) else 0.0), 1e-300)
    dual = float(np.max(wrong, initial=0.0)) / mscale
    slack = np.where(np.isfinite(lower), z - np.where(np.isfinite(lower), lower, 0.0), 0.0)
    slack_u = np.where(np.isfinite(upper), np.where(np.isfinite(upper), upper, 0.0) - z, 0.0)
    comp = float(np.max(np.maximum(np.abs(np.maximum(rho, 0.0) * slack), np.abs(np.minimum(rho, 0.0) * slack_u)), initial=0.0))
    comp /= max(mscale * ymax, 1e-300)
    return KKTCertificate(stat, primal, dual, comp)


def _lemma4_partition(A_list, y, signs) -> Optional[np.ndarray]:
    if signs.size != 2 or not (signs[0] * signs[1] < 0):
        return None
    kp = 0 if signs[0] > 0 else 1
    km = 1 - kp
    out = np.zeros(y.size, dtype=np.int64)
    for i, A in enumerate(A_list):
        both = kp in A and km in A
        if y[i] > 0:
            out[i] = 2 if both else 1
        elif both:
            out[i] = 4
        elif km in A:
            out[i] = 3
        else:
            out[i] = 0
    return out


def _structured_pattern(y, signs, assignment) -> List[Tuple[int, ...]]:
    """The pattern of Theorems 3 and 5: each example active on its assigned neuron only."""
    from relucore.gd.inits import default_assignment

    if assignment is None:
        yy = y.copy()
        a = np.zeros(y.size, dtype=np.int64)
        nz = yy != 0
        if np.any(nz):
            a[nz] = default_assignment(yy[nz][None, :], signs)[0]
    else:
        a = np.asarray(assignment, dtype=np.int64)
    return [(int(a[i]),) if y[i] != 0 else () for i in range(y.size)]


def _minnorm_multi(X, K, y, signs, *, max_nodes: int, method: str, assignment, tol: float) -> MinNormSolution:
    m, n = signs.size, y.size
    for sg, name in ((1, "positive"), (-1, "negative")):
        if np.any(sg * y > 0) and not np.any(sg * signs > 0):
            raise ValueError(
                f"Eq. (52) has no solution: there are {name} labels but no neuron with a {name} sign"
            )
    L = _check_pd(K)
    Kinv = _kinv(L)
    qp = _PatternQP(Kinv, y, signs)
    pieces_all = [_admissible_pieces(float(y[i]), signs) for i in range(n)]
    n_patterns = int(np.prod([len(p) for p in pieces_all], dtype=object))
    ftol = 1e-10 * float(np.max(np.abs(y)))

    def solve_full(pattern):
        return qp.solve_fast(pattern)

    # Incumbent: the structured pattern of Theorems 3/5.
    inc_pattern = _structured_pattern(y, signs, assignment)
    inc = solve_full(inc_pattern)
    best_val = inc["objective"] if inc["status"] == 0 else np.inf
    best = (inc_pattern, inc)
    runner_up = np.inf
    stats = {"nodes": 1, "pruned": 0, "closed_feasible": 0, "leaves": 1, "patterns_pruned": 0,
             "patterns_by_symmetry": 0}
    min_pruned = np.inf
    rel = tol

    def count(partial):
        c = 1
        for i, A in enumerate(partial):
            if A is None:
                c *= len(pieces_all[i])
        return c

    complete = True
    reasons: List[str] = []
    open_bounds: List[float] = []
    if method == "exhaustive":
        for combo in itertools.product(*pieces_all):
            pat = list(combo)
            if pat == inc_pattern:
                continue
            if stats["nodes"] >= max_nodes:
                complete = False
                reasons.append(f"the search budget of {max_nodes} QPs was used up")
                open_bounds.append(-np.inf)
                break
            res = qp.solve_fast(pat)
            stats["nodes"] += 1
            stats["leaves"] += 1
            if res["status"] != 0:
                complete = False
                reasons.append("a pattern QP failed")
                open_bounds.append(-np.inf)
                continue
            v = res["objective"]
            if v < best_val:
                runner_up = min(runner_up, best_val)
                best_val, best = v, (pat, res)
            else:
                runner_up = min(runner_up, v)
    else:
        # Each open node carries its parent's relaxed optimum: a valid lower bound
        # for it, since a child's feasible set lies inside the parent's relaxation.
        # Neurons with equal outer weights are interchangeable until a decided example
        # tells them apart: ``classes`` holds those still interchangeable at a node,
        # and of the children that differ only by permuting a class one is kept
        # (they have equal optima): the canonical one activates a prefix of each class.
        root_classes = tuple(tuple(int(k) for k in np.flatnonzero(signs == v)) for v in np.unique(signs))
        stack = [([None] * n, -np.inf, root_classes)]
        while stack:
            partial, parent_lb, classes = stack.pop()
            if stats["nodes"] >= max_nodes:
                complete = False
                reasons.append(f"the search budget of {max_nodes} QPs was used up")
                open_bounds.append(parent_lb)
                open_bounds.extend(b for _, b, _ in stack)
                break
            res = qp.solve_fast(partial)
            stats["nodes"] += 1
            if res["status"] != 0:
                # Numerical failure: the subtree can be neither pruned nor closed.
                complete = False
                reasons.append("a relaxed QP failed")
                open_bounds.append(parent_lb)
                continue
            lb = res["objective"]
            undecided = [i for i, A in enumerate(partial) if A is None]
            if lb >= best_val - rel * max(abs(best_val), 1e-300):
                stats["pruned"] += 1
                stats["patterns_pruned"] += count(partial)
                min_pruned = min(min_pruned, lb)
                continue
            beta = res["z"].reshape(m, n)
            if not undecided:
                stats["leaves"] += 1
                runner_up = min(runner_up, best_val)
                best_val, best = lb, (list(partial), res)
                continue
            viol = _violations(beta, y, signs)
            worst = max(undecided, key=lambda i: viol[i])
            if viol[worst] <= ftol:
                # The relaxed optimum is feasible: optimal for the whole subtree.
                stats["closed_feasible"] += 1
                pat = _pattern_of(beta, y, signs, pieces_all, 1e-12 * float(np.max(np.abs(beta))))
                pat = [A if partial[i] is None else partial[i] for i, A in enumerate(pat)]
                full = solve_full(pat)
                if full["status"] == 0 and full["objective"] < best_val:
                    runner_up = min(runner_up, best_val)
                    best_val, best = full["objective"], (pat, full)
                continue
            col = beta[:, worst]
            natural = tuple(int(k) for k in np.flatnonzero(col > 0))
            canonical = []
            for A in pieces_all[worst]:
                if all(tuple(k for k in C if k in A) == C[:sum(k in A for k in C)] for C in classes):
                    canonical.append(A)
                else:
                    child = list(partial)
                    child[worst] = A
                    stats["patterns_by_symmetry"] += count(child)
            kids = sorted(canonical, key=lambda A: (A != natural, len(A)))
            for A in reversed(kids):  # the natural piece is popped first
                child = list(partial)
                child[worst] = A
                split = []
                for C in classes:
                    inside = tuple(k for k in C if k in A)
                    outside = tuple(k for k in C if k not in A)
                    split.extend(c for c in (inside, outside) if c)
                stack.append((child, lb, tuple(split)))

    pattern, res = best
    if not np.isfinite(best_val):
        raise RuntimeError("no activation pattern could be solved; K may be badly conditioned")
    # Re-solve the winning piece in raw prediction coordinates: this gives the
    # multipliers of the KKT certificate (and an independent second solve).
    res = qp.solve(pattern, z0=res["z"])
    if res["status"] != 0 or abs(res["objective"] - best_val) > 1e-8 * max(best_val, 1e-300):
        complete = False
        reasons.append("the re-solve of the winning pattern disagreed with the search")
    # Report the smallest piece that holds the solution (ties on a boundary
    # such as beta_minus,i = 0 belong to both S1 and S2; S1 is reported).
    pattern = _pattern_of(res["z"].reshape(m, n), y, signs, pieces_all, 1e-12 * float(np.max(np.abs(res["z"]))))
    beta = res["z"].reshape(m, n).copy()
    alpha = _ksolve(L, beta.T).T.copy()
    W = None if X is None else alpha @ X
    if W is not None:
        beta_chk = W @ X.T
    else:
        beta_chk = beta
    cert = _certificate_multi(res, K, Kinv, X, signs, y, m, n)
    if X is not None:
        # Primal feasibility measured with X itself, not through K^{-1}.
        ymax = max(float(np.max(np.abs(y))), 1e-300)
        cert = dataclasses.replace(
            cert, primal_feasibility=max(cert.primal_feasibility, float(np.max(_violations(beta_chk, y, signs))) / ymax)
        )
    active = np.zeros((m, n), dtype=bool)
    for i, A in enumerate(pattern):
        active[list(A), i] = True
    lower_bound = best_val if complete else min([best_val] + open_bounds)
    search = SearchCertificate(
        optimum=float(best_val), lower_bound=float(lower_bound), complete=complete, n_patterns=n_patterns,
        nodes=stats["nodes"], pruned=stats["pruned"], closed_feasible=stats["closed_feasible"], leaves=stats["leaves"],
        patterns_pruned=int(stats["patterns_pruned"]), patterns_by_symmetry=int(stats["patterns_by_symmetry"]),
        min_pruned_bound=float(min_pruned), runner_up=float(runner_up),
        tol=rel,
    )
    kind = "exact" if complete else "upper bound (best candidate)"
    msg = (
        f"{'global optimum' if complete else 'best candidate (' + '; '.join(dict.fromkeys(reasons)) + ')'} "
        f"over {n_patterns} activation patterns: {stats['nodes']} QPs, {stats['pruned']} subtrees pruned "
        f"({stats['patterns_pruned']} patterns), {stats['closed_feasible']} closed by a feasible relaxation; {cert}"
    )
    return MinNormSolution(
        W=W, alpha=alpha, beta=beta_chk if X is not None else beta, signs=signs.copy(), objective=float(0.5 * np.sum(alpha * beta)),
        active_set=active, partition=_lemma4_partition(pattern, y, signs), certificate=cert, search=search,
        exact=complete, kind=kind, success=True, status=0 if complete else 1, message=msg, nit=stats["nodes"],
    )


# ----------------------------------------------------------------------------- public


def minnorm(
    X=None,
    y=None,
    *,
    signs: Sequence[float] = (1,),
    gram=None,
    method: str = "bnb",
    max_nodes: int = 5_000,
    assignment=None,
    tol: float = 1e-10,
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
    tol : float, default 1e-10
        Relative pruning tolerance: a subtree is pruned when its lower bound is
        at least ``optimum * (1 - tol)``.

    Returns
    -------
    MinNormSolution
    """
    if method not in ("bnb", "exhaustive"):
        raise ValueError(f"method must be 'bnb' or 'exhaustive', got {method!r}")
    max_nodes = check_int(max_nodes, "max_nodes", minimum=1)
    X, K, y = _prepare(X, y, gram)
    signs_arr = as_float_array(signs, "signs", ndim=1)
    if np.any(signs_arr == 0):
        raise ValueError("signs must be non-zero")
    if signs_arr.size == 1:
        _check_pd(K)
        return _minnorm_single(X, K, y, float(signs_arr[0]))
    return _minnorm_multi(X, K, y, signs_arr, max_nodes=max_nodes, method=method, assignment=assignment, tol=tol)
