"""Activation patterns of several neurons (Lai et al. 2026, Lemma 4, program (9), eq. (52)):
the admissible pieces of each example, the convex QP of a (partial) pattern, and the KKT
certificate of a solved pattern."""

from __future__ import annotations

import itertools
from typing import List, Optional, Sequence, Tuple

import numpy as np

from relucore import _core
from relucore.theory.minnorm.linalg import knorm
from relucore.theory.minnorm.results import KKTCertificate

__all__ = [
    "admissible_pieces",
    "PatternQP",
    "violations",
    "pattern_of",
    "certificate_multi",
    "lemma4_partition",
    "structured_pattern",
]


def admissible_pieces(yi: float, signs: np.ndarray) -> List[Tuple[int, ...]]:
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


class PatternQP:
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
            H[k * n : (k + 1) * n, k * n : (k + 1) * n] = Kinv
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
        out = _core.qp_primal(
            H=self.H, c=self.c, E=np.ascontiguousarray(E), e=e, lower=lower, upper=upper, z0=z, state0=state
        )
        self.nsolves += 1
        z = out.z
        obj = 0.5 * float(z @ self.H @ z)
        return {
            "z": z,
            "nu": out.nu,
            "r": out.r,
            "E": E,
            "lower": lower,
            "upper": upper,
            "_e": e,
            "status": int(out.status),
            "objective": obj,
        }

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
        # (scipy.sparse is imported here, not at module level: it is slow to import, and only
        # the pattern search needs it.)
        from scipy import sparse

        T = sparse.csc_matrix((tv, (ti, tj)), shape=(N, nt))
        TtH = np.asarray(T.T @ self.H)  # (nt, N); H symmetric, so this is (H T)^T
        Ht = np.ascontiguousarray(np.asarray(T.T @ TtH.T))
        Ht = 0.5 * (Ht + Ht.T)
        ct = -(TtH @ f)
        out = _core.qp_box(H=Ht, c=ct, lower=lower, upper=upper)
        self.nsolves += 1
        z = T @ out.z + f
        obj = 0.5 * float(z @ (self.H @ z))
        return {"z": z, "status": int(out.status), "objective": obj}


def violations(beta: np.ndarray, y: np.ndarray, signs: np.ndarray) -> np.ndarray:
    return np.abs(signs @ np.maximum(beta, 0.0) - y)


def pattern_of(beta: np.ndarray, y: np.ndarray, signs: np.ndarray, pieces_all, tol: float) -> List[Tuple[int, ...]]:
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


def certificate_multi(res: dict, K: np.ndarray, Kinv: np.ndarray, X, signs, y, m, n) -> KKTCertificate:
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
        stat = knorm(K, alpha - phi) / max(knorm(K, alpha), 1e-300)
    ymax = max(float(np.max(np.abs(y))), 1e-300)
    eq = float(np.max(np.abs(E @ z - res["_e"]), initial=0.0)) if E.size else 0.0
    bnd = float(np.max(np.maximum(lower - z, 0.0), initial=0.0)) + float(
        np.max(np.maximum(z - upper, 0.0), initial=0.0)
    )
    fitres = float(np.max(violations(beta, y, signs)))
    primal = max(eq, bnd, fitres) / ymax
    mscale = max(float(np.max(np.abs(np.concatenate([rho, nu]))) if (rho.size + nu.size) else 0.0), 1e-300)
    dual = float(np.max(wrong, initial=0.0)) / mscale
    slack = np.where(np.isfinite(lower), z - np.where(np.isfinite(lower), lower, 0.0), 0.0)
    slack_u = np.where(np.isfinite(upper), np.where(np.isfinite(upper), upper, 0.0) - z, 0.0)
    comp = float(
        np.max(np.maximum(np.abs(np.maximum(rho, 0.0) * slack), np.abs(np.minimum(rho, 0.0) * slack_u)), initial=0.0)
    )
    comp /= max(mscale * ymax, 1e-300)
    return KKTCertificate(stat, primal, dual, comp)


def lemma4_partition(A_list, y, signs) -> Optional[np.ndarray]:
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


def structured_pattern(y, signs, assignment) -> List[Tuple[int, ...]]:
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
