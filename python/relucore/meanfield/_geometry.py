"""Exact combinatorics of the training inputs: linear dichotomies and cells.

Both counts reduce to the number of regions of a central hyperplane
arrangement {z in R^D : z^T u_j = 0}, found by a depth-first search over sign
vectors in which every node is one linear-programming feasibility problem
(scipy's HiGHS): a prefix (s_1, ..., s_k) of signs is kept when some z
satisfies s_j z^T u_j >= 1 for j <= k (by scaling, the same as strict
inequalities). A feasible node's witness z already decides one child for free
(the sign of z^T u_{k+1}, after rescaling), so the search solves at most one
LP per node: O(M * regions) LPs instead of 2^M.
"""

from __future__ import annotations

import functools
from typing import List, Optional, Tuple

import numpy as np

from relucore._docstrings import shared_sections

__all__ = ["count_dichotomies", "dichotomies", "count_cells"]

_points_doc = shared_sections(
    points="""
    X : array_like, shape (M, d) or (M,)
        The input points (a 1-D array is M scalar inputs).
    """
)


def _feasible(U: np.ndarray, signs: np.ndarray) -> Optional[np.ndarray]:
    """A z with signs * (U @ z) >= 1, or None when there is none."""
    from scipy.optimize import linprog

    D = U.shape[1]
    res = linprog(
        np.zeros(D),
        A_ub=-(signs[:, None] * U),
        b_ub=-np.ones(U.shape[0]),
        bounds=[(None, None)] * D,
        method="highs",
    )
    if res.status == 0:
        return res.x
    if res.status == 2:
        return None
    raise RuntimeError(f"linprog failed while enumerating sign patterns: {res.message}")


def _regions(U: np.ndarray, first_sign: int = 1) -> List[np.ndarray]:
    """Sign vectors of the regions of {z : z^T u_j = 0} with s_1 = first_sign."""
    M = U.shape[0]
    out: List[np.ndarray] = []
    # Each stack entry: signs chosen so far and a witness z for them.
    s0 = np.array([first_sign], dtype=float)
    z0 = _feasible(U[:1], s0)
    if z0 is None:
        return out
    stack: List[Tuple[np.ndarray, np.ndarray]] = [(s0, z0)]
    while stack:
        signs, z = stack.pop()
        k = signs.size
        if k == M:
            out.append(signs.astype(np.int8))
            continue
        v = float(U[k] @ z)
        free = 0 if v == 0.0 else (1 if v > 0 else -1)
        for s in (1, -1):
            child = np.append(signs, s)
            if s == free:
                # Rescale the witness so that the new constraint holds too.
                zc = z * max(1.0, 1.0 / abs(v))
            else:
                zc = _feasible(U[: k + 1], child)
                if zc is None:
                    continue
            stack.append((child, zc))
    out.sort(key=lambda s: tuple(-s))
    return out


def _homogenise(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    Xu = np.unique(X, axis=0)
    return np.hstack([Xu, np.ones((Xu.shape[0], 1))])


@_points_doc
def dichotomies(X) -> np.ndarray:
    """The linear dichotomies of the rows of ``X``, one sign vector per dichotomy.

    A linear dichotomy (Liang et al. 2026, Sec. 4.1) is an *unordered*
    partition X = X+ ⊔ X- of the (distinct) input points that an affine
    hyperplane separates strictly: some (w, b) has w^T x + b > 0 on X+ and
    < 0 on X-. The trivial partition (X, ∅) counts. Each dichotomy is returned
    as the sign vector on ``np.unique(X, axis=0)`` whose first entry is +1
    (the labelled sign patterns are these and their negatives, 2P in all).

    Parameters
    ----------
    {points}

    Returns
    -------
    ndarray of int8, shape (P, M_distinct)
        One sign vector per dichotomy, on the distinct points in ``np.unique`` order.
    """
    U = _homogenise(X)
    out = _dichotomies_cached(U.tobytes(), U.shape)
    return out.copy()


@functools.lru_cache(maxsize=64)
def _dichotomies_cached(buf: bytes, shape: Tuple[int, int]) -> np.ndarray:
    # Sweeps analyse many runs on the same inputs: enumerate once.
    U = np.frombuffer(buf, dtype=np.float64).reshape(shape)
    regions = _regions(U, first_sign=1)
    return np.array(regions, dtype=np.int8).reshape(len(regions), U.shape[0])


@_points_doc
def count_dichotomies(X) -> int:
    """P(X): the number of linear dichotomies of the inputs (exact).

    See :func:`dichotomies` for the definition. For M points in general
    position in R^d (no d + 1 of them on a common affine hyperplane) this is
    Cover's count halved, P = sum_{k=0..d} C(M-1, k); degenerate
    configurations (e.g. collinear points) have fewer. Duplicate points count
    once. Liang et al. (2026) bound the number of directions a collapsed network
    keeps by ``2P - 1`` (Sec. 4).

    Parameters
    ----------
    {points}

    Returns
    -------
    int
        P(X).
    """
    return int(dichotomies(X).shape[0])


def count_cells(normals, offsets) -> int:
    """Number of open cells of the affine arrangement {x : n_h^T x + c_h = 0} in R^d.

    Parameters
    ----------
    normals : array, shape (H, d)
        The normal ``n_h`` of each hyperplane.
    offsets : array, shape (H,)
        The offset ``c_h`` of each hyperplane.

    Returns
    -------
    int
        The number of non-empty open cells.

    Notes
    -----
    A cell with sign vector s is non-empty iff some (x, t), t > 0, has
    s_h (n_h^T x + c_h t) > 0 for all h: the regions of the central
    arrangement in R^{d+1} formed by the rows (n_h, c_h) together with
    (0, ..., 0, 1), whose sign is fixed to +.
    """
    normals = np.atleast_2d(np.asarray(normals, dtype=float))
    offsets = np.asarray(offsets, dtype=float).reshape(-1)
    if offsets.size == 0:
        return 1
    d = normals.shape[1]
    U = np.vstack([np.r_[np.zeros(d), 1.0], np.hstack([normals, offsets[:, None]])])
    return len(_regions(U, first_sign=1))
