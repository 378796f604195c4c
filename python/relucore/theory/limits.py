"""Closed-form GD limits of Theorems 1, 3 and 5 (Lai et al. 2026; docs/math.md §5).

In every case GD makes one step from an init in the row space of X, after
which (w.h.p. under Assumptions 1-2) the activation pattern is frozen: neuron
k is active exactly on a set ``S_k`` and GD is linear regression on it
(Lemmas 1-2), so

    w_k^(inf) = argmin_{X_{S_k} w = y_{S_k} / s_k} ||w - w_k^(1)||
              = w_k^(1) + X_{S_k}^T (X_{S_k} X_{S_k}^T)^{-1} (y_{S_k}/s_k - X_{S_k} w_k^(1)).

* Theorem 1 (m = 1, s = +1, all-positive init): ``S = S+``.
* Theorem 3 (m = 2, s = (+1, -1), all-positive init): ``S_plus = S+``, ``S_minus = S-``
  with target ``-y_-``.
* Theorem 5 (disjoint init, Assumption 4): ``S_k = {i : a_i = k}`` with target
  ``s_k y_{S_k}`` (docs/math.md §5: the paper writes ``y_{S_k}``; since ``h = s_k relu(beta_k)``
  on ``S_k`` the target is ``y/s_k = s_k y`` for ``s_k = +-1``).

Everything is computed in dual coordinates (``w_k = X^T alpha_k``), so the
same code serves Gram-only mode.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Optional

import numpy as np

from relucore import _scaling as scaling
from relucore._inputs import single_problem
from relucore._summary import sizes, summarized
from relucore._validation import (
    as_float_array,
    check_choice,
    check_positive,
)
from relucore.gd.defaults import C_ALPHA, C_G
from relucore.gd.limit import refuse_two_layer_run

__all__ = ["predicted_limit", "check_limit", "LimitCheck", "closed_form"]


def closed_form(K, y, signs, beta0, alpha0, eta) -> dict:
    """The one-step-then-linear-regression limit in dual coordinates.

    Parameters
    ----------
    K : (n, n); y : (n,); signs : (m,); beta0, alpha0 : (m, n) the init; eta : float.

    Returns
    -------
    dict with ``alpha1``, ``beta1`` (after one GD step), ``sets`` (m, n) bool
    (``S_k = {i : s_k y_i > 0 and beta0_k,i > 0}``: the examples neuron k keeps),
    ``alpha`` (m, n), ``beta`` (m, n) of the limit.
    """
    m, n = beta0.shape
    h0 = signs @ np.maximum(beta0, 0.0)
    r = h0 - y
    alpha1 = alpha0 - eta * signs[:, None] * (beta0 > 0) * r[None, :]
    beta1 = alpha1 @ K
    sets = (signs[:, None] * y[None, :] > 0) & (beta0 > 0)
    alpha = alpha1.copy()
    for k in range(m):
        S = np.flatnonzero(sets[k])
        if S.size == 0:
            continue
        target = y[S] / signs[k]
        corr = np.linalg.solve(K[np.ix_(S, S)], target - beta1[k, S])
        alpha[k, S] += corr
    return {"alpha1": alpha1, "beta1": beta1, "sets": sets, "alpha": alpha, "beta": alpha @ K}


def _start(X, y, gram, signs, init, eps, eta, assignment, C_g, C_alpha):
    """``(X, K, y, signs, beta0, alpha0, eta, scaling)`` of one problem, prepared as :func:`relucore.train`
    prepares it. Data outside the safe scale range come exactly rescaled (``scaling`` a
    :class:`relucore._scaling.Scaling`, else None), every other value in the rescaled units.

    The one path of ``train`` (``relucore.gd.prepare``): the same checks (finite data, full
    row rank, a K that float64 can hold, eps and eta), the same error messages, and
    bitwise the same starting point and default step as the run the closed form describes.
    """
    from relucore.gd.prepare import prepare

    signs_arr = as_float_array(signs, "signs", ndim=1)
    if np.any(signs_arr == 0):
        raise ValueError("signs must be non-zero")
    m = signs_arr.size
    if init == "positive" and (m > 2 or (m == 2 and signs_arr[0] * signs_arr[1] > 0)):
        raise ValueError(
            "init='positive' closed forms exist for m = 1 (Theorem 1) and m = 2 with opposite signs "
            "(Theorem 3); use init='disjoint' (Theorem 5) for other networks"
        )
    if eta is not None:
        eta = check_positive(eta, "eta")
    p = prepare(
        X, y, gram=gram, signs=signs_arr, init=init, eps=eps, eta=eta, assignment=assignment, C_g=C_g, C_alpha=C_alpha
    )
    if p.batched:
        raise ValueError("X (or gram) and y must hold one problem here: X (n, d) or gram (n, n) with y (n,)")
    if p.scaling is not None:  # data far from unit scale: the closed form of the exactly rescaled copy
        Xs = p.X[0] if p.X is not None else None
        return Xs, p.K[0], p.y[0], signs_arr, p.beta0[0], p.alpha0[0], float(p.eta[0]), p.scaling
    Xa = None if X is None else as_float_array(X, "X", ndim=2)
    return Xa, p.K[0], p.y[0], signs_arr, p.beta0[0], p.alpha0[0], float(p.eta[0]), None


def predicted_limit(
    X=None,
    y=None,
    *,
    signs=(1,),
    init: str = "positive",
    eps=None,
    eta=None,
    assignment=None,
    C_g: float = C_G,
    C_alpha: float = C_ALPHA,
    gram=None,
) -> np.ndarray:
    """Closed-form GD limit of Theorems 1, 3 and 5 (docs/math.md §5).

    Parameters
    ----------
    X : array_like, shape (n, d), optional
        Inputs (full row rank); None with ``gram``.
    y : array_like, shape (n,)
        Labels, non-zero.
    signs : sequence of float, default (1,)
        ``(1,)``: Theorem 1; ``(1, -1)``: Theorem 3; any with ``init="disjoint"``: Theorem 5.
    init : {"positive", "disjoint"}
        The initialisations of docs/math.md §3, built exactly as
        :func:`relucore.train` builds them (same defaults).
    eps : float or array, optional
        Init offsets (default ``y_min / (C_alpha m)``, as in ``train``).
    eta : float, optional
        Step size (default ``1 / (||s||^2 mu_1(K))``, as in ``train``).
    assignment : array of int, optional
        Theorem 5's ``a`` (default round robin over neurons of the right sign).
    C_g, C_alpha : float, default 2 and 10
        Constants of the disjoint init and of the default eps.
    gram : array_like, shape (n, n), optional
        Gram-only mode.

    Returns
    -------
    ndarray
        ``W`` of shape (m, d) (``w_k^(inf)`` as rows), or in Gram-only mode the
        dual coordinates ``alpha`` of shape (m, n) with ``w_k = X^T alpha_k``.
        A batch (``X`` (B, n, d) or ``gram`` (B, n, n) with ``y`` (B, n)) gives
        (B, m, d) or (B, m, n).

    Notes
    -----
    The result is the bare weight array, not a result object: ``predicted_limit(...)``
    plays the role of ``train(...).W`` and of ``minnorm(...).W`` (``.alpha`` in
    Gram-only mode), so compare it with those attributes, e.g.
    ``limit_gap(predicted_limit(X, y), minnorm(X, y).W)``. To know whether the closed
    form describes a given run, use :func:`check_limit`, which returns the limit
    (``W_closed``, ``alpha_closed``) together with the predicted activation sets.
    """
    check_choice(init, "init", ("positive", "disjoint"))
    yb = np.asarray(y) if y is not None else None
    if yb is not None and yb.ndim == 2:
        # A batch: one closed form per problem, stacked.
        B = yb.shape[0]
        Xs = [None] * B if X is None else list(as_float_array(X, "X", ndim=3))
        Gs = [None] * B if gram is None else list(as_float_array(gram, "gram", ndim=3))
        etas = np.broadcast_to(np.asarray(eta if eta is not None else np.nan, dtype=float), (B,))
        if len(Xs) != B or len(Gs) != B:
            raise ValueError("X / gram and y hold different numbers of problems")
        return np.stack(
            [
                predicted_limit(
                    Xs[b],
                    yb[b],
                    signs=signs,
                    init=init,
                    eps=eps,
                    eta=None if np.isnan(etas[b]) else float(etas[b]),
                    assignment=assignment,
                    C_g=C_g,
                    C_alpha=C_alpha,
                    gram=Gs[b],
                )
                for b in range(B)
            ]
        )
    X, K, y, signs_arr, beta0, alpha0, eta, sc = _start(X, y, gram, signs, init, eps, eta, assignment, C_g, C_alpha)
    cf = closed_form(K, y, signs_arr, beta0, alpha0, eta)
    _warn_unless_premise_holds(cf)
    out, unit = (cf["alpha"] @ X, scaling.W) if X is not None else (cf["alpha"], scaling.ALPHA)
    if sc is None:
        return out
    # Computed on the exactly rescaled copy: returned in the caller's units, or refused if float64 cannot hold it.
    sc.check_representable(((out[None], unit),), batched=False)
    return sc.up(out[None], unit)[0]


class PremiseWarning(UserWarning):
    """The closed form's own limit contradicts the premise of its theorem (the pattern after step 1 is
    the predicted sets ``S_k`` and stays frozen): the returned weights are not GD's limit."""


def premise_violations(cf: dict) -> list:
    """What of the theorems' premise a closed form (:func:`closed_form`) contradicts by itself: the
    pattern after step 1, or the limit's own pattern, differing from the predicted sets ``S_k``
    (an entry of ``beta_inf`` outside ``S_k`` that is positive makes the weights fit other examples
    too, so they do not interpolate). Empty when the closed form is self-consistent."""
    sets = cf["sets"]
    out = []
    if not np.array_equal(cf["beta1"] > 0, sets):
        out.append(
            f"the pattern after step 1 differs from the predicted sets in {int(((cf['beta1'] > 0) != sets).sum())} entries"
        )
    if not np.array_equal(cf["beta"] > 0, sets):
        out.append(
            f"the limit's own pattern differs from the predicted sets in {int(((cf['beta'] > 0) != sets).sum())} entries"
        )
    return out


def _warn_unless_premise_holds(cf: dict) -> None:
    why = premise_violations(cf)
    if why:
        warnings.warn(
            "predicted_limit: the premise of Theorems 1/3/5 fails on this problem (" + "; ".join(why) + "), so the "
            "closed form is not GD's limit (it need not interpolate); run train(..., steps=np.inf) for the certified "
            "limit, or check_limit on a run",
            PremiseWarning,
            stacklevel=3,
        )


def _check_title(c: "LimitCheck") -> str:
    m, n = c.alpha_closed.shape
    d = None if c.W_closed is None else c.W_closed.shape[1]
    verdict = "the closed form applies" if c.applies else "the closed form does not apply"
    return f"{sizes(m=m, n=n, d=d)}; {verdict}"


@summarized(title=_check_title)  # rows: the fields that are not arrays (W_closed, mask_step1 when None)
@dataclasses.dataclass(frozen=True)
class LimitCheck:
    """Does a finished run match the closed form of Theorems 1/3/5?

    Attributes
    ----------
    applies : bool
        The closed form describes the run: the activation pattern after step 1
        equals the final one (``frozen_after_step1``), and it is the pattern the
        theorems predict (``pattern_as_predicted``).
    frozen_after_step1 : bool
        Masks after step 1 equal the final masks (from ``history`` when it
        recorded step 1, else ``pattern_stable_step <= 1``).
    pattern_as_predicted : bool
        Final masks equal ``S_k`` (neuron k active exactly on its examples).
    pattern_stable_step : int
        The run's last step at which an activation mask changed.
    distance : float
        ``||W_GD - W_closed||_F`` (Gram-only: ``sqrt(sum_k da_k^T K da_k)``).
    relative_distance : float
        ``distance / ||W_closed||_F``.
    W_closed : ndarray or None
        The closed-form limit (m, d); None in Gram-only mode.
    alpha_closed : ndarray, shape (m, n)
        The dual coordinates of the closed-form limit.
    predicted_sets : ndarray of bool, shape (m, n)
        The sets ``S_k`` the theorems predict each neuron to be active on.
    mask_step1 : ndarray of bool or None
        The masks after step 1, when the run's history recorded step 1.
    mask_final : ndarray of bool
        The run's final masks ``beta > 0``.
    """

    applies: bool
    frozen_after_step1: bool
    pattern_as_predicted: bool
    pattern_stable_step: int
    distance: float
    relative_distance: float
    W_closed: Optional[np.ndarray]
    alpha_closed: np.ndarray
    predicted_sets: np.ndarray
    mask_step1: Optional[np.ndarray]
    mask_final: np.ndarray


def check_limit(result, X=None, y=None, *, gram=None) -> LimitCheck:
    """Compares a :func:`relucore.train` run with the closed form of Theorems 1, 3, 5.

    Lemmas 1-2 of Lai et al. (2026): the activation pattern is frozen after step 1, and
    GD then converges to the closed form of Theorems 1, 3 and 5 (docs/math.md §5).
    The closed form is built from the run's own start (``result.alpha0``,
    ``result.beta0``), signs and step size, so it applies to any eps,
    assignment or constants the run used; the predicted sets are
    ``S_k = {i : s_k y_i > 0, beta0_k,i > 0}`` (``S+``/``S-`` for the positive
    init, ``{i : a_i = k}`` for the disjoint init).

    Parameters
    ----------
    result : TrainResult
        A run (single or batched); record with ``record=1`` (or any record
        that keeps step 1) to compare the masks after step 1 directly.
    X : array_like, shape (n, d), optional
        The run's inputs; None with ``gram``.
    y : array_like, shape (n,)
        The run's labels.
    gram : array_like, shape (n, n), optional
        Gram-only mode.

    Returns
    -------
    LimitCheck, or a list of them (one per problem) for a batched run
    (``X`` of shape (B, n, d) or ``gram`` (B, n, n), ``y`` (B, n)).
    """
    _refuse_other_results(result)
    refuse_two_layer_run("check_limit (the closed forms of Theorems 1, 3, 5)", result)
    if getattr(result, "batched", False):
        return _check_batch(result, X, y, gram)
    X, K, y = single_problem(X, y, gram)
    _check_run_shapes(result, X, K)
    signs = np.asarray(result.signs, dtype=float)
    beta0 = np.asarray(result.beta0, dtype=float)
    alpha0 = np.asarray(result.alpha0, dtype=float)
    cf = closed_form(K, y, signs, beta0, alpha0, float(result.eta))
    mask_final = np.asarray(result.beta) > 0
    mask1 = None
    hist = result.history
    if hist is not None:
        steps = np.asarray(hist.steps)
        idx = np.flatnonzero(steps == 1)
        if idx.size:
            mask1 = np.asarray(hist.mask)[idx[0]].astype(bool)
    if mask1 is not None:
        frozen = bool(np.array_equal(mask1, mask_final)) and int(result.pattern_stable_step) <= 1
    else:
        frozen = int(result.pattern_stable_step) <= 1
    as_predicted = bool(np.array_equal(mask_final, cf["sets"]))
    dalpha = np.asarray(result.alpha) - cf["alpha"]
    if X is not None and result.W is not None:
        Wc = cf["alpha"] @ X
        # The run's weights also carry the (unchanged) component of W0 outside the row space.
        W0 = np.asarray(result.W0) if result.W0 is not None else None
        if W0 is not None:
            Wc = Wc + (W0 - alpha0 @ X)
        dist = float(np.linalg.norm(np.asarray(result.W) - Wc))
        ref = float(np.linalg.norm(Wc))
    else:
        Wc = None
        dist = float(np.sqrt(max(np.einsum("ki,ij,kj->", dalpha, K, dalpha), 0.0)))
        ref = float(np.sqrt(max(np.einsum("ki,ij,kj->", cf["alpha"], K, cf["alpha"]), 0.0)))
    return LimitCheck(
        applies=frozen and as_predicted,
        frozen_after_step1=frozen,
        pattern_as_predicted=as_predicted,
        pattern_stable_step=int(result.pattern_stable_step),
        distance=dist,
        relative_distance=dist / ref if ref > 0 else float("inf"),
        W_closed=Wc,
        alpha_closed=cf["alpha"],
        predicted_sets=cf["sets"],
        mask_step1=mask1,
        mask_final=mask_final,
    )


def _refuse_other_results(result) -> None:
    """check_limit compares a GD run with closed forms built from its first step of size eta: a
    result without GD steps (a flow, a minimum-norm solution, a mean-field run) is refused by name."""
    kind = type(result).__name__
    if all(hasattr(result, a) for a in ("eta", "alpha0", "beta0", "beta", "signs")):
        return
    hint = {
        "FlowResult": "the flow has no first step of size eta; its limit is checked by its own certificate",
        "MinNormSolution": "a minimum-norm solution is the comparison point itself",
        "MeanFieldResult": "mean-field SGD has no closed-form limit",
    }.get(kind, "it takes the result of relucore.train")
    raise TypeError(
        f"check_limit compares a relucore.train run with the closed forms of Theorems 1, 3, 5, not a {kind} "
        f"({hint}); relucore.verify(result, X, y) re-derives the claims of any result"
    )


def _check_run_shapes(result, X, K) -> None:
    """Refuses data of another size than the run's: n from beta, d from W."""
    n_run = np.shape(result.beta)[-1]
    if K.shape[0] != n_run:
        given = "X" if X is not None else "gram"
        raise ValueError(
            f"{given} has n={K.shape[0]} examples but the run has n={n_run} (result.beta has shape "
            f"{np.shape(result.beta)}); pass the data the run was trained on"
        )
    if X is not None and result.W is not None and np.shape(result.W)[-1] != X.shape[1]:
        raise ValueError(
            f"X has d={X.shape[1]} features (shape {X.shape}) but the run has d={np.shape(result.W)[-1]} "
            f"(result.W has shape {np.shape(result.W)}); pass the X the run was trained on"
        )


def _check_batch(result, X, y, gram) -> list:
    """check_limit for each problem of a batched TrainResult (X (B, n, d) or gram (B, n, n), y (B, n))."""
    import types

    yb = as_float_array(y, "y", ndim=2)
    B = yb.shape[0]
    Xb = None if X is None else as_float_array(X, "X", ndim=3)
    Gb = None if gram is None else as_float_array(gram, "gram", ndim=3)
    out = []
    for b in range(B):
        hist = None
        h = result.history
        if h is not None:
            r = int(np.asarray(h.n_records)[b])
            hist = types.SimpleNamespace(steps=h.steps[b, :r], mask=h.mask[b, :r])
        one = types.SimpleNamespace(
            batched=False,
            signs=result.signs,
            alpha=result.alpha[b],
            beta=result.beta[b],
            alpha0=result.alpha0[b],
            beta0=result.beta0[b],
            W=None if result.W is None else result.W[b],
            W0=None if result.W0 is None else result.W0[b],
            eta=float(np.asarray(result.eta)[b]),
            pattern_stable_step=int(np.asarray(result.pattern_stable_step)[b]),
            history=hist,
        )
        out.append(check_limit(one, None if Xb is None else Xb[b], yb[b], gram=None if Gb is None else Gb[b]))
    return out
