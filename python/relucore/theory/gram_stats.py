"""Concentration of the Gram matrix (Lai et al. 2026, App. A.1; docs/math.md §8).

:func:`gram_stats` measures mu_1(K), mu_n(K), ``||K/||lambda||_1 - I||_2`` and
``max_{i!=j} |K_ij| / min_i K_ii`` (batched, in C++), and compares them with

* Lemma 7: ``(1/c)||lambda||_1 - c lambda_1 n <= mu_n(K) <= mu_1(K) <= c(||lambda||_1 + lambda_1 n)``
  -> the smallest ``c >= 1`` for which both inequalities hold (``c_lemma7``);
* Corollary 1: ``||K/||lambda||_1 - I||_2 <= C max(sqrt(n/d_2), n/d_inf)``
  -> the implied ``C`` (``C_cor1``);
* Assumption 2: ``d_2 >= C_0^2 n^2 y_max^2/y_min^2`` and ``d_inf >= C_0 n^1.5 y_max/y_min``
  -> the largest ``C_0`` for which both hold (``C0_assumption2``);
* Assumption 3: ``min_i ||x_i||^2 >= C_0 n (y_max/y_min) max_{i!=j} |x_i^T x_j|``
  -> the largest such ``C_0`` (``C0_assumption3``).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

import numpy as np

from relucore import _core
from relucore._inputs import gram_of_batch
from relucore._summary import summarized
from relucore._validation import as_float_array, check_gram_finite, check_n_threads

__all__ = ["gram_stats", "GramStats"]


def _gram_batch(g: "GramStats") -> Optional[int]:
    return int(np.size(g.mu_max)) if np.ndim(g.mu_max) == 1 else None


@summarized(
    title=lambda g: ("" if _gram_batch(g) is None else f"{_gram_batch(g)} matrices, ") + f"n={g.n}",
    rows=(
        ("mu_max", "mu_min"),
        ("norm1", "norm1_estimated"),
        "deviation",
        "offdiag_ratio",
        ("max_offdiag", "min_diag"),
        ("d2", "d_inf", "lambda_max"),
        "c_lemma7",
        ("cor1_rate", "C_cor1"),
        "label_ratio",
        ("C0_assumption2", "C0_assumption3"),
    ),
    batch=_gram_batch,
)
@dataclasses.dataclass(frozen=True)
class GramStats:
    """Spectral statistics of K and what the paper's lemmas and assumptions make of them.

    Scalars for one matrix; arrays of shape (B,) for a batch.

    Attributes
    ----------
    n : int
        The number of examples.
    mu_max, mu_min : float
        ``mu_1(K)`` and ``mu_n(K)``.
    norm1 : float
        ``||lambda||_1`` (from ``spectrum``; else estimated by ``tr(K)/n``,
        since ``E K_ii = ||lambda||_1``; ``norm1_estimated`` says which).
    norm1_estimated : bool
        True when ``norm1`` is the estimate ``tr(K)/n`` (no spectrum given).
    deviation : float
        ``||K/||lambda||_1 - I||_2``.
    offdiag_ratio : float
        ``max_{i!=j} |K_ij| / min_i K_ii``.
    max_offdiag, min_diag : float
        ``max_{i!=j} |K_ij|`` and ``min_i K_ii``, the two sides of ``offdiag_ratio``.
    d2, d_inf : float or None
        Effective dimensions (None without a spectrum).
    lambda_max : float or None
        ``lambda_1``.
    c_lemma7 : float or None
        Smallest ``c >= 1`` with Lemma 7's two inequalities.
    cor1_rate : float or None
        ``max(sqrt(n/d_2), n/d_inf)``.
    C_cor1 : float or None
        ``deviation / cor1_rate``: the constant Corollary 1 needs on this draw.
    label_ratio : float
        ``y_max / y_min`` (1 when no labels are given).
    C0_assumption2 : float or None
        ``min(sqrt(d_2) / (n ratio), d_inf / (n^1.5 ratio))``.
    C0_assumption3 : float
        ``min_i K_ii / (n ratio max_{i!=j} |K_ij|)``.
    """

    n: int
    mu_max: Union[float, np.ndarray]
    mu_min: Union[float, np.ndarray]
    norm1: Union[float, np.ndarray]
    norm1_estimated: bool
    deviation: Union[float, np.ndarray]
    offdiag_ratio: Union[float, np.ndarray]
    max_offdiag: Union[float, np.ndarray]
    min_diag: Union[float, np.ndarray]
    d2: Optional[float]
    d_inf: Optional[float]
    lambda_max: Optional[float]
    c_lemma7: Optional[Union[float, np.ndarray]]
    cor1_rate: Optional[float]
    C_cor1: Optional[Union[float, np.ndarray]]
    label_ratio: Union[float, np.ndarray]
    C0_assumption2: Optional[Union[float, np.ndarray]]
    C0_assumption3: Union[float, np.ndarray]


def _spectrum_summary(spectrum):
    """(norm1, d2, d_inf, lambda_max) from an array of eigenvalues or a Spectrum."""
    from relucore.theory.sampling import Spectrum

    if isinstance(spectrum, Spectrum):
        return spectrum.norm1, spectrum.d2, spectrum.d_inf, spectrum.max
    lam = as_float_array(spectrum, "spectrum", ndim=1)
    if np.any(lam < 0) or not np.any(lam > 0):
        raise ValueError("spectrum must be non-negative with a positive entry")
    s1 = float(lam.sum())
    return s1, s1**2 / float(np.sum(lam**2)), s1 / float(lam.max()), float(lam.max())


def lemma7_constant(mu_max, mu_min, norm1, lambda_max, n):
    """Smallest ``c >= 1`` with ``norm1/c - c lambda_1 n <= mu_n`` and ``mu_1 <= c (norm1 + lambda_1 n)`` (Lemma 7)."""
    mu_max, mu_min = np.asarray(mu_max, float), np.asarray(mu_min, float)
    a = lambda_max * n
    c_up = mu_max / (norm1 + a)
    # norm1/c - a c <= mu_n  <=>  a c^2 + mu_n c - norm1 >= 0 (c > 0)
    c_low = (-mu_min + np.sqrt(mu_min**2 + 4.0 * a * norm1)) / (2.0 * a)
    return np.maximum(1.0, np.maximum(c_up, c_low))


def gram_stats(X=None, *, gram=None, spectrum=None, y=None, n_threads=None):
    """Gram-matrix concentration checks (Lemma 7, Corollary 1, Assumptions 2 and 3).

    Parameters
    ----------
    X : array_like, shape (n, d) or (B, n, d), or a Dataset / GramDataset
        Data; a ``Dataset``/``GramDataset`` also supplies ``spectrum`` and ``y``.
    gram : array_like, shape (n, n) or (B, n, n), optional
        The Gram matrix instead of X.
    spectrum : array of eigenvalues or Spectrum, optional
        Covariance spectrum lambda. Without it ``||lambda||_1`` is estimated by
        ``tr(K)/n`` and the spectrum-based comparisons are None.
    y : array_like, shape (n,) or (B, n), optional
        Labels, for ``y_max / y_min`` in Assumptions 2 and 3 (ratio 1 if None).
    n_threads : int, optional
        Threads across the matrices of a batch (default: OpenMP's default).

    Returns
    -------
    GramStats
        The eigenvalue bounds, the deviation from ``||lambda||_1 I`` and the smallest
        constants with which Lemma 7, Corollary 1 and Assumptions 2 and 3 of Lai et al.
        (2026) hold on this draw (docs/math.md §8).
    """
    from relucore.theory.sampling import Dataset, GramDataset

    if isinstance(X, (Dataset, GramDataset)):
        ds = X
        spectrum = ds.spectrum if spectrum is None else spectrum
        y = ds.y if y is None else y
        if isinstance(ds, GramDataset):
            X, gram = None, ds.K
        else:
            X = ds.X
    n_threads = check_n_threads(n_threads)
    if X is None and gram is None:
        raise TypeError("X is required (or pass gram=)")
    if X is not None and gram is not None:
        raise TypeError("pass X or gram, not both")
    if X is not None:
        X = as_float_array(X, "X", ndim=(2, 3))
        batched = X.ndim == 3
        Xb = X if batched else X[None]
        K = gram_of_batch(Xb, n_threads)
    else:
        K = as_float_array(gram, "gram", ndim=(2, 3))
        check_gram_finite(K)
        if K.shape[-1] != K.shape[-2]:
            raise ValueError(f"gram must be square, got shape {K.shape}")
        batched = K.ndim == 3
        K = np.ascontiguousarray(K if batched else K[None])
    B, n = K.shape[0], K.shape[1]
    if n < 2:
        raise ValueError("gram_stats needs n >= 2 examples")

    if spectrum is not None:
        norm1_arr = np.full(B, _spectrum_summary(spectrum)[0])
    else:
        norm1_arr = np.trace(K, axis1=1, axis2=2) / n
    out = np.empty((B, 6))
    _core.gram_stats_batch(K, np.ascontiguousarray(norm1_arr), out, n_threads=n_threads)

    if y is not None:
        ya = np.abs(as_float_array(y, "y", ndim=(1, 2)))
        ya = ya if ya.ndim == 2 else ya[None]
        if ya.shape[-1] != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples (y: {ya.shape[-1]}, n: {n})")
        ymin = ya.min(axis=1)
        with np.errstate(divide="ignore", over="ignore"):  # an infinite ratio is the honest answer
            label_ratio = np.where(ymin > 0, ya.max(axis=1) / np.where(ymin > 0, ymin, 1.0), np.inf)
        label_ratio = np.broadcast_to(label_ratio, (B,)).copy()
    else:
        label_ratio = np.ones(B)
    return stats_from_batch(n, out.T, norm1_arr, spectrum, label_ratio, batched)


def stats_from_batch(n: int, raw, norm1_arr, spectrum, label_ratio, batched: bool = True) -> GramStats:
    """The :class:`GramStats` of B matrices from ``_core.gram_stats_batch``'s six values of each
    (``raw``: mu_max, mu_min, deviation, offdiag_ratio, max_offdiag, min_diag, arrays of B), the
    ``norm1`` used (B,), the spectrum (None: norm1 was estimated) and ``max|y| / min|y|`` (B,)."""
    mu_max, mu_min, dev, ratio, maxoff, mindiag = (np.asarray(a, dtype=float) for a in raw)
    estimated = spectrum is None
    norm1 = d2 = d_inf = lam1 = None
    if not estimated:
        norm1, d2, d_inf, lam1 = _spectrum_summary(spectrum)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        C0_a3 = mindiag / (n * label_ratio * maxoff)
    if spectrum is not None:
        c7 = lemma7_constant(mu_max, mu_min, norm1, lam1, n)
        rate = float(max(np.sqrt(n / d2), n / d_inf))
        Ccor = dev / rate
        C0_a2 = np.minimum(np.sqrt(d2) / (n * label_ratio), d_inf / (n**1.5 * label_ratio))
    else:
        c7 = Ccor = C0_a2 = None
        rate = None

    def one(a):
        if a is None:
            return None
        a = np.asarray(a, dtype=float)
        return a.copy() if batched else float(a[0])

    # One value per matrix: arrays (B,) for a batch, scalars for one matrix.
    per_matrix = dict(
        mu_max=mu_max,
        mu_min=mu_min,
        norm1=norm1_arr,
        deviation=dev,
        offdiag_ratio=ratio,
        max_offdiag=maxoff,
        min_diag=mindiag,
        c_lemma7=c7,
        C_cor1=Ccor,
        label_ratio=label_ratio,
        C0_assumption2=C0_a2,
        C0_assumption3=C0_a3,
    )
    return GramStats(
        n=n,
        norm1_estimated=estimated,
        d2=d2,
        d_inf=d_inf,
        lambda_max=lam1,
        cor1_rate=rate,
        **{name: one(a) for name, a in per_matrix.items()},
    )
