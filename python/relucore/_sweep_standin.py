"""Temporary stand-ins for relucore.sample / sample_gram (branch `theory`).

Used only while those functions are missing from the package; isotropic
Gaussian features and |y| ~ U(0.1, 1) with random signs.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class _Data:
    X: Optional[np.ndarray]
    K: Optional[np.ndarray]
    y: np.ndarray
    norm1: float
    spectrum: None = None


@dataclasses.dataclass(frozen=True)
class _Stats:
    mu_max: float
    mu_min: float
    deviation: float
    offdiag_ratio: float


def gram_stats(*, gram, spectrum=None, y=None):
    mu = np.linalg.eigvalsh(gram)
    n = gram.shape[-1]
    diag = np.diagonal(gram, axis1=-2, axis2=-1)
    off = np.abs(gram - diag[..., None] * np.eye(n))
    norm1 = np.trace(gram, axis1=-2, axis2=-1) / n
    return _Stats(mu[..., -1], mu[..., 0], np.max(np.abs(mu / norm1[..., None] - 1), axis=-1),
                  off.max(axis=(-2, -1)) / diag.min(axis=-1))


def _labels(n, rng):
    return rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)


def sample(n, d, *, spectrum=None, z=None, labels=None, rng=None):
    X = rng.standard_normal((n, d))
    return _Data(X=X, K=None, y=_labels(n, rng), norm1=float(d))


def sample_gram(n, d, *, spectrum=None, labels=None, rng=None):
    L = np.tril(rng.standard_normal((n, n)), -1)
    L[np.diag_indices(n)] = np.sqrt(rng.chisquare(d - np.arange(n)))
    return _Data(X=None, K=L @ L.T, y=_labels(n, rng), norm1=float(d))
