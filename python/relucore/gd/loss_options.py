"""The loss options of a GD run: ``output_bias``, ``reduction`` and ``sample_weight``.

They reach the engines as two things (relucore/gd/engine_base.hpp): an output bias ``b_out``
(``set_output_bias``) and per-example loss weights ``omega_i`` (``set_loss_weights``), in
which every square loss is ``1/2 sum_i omega_i (h_i - y_i)^2``:

- ``reduction="half_sum"``: ``omega_i = v_i`` (``1/2 sum_i v_i (h_i - y_i)^2``);
- ``reduction="sum"``: ``omega_i = 2 v_i`` (``sum_i v_i (h_i - y_i)^2``);
- ``reduction="mean"``: ``omega_i = 2 v_i / n`` (``1/n sum_i v_i (h_i - y_i)^2``, PyTorch's
  ``F.mse_loss`` with ``v = 1``),

with ``v`` the ``sample_weight`` (1 when not given). The logistic loss keeps its mean and
takes ``omega_i = v_i``. The curvature of the loss in the predictions grows by
``max_i omega_i``, so the default step is divided by it; the default tolerance uses
``||omega * y||`` where the unweighted one uses ``||y||`` (docs/math.md, loss reductions).
Without these options nothing changes: the engines run their unweighted code.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from relucore import _core
from relucore._validation import as_float_array, check_choice
from relucore.gd.defaults import TOL_FACTOR, activate, default_eta, loss_traits

__all__ = [
    "REDUCTIONS",
    "DEFAULT_REDUCTION",
    "ZERO_OUTER_MESSAGE",
    "loss_weights",
    "check_output_bias",
    "uses_loss_options",
    "zero_outer_start",
]

#: The square loss's reductions, and the default of train, Trainer and the sweeps.
REDUCTIONS = tuple(_core.Reduction.__members__)  # ("half_sum", "sum", "mean"): the C++ enum
DEFAULT_REDUCTION = "half_sum"


ZERO_OUTER_MESSAGE = (
    "train_outer=True with an all-zero initial outer layer (signs = 0) has no default step: the rule "
    "eta = 1/(L c^2 ||a||^2 mu_1(K)) needs ||a|| > 0: pass eta (PyTorch's SGD lr is eta with "
    "reduction='mean' and output_scale=1)"
)


def zero_outer_start(signs: np.ndarray, eta):
    """A trained outer layer's start: ``signs`` itself when no entry is 0, else a copy with 1 in place of
    each 0 (what the start's checks see; the run starts from the zeros). The default step is then that of
    the real outer layer, which needs a non-zero entry per problem: otherwise eta must be given."""
    zero = signs == 0
    if not zero.any():
        return signs
    if eta is None and np.any(np.all(zero, axis=-1)):
        raise ValueError(ZERO_OUTER_MESSAGE)
    return np.where(zero, 1.0, signs)


def uses_loss_options(o) -> bool:
    """Whether the options ask for an output bias, another reduction or example weights."""
    return o.output_bias is not None or o.reduction != DEFAULT_REDUCTION or o.sample_weight is not None


def check_output_bias(output_bias, B: int, batched: bool) -> Optional[np.ndarray]:
    """``output_bias`` as a (B,) float array (a scalar or one value per problem), or None."""
    if output_bias is None:
        return None
    b = as_float_array(output_bias, "output_bias", ndim=(0, 1) if batched else 0)
    if b.ndim == 1 and b.shape[0] != B:
        raise ValueError(f"output_bias must be a number or one value per problem (B = {B}), got shape {b.shape}")
    return np.array(np.broadcast_to(b, (B,)), dtype=np.float64)


def check_sample_weight(sample_weight, B: int, n: int, batched: bool) -> np.ndarray:
    """``sample_weight`` (n,) or (B, n) as (B, n): finite and non-negative, some entry positive per problem."""
    w = as_float_array(sample_weight, "sample_weight", ndim=(1, 2) if batched else 1, finite=False)
    if w.shape[-1] != n or (w.ndim == 2 and w.shape[0] != B):
        want = f"(n,) = ({n},)" + (f" or (B, n) = ({B}, {n})" if batched else "")
        raise ValueError(f"sample_weight must have shape {want}, got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite")
    if np.any(w < 0):
        raise ValueError(f"sample_weight must be >= 0: it has {float(w[w < 0].flat[0]):g}")
    w = np.array(np.broadcast_to(w, (B, n)), dtype=np.float64)
    if not np.all(w.max(axis=1) > 0):
        raise ValueError("sample_weight must have a positive entry (all-zero weights leave no loss)")
    return w


def loss_weights(reduction, sample_weight, loss: str, B: int, n: int, batched: bool) -> Optional[np.ndarray]:
    """The engines' loss weights omega (B, n) of a reduction and example weights, or None (all 1)."""
    check_choice(reduction, "reduction", REDUCTIONS)
    if reduction != DEFAULT_REDUCTION and loss != "square":
        raise ValueError(f"reduction={reduction!r} applies to the square loss; loss={loss!r} keeps its mean")
    if sample_weight is None and reduction == DEFAULT_REDUCTION:
        return None
    w = np.ones((B, n)) if sample_weight is None else check_sample_weight(sample_weight, B, n, batched)
    if reduction == DEFAULT_REDUCTION or loss != "square":
        return w
    return _core.reduction_factor(getattr(_core.Reduction, reduction), n) * w


def prepare_loss_options(X, y, gram, o, prepare):
    """``prepare`` with an output bias, a reduction or example weights (see the module's docstring).

    The problem is prepared without them, then the default step and tolerance (where not
    given) are those of the weighted loss, and ``Prepared`` carries ``output_bias`` (B,) and
    ``loss_weights`` (B, n).
    """
    from relucore.gd.rescale import refuse_out_of_range

    if o.output_bias is not None:
        refuse_out_of_range(X, y, gram, "output_bias")
    plain = dataclasses.replace(o, output_bias=None, reduction=DEFAULT_REDUCTION, sample_weight=None)
    p = prepare(X, y, gram=gram, options=plain)
    B, n = p.y.shape
    omega = loss_weights(o.reduction, o.sample_weight, p.loss, B, n, p.batched)
    bias = check_output_bias(o.output_bias, B, p.batched)
    if omega is not None:
        top = omega.max(axis=1)
        if o.eta is None:
            p.eta = np.asarray(default_eta(p.largest_eigenvalue(), p.signs, p.loss, n), dtype=float) / top
            p.eta = np.array(np.broadcast_to(p.eta, (B,)))
        if o.tol is None and loss_traits(p.loss).relative_tol:
            p.tol = _weighted_tol(p, omega, bias)
    p.loss_weights = omega
    p.output_bias = bias
    p.reduction = o.reduction
    return p


def _weighted_tol(p, omega: np.ndarray, bias: Optional[np.ndarray]) -> np.ndarray:
    """The default tolerance of the weighted loss: ``TOL_FACTOR sqrt(mu_1) ||omega * y||``
    (``||omega * h0||`` where that is 0), the rule of relucore.gd.defaults.default_tol."""
    y_norm = np.linalg.norm(omega * p.y, axis=1)
    signs = np.broadcast_to(p.signs, p.beta0.shape[:2])
    h0 = np.einsum("bk,bkn->bn", signs, activate(p.beta0, p.activation, p.leaky_slope))
    if bias is not None:
        h0 = h0 + bias[:, None]
    h0_norm = np.linalg.norm(omega * h0, axis=1)
    tol = _core.default_tolerance(tol_factor=TOL_FACTOR, mu1=p.largest_eigenvalue(), y_norm=y_norm, h0_norm=h0_norm)
    return np.array(np.broadcast_to(np.asarray(tol, dtype=float), (p.y.shape[0],)))
