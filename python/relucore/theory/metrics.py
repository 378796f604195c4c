"""Metrics over a training run from its dual coordinates (Kou, Chen, Gu 2023; docs/math.md §10).

The weights of a bias-free network trained by GD move in the span of the data:
``W = W0 + (alpha - alpha0) X`` (docs/math.md §2). Writing ``Delta = alpha - alpha0``
(m x n) and ``beta0 = W0 X^T`` (m x n, the starting predictions), the Gram matrix of
the rows of W is

    W W^T = W0 W0^T + beta0 Delta^T + Delta beta0^T + Delta K Delta^T,

an m x m matrix that needs K (n x n), alpha, and the m x m block ``W0 W0^T`` only:
the stable rank ``||W||_F^2 / ||W||_2^2 = tr(W W^T) / lambda_max(W W^T)`` never
forms the d-dimensional W. The block ``W0 W0^T`` comes from

- ``X`` (or ``result.W0``): exact for any init, cost O(m^2 d) once;
- ``W0_gram=``: exact, when the caller knows it (Gram-only mode with a general init);
- otherwise the init is taken to lie in the data span, ``W0 = alpha0 X``, so
  ``W0 W0^T = alpha0 K alpha0^T`` and ``W W^T = alpha K alpha^T``. This is exact for
  the "positive" and "disjoint" inits, and for Gram-only "gaussian" runs (which
  draw only the data-span part of W0); for a gaussian W0 in R^d it drops the
  part of W0 orthogonal to the data, which never changes during training.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from relucore._inputs import gram_of_batch
from relucore._summary import summarized
from relucore._validation import as_float_array
from relucore.gd.defaults import activate
from relucore.gd.limit import refuse_two_layer_run

__all__ = ["TrainingMetrics", "training_metrics", "weight_gram", "stable_rank", "margins"]


def _metrics_title(t: "TrainingMetrics") -> str:
    B, R, n = (None,) * (3 - t.margins.ndim) + t.margins.shape
    return (f"{R} records" if B is None else f"{B} problems, up to {R} records") + f", n={n}"


@summarized(title=_metrics_title, rows=("steps", "loss", "stable_rank", "margin_ratio", "min_normalized_margin"))
@dataclasses.dataclass(frozen=True)
class TrainingMetrics:
    """Metrics of every recorded state of a run (Kou et al. 2023, Theorems 4.2-4.4).

    Arrays have a leading record axis R (``(B, R, ...)`` for a batched run;
    padded records of a batched history hold NaN).

    Attributes
    ----------
    steps : ndarray of int, shape (R,)
        GD step of each record.
    loss : ndarray, shape (R,)
        The training loss (as the engine computed it).
    fro_norm, spectral_norm : ndarray, shape (R,)
        ``||W||_F`` and ``||W||_2``.
    stable_rank : ndarray, shape (R,)
        ``||W||_F^2 / ||W||_2^2``, in ``[1, m]``.
    stable_rank_pos, stable_rank_neg : ndarray, shape (R,)
        The stable rank of the sub-matrix of neurons with outer weight
        ``a_k > 0`` (resp. ``< 0``): Kou et al. state their result per sign
        group (their ``W_{+1}``, ``W_{-1}``). For the leaky ReLU each group
        tends to rank one while the whole W keeps two directions (Frei et al.
        2022: rank at most two). NaN for an empty group.
    margins : ndarray, shape (R, n)
        ``y_i f(x_i)``.
    normalized_margins : ndarray, shape (R, n)
        ``y_i f(x_i) / ||W||_F``.
    margin_ratio : ndarray, shape (R,)
        ``max_i / min_i`` of the normalised margins; NaN while some margin is
        <= 0 (some example still misclassified). Kou et al.: -> 1.
    min_normalized_margin : ndarray, shape (R,)
        ``min_i`` of the normalised margins at each record.
    """

    steps: np.ndarray
    loss: np.ndarray
    fro_norm: np.ndarray
    spectral_norm: np.ndarray
    stable_rank: np.ndarray
    stable_rank_pos: np.ndarray
    stable_rank_neg: np.ndarray
    margins: np.ndarray
    normalized_margins: np.ndarray
    margin_ratio: np.ndarray
    min_normalized_margin: np.ndarray


def weight_gram(alpha, alpha0, beta0, K, W0_gram=None) -> np.ndarray:
    """``W W^T`` for ``W = W0 + (alpha - alpha0) X`` without forming W.

    Parameters
    ----------
    alpha : ndarray, shape (..., m, n)
        Dual coordinates (any leading axes, e.g. records).
    alpha0, beta0 : ndarray, shape (m, n) or broadcastable to alpha
        Starting dual coordinates and predictions ``beta0 = W0 X^T``.
    K : ndarray, shape (n, n) or broadcastable
        ``X X^T``.
    W0_gram : ndarray, shape (m, m), optional
        ``W0 W0^T``. Default ``alpha0 K alpha0^T`` (init in the data span).

    Returns
    -------
    ndarray, shape (..., m, m)
    """
    alpha = np.asarray(alpha, dtype=float)
    delta = alpha - alpha0
    dT = np.swapaxes(delta, -1, -2)
    if W0_gram is None:
        # W = alpha X exactly when W0 = alpha0 X.
        G = alpha @ K @ np.swapaxes(alpha, -1, -2)
    else:
        cross = beta0 @ dT
        G = W0_gram + cross + np.swapaxes(cross, -1, -2) + delta @ K @ dT
    return 0.5 * (G + np.swapaxes(G, -1, -2))


def stable_rank(G) -> np.ndarray:
    """``tr(G) / lambda_max(G)`` of Gram matrices ``G = W W^T`` of shape (..., m, m)."""
    G = np.asarray(G, dtype=float)
    top = np.linalg.eigvalsh(G)[..., -1]
    tr = np.trace(G, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(top > 0, tr / np.where(top > 0, top, 1.0), np.nan)


def margins(beta, signs, y, *, activation="relu", leaky_slope=0.01) -> np.ndarray:
    """``y_i f(x_i)`` with ``f = sum_k a_k phi(beta_k)``.

    ``beta`` has shape (..., m, n); ``y`` must broadcast against (..., n).
    """
    phi = activate(beta, activation, leaky_slope)
    f = np.einsum("...kn,k->...n", phi, np.asarray(signs, dtype=float))
    return np.asarray(y, dtype=float) * f


def _check_shapes(result, y, K, X, given: str) -> None:
    """Refuses y, K (from X or gram) and X whose sizes are not the run's (n from alpha, d from W0)."""
    lead, n = np.shape(result.alpha)[:-2], np.shape(result.alpha)[-1]
    if y.shape != lead + (n,):
        raise ValueError(f"y must have shape {lead + (n,)} (the run's labels), got {y.shape}")
    if K.shape[:-2] != lead:
        raise ValueError(f"{given} holds {K.shape[0]} problems, but the run has {lead[0]}")
    if K.shape[-2:] != (n, n):
        raise ValueError(f"{given} holds {K.shape[-1]} examples, but the run has n={n}")
    W0 = getattr(result, "W0", None)
    if X is not None and W0 is not None and X.shape[-1] != np.shape(W0)[-1]:
        raise ValueError(f"X has d={X.shape[-1]} features but the run has d={np.shape(W0)[-1]} (result.W0)")


def _refuse_old_order(fn):
    """The 0.x order ``training_metrics(result, y, X=X)`` is a TypeError naming the 1.0 one (not Python's
    "multiple values for argument 'X'")."""

    @functools.wraps(fn)
    def wrapper(result, *args, **kwargs):
        if args and "X" in kwargs:
            raise TypeError(
                "training_metrics takes (result, X, y) since 1.0 (0.x: (result, y, *, X)): call training_metrics(result, X, y)"
            )
        return fn(result, *args, **kwargs)

    return wrapper


@_refuse_old_order
def training_metrics(result, X=None, y=None, *, gram=None, W0_gram=None) -> TrainingMetrics:
    """Stable rank, normalised margins and loss of every recorded state of a run.

    The quantities of Theorems 4.2-4.4 of Kou et al. (2023) on the logistic loss
    (docs/math.md §10): the stable rank ``||W||_F^2 / ||W||_2^2`` of each sign group and
    the normalised margins ``y_i h(x_i) / ||W||_F``.

    Parameters
    ----------
    result : TrainResult
        From :func:`relucore.train`; its ``history`` (``record=k``) supplies the
        states; without a history only the final state is measured.
    X : array_like, shape (n, d) or (B, n, d), optional
        The inputs: gives K and (with ``result.W0``) the exact ``W0 W0^T``. The order
        ``(result, X, y)`` is that of :func:`relucore.check_limit`, :func:`relucore.regimes` and
        :func:`relucore.verify` (0.x took ``(result, y, *, X)``).
    y : array_like, shape (n,) or (B, n)
        The labels the run was trained on.
    gram : array_like, shape (n, n) or (B, n, n), optional
        ``K = X X^T`` when X is not given (or to avoid recomputing it).
    W0_gram : array_like, shape (m, m) or (B, m, m), optional
        ``W0 W0^T`` for a Gram-only run whose init is not in the data span. See
        the module docstring for the cases.

    Returns
    -------
    TrainingMetrics
    """
    if y is None:
        raise TypeError(
            "training_metrics(result, X, y) needs y (1.0 takes the analysis order (result, X, y); 0.x took "
            "(result, y, *, X)); in Gram-only mode: training_metrics(result, y=y, gram=K)"
        )
    refuse_two_layer_run("training_metrics (margins with fixed signs, the weight Gram matrix of X)", result)
    if X is None and gram is None:
        raise TypeError("training_metrics needs X or gram (the Gram matrix K = X X^T)")
    batched = np.ndim(result.alpha) == 3
    y = as_float_array(y, "y", ndim=2 if batched else 1)
    Xa = None if X is None else as_float_array(X, "X", ndim=3 if batched else 2)
    if gram is not None:
        K = as_float_array(gram, "gram", ndim=3 if batched else 2)
    else:
        K = gram_of_batch(Xa if batched else Xa[None])
        K = K if batched else K[0]
    _check_shapes(result, y, K, Xa, "gram" if gram is not None else "X")
    if W0_gram is None and X is not None and result.W0 is not None:
        W0 = np.asarray(result.W0)
        W0_gram = W0 @ np.swapaxes(W0, -1, -2)
    elif W0_gram is not None:
        W0_gram = as_float_array(W0_gram, "W0_gram", ndim=3 if batched else 2)
        m = np.shape(result.alpha)[-2]
        if W0_gram.shape[-2:] != (m, m):
            raise ValueError(f"W0_gram must be W0 W0^T of shape ({m}, {m}) per problem, got {W0_gram.shape}")

    h = result.history
    if h is None:
        steps = np.asarray(result.nit)[..., None]
        loss = np.asarray(result.loss, dtype=float)[..., None]
        alpha = np.asarray(result.alpha)[..., None, :, :]
        beta = np.asarray(result.beta)[..., None, :, :]
    else:
        steps, loss, alpha, beta = h.steps, h.loss, h.alpha, h.beta
    valid = steps >= 0
    alpha = np.where(valid[..., None, None], alpha, 0.0)
    beta = np.where(valid[..., None, None], beta, 0.0)

    # Insert the record axis into the per-run arrays: (B, 1, ...) or (1, ...).
    ex = lambda a: None if a is None else np.asarray(a)[..., None, :, :]
    G = weight_gram(alpha, ex(result.alpha0), ex(result.beta0), ex(K), ex(W0_gram))
    eig = np.linalg.eigvalsh(G)
    top = np.maximum(eig[..., -1], 0.0)
    fro2 = np.maximum(np.trace(G, axis1=-2, axis2=-1), 0.0)
    fro = np.sqrt(fro2)
    spec = np.sqrt(top)
    with np.errstate(invalid="ignore", divide="ignore"):
        srank = np.where(top > 0, fro2 / np.where(top > 0, top, 1.0), np.nan)
    signs = np.asarray(result.signs, dtype=float)
    by_sign = {}
    for key, idx in (("stable_rank_pos", np.flatnonzero(signs > 0)), ("stable_rank_neg", np.flatnonzero(signs < 0))):
        by_sign[key] = stable_rank(G[..., idx[:, None], idx[None, :]]) if idx.size else np.full(srank.shape, np.nan)
    marg = margins(beta, result.signs, y[..., None, :], activation=result.activation, leaky_slope=result.leaky_slope)
    nmarg = marg / np.where(fro > 0, fro, np.nan)[..., None]
    lo = marg.min(axis=-1)
    hi = marg.max(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.nan)
    mask = ~valid
    out = {}
    for name, arr in dict(
        fro_norm=fro,
        spectral_norm=spec,
        stable_rank=srank,
        **by_sign,
        margins=marg,
        normalized_margins=nmarg,
        margin_ratio=ratio,
        min_normalized_margin=nmarg.min(axis=-1),
    ).items():
        arr = np.array(arr, dtype=float)
        arr[mask] = np.nan
        out[name] = arr
    return TrainingMetrics(steps=np.asarray(steps).copy(), loss=np.asarray(loss, dtype=float).copy(), **out)
