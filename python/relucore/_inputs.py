"""Problem inputs shared by every layer: a Gram matrix from X, or a checked ``gram=`` argument.

One rule: ``K = X X^T`` is formed by the C++ kernel (``_core.gram_batch``) and checked
finite; a given ``gram`` must be square, finite, symmetric (to 1e-10) and is
symmetrised; when both X and gram are given, gram is used.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from relucore import _core
from relucore._validation import as_float_array, check_consistent_length, check_gram_finite

__all__ = ["gram_of", "gram_of_batch", "checked_gram", "single_problem"]


def gram_of_batch(X: np.ndarray, n_threads: int = 0) -> np.ndarray:
    """``K[b] = X[b] X[b]^T`` for X of shape (B, n, d), checked finite (the error names X)."""
    K = np.empty((X.shape[0], X.shape[1], X.shape[1]))
    _core.gram_batch(X, K, n_threads)
    check_gram_finite(K, X)
    return K


def gram_of(X: np.ndarray) -> np.ndarray:
    """``K = X X^T`` for one X of shape (n, d)."""
    return gram_of_batch(X[None])[0]


def checked_gram(gram, n: Optional[int] = None) -> np.ndarray:
    """A user's (n, n) Gram matrix: finite, square, of n rows when n is given, symmetric; symmetrised."""
    K = as_float_array(gram, "gram", ndim=2)
    check_gram_finite(K)
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"gram must be square, got shape {K.shape}")
    if n is not None:
        check_consistent_length(["gram", "y"], [K.shape[0], n])
    if not np.allclose(K, K.T, rtol=1e-10, atol=0):
        raise ValueError("gram must be symmetric")
    return 0.5 * (K + K.T)


def single_problem(X, y, gram) -> Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]:
    """``(X or None, K, y)`` of one problem given X and/or gram (X (n, d), gram (n, n), y (n,))."""
    y = as_float_array(y, "y", ndim=1)
    if X is None and gram is None:
        raise TypeError("X is required (or pass gram= for Gram-only mode)")
    if X is not None:
        X = as_float_array(X, "X", ndim=2)
        check_consistent_length(["X", "y"], [X.shape[0], y.shape[0]])
    K = checked_gram(gram, y.shape[0]) if gram is not None else gram_of(X)
    return X, K, y
