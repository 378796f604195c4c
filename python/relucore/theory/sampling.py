"""Data of Lai et al. (2026), Sec. 2 and App. A.1 (docs/math.md §8).

Features ``x = V Lambda^{1/2} z`` with independent unit-variance entries of
``z``; labels bounded away from 0 (Assumption 1). :func:`sample` draws X;
:func:`sample_gram` draws ``K = X X^T`` directly for Gaussian ``z`` in O(n^3)
whatever d is (Bartlett decomposition / sums of independent Wisharts). Both draw
from relucore's counter-based generator (docs/math.md §8).

Spelling of the options
-----------------------
spectrum
    ``"isotropic"`` (all ``lambda_j = 1``); ``("power", a)``:
    ``lambda_j = j^{-a}``; ``("spiked", k, big, bulk)``: k eigenvalues equal to
    ``big`` and ``d - k`` equal to ``bulk``; or an explicit array of d
    non-negative eigenvalues, used in the given order (with ``V="identity"``
    column j of X has variance ``lambda_j``).
z
    ``"gaussian"``, ``"rademacher"`` (+-1) or ``"uniform"`` (on
    ``[-sqrt 3, sqrt 3]``): all mean 0, variance 1, 1-subgaussian.
labels
    ``"uniform"`` or ``("uniform", y_min, y_max)``: ``|y| ~ U(y_min, y_max)``
    with independent random signs (default ``(0.1, 1)``, Fig. 4);
    ``"positive"`` / ``("positive", y_min, y_max)``: the same magnitudes, all
    positive; ``"normal"``: ``y ~ N(0, 1)`` (Fig. 3); or an array of n labels.
V
    ``"identity"`` (default) or ``"haar"`` (a Haar-random orthogonal matrix:
    QR of a d x d Gaussian matrix with the signs of R's diagonal moved into Q;
    O(d^3) time and d^2 memory, refused above ``d = 4096``), or an explicit
    orthogonal d x d array. For Gaussian z the law of X does not depend on V.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import NamedTuple, Optional

import numpy as np

from relucore._summary import sizes, summarized
from relucore._validation import as_float_array, check_available_memory, check_int, check_n_threads, check_rng
from relucore.theory.spectrum import Spectrum, make_spectrum

__all__ = ["sample", "sample_fused", "sample_gram", "sample_gram_batch", "Dataset", "GramDataset"]

#: Largest d for which V="haar" builds the d x d orthogonal matrix.
MAX_HAAR_D = 4096


def _labels(labels, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(labels, str) or (isinstance(labels, tuple) and labels and isinstance(labels[0], str)):
        spec = (labels,) if isinstance(labels, str) else labels
        kind = spec[0]
        if kind in ("uniform", "positive"):
            if len(spec) == 1:
                lo, hi = 0.1, 1.0
            elif len(spec) == 3:
                lo, hi = float(spec[1]), float(spec[2])
            else:
                raise ValueError(f"labels={labels!r}: use {kind!r} or ({kind!r}, y_min, y_max)")
            if not (0 <= lo <= hi) or not np.isfinite(hi):
                raise ValueError(f"labels: need 0 <= y_min <= y_max < inf, got ({lo}, {hi})")
            mag = rng.uniform(lo, hi, n)
            if kind == "positive":
                return mag
            return mag * rng.choice(np.array([-1.0, 1.0]), n)
        if kind == "normal" and len(spec) == 1:
            return rng.standard_normal(n)
        raise ValueError(
            f"labels must be 'uniform', 'positive', 'normal', a tuple with (y_min, y_max), or an array; got {labels!r}"
        )
    y = as_float_array(labels, "labels", ndim=1)
    if y.shape[0] != n:
        raise ValueError(f"Found input variables with inconsistent numbers of samples (labels: {y.shape[0]}, n: {n})")
    return y


#: The laws of z by name (the names of ``_core.counter_variates`` and ``_core.fused_gram``).
Z_LAWS = ("gaussian", "rademacher", "uniform")


def counter_key(rng: np.random.Generator) -> int:
    """The 64-bit counter-generator key of a draw: one 64-bit draw of ``rng`` (docs/math.md §8)."""
    return int(rng.integers(0, 2**64, dtype=np.uint64))


def check_z(kind) -> str:
    """The law of z, checked (the error of :func:`sample`)."""
    if not isinstance(kind, str) or kind not in Z_LAWS:
        raise ValueError(f"z must be 'gaussian', 'rademacher' or 'uniform'; got {kind!r}")
    return kind


def _z(kind: str, shape, key: int) -> np.ndarray:
    """Entry (i, t) of the n x d matrix: variate ``i d + t`` of the counter stream (key, 0) under the law."""
    from relucore import _core

    check_z(kind)
    out = np.empty(shape)
    _core.counter_variates(key, stream=0, start=0, z=kind, out=out.reshape(-1))
    return out


def eigenvalues(spectrum, d: int):
    """``(Spectrum, lambda)``: the spectrum and its d eigenvalues in the order X's columns use them."""
    sp = make_spectrum(spectrum, d)
    if isinstance(spectrum, (str, tuple, Spectrum)):
        return sp, sp.to_array()
    return sp, as_float_array(spectrum, "spectrum", ndim=1)


def haar_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-distributed d x d orthogonal matrix (QR of a Gaussian matrix, signs of diag(R) moved into Q)."""
    G = rng.standard_normal((d, d))
    Q, R = np.linalg.qr(G)
    sgn = np.sign(np.diag(R))
    sgn[sgn == 0] = 1.0
    return Q * sgn[None, :]


@summarized(
    title=lambda s: sizes(n=s.n, d=s.d) + (", orthogonal rows" if s.orthogonal else ""),
    rows=("norm1", ("d2", "d_inf"), "y", "spectrum"),
)
@dataclasses.dataclass(frozen=True)
class Dataset:
    """A sample from :func:`sample`.

    Attributes
    ----------
    X : ndarray, shape (n, d)
        Rows ``x_i = V Lambda^{1/2} z_i``.
    y : ndarray, shape (n,)
        Labels.
    spectrum : ndarray, shape (d,)
        Covariance eigenvalues ``lambda`` (descending).
    orthogonal : bool
        True for exactly orthogonal rows.
    """

    X: np.ndarray
    y: np.ndarray
    spectrum: np.ndarray
    orthogonal: bool = False

    @property
    def n(self) -> int:
        """The number of examples."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """The dimension."""
        return int(self.X.shape[1])

    @property
    def norm1(self) -> float:
        """``||lambda||_1``."""
        return float(np.sum(self.spectrum))

    @property
    def d2(self) -> float:
        """``||lambda||_1^2 / ||lambda||_2^2``."""
        return float(np.sum(self.spectrum) ** 2 / np.sum(self.spectrum**2))

    @property
    def d_inf(self) -> float:
        """``||lambda||_1 / ||lambda||_inf``."""
        return float(np.sum(self.spectrum) / np.max(self.spectrum))

    @property
    def K(self) -> np.ndarray:
        """The Gram matrix ``X X^T`` (computed on access)."""
        from relucore._inputs import gram_of

        return gram_of(self.X)


@summarized(
    title=lambda s: sizes(n=s.n, d=s.d) + " (Gram matrix only)", rows=("norm1", ("d2", "d_inf"), "y", "spectrum")
)
@dataclasses.dataclass(frozen=True)
class GramDataset:
    """A sample from :func:`sample_gram`: the Gram matrix without X.

    Attributes
    ----------
    K : ndarray, shape (n, n)
        ``K = X X^T`` for Gaussian ``x = V Lambda^{1/2} z`` (law independent of V).
    y : ndarray, shape (n,)
        Labels.
    spectrum : Spectrum
        Distinct eigenvalues with multiplicities (d may be 10^9).
    """

    K: np.ndarray
    y: np.ndarray
    spectrum: Spectrum

    @property
    def n(self) -> int:
        """The number of examples."""
        return int(self.K.shape[0])

    @property
    def d(self) -> int:
        """The dimension (of the X that K stands for)."""
        return self.spectrum.d

    @property
    def norm1(self) -> float:
        """``||lambda||_1``."""
        return self.spectrum.norm1

    @property
    def d2(self) -> float:
        """Effective dimension ``||lambda||_1^2 / ||lambda||_2^2``."""
        return self.spectrum.d2

    @property
    def d_inf(self) -> float:
        """Effective dimension ``||lambda||_1 / ||lambda||_inf``."""
        return self.spectrum.d_inf


def sample(
    n: int,
    d: int,
    *,
    spectrum="isotropic",
    z: str = "gaussian",
    labels="uniform",
    V="identity",
    orthogonal: bool = False,
    rng=None,
) -> Dataset:
    """Draws ``X`` with rows ``x_i = V Lambda^{1/2} z_i`` and labels (Lai et al., Sec. 2).

    Parameters
    ----------
    n, d : int
        Examples and dimension.
    spectrum : str, tuple or array, default "isotropic"
        ``"isotropic"`` (``lambda_j = 1``); ``("power", a)``: ``lambda_j = j^{-a}``;
        ``("spiked", k, big, bulk)``: k eigenvalues ``big``, ``d - k`` equal to
        ``bulk``; or an array of d non-negative eigenvalues (used in the given order).
    z : {"gaussian", "rademacher", "uniform"}
        Law of the independent, mean-zero, unit-variance entries of ``z``
        (uniform on ``[-sqrt 3, sqrt 3]``).
    labels : str, tuple or array, default "uniform"
        ``"uniform"`` = ``("uniform", 0.1, 1)``: ``|y| ~ U(y_min, y_max)`` with
        random signs (Fig. 4); ``"positive"`` / ``("positive", y_min, y_max)``:
        the same, all positive; ``"normal"``: ``N(0, 1)`` (Fig. 3); or an array of n labels.
    V : {"identity", "haar"} or array, shape (d, d)
        Eigenvectors of the covariance (``"haar"``: O(d^3), d <= 4096).
    orthogonal : bool
        Exactly orthogonal rows (the setting of Boursier et al. 2022): the
        Gaussian rows are orthogonalised (QR of the d x n matrix, O(d n^2))
        and rescaled to their original norms. Needs ``n <= d`` and an
        isotropic spectrum.
    rng : None, int, SeedSequence or Generator
        Randomness of the draw. An int, a SeedSequence or None seeds
        ``numpy.random.default_rng``; the Generator (given or so made) is then used
        as follows: one 64-bit draw (``rng.integers(0, 2**64, dtype=uint64)``) is the
        key of relucore's counter-based generator (Philox4x32-10, stream 0), whose
        variate ``i d + t`` under the law ``z`` is ``z_it`` (the stream of
        ``_core.counter_variates`` and of the sweeps' fused trials, any
        thread count); then the labels and the Haar V are drawn by numpy from
        the Generator itself.

    Returns
    -------
    Dataset
        ``X``, ``y`` and the covariance eigenvalues, with the effective dimensions.
    """
    n = check_int(n, "n", minimum=1)
    d = check_int(d, "d", minimum=1)
    rng = check_rng(rng)
    _check_sample_memory(n, d, orthogonal, V)
    sp, lam = eigenvalues(spectrum, d)
    key = counter_key(rng)
    if orthogonal:
        if n > d:
            raise ValueError(f"orthogonal rows need n <= d, got n={n}, d={d}")
        if sp.values.size != 1:
            raise ValueError("orthogonal=True supports only the isotropic spectrum")
        G = _z(z, (n, d), key) * np.sqrt(sp.values[0])
        Q, R = np.linalg.qr(G.T)  # d x n, orthonormal columns
        Q = Q * np.sign(np.where(np.diag(R) == 0, 1.0, np.diag(R)))[None, :]
        X = np.ascontiguousarray(Q.T * np.linalg.norm(G, axis=1)[:, None])
    else:
        X = _z(z, (n, d), key)
        # In place (a fresh n x d array would cost its page faults), and not at
        # all for the unit isotropic spectrum: bitwise the same X either way.
        if not np.all(lam == 1.0):
            X *= np.sqrt(lam)[None, :]
        if isinstance(V, str):
            if V == "haar":
                if d > MAX_HAAR_D:
                    raise ValueError(
                        f"V='haar' builds a d x d orthogonal matrix (O(d^3)); refused for d={d} > {MAX_HAAR_D}. "
                        "For Gaussian z the law of X does not depend on V: use V='identity'."
                    )
                X = X @ haar_orthogonal(d, rng).T
            elif V != "identity":
                raise ValueError(f"V must be 'identity', 'haar' or a (d, d) orthogonal array; got {V!r}")
        else:
            Vm = as_float_array(V, "V", ndim=2)
            if Vm.shape != (d, d):
                raise ValueError(f"V must have shape ({d}, {d}), got {Vm.shape}")
            if not np.allclose(Vm.T @ Vm, np.eye(d), atol=1e-8):
                raise ValueError("V must be orthogonal (V^T V = I)")
            X = X @ Vm.T
        X = np.ascontiguousarray(X)
    y = _labels(labels, n, rng)
    return Dataset(X=X, y=y, spectrum=lam, orthogonal=bool(orthogonal))


def sample_fused(
    n: int, d: int, rngs, *, spectrum="isotropic", z="gaussian", labels="uniform", keep_x=False, n_threads: int = 1
):
    """``(K, X or None, y, lambda)`` of len(rngs) draws like :func:`sample` (V the identity), by the
    fused C++ trial: X drawn in column blocks with ``K = X X^T`` accumulated block by block.

    Draw b takes its key from ``rngs[b]`` exactly as :func:`sample` does, then its labels, so its
    X and y are bitwise those of ``sample(n, d, ..., rng=rngs[b])``; K equals ``X X^T`` to
    rounding (a column-blocked sum) and is bitwise the same whether X is kept or not, whatever
    ``n_threads``. K has shape (B, n, n), X (B, n, d) when ``keep_x``, y (B, n).
    """
    from relucore import _core

    n = check_int(n, "n", minimum=1)
    d = check_int(d, "d", minimum=1)
    rngs = [check_rng(r) for r in rngs]
    B = len(rngs)
    if keep_x:
        _check_sample_memory(n * B, d, False, "identity")
    _, lam = eigenvalues(spectrum, d)
    check_z(z)
    keys = np.array([counter_key(r) for r in rngs], dtype=np.uint64)
    scale = None if np.all(lam == 1.0) else np.sqrt(lam)
    K = np.empty((B, n, n))
    X = np.empty((B, n, d)) if keep_x else None
    _core.fused_gram_batch(keys, stream=0, n=n, d=d, z=z, scale=scale, K=K, X=X, n_threads=int(n_threads))
    y = np.stack([_labels(labels, n, r) for r in rngs]) if B else np.empty((0, n))
    return K, X, y, lam


def _check_sample_memory(n: int, d: int, orthogonal: bool, V) -> None:
    """Refuses an X that does not fit in the memory available, before drawing anything."""
    # Copies of the n x d array alive at once: X itself; G, Q and X for the
    # orthogonal rows; X and X V^T for a rotation (plus V itself, d x d).
    copies = 3 if orthogonal else (1 if isinstance(V, str) and V == "identity" else 2)
    extra = d * d if isinstance(V, str) and V == "haar" else 0
    n_bytes = 8.0 * (copies * n * d + extra + d)
    check_available_memory(
        n_bytes,
        f"sample(n={n}, d={d}): X (n x d float64)",
        f"use sample_gram(n, d, ...) to draw K = X X^T (n x n, {8.0 * n * n / 2**20:.3g} MiB) without X",
    )


def wishart_bartlett(n: int, df: int, rng: np.random.Generator) -> np.ndarray:
    """``W ~ Wishart(df, I_n)`` by the Bartlett decomposition (df >= n), O(n^3).

    ``L`` lower triangular with ``L_ii^2 ~ chi^2(df - i + 1)`` (i = 1..n) and
    ``L_ij ~ N(0, 1)`` below the diagonal; ``W = L L^T``.
    """
    if df < n:
        raise ValueError(f"Bartlett needs df >= n, got df={df}, n={n}")
    L = np.tril(rng.standard_normal((n, n)), -1)
    dfs = df - np.arange(n, dtype=np.float64)  # df - i + 1 for i = 1..n
    L[np.diag_indices(n)] = np.sqrt(rng.chisquare(dfs))
    return _outer(L)


def _outer(A: np.ndarray) -> np.ndarray:
    """``A A^T`` by relucore's C++ Gram kernel (exactly symmetric; single-threaded,
    so it does not depend on how a loaded machine treats BLAS threads)."""
    from relucore import _core

    A = np.ascontiguousarray(A, dtype=np.float64)
    out = np.empty((1, A.shape[0], A.shape[0]))
    _core.gram_batch(A[None], out, 1)
    return out[0]


def sample_gram(
    n: int,
    d: int,
    *,
    spectrum="isotropic",
    labels="uniform",
    rng=None,
    max_columns: int = 50_000_000,
) -> GramDataset:
    """Draws ``K = X X^T`` for Gaussian ``z`` without forming X (docs/math.md §8).

    ``K = Z Lambda Z^T = sum_g lambda_g W_g`` over the distinct eigenvalues
    ``lambda_g`` with multiplicities ``d_g``, where the ``W_g ~ Wishart(d_g, I_n)``
    are independent. A group with ``d_g >= n`` is drawn by the Bartlett
    decomposition (O(n^3), whatever ``d_g``); the groups with ``d_g < n`` are
    drawn together as ``G diag(lambda) G^T`` with a Gaussian G of
    ``sum d_g`` columns (O(n^2 sum d_g), in chunks). So "isotropic" and
    "spiked" cost O(n^3) for any d (10^9 and more), and ``("power", a)``,
    whose d eigenvalues are all distinct, costs as much as drawing X.

    Parameters
    ----------
    n, d : int
        Examples and dimension (d may be 10^9 and more).
    spectrum : "isotropic" | ("spiked", k, big, bulk) | ("power", a) | array | Spectrum
        The covariance eigenvalues, as in :func:`sample`.
    labels : str, tuple or array, default "uniform"
        As in :func:`sample`.
    rng : None, int, SeedSequence or Generator
        Randomness of the draw. An int, a SeedSequence or None seeds
        ``numpy.random.default_rng``; as in :func:`sample`, one 64-bit draw of the
        Generator is the key of relucore's counter-based generator, from whose
        streams K is drawn (the layout of ``relucore/random/gram_sample.hpp``: the
        groups with ``d_g >= n`` exactly as :func:`sample_gram_batch` draws them for
        that key, the columns of the groups with ``d_g < n`` from stream 2, normal
        ``t n + i`` for entry i of column t); then the labels are drawn by numpy
        from the Generator itself.
    max_columns : int, default 5e7
        Refuse spectra whose small-multiplicity groups need more Gaussian
        columns than this (use :func:`sample` or fewer distinct values).

    Returns
    -------
    GramDataset
        With ``d < n`` (isotropic) K has rank d: it is returned, and
        :func:`relucore.minnorm` / ``train``'s positive init will refuse it.
    """
    n = check_int(n, "n", minimum=1)
    d = check_int(d, "d", minimum=1)
    rng = check_rng(rng)
    sp = make_spectrum(spectrum, d)
    small = (sp.counts < n) & (sp.values > 0)
    n_cols = int(np.sum(sp.counts[small]))
    if n_cols > max_columns:
        raise ValueError(
            f"the spectrum has {n_cols} eigenvalues of multiplicity < n (> max_columns={max_columns}); "
            "drawing them costs O(n^2) each: use sample() (explicit X) or a spectrum with fewer distinct values"
        )
    from relucore import _core

    key = counter_key(rng)
    big = (sp.counts >= n) & (sp.values > 0)
    K = np.zeros((1, n, n))
    if np.any(big):
        plan = BartlettPlan(
            np.ascontiguousarray(sp.values[big]), np.ascontiguousarray(sp.counts[big], dtype=np.int64), 0, 0.1, 1.0, sp
        )
        K, _ = sample_gram_keys(n, np.array([key], dtype=np.uint64), plan)
    K = K[0]
    if n_cols:
        lam_small = np.repeat(sp.values[small], sp.counts[small])
        chunk = max(1, 2**22 // max(n, 1))
        for start in range(0, n_cols, chunk):
            lam = lam_small[start : start + chunk]
            G = np.empty((lam.size, n))  # column t of the n x n_cols matrix is row t here
            _core.counter_variates(
                key, stream=_core.gram_small_groups_stream, start=start * n, z="gaussian", out=G.reshape(-1)
            )
            K += _outer(G.T * np.sqrt(lam)[None, :])
        K = 0.5 * (K + K.T)
    y = _labels(labels, n, rng)
    return GramDataset(K=np.ascontiguousarray(K), y=y, spectrum=sp)


#: Label options of :func:`sample_gram_batch` -> code of relucore/random/gram_sample.hpp.
_LABEL_KINDS = {"uniform": 0, "positive": 1, "normal": 2}


class BartlettPlan(NamedTuple):
    """What the C++ Bartlett sampler draws from: the spectrum's positive groups, the labels' law."""

    values: np.ndarray
    counts: np.ndarray
    labels: int
    lo: float
    hi: float
    spectrum: Spectrum

    def sampler_args(self) -> dict:
        """The sampler's keyword arguments (``_core.sample_gram_batch``, ``_core.sweep_gram_batch``)."""
        return dict(values=self.values, counts=self.counts, labels=self.labels, lo=self.lo, hi=self.hi)


def bartlett_plan(n: int, d: int, spectrum="isotropic", labels="uniform"):
    """The arguments of the C++ Bartlett sampler for these options, or None when it
    does not apply (a group of multiplicity < n, or labels given as an array).

    Returns a :class:`BartlettPlan` ``(values, counts, labels, lo, hi, spectrum)``.
    """
    sp = make_spectrum(spectrum, d)
    keep = sp.values > 0
    if np.any(sp.counts[keep] < n):
        return None
    spec = (labels,) if isinstance(labels, str) else labels
    if not (isinstance(spec, tuple) and spec and isinstance(spec[0], str)):
        return None
    kind = spec[0]
    if kind not in _LABEL_KINDS:
        return None
    lo, hi = 0.1, 1.0
    if kind == "normal":
        if len(spec) != 1:
            return None
    elif len(spec) == 3:
        lo, hi = float(spec[1]), float(spec[2])
        if not (0 <= lo <= hi) or not np.isfinite(hi):
            return None
    elif len(spec) != 1:
        return None
    return BartlettPlan(
        np.ascontiguousarray(sp.values[keep], dtype=float),
        np.ascontiguousarray(sp.counts[keep], dtype=np.int64),
        _LABEL_KINDS[kind],
        lo,
        hi,
        sp,
    )


def sample_gram_batch(
    n: int, d: int, seeds, *, spectrum="isotropic", labels="uniform", n_threads: Optional[int] = None
):
    """Draws B data sets ``(K, y)`` like :func:`sample_gram`, one per seed, in one C++ call.

    The data of Lai et al. (2026), Sec. 2, drawn as in their App. A.1 (docs/math.md §8).
    The same law as :func:`sample_gram` (Gaussian z; K a sum of independent
    ``lambda_g Wishart(d_g, I_n)`` by the Bartlett decomposition, O(n^3) per data
    set whatever d is). Data set b, labels included, is a function of one 64-bit
    key only, ``seeds[b].generate_state(1, numpy.uint64)[0]``: the key of relucore's
    counter-based generator (Philox4x32-10), whose streams are laid out in
    ``relucore/random/gram_sample.hpp`` (each entry of K's Bartlett factors and each
    label at its own stream and index), so a data set does not depend on the batch
    it is drawn in or on ``n_threads``. This is how ``relucore.sweep`` draws its
    Gram-mode data: with the ``seed`` column of a sweep row,
    ``sample_gram_batch(n, d, [seed], ...)`` rebuilds that row's K and y (or use
    :func:`relucore.sweeps.row_data`).

    Parameters
    ----------
    n, d : int
        Examples and dimension (d may be 10^9 and more).
    seeds : sequence of int or numpy.random.SeedSequence
        One seed per data set (an int s means ``SeedSequence(s)``).
    spectrum : "isotropic" | ("spiked", k, big, bulk) | array | Spectrum
        Every distinct eigenvalue must have multiplicity >= n (or be 0);
        otherwise use :func:`sample_gram`.
    labels : "uniform" | ("uniform", lo, hi) | "positive" | ("positive", lo, hi) | "normal"
        The label law by name, as in :func:`sample` (no array).
    n_threads : int, optional
        Threads across data sets (default: OpenMP's default; the result does not depend on it).

    Returns
    -------
    K : ndarray, shape (B, n, n)
        Exactly symmetric.
    y : ndarray, shape (B, n)
        The labels of each data set.
    """
    n = check_int(n, "n", minimum=1)
    d = check_int(d, "d", minimum=1)
    plan = bartlett_plan(n, d, spectrum, labels)
    if plan is None:
        raise ValueError(
            "sample_gram_batch needs every eigenvalue of the spectrum with multiplicity >= n and labels given by name "
            "('uniform', 'positive', 'normal' or a (name, lo, hi) tuple); use sample_gram otherwise"
        )
    keys = np.empty(len(seeds), dtype=np.uint64)
    for b, s in enumerate(seeds):
        keys[b] = _seed_sequence(s, f"seeds[{b}]").generate_state(1, np.uint64)[0]
    return sample_gram_keys(n, keys, plan, check_n_threads(n_threads))


def _seed_sequence(seed, name: str) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a non-negative integer or a SeedSequence, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be a non-negative integer or a SeedSequence, got {seed}")
    return np.random.SeedSequence(int(seed))


def sample_gram_keys(n: int, keys: np.ndarray, plan, n_threads: int = 1):
    """:func:`sample_gram_batch` from counter-generator keys (B,) and a :func:`bartlett_plan`."""
    from relucore import _core

    B = keys.shape[0]
    K = np.empty((B, n, n))
    y = np.empty((B, n))
    _core.sample_gram_batch(keys=keys, n=n, **plan.sampler_args(), K=K, y=y, n_threads=int(n_threads))
    return K, y
