"""The initialisations of Lai et al. 2026 (Sec. 3, Assumption 4) in primal-dual coordinates (docs/math.md).

Each returns what defines the start of a batch: ``beta0`` (B, m, n) for the positive and
disjoint inits, ``W0`` (B, m, d) for the gaussian init (the draw z^T in Gram-only mode).
The prepare step (relucore/gd/prepare.hpp, through ``gd/prepare.py``) then computes
``beta0 = X W0^T``, ``alpha0`` with ``K alpha0 = beta0`` (the minimum-norm solution when K
is singular, which only the gaussian and array inits allow) and ``W0 = alpha0 X``. For
``train`` it computes the positive and disjoint starts' beta0 itself from their offsets and
:func:`disjoint_assignment` (``StartOffsets``), in the units each problem is prepared in.
"""

from __future__ import annotations

import numpy as np

from relucore import _core
from relucore._validation import as_float_array
from relucore.gd.defaults import default_eps  # noqa: F401  (re-exported for callers of the init rules)

__all__ = [
    "positive_init",
    "disjoint_init",
    "disjoint_assignment",
    "gaussian_init",
    "default_assignment",
    "default_eps",
]


def _broadcast_eps(eps, B: int, m: int, n: int) -> np.ndarray:
    """eps as (B, m, n) from a scalar, (n,), (m, n), (B, 1, 1) or (B, m, n).

    A 1-D eps is always per example: one value per problem is (B, 1, 1), so a
    batch with B == n cannot be misread.
    """
    e = as_float_array(eps, "eps", ndim=(0, 1, 2, 3))
    if e.ndim == 0:
        out = np.full((B, m, n), float(e))
    elif e.ndim == 1 and e.shape[0] == n:
        out = np.broadcast_to(e, (B, m, n)).copy()
    elif e.ndim == 2 and e.shape == (m, n):
        out = np.broadcast_to(e, (B, m, n)).copy()
    elif e.ndim == 3 and e.shape[0] == B and e.shape[1] in (1, m) and e.shape[2] in (1, n):
        # (B, m, n), or (B, 1, 1) for one value per problem (the default eps).
        out = np.broadcast_to(e, (B, m, n)).copy()
    else:
        raise ValueError(
            f"eps must be a scalar or of shape (n,), (m, n) or (B, m, n) with n={n}, m={m}, B={B}; got {e.shape}"
        )
    if not np.all(out > 0):
        raise ValueError("eps must be positive (the 'positive' and 'disjoint' inits need 0 < eps)")
    return out


def positive_init(y, m, eps) -> np.ndarray:
    """beta0 = eps_k > 0 for every neuron (Theorems 1, 3): ``w_k = X^T K^{-1} eps_k``."""
    B, n = y.shape
    return _broadcast_eps(eps, B, m, n)


def default_assignment(y: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Round-robin assignment of each example to a neuron whose sign matches its label
    (relucore/gd/starts.hpp).

    Returns (B, n) ints; raises if some label's sign has no neuron (or a label is 0).
    """
    return _core.default_assignment(y, signs)


def disjoint_init(y, signs, eps, assignment, C_g) -> np.ndarray:
    """Appendix D, Assumption 4: ``beta_k = (1/C_g) A_k y + eps_k`` (relucore/gd/starts.hpp).

    ``(A_k)_ii = 0`` if ``a_i = k`` or ``s_k y_i < 0``, else ``-sign(y_i)``.
    """
    B, n = y.shape
    a = disjoint_assignment(y, signs, assignment)
    return _core.disjoint_start(y, signs, eps=_broadcast_eps(eps, B, signs.size, n), assignment=a, C_g=C_g)


def disjoint_assignment(y, signs, assignment) -> np.ndarray:
    """The assignment of the disjoint init, (B, n) int64: the given one checked (Assumption 4), or the
    default round-robin one (:func:`default_assignment`)."""
    B, n = y.shape
    m = signs.size
    if assignment is None:
        a = default_assignment(y, signs)
    else:
        try:
            a = np.asarray(assignment)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"assignment must be an array of integers of shape (n,) or (B, n): {exc}") from None
        if a.dtype.kind not in "iu":
            raise TypeError(f"assignment must hold integers, got dtype {a.dtype}")
        if a.shape not in ((n,), (B, n)):
            raise ValueError(f"assignment must have shape (n,) or (B, n) with n={n}, B={B}; got {a.shape}")
        a = np.broadcast_to(a, (B, n)).astype(np.int64)
        if a.min() < 0 or a.max() >= m:
            raise ValueError(f"assignment entries must lie in [0, m) with m={m}")
        if not np.all(signs[a] * y > 0):
            raise ValueError(
                "assignment must satisfy s_{a_i} y_i > 0 for every example (Assumption 4): each example goes to a neuron whose sign (signs) matches its label (y)"
            )
    return np.ascontiguousarray(a, dtype=np.int64)


def gaussian_init(X, B, n, m, scale, rng) -> np.ndarray:
    """``w_k ~ N(0, scale^2 I_d)``: W0 (B, m, d). In Gram-only mode (X None) ``beta_k ~ N(0, scale^2 K)``
    is drawn directly as ``beta = scale L z`` with ``K = L L^T``: the draw z^T (B, m, n), which the
    prepare step turns into beta0 = (L z)^T and alpha0 = (L^{-T} z)^T."""
    if X is not None:
        return scale * rng.standard_normal((B, m, X.shape[2]))
    z = scale * rng.standard_normal((B, n, m))
    return np.ascontiguousarray(z.swapaxes(1, 2))
