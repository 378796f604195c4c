"""The columns of a sweep table, each defined once: name, dtype, meaning and what fills it.

A row holds, in this order: ``LEADING`` (``config_index, trial, seed``),
the configuration's keys (``relucore.sweeps.config.DEFAULTS``), the measured
columns ``MEASURED``, the columns of the user's ``measure`` (sorted by
name) and ``TRAILING`` (``status, error``).

Two paths fill the measured columns:

* the general path (:mod:`relucore.sweeps.task`): ``prepare``/``train`` and
  ``minnorm`` in Python, batched per configuration;
* the Gram fast path (:mod:`relucore.sweeps.gram_trial`): whole trials in one
  ``_core.sweep_gram_batch`` call, whose per-trial outputs come back as the
  array fields of a ``_core.GramTrialOutput`` (``CORE_OUTPUTS``).

``Column.general`` and ``Column.fast`` say where each path takes a
column from (one of the source names below). This module only describes; it
computes nothing and imports nothing from the rest of the package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

__all__ = [
    "Column",
    "LEADING",
    "MEASURED",
    "TRAILING",
    "LEADING_COLUMNS",
    "TRAILING_COLUMNS",
    "BUILTIN_COLUMNS",
    "RENAMED_COLUMNS",
    "GRAM_FIELDS",
    "CORE_OUTPUTS",
    "columns_from",
    "missing_values",
]

# Where a column's value comes from.
SWEEP = "sweep"  # the sweep's bookkeeping (configuration index, trial, seed)
TRAIN = "train"  # the trial's TrainResult (relucore.train), attribute of the same name
LABELS = "labels"  # counted from the trial's labels y
COVARIANCE = "covariance"  # the configuration's covariance spectrum lambda
MINNORM = "minnorm"  # relucore.minnorm and relucore.limit_gap, in Python
GRAM_STATS = "gram_stats"  # one batched relucore.gram_stats call (relucore.sweeps.gram_columns)
CORE = "core"  # the _core.sweep_gram_batch output of the same name
MESSAGE = "message"  # the exception of a failed trial
LIMIT = "limit"  # the certificate of train(steps=np.inf) (steps = inf in the configuration)


@dataclass(frozen=True)
class Column:
    """One column of the table."""

    name: str
    kind: str  #: "f" float64, "i" int64, "U" text
    meaning: str
    general: str  #: source on the general path
    fast: str  #: source on the Gram fast path

    @property
    def dtype(self):
        return {"f": np.float64, "i": np.int64, "U": object}[self.kind]

    @property
    def missing(self):
        """The value of a failed trial: -1 for counts, NaN for measurements."""
        return -1 if self.kind == "i" else math.nan


#: Fields of relucore.GramStats kept as ``gram_<field>`` columns, with their meaning.
_GRAM_MEANINGS = {
    "mu_max": "mu_1(K), the largest eigenvalue",
    "mu_min": "mu_n(K), the smallest eigenvalue",
    "deviation": "||K / ||lambda||_1 - I||_2",
    "offdiag_ratio": "max_{i!=j} |K_ij| / min_i K_ii",
    "d2": "effective dimension d_2 of the spectrum",
    "d_inf": "effective dimension d_inf of the spectrum",
    "C0_assumption2": "the constant C_0 of Assumption 2 on this draw",
    "C0_assumption3": "the constant C_0 of Assumption 3 on this draw",
}
GRAM_FIELDS: Tuple[str, ...] = tuple(_GRAM_MEANINGS)

LEADING: Tuple[Column, ...] = (
    Column("config_index", "i", "position of the configuration in the grid", SWEEP, SWEEP),
    Column("trial", "i", "trial number within the configuration", SWEEP, SWEEP),
    Column("seed", "U", "the trial's SeedSequence, printable (eval rebuilds it)", SWEEP, SWEEP),
)

MEASURED: Tuple[Column, ...] = (
    Column("loss", "f", "final loss", TRAIN, CORE),
    Column("grad_norm", "f", "final gradient norm", TRAIN, CORE),
    Column("nit", "i", "GD steps taken", TRAIN, CORE),
    Column("eta", "f", "step size used (train's default when unset)", TRAIN, CORE),
    Column("pattern_stable_step", "i", "first step after which no activation pattern changed", TRAIN, CORE),
    Column("n_pos", "i", "examples with y > 0", LABELS, CORE),
    Column("n_neg", "i", "examples with y <= 0", LABELS, CORE),
    Column("norm1", "f", "||lambda||_1 of the spectrum", COVARIANCE, COVARIANCE),
    Column(
        "gap",
        "f",
        "||W_inf - W*|| to the minimum-norm interpolator (Lai et al. 2026, Theorems 2, 4, 6); NaN with minnorm=False",
        MINNORM,
        CORE,
    ),
    Column(
        "gap_normalized",
        "f",
        "gap * sqrt(||lambda||_1 / n_-) for one neuron (Theorem 2), "
        "gap * sqrt(||lambda||_1 / (m n)) otherwise (Theorem 6); NaN with minnorm=False, and for one "
        "neuron when no example has a label it must leave inactive (n_- = 0 for s = +1: undefined)",
        MINNORM,
        CORE,
    ),
    Column(
        "limit_holds",
        "i",
        "steps = inf: 1 when the limit is certified (the activation pattern proved frozen, docs/math.md "
        "§13), 0 when not (the state where the run stopped); -1 for a finite step budget",
        LIMIT,
        LIMIT,
    ),
    Column(
        "limit_step",
        "i",
        "steps = inf: the GD step from which the pattern is proved frozen (certificate.step); -1 otherwise",
        LIMIT,
        LIMIT,
    ),
    Column(
        "limit_margin",
        "f",
        "steps = inf: the certificate's smallest margin (> 0 when it holds); NaN otherwise",
        LIMIT,
        LIMIT,
    ),
) + tuple(
    Column(f"gram_{f}", "f", m + " (NaN with gram_stats=False)", GRAM_STATS, GRAM_STATS)
    for f, m in _GRAM_MEANINGS.items()
)

TRAILING: Tuple[Column, ...] = (
    Column("status", "U", "a relucore.Status name: converged, certified, stalled, ... or error", TRAIN, CORE),
    Column("error", "U", "the exception of a failed trial ('' otherwise)", MESSAGE, CORE),
)

#: Columns renamed in sweep format 3 (old -> new): stores and checkpoints written before hold the
#: old names, which reading them (export, ``read_table``, ``import``) maps to the new ones.
RENAMED_COLUMNS: Dict[str, str] = {"gap_normalised": "gap_normalized"}

LEADING_COLUMNS: Tuple[str, ...] = tuple(c.name for c in LEADING)
TRAILING_COLUMNS: Tuple[str, ...] = tuple(c.name for c in TRAILING)
#: Measured columns every row has -> kind ("f" float, "i" int).
BUILTIN_COLUMNS: Dict[str, str] = {c.name: c.kind for c in MEASURED}

#: Per-trial array fields of ``_core.sweep_gram_batch``'s GramTrialOutput (name -> kind), besides
#: K (B, n, n) and y (B, n). The names of ``MEASURED`` with source ``CORE`` are among them; the
#: others serve the fast path itself: ``status`` (a relucore.Status value), ``error`` (a
#: GramTrialError code, 0: none; its text is the field ``error_text``), ``cond`` (cond(K)),
#: ``certificate`` (largest KKT residual of w*) and ``mu1`` (mu_1(K)).
CORE_OUTPUTS: Dict[str, str] = {
    "loss": "f",
    "grad_norm": "f",
    "eta": "f",
    "gap": "f",
    "gap_normalized": "f",
    "certificate": "f",
    "mu1": "f",
    "cond": "f",
    "nit": "i",
    "pattern_stable_step": "i",
    "status": "i",
    "n_pos": "i",
    "n_neg": "i",
    "error": "i",
}


def columns_from(source: str, *, fast: bool = False) -> Tuple[Column, ...]:
    """The measured columns that one path takes from ``source``."""
    return tuple(c for c in MEASURED if (c.fast if fast else c.general) == source)


def missing_values() -> Dict[str, float]:
    """The measured columns of a failed trial (see :attr:`Column.missing`)."""
    return {c.name: c.missing for c in MEASURED}
