"""The ``gram_*`` columns of a batch (``relucore.sweeps.columns.GRAM_FIELDS``) from one
batched :func:`relucore.gram_stats` call; both sweep paths use it."""

from __future__ import annotations

import math
from typing import Dict, List

import numpy as np

from relucore.sweeps.columns import GRAM_FIELDS
from relucore.theory.gram_stats import gram_stats, stats_from_batch

__all__ = ["gram_arrays", "gram_arrays_of_trials", "gram_rows", "no_gram_arrays", "no_gram_rows"]


def no_gram_arrays(B: int) -> Dict[str, np.ndarray]:
    """``gram_*`` columns of B trials without statistics (NaN)."""
    return {f"gram_{f}": np.full(B, math.nan) for f in GRAM_FIELDS}


def gram_arrays(spectrum, K: np.ndarray, y: np.ndarray) -> Dict[str, np.ndarray]:
    """``gram_*`` columns (arrays of B) of a batch (K: (B, n, n), y: (B, n))."""
    B, n = y.shape
    if n < 2:
        return no_gram_arrays(B)
    return _arrays(gram_stats(gram=K, spectrum=spectrum, y=y), B)


def gram_arrays_of_trials(spectrum, n: int, out) -> Dict[str, np.ndarray]:
    """``gram_*`` columns of a batch from ``_core.sweep_gram_batch(..., gram_stats=True)``'s
    per-trial values (``out``, a ``_core.GramTrialOutput``): :func:`gram_arrays`'s statistics of
    its K and y, with the trial's own extreme eigenvalues (tridiagonal Laguerre iteration) in
    place of a full eigensolver's."""
    B = out.label_ratio.shape[0]
    if n < 2:
        return no_gram_arrays(B)
    raw = [
        getattr(out, f"gram_{f}") for f in ("mu_max", "mu_min", "deviation", "offdiag_ratio", "max_offdiag", "min_diag")
    ]
    st = stats_from_batch(n, raw, np.full(B, spectrum.norm1), spectrum, out.label_ratio)
    return _arrays(st, B)


def _arrays(st, B: int) -> Dict[str, np.ndarray]:
    cols = {}
    for f in GRAM_FIELDS:
        v = getattr(st, f, None)
        cols[f"gram_{f}"] = np.full(B, math.nan) if v is None else np.broadcast_to(np.asarray(v, dtype=float), (B,))
    return cols


def gram_rows(spectrum, K: np.ndarray, y: np.ndarray) -> List[Dict[str, float]]:
    """``gram_*`` values of a batch, one dict per trial (see :func:`gram_arrays`)."""
    cols = gram_arrays(spectrum, K, y)
    return [{k: float(v[b]) for k, v in cols.items()} for b in range(y.shape[0])]


def no_gram_rows(B: int) -> List[Dict[str, float]]:
    """The ``gram_*`` values of B trials of a configuration with ``gram_stats=False`` (NaN)."""
    return [{f"gram_{f}": math.nan for f in GRAM_FIELDS} for _ in range(B)]
