"""The defaults and limits of gradient descent, and the rules that compute per-problem defaults.

One home: the constants are defined once in C++ (``relucore/defaults.hpp``) and read here
from ``relucore._core.defaults``; every other Python module (``prepare``, ``train``,
``Trainer``, sweeps, limits) imports these names instead of repeating a value.
docs/math.md derives each rule.
"""

from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from relucore import _core
from relucore._core import default_offset_batch
from relucore._core import defaults as _cpp

__all__ = [
    "INITS",
    "ENGINES",
    "LOSSES",
    "ACTIVATIONS",
    "MAX_CONDITION",
    "MAX_STEPS",
    "TOL_FACTOR",
    "DEFAULT_INIT_SCALE",
    "C_ALPHA",
    "C_G",
    "STEPS",
    "LEAKY_SLOPE",
    "default_eta",
    "resolve_engine",
    "default_eps",
    "default_tol",
    "loss_traits",
    "check_labels_for_loss",
    "activate",
]

INITS = ("positive", "disjoint", "gaussian")
ENGINES = ("dual", "weights", "auto")
#: The losses of the C++ loss table (relucore/gd/model.hpp), in its order.
LOSSES = tuple(_core.Loss.__members__)
#: The activations of the C++ activation table (relucore/gd/model.hpp), in its order.
ACTIVATIONS = tuple(_core.Activation.__members__)
#: Condition number of K above which an init that needs K^{-1} is refused.
MAX_CONDITION = _cpp.max_condition
#: Largest step budget (the engines count steps in int64).
MAX_STEPS = 2**62
#: Default relative gradient tolerance: tol = TOL_FACTOR * sqrt(mu_1(K)) * ||y||.
TOL_FACTOR = _cpp.tol_factor
#: An example no neuron is active on is unfit when ``|h_i - y_i| > UNFIT_RTOL |y_i|`` (square loss).
UNFIT_RTOL = _cpp.unfit_rtol
#: Standard deviation of the default "gaussian" init (Lai et al. 2026, Fig. 3: variance 2e-6).
DEFAULT_INIT_SCALE = _cpp.init_scale
#: C_alpha of the default positive-init offset eps = y_min / (C_alpha m) (Lai et al. 2026, Theorems 1, 3, 5).
C_ALPHA = _cpp.C_alpha
#: C_g of the disjoint init beta_k = (1/C_g) A_k y + eps_k (Lai et al. 2026, Assumption 4).
C_G = _cpp.C_g
#: Default step budget of train and Trainer.
STEPS = _cpp.steps
#: Default gamma of the leaky ReLU max(u, gamma u).
LEAKY_SLOPE = _cpp.leaky_slope


def resolve_engine(engine: str, n: int, d: Optional[int], m: int) -> str:
    """The engine that runs: ``engine`` itself, or for ``"auto"`` the cheaper one per step.

    With ``c = _core.auto_step_ns(_core.simd_level())``, the row of ``auto_step_ns_table``
    (``relucore/defaults.hpp``) for this process's SIMD level, a primal-dual step costs about
    ``c.dual * n^2 m`` nanoseconds (``K alpha`` for every neuron) and a weight-space step
    ``w * n d m`` (``W X^T`` and the gradient's product with X), with ``w = c.weights_blas``
    where those products are large enough for a BLAS (``_core.products_use_blas_by_size``: at
    least 4 neurons and 2000 multiply-adds) and ``w = c.weights`` otherwise; the table is
    measured by ``bench/bench_auto.py``; K is formed by the prepare step for either engine. So
    ``"auto"`` is ``"dual"`` when ``c.dual * n < w * d`` (broadly d >> n), and in Gram-only mode
    (``d`` None), ``"weights"`` otherwise. The rule reads the sizes and the SIMD level alone:
    the same engine on every machine of one level (``RELUCORE_SIMD`` caps the level).
    """
    if engine != "auto":
        return engine
    if d is None:
        return "dual"
    return _auto_engine(n, d, m, _core.simd_level())


@functools.lru_cache(maxsize=1024)
def _auto_engine(n: int, d: int, m: int, level: int) -> str:
    """The rule of :func:`resolve_engine` for ``"auto"`` with X (a function of its arguments alone, kept)."""
    c = _core.auto_step_ns(level)
    w = c.weights_blas if _core.products_use_blas_by_size(m, n, d) else c.weights
    return "dual" if c.dual * n * n * m < w * n * d * m else "weights"


def default_eta(mu1, signs, loss: str = "square", n: Optional[int] = None):
    """The default step size ``1 / (L ||s||^2 mu_1(K))``.

    On any fixed activation pattern the loss is a quadratic (square loss) whose
    Hessian in W is ``J^T J`` with ``||J||^2 <= ||s||^2 mu_1(K)``, so this is the
    largest step that decreases the loss monotonically on every such piece
    (Lemma 2 of Lai et al. for m = 1: ``eta <= 1/mu_1(K)``). For the logistic
    loss (a mean over n examples) the curvature of the loss is at most 1/(4n),
    so ``L = 1/(4n)``; for the square loss ``L = 1`` (docs/math.md §4).

    Parameters
    ----------
    mu1 : float or array_like
        ``mu_1(K)``, the largest eigenvalue of the Gram matrix (one per problem of a batch).
    signs : sequence of float
        The outer-layer weights ``s_k``.
    loss : {"square", "logistic"}, default "square"
        The loss, which sets the curvature ``L``.
    n : int, optional
        The number of examples (used by the logistic loss only; default 1).

    Returns
    -------
    float or ndarray
        The step size, of the shape of ``mu1``.
    """
    signs = np.asarray(signs, dtype=float)
    # signs (m,) shared, or (B, m) per problem: one ||s||^2 per problem
    s2 = float(np.sum(np.square(signs))) if signs.ndim == 1 else np.sum(np.square(signs), axis=-1)
    out = _core.default_step(
        loss=getattr(_core.Loss, loss), n=1 if n is None else n, s2=s2, mu1=np.asarray(mu1, dtype=float)
    )
    return out if np.ndim(out) else np.float64(out)


def activate(beta, activation: str = "relu", leaky_slope: float = LEAKY_SLOPE) -> np.ndarray:
    """``phi(beta)`` elementwise, the activation of ``relucore/gd/model.hpp`` (``activate``) for numpy arrays.

    ``"relu"``: ``max(beta, 0)``; ``"leaky_relu"``: ``beta`` where positive, ``leaky_slope * beta``
    elsewhere (a pre-activation of exactly zero counts as inactive). The one Python copy of phi:
    the analysis functions and the results' predictions use it.
    """
    beta = np.asarray(beta, dtype=float)
    if activation == "relu":
        return np.maximum(beta, 0.0)
    return np.where(beta > 0, beta, leaky_slope * beta)


@functools.lru_cache(maxsize=None)
def loss_traits(loss: str) -> "_core.LossTraits":
    """The C++ loss table's row for ``loss`` (relucore/gd/model.hpp), a read-only ``_core.LossTraits``
    with ``relative_tol``, ``labels_pm1``, ...; read once per loss (the table is constant)."""
    traits = _LOSS_TRAITS.get(loss)
    if traits is None:
        traits = _LOSS_TRAITS[loss] = _core.loss_traits(getattr(_core.Loss, loss))
    return traits


_LOSS_TRAITS: dict = {}  # loss name -> its row of the C++ table, read once


def check_labels_for_loss(y: np.ndarray, loss: str) -> None:
    """Refuses labels the loss cannot take (the logistic loss needs y in {-1, +1})."""
    if loss_traits(loss).labels_pm1 and not np.all(np.abs(y) == 1):
        bad = y[np.abs(y) != 1][0]
        raise ValueError(f"loss={loss!r} needs labels in {{-1, +1}}: y has {bad:g}")


def default_eps(y: np.ndarray, m: int, C_alpha: float = C_ALPHA) -> np.ndarray:
    """``y_min / (C_alpha m)`` per problem, with ``y_min = min_i |y_i|``, shape (B, 1, 1).

    This satisfies Theorem 1 (``eps <= y_min / C_alpha``), Theorem 3
    (``<= y_min / (2 C_alpha)``) and Theorem 5 (``<= y_min / (C_alpha m)``).
    Problems whose labels include 0 use ``max |y|`` instead of ``y_min``.
    """
    return default_offset_batch(np.asarray(y, dtype=float), m, C_alpha)[:, None, None]


def default_tol(mu1: np.ndarray, y: np.ndarray, loss: str, h0: Optional[np.ndarray] = None) -> np.ndarray:
    """Per-problem gradient tolerance: ``TOL_FACTOR sqrt(mu_1) ||y||`` (square loss), 0 (logistic).

    A problem with ``y = 0`` takes the scale of its start instead,
    ``TOL_FACTOR sqrt(mu_1) ||h0||`` with ``h0`` (B, n) the starting predictions
    (the gradient at the start is about ``sqrt(mu_1) ||h0 - y||`` either way):
    a tolerance proportional to ``||y|| = 0`` could only be met by an exactly
    stationary point. At least the smallest normal number, so that an exactly
    stationary point (zero gradient) counts as converged. The rule is the C++ one
    (``default_tolerance`` of relucore/gd/positive_start.hpp), which the prepare step applies.
    """
    if not loss_traits(loss).relative_tol:
        return np.zeros(y.shape[0])
    y_norm = np.linalg.norm(y, axis=1)
    h0_norm = y_norm if h0 is None else np.linalg.norm(h0, axis=1)
    return np.asarray(
        _core.default_tolerance(tol_factor=TOL_FACTOR, mu1=mu1, y_norm=y_norm, h0_norm=h0_norm), dtype=float
    )
