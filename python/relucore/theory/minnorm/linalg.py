"""Gram-space linear algebra of the minimum-norm problems: the Cholesky factor of K and solves with it."""

from __future__ import annotations

import numpy as np

from relucore._core import defaults as _cpp
from relucore._inputs import gram_of, single_problem  # noqa: F401  (re-exported)

__all__ = ["check_pd", "kinv", "ksolve", "knorm"]


def check_pd(K: np.ndarray) -> np.ndarray:
    """Cholesky factor of K, or a ValueError saying X must have full row rank."""
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        raise ValueError(
            "K = X X^T is singular: the minimum-norm problems need X of full row rank (n <= d, independent examples)"
        ) from None
    if np.min(np.diag(L)) ** 2 < _cpp.minnorm_pivot_rtol * np.max(np.diag(K)):
        raise ValueError("K = X X^T is numerically singular (condition number > 1e13): X needs full row rank")
    return L


def kinv(L: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve

    n = L.shape[0]
    Ki = cho_solve((L, True), np.eye(n))
    return 0.5 * (Ki + Ki.T)


def ksolve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve

    return cho_solve((L, True), B)


def knorm(K: np.ndarray, a: np.ndarray) -> float:
    """sqrt(sum_k a_k^T K a_k) for a of shape (m, n) or (n,)."""
    a2 = np.atleast_2d(a)
    return float(np.sqrt(max(np.einsum("ki,ij,kj->", a2, K, a2), 0.0)))
