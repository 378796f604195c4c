"""The exact power-of-two rescaling of a problem's inputs (relucore._scaling) on the prepare path: which
models rescale, and the refusals of the models and front ends that do not (docs/errors.md, "Scale of the
data"). The C++ prepare step rescales a problem and maps the options given in its units
(relucore/gd/prepare.hpp, PrepareRequest::rescale)."""

from __future__ import annotations

import numpy as np

from relucore._scaling import plan_scaling
from relucore._validation import as_float_array

__all__ = ["not_scale_free", "refuse_out_of_range"]


def _as_batch(arr: np.ndarray, ndim_single: int) -> np.ndarray:
    return arr[None] if arr.ndim == ndim_single else arr


def not_scale_free(loss: str, init) -> str:
    """What makes the model not invariant under an exact rescaling of X and y ("" when nothing does)."""
    if loss != "square":
        return f"loss={loss!r}"
    return ""


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
