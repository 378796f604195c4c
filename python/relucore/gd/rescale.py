"""The exact power-of-two rescaling of a problem's inputs (relucore._scaling) on the prepare path:
which models rescale, the options given in the data's units, and the refusals of the models and
front ends that do not (docs/errors.md, "Scale of the data")."""

from __future__ import annotations

import numpy as np

from relucore import _core
from relucore._scaling import ETA, Scaling, Y, plan_scaling
from relucore._scaling import K as K_UNIT
from relucore._scaling import W as W_UNIT
from relucore._scaling import X as X_UNIT
from relucore._validation import as_float_array, check_positive_per_problem
from relucore.gd.inits import _broadcast_eps

__all__ = ["draws_once", "not_scale_free", "rescaled", "refuse_out_of_range"]


def _as_batch(arr: np.ndarray, ndim_single: int) -> np.ndarray:
    return arr[None] if arr.ndim == ndim_single else arr


def draws_once(init, rng) -> bool:
    """Whether preparing twice would draw two different gaussian starts (rng a Generator or None)."""
    return (
        isinstance(init, str) and init == "gaussian" and not isinstance(rng, (int, np.integer, np.random.SeedSequence))
    )


def not_scale_free(loss: str, init) -> str:
    """What makes the model not invariant under an exact rescaling of X and y ("" when nothing does)."""
    if loss != "square":
        return f"loss={loss!r}"
    return ""


def rescaled(sc: Scaling, X, Kin, y, init, eps, eta, batched: bool, m: int):
    """The data and the options given in their units (init array, eps, eta) in the rescaled units."""
    B, n = y.shape
    if not isinstance(init, str):
        W0 = as_float_array(init, "init", ndim=(2, 3))
        W0 = sc.down(W0 if batched else W0[None], W_UNIT)
        init = W0 if batched else W0[0]
    if eps is not None:
        eps = sc.down(_broadcast_eps(eps, B, m, n), Y)
    if eta is not None:
        given = check_positive_per_problem(eta, "eta", B, batched)
        with np.errstate(over="ignore", under="ignore"):
            eta = sc.down(given, ETA)
        if not (np.isfinite(eta).all() and (eta > 0).all()):
            b = int(np.flatnonzero(~(np.isfinite(eta) & (eta > 0)))[0])
            raise ValueError(_core.eta_out_of_range_message(float(given[b]), ex=int(sc.ex[b]), ey=int(sc.ey[b])))
        eta = eta if batched else float(eta[0])
    return sc.down(X, X_UNIT), sc.down(Kin, K_UNIT), sc.down(y, Y), init, eps, eta


def refuse_out_of_range(X, y, gram, what: str) -> None:
    """Refuses data out of the safe scale range for a model that no exact rescaling maps onto itself."""
    if y is None or (X is None and gram is None):
        return  # refused by the checks of the data
    ya = as_float_array(y, "y", ndim=(1, 2))
    Xa = None if X is None else as_float_array(X, "X", ndim=(2, 3))
    Ka = None if Xa is not None or gram is None else as_float_array(gram, "gram", ndim=(2, 3))
    plan_scaling(
        None if Xa is None else _as_batch(Xa, 2), None if Ka is None else _as_batch(Ka, 2), _as_batch(ya, 1), what
    )
