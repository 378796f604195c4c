"""The C++ prepare step (``relucore/gd/prepare.hpp``, ``_core.prepare_batch``) on a validated batch.

:func:`prepare_start` forms K (unless given), computes mu_1(K) only where a rule needs it, solves
for alpha0 (Cholesky; the minimum-norm solution where K is singular and the init allows it) and
builds W0; a refusal comes back from C++ (relucore/gd/refusal.hpp) as the error text of docs/errors.md.
"""

from __future__ import annotations

import numpy as np

from relucore import _core

__all__ = ["prepare_start", "gram_is_lazy"]


def prepare_start(
    X, Kin, signs_arr, beta0, W0, beta_mode, solve, eta_given, need_mu1, loss, n_threads, init_name, y=None
):
    """The C++ prepare step (relucore/gd/prepare.hpp) on a validated batch; a refusal is raised there
    with the message of docs/errors.md. Returns ``(K, mu1, alpha0, beta0, W0)`` (mu1 NaN where unneeded;
    K None where this step does not read it: an array init with n > d rows, see :func:`gram_is_lazy`).
    ``y`` (B, n) is read only by the messages of a refusal (None: zeros)."""
    B, n = (Kin if X is None else X).shape[:2]
    lazy = Kin is None and gram_is_lazy(X, beta_mode, solve)
    m = signs_arr.shape[-1]
    K = np.empty((B, n, n)) if Kin is None else np.array(Kin, dtype=float, order="C")
    beta0 = np.empty((B, m, n)) if beta0 is None else np.array(beta0, dtype=float, order="C")
    if X is not None:
        X = np.ascontiguousarray(X, dtype=float)
        W0 = np.empty((B, m, X.shape[2])) if W0 is None else np.array(W0, dtype=float, order="C")
    alpha0 = np.zeros((B, m, n))
    mu1 = np.empty(B)
    eta_arr = np.zeros(B) if eta_given is None else np.array(eta_given, dtype=float, order="C")
    s = _core.PrepareSettings()
    s.gram_given = Kin is not None
    s.need_mu1 = need_mu1
    s.lazy_gram = lazy
    s.solve = solve
    s.beta = beta_mode
    s.loss = getattr(_core.Loss, loss)
    _core.prepare_batch(
        X=X,
        y=np.zeros((B, n)) if y is None else np.ascontiguousarray(y, dtype=float),
        K=K,
        # (B, m) outer weights: the row of least norm, whose step bound is the most demanding.
        outer=signs_arr if signs_arr.ndim == 1 else signs_arr[np.argmin(np.sum(signs_arr**2, axis=1))],
        beta0=beta0,
        alpha0=alpha0,
        W0=W0 if X is not None else None,
        mu1=mu1,
        eta=eta_arr,
        tol=np.empty(B),
        settings=s,
        init=init_name,
        n_threads=n_threads,
    )
    return (None if lazy else K), mu1, alpha0, beta0, (W0 if X is not None else None)


def gram_is_lazy(X, beta_mode, solve) -> bool:
    """Whether the prepare step can leave K = X X^T unformed: starting weights given (beta0 = W0 X^T)
    and alpha0 the minimum-norm solution through the d x d matrix X^T X (n > d rows). K is then
    formed only by a check that cannot be decided from X (relucore/gd/prepare.hpp), and by
    :attr:`Prepared.K <relucore.gd.prepare.Prepared.K>` when an engine or a caller reads it."""
    return (
        X is not None
        and X.shape[1] > X.shape[2]
        and beta_mode == _core.StartBeta.from_weights
        and solve == _core.StartSolve.least_squares
    )
