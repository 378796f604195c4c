"""The C++ prepare step (``relucore/gd/prepare.hpp``, ``_core.prepare_batch``) on a validated batch.

:func:`prepare_start` forms K (unless given), computes mu_1(K) only where a rule needs it, solves
for alpha0 (Cholesky; the minimum-norm solution where K is singular and the init allows it),
builds W0, runs every numerical check (the labels' scale, K, a finite start and starting loss,
the step) and writes the default step and tolerance; a refusal comes back from C++
(relucore/gd/refusal.hpp) as the error text of docs/errors.md.
"""

from __future__ import annotations

import numpy as np

from relucore import _core

__all__ = ["prepare_start", "gram_is_lazy"]


#: The C++ defaults of the prepare step's settings (a field equal to its default is not set),
#: read once, because a getter of a native enum is slow on train's fixed cost.
_DEFAULT_SOLVE = _core.PrepareSettings().solve
_DEFAULT_MODEL = (_core.PrepareSettings().loss.name, _core.PrepareSettings().activation.name)


def prepare_start(
    X,
    Kin,
    y,
    signs_arr,
    *,
    beta0,
    W0,
    beta_mode,
    solve,
    init_name,
    loss="square",
    eta=None,
    tol=None,
    eps_default=False,
    C_alpha=None,
    activation="relu",
    leaky_slope=None,
    complete=True,
    n_threads=0,
    W_room=False,
    rescale=False,
    not_scale_free="",
    offsets=None,
):
    """The C++ prepare step (relucore/gd/prepare.hpp) on a batch validated in types and shapes.

    ``y`` (B, n) and ``signs_arr`` (m,) or (B, m) are C-contiguous float64 arrays.
    ``eta`` (B,) the given steps or None (the default step), ``tol`` a given tolerance or None
    (the default of the loss); ``eps_default``: the offsets are the default ones (for
    ``StartBeta.positive`` with ``C_alpha``, C++ writes them into beta0; otherwise beta0 holds
    them and the flag names C_alpha in the messages). ``complete=False`` computes the start alone (no checks,
    eta and tol None), for a caller that replaces the start of a problem prepared already. ``rescale``: a
    problem far from unit scale is prepared on its exactly rescaled copy (PrepareRequest::rescale of
    relucore/gd/prepare.hpp: the given eta, tol, offsets and start, all in the caller's units, are mapped
    into the copy's), or refused where ``not_scale_free`` names what makes the model not homogeneous.
    ``offsets``: ``(eps (B, m, n) or None for the default, assignment (B, n) or None, C_g)`` define beta0 of
    the positive (no assignment) or disjoint start, computed in C++ in the units each problem is prepared
    in (StartOffsets of relucore/gd/prepare.hpp; ``C_alpha`` for the default offsets).
    Returns ``(K, mu1, alpha0, beta0, W0, eta, tol, exponents)``: mu1 NaN where unneeded; K None where
    this step does not read it (an array init with n > d rows, see :func:`gram_is_lazy`); ``exponents``
    ``(ex, ey)`` (B,) int arrays where some problem runs rescaled (relucore._scaling: 0, 0 for the
    others; every output of such a problem is in its copy's units), else None. A refusal raises
    ValueError with the message of docs/errors.md.
    """
    B, n = (Kin if X is None else X).shape[:2]
    lazy = Kin is None and gram_is_lazy(X, beta_mode, solve)
    m = signs_arr.shape[-1]
    K = np.empty((B, n, n)) if Kin is None else np.array(Kin, dtype=float, order="C")
    beta0 = np.empty((B, m, n)) if beta0 is None else np.array(beta0, dtype=float, order="C")
    if X is not None:
        X = np.ascontiguousarray(X, dtype=float)
        if W_room:
            block = np.empty((2, B, m, X.shape[2]))
            if W0 is not None:
                block[0] = W0
            W0 = block[0]
        else:
            W0 = np.empty((B, m, X.shape[2])) if W0 is None else np.array(W0, dtype=float, order="C")
    alpha0 = np.zeros((B, m, n))
    mu1 = np.empty(B)
    eta_arr = np.zeros(B) if eta is None else np.array(eta, dtype=float, order="C")
    tol_arr = np.empty(B)
    # Only the fields that differ from the C++ defaults are set (a call is on train's fixed cost).
    s = _core.PrepareSettings()
    s.beta = beta_mode
    if solve != _DEFAULT_SOLVE:
        s.solve = solve
    if Kin is not None:
        s.gram_given = True
    if not complete:
        s.complete = False
    if lazy:
        s.lazy_gram = True
    if loss != _DEFAULT_MODEL[0]:
        s.loss = getattr(_core.Loss, loss)
    if activation != _DEFAULT_MODEL[1]:
        s.activation = getattr(_core.Activation, activation)
        s.leaky_slope = leaky_slope
    if tol is not None:
        s.tol = tol
    if not eps_default:
        s.eps = -1.0
    if C_alpha is not None:
        s.C_alpha = C_alpha
    exps = None
    if rescale:
        s.rescale = True
        exps = np.empty((2, B), dtype=np.int64)
        if not_scale_free:
            s.not_scale_free = not_scale_free
    # The arrays go positionally (X, y, K, outer, beta0, alpha0, W0, mu1, eta, tol, settings, init, n_threads,
    # exponents): pybind11 looks every declared parameter up by name in a call's keywords, which is on
    # train's fixed cost.
    args = (X, y, K, signs_arr, beta0, alpha0, W0 if X is not None else None, mu1, eta_arr, tol_arr, s, init_name)
    if offsets is None:
        flagged = _core.prepare_batch(*args, n_threads, exps)
    else:
        flagged = _core.prepare_batch(
            *args, n_threads, exps, from_offsets=True, offsets=offsets[0], assignment=offsets[1], C_g=offsets[2]
        )
    W0 = (block if W_room else W0) if X is not None else None
    exponents = None if flagged == 0 or not exps.any() else (exps[0], exps[1])
    if not complete:
        return (None if lazy else K), mu1, alpha0, beta0, W0, None, None, exponents
    return (None if lazy else K), mu1, alpha0, beta0, W0, eta_arr, tol_arr, exponents


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
