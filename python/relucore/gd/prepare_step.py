"""The C++ prepare step (``relucore/gd/prepare.hpp``, ``_core.prepare_batch``) on a validated batch.

:func:`prepare_start` forms K (unless given), computes mu_1(K) only where a rule needs it, solves
for alpha0 (Cholesky; the minimum-norm solution where K is singular and the init allows it) and
builds W0; a refusal comes back as the error text of docs/errors.md.
"""

from __future__ import annotations

import numpy as np

from relucore import _core
from relucore._validation import check_gram_finite

__all__ = ["prepare_start"]


def prepare_start(X, Kin, signs_arr, beta0, W0, beta_mode, solve, eta_given, need_mu1, loss, n_threads, init_name):
    """The C++ prepare step (relucore/gd/prepare.hpp) on a validated batch; a refusal is raised here
    with the message of docs/errors.md. Returns ``(K, mu1, alpha0, beta0, W0)`` (mu1 NaN where unneeded)."""
    B, n = (Kin if X is None else X).shape[:2]
    m = signs_arr.shape[-1]
    K = np.empty((B, n, n)) if Kin is None else np.array(Kin, dtype=float, order="C")
    beta0 = np.empty((B, m, n)) if beta0 is None else np.array(beta0, dtype=float, order="C")
    if X is not None:
        X = np.ascontiguousarray(X, dtype=float)
        W0 = np.empty((B, m, X.shape[2])) if W0 is None else np.array(W0, dtype=float, order="C")
    alpha0 = np.zeros((B, m, n))
    mu = np.full((B, n), np.nan)
    mu1 = np.empty(B)
    check = np.empty(B, dtype=np.int32)
    eta_arr = np.zeros(B) if eta_given is None else np.ascontiguousarray(eta_given, dtype=float)
    _core.prepare_batch(
        X=X,
        K=K,
        # (B, m) outer weights: the row of least norm, whose step bound is the most demanding.
        outer=signs_arr if signs_arr.ndim == 1 else signs_arr[np.argmin(np.sum(signs_arr**2, axis=1))],
        beta0=beta0,
        alpha0=alpha0,
        W0=W0 if X is not None else None,
        mu=mu,
        mu1=mu1,
        check=check,
        eta=eta_arr,
        gram_given=Kin is not None,
        need_mu1=need_mu1,
        solve=solve,
        beta=beta_mode,
        loss=getattr(_core.Loss, loss),
        n_threads=n_threads,
    )
    if check.any():
        _refuse(check, mu, X, K, Kin is not None, init_name)
    return K, mu1, alpha0, beta0, (W0 if X is not None else None)


def _refuse(check, mu, X, K, gram_given, init_name) -> None:
    """Raises the error of docs/errors.md for the first problem the C++ prepare step refused."""
    b = int(np.flatnonzero(check)[0])
    if check[b] == 3:  # StartCheck::gram_not_finite
        check_gram_finite(K[b : b + 1], None if X is None else X[b : b + 1])
    mu1, mun = mu[b, -1], mu[b, 0]
    if not mu1 > 0:
        raise ValueError(
            "gram is zero or negative definite; a Gram matrix X X^T is positive semidefinite and non-zero"
            if gram_given
            else "X is all zeros (K = X X^T vanishes); nothing can be trained"
        )
    if gram_given and mun < -1e-10 * mu1:
        raise ValueError(
            f"gram is not positive semidefinite: smallest eigenvalue {mun:.3g} (largest {mu1:.3g}); "
            "a Gram matrix X X^T has none below 0"
        )
    what = "gram" if gram_given else "X"
    if mu1 < np.finfo(float).tiny:
        raise ValueError(
            f"{what} is too small: the largest eigenvalue of K = X X^T is {mu1:.3g}, below the smallest "
            f"normal float64 ({np.finfo(float).tiny:.3g}), so K has lost its precision; rescale {what}"
        )
    with np.errstate(over="ignore", divide="ignore"):
        cond = mu1 / mun if mun > 0 else np.inf
    n = mu.shape[1]
    d_txt = f", d={X.shape[2]}" if X is not None else ""
    raise ValueError(
        f"X is rank-deficient or badly conditioned: cond(K) = {cond:.3g} (n={n}{d_txt}); "
        f"init={init_name!r} needs K = X X^T invertible (n <= d and linearly independent examples)"
    )
