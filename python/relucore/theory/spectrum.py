"""Covariance spectra of the data of Lai et al. (2026), Sec. 2: :class:`Spectrum`, :func:`make_spectrum`.

A spectrum is stored as its distinct eigenvalues with their multiplicities, so that d may
be 10^9 and more (:func:`relucore.sample_gram` draws K from it in O(n^3)). The spellings
``"isotropic"``, ``("power", a)``, ``("spiked", k, big, bulk)`` and arrays are described in
:mod:`relucore.theory.sampling`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from relucore._summary import summarized
from relucore._validation import as_float_array, check_int

__all__ = ["Spectrum", "make_spectrum"]


@summarized(
    title=lambda s: f"d={s.d}, distinct eigenvalues: {s.values.size}",
    rows=("norm1", "max", ("d2", "d_inf"), "values", "counts"),
)
@dataclasses.dataclass(frozen=True)
class Spectrum:
    """Covariance eigenvalues stored as distinct ``values`` with ``counts`` (d may be huge).

    Attributes
    ----------
    values : ndarray
        Distinct eigenvalues, descending.
    counts : ndarray of int
        Multiplicity of each value; ``d = counts.sum()``.
    """

    values: np.ndarray
    counts: np.ndarray

    @property
    def d(self) -> int:
        """The dimension ``d``: the number of eigenvalues counted with multiplicity."""
        return int(np.sum(self.counts))

    @property
    def norm1(self) -> float:
        """``||lambda||_1``."""
        return float(np.sum(self.values * self.counts))

    @property
    def norm2_sq(self) -> float:
        """``||lambda||_2^2``."""
        return float(np.sum(self.values**2 * self.counts))

    @property
    def max(self) -> float:
        """``||lambda||_inf = lambda_1``."""
        return float(np.max(self.values))

    @property
    def d2(self) -> float:
        """Effective dimension ``d_2 = ||lambda||_1^2 / ||lambda||_2^2`` (Sec. 2)."""
        return self.norm1**2 / self.norm2_sq

    @property
    def d_inf(self) -> float:
        """Effective dimension ``d_inf = ||lambda||_1 / ||lambda||_inf`` (Sec. 2)."""
        return self.norm1 / self.max

    def to_array(self) -> np.ndarray:
        """All d eigenvalues, descending (only sensible for moderate d).

        Returns
        -------
        ndarray, shape (d,)
            Each distinct value repeated by its multiplicity.
        """
        return np.repeat(self.values, self.counts)

    @classmethod
    def from_array(cls, lam) -> "Spectrum":
        """The spectrum of an array of eigenvalues, grouped by distinct value.

        Parameters
        ----------
        lam : array_like, shape (d,)
            Non-negative eigenvalues, at least one positive (any order).

        Returns
        -------
        Spectrum
            Distinct values, descending, with their multiplicities.
        """
        lam = as_float_array(lam, "spectrum", ndim=1)
        if np.any(lam < 0):
            raise ValueError("spectrum must hold non-negative eigenvalues")
        if not np.any(lam > 0):
            raise ValueError("spectrum must hold at least one positive eigenvalue")
        vals, counts = np.unique(lam, return_counts=True)
        order = np.argsort(vals)[::-1]
        return cls(values=vals[order], counts=counts[order].astype(np.int64))


def make_spectrum(spectrum, d: int) -> Spectrum:
    """Parses the ``spectrum`` option (see the module docstring) for dimension d."""
    d = check_int(d, "d", minimum=1)
    if isinstance(spectrum, str):
        if spectrum != "isotropic":
            raise ValueError(
                f"spectrum must be 'isotropic', ('power', a), ('spiked', k, big, bulk) or an array; got {spectrum!r}"
            )
        return Spectrum(np.array([1.0]), np.array([d], dtype=np.int64))
    if isinstance(spectrum, Spectrum):
        if spectrum.d != d:
            raise ValueError(f"spectrum has dimension {spectrum.d}, expected d={d}")
        return spectrum
    if isinstance(spectrum, tuple) and spectrum and isinstance(spectrum[0], str):
        kind = spectrum[0]
        if kind == "power" and len(spectrum) == 2:
            a = float(spectrum[1])
            if not np.isfinite(a) or a < 0:
                raise ValueError(f"('power', a) needs a finite a >= 0, got {a}")
            if d > 50_000_000:
                raise ValueError("('power', a) has d distinct eigenvalues; d above 5e7 is not supported")
            lam = np.arange(1, d + 1, dtype=float) ** (-a)
            return Spectrum(lam, np.ones(d, dtype=np.int64)) if a > 0 else Spectrum(np.array([1.0]), np.array([d]))
        if kind == "spiked" and len(spectrum) == 4:
            k = check_int(spectrum[1], "k (spikes)", minimum=0)
            big, bulk = float(spectrum[2]), float(spectrum[3])
            if k > d:
                raise ValueError(f"spiked spectrum: k={k} exceeds d={d}")
            if not (big > 0 and bulk >= 0) or not (np.isfinite(big) and np.isfinite(bulk)):
                raise ValueError("spiked spectrum: need big > 0 and bulk >= 0")
            vals, counts = [], []
            for v, c in ((big, k), (bulk, d - k)):
                if c > 0:
                    vals.append(v)
                    counts.append(c)
            sp = Spectrum(np.array(vals), np.array(counts, dtype=np.int64))
            if sp.norm1 <= 0:
                raise ValueError("spiked spectrum is identically zero")
            order = np.argsort(sp.values)[::-1]
            return Spectrum(sp.values[order], sp.counts[order])
        raise ValueError(f"unknown spectrum {spectrum!r}: use ('power', a) or ('spiked', k, big, bulk)")
    sp = Spectrum.from_array(spectrum)
    if sp.d != d:
        raise ValueError(f"spectrum array has length {sp.d}, expected d={d}")
    return sp
