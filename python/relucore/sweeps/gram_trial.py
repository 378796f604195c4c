"""Gram-mode sweep trials in one C++ call per batch (the fast path of ``relucore.sweep``).

A trial of a ``use_gram`` configuration draws its K and y with the Bartlett
construction of :func:`relucore.sample_gram_batch`, from the counter-based
streams of the key ``seed.generate_state(1, uint64)[0]`` where ``seed`` is the
trial's SeedSequence (the key is derived in C++, bit for bit as numpy's
SeedSequence). Both sweep paths draw the data this way, so a configuration's
rows do not depend on which path runs it:

* the fast path (one neuron, ``init="positive"``, engine ``"dual"``, square
  loss, ReLU, no ``measure``): sampling, the positive init with the default
  step and tolerance (the rule functions of train's prepare step, called from
  relucore/sweep/sweep_gram.hpp), GD to convergence (the DualGD engine of
  ``relucore.train``), the minimum-norm QP for w* with its KKT certificate and
  the gap ``sqrt((alpha - alpha*)^T K (alpha - alpha*))``, all in
  ``_core.sweep_gram_batch``, whole trials per thread;
* the general path (every other Gram-mode configuration): the same K and y,
  then ``prepare``/``train``/``minnorm`` as for explicit X.

The two differ only in the rounding of the eigenvalues (a tridiagonal Laguerre
iteration instead of LAPACK, also in the ``gram_*`` columns, which the fast path
computes inside the trial), hence of a default step or tolerance: with ``eta``
and ``tol`` given, a fast-path trial is ``relucore.train``'s run bit for bit
(the tests check both).
"""

from __future__ import annotations

import numbers
import sys
from typing import Any, Dict, List

import numpy as np

from relucore import _core
from relucore.sweeps.columns import CORE, COVARIANCE, LIMIT, MEASURED, missing_values
from relucore.sweeps.config import engine_of, sampler_option
from relucore.sweeps.gram_columns import gram_arrays_of_trials, no_gram_arrays
from relucore.theory.sampling import bartlett_plan, sample_gram_keys

__all__ = ["gram_plan", "fast_trials_ok", "trial_keys", "run_fast"]

#: The name of every status value (relucore.Status), interned: the store's status column holds names.
_STATUS_NAMES = np.array([sys.intern(s.name) for s in sorted(_core.Status)], dtype=object)


def gram_plan(cfg: Dict[str, Any]):
    """The Bartlett sampler plan of a ``use_gram`` configuration, or None (then ``sample_gram`` draws it)."""
    if not cfg["use_gram"]:
        return None
    spectrum = "isotropic" if cfg["spectrum"] is None else sampler_option(cfg["spectrum"])
    labels = "uniform" if cfg["labels"] is None else sampler_option(cfg["labels"])
    if isinstance(labels, list):
        return None
    try:
        return bartlett_plan(cfg["n"], cfg["d"], spectrum, labels)
    except (TypeError, ValueError):
        return None  # the general path raises the sampler's own error per trial


def _scalar_or_none(v) -> bool:
    return v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool))


def fast_trials_ok(cfg: Dict[str, Any], measure) -> bool:
    """True when a configuration's trials can run whole in C++ (see the module docstring)."""
    return (
        measure is None
        and cfg["use_gram"]
        and len(cfg["signs"]) == 1
        and cfg["init"] == "positive"
        and engine_of(cfg) == "dual"
        and cfg["loss"] == "square"
        and not (cfg["train_outer"] or cfg["bias"] or cfg["output_scale"] != 1.0)
        and cfg["reduction"] == "half_sum"
        and cfg["output_bias"] is None
        and cfg["activation"] == "relu"
        and cfg["steps"] != "inf"
        and all(_scalar_or_none(cfg[k]) for k in ("eps", "eta", "tol"))
        and (cfg["eps"] is None or cfg["eps"] > 0)
        and (cfg["eta"] is None or cfg["eta"] > 0)
        and (cfg["tol"] is None or cfg["tol"] >= 0)
        and gram_plan(cfg) is not None
    )


def _words(x: int) -> np.ndarray:
    """numpy's SeedSequence coercion of a non-negative int: base-2^32 digits, least significant first."""
    out = []
    while True:
        out.append(x & 0xFFFFFFFF)
        x >>= 32
        if not x:
            break
    return np.array(out, dtype=np.uint32)


def trial_keys(entropy: int, key, trials) -> np.ndarray:
    """Counter-generator keys (B,) of the trials t: ``SeedSequence(entropy, spawn_key=(*key, t))
    .generate_state(1, uint64)[0]``."""
    t = np.ascontiguousarray(trials, dtype=np.int64)
    keys = np.empty(t.size, dtype=np.uint64)
    _core.seed_keys(
        entropy=_words(int(entropy)), prefix=np.array([int(k) for k in key], dtype=np.uint32), trials=t, keys=keys
    )
    return keys


def _settings(cfg: Dict[str, Any], norm1: float):
    """The trial settings of a configuration; eps, eta and tol left unset take the C++ defaults
    (relucore/sweep/sweep_gram.hpp): the rules of train's defaults."""
    given = {k: float(cfg[k]) for k in ("eps", "eta", "tol") if cfg[k] is not None}
    return _core.GramTrialSettings(
        sign=float(cfg["signs"][0]), max_steps=int(cfg["steps"]), minnorm=bool(cfg["minnorm"]), norm1=norm1, **given
    )


def run_fast(task: Dict[str, Any], trials: List[int]) -> Dict[str, np.ndarray]:
    """Whole C++ trials as table columns (``trial``, the measured columns of
    :mod:`relucore.sweeps.columns`, ``status``, ``error``), one array per column:
    no per-trial Python. The ``gram_*`` statistics are computed in the C++ trial too, so
    K and y never come back to Python."""
    cfg = task["config"]
    n = cfg["n"]
    plan = gram_plan(cfg)
    sp = plan.spectrum
    keys = trial_keys(task["entropy"], task["key"], trials)
    B = len(trials)
    out = _core.sweep_gram_batch(
        keys,
        n=n,
        **plan.sampler_args(),
        settings=_settings(cfg, sp.norm1),
        n_threads=int(task["n_threads"] or 1),
        keep_data=False,
        gram_stats=bool(cfg["gram_stats"]),
    )
    ok = out.error == 0
    cols: Dict[str, np.ndarray] = {"trial": np.asarray(trials, dtype=np.int64)}
    for c in MEASURED:
        if c.fast == CORE:
            cols[c.name] = getattr(out, c.name)  # gap, gap_normalized: NaN from C++ when minnorm is off
        elif c.fast == COVARIANCE:
            cols[c.name] = np.full(B, float(sp.norm1))
        elif c.fast == LIMIT:  # the fast path runs finite step budgets only
            cols[c.name] = np.full(B, c.missing)
    gram = no_gram_arrays(B)
    if cfg["gram_stats"] and ok.any():
        for name, col in gram_arrays_of_trials(sp, n, out).items():
            gram[name] = np.where(ok, col, gram[name])
    cols.update(gram)
    codes = out.status
    names = _STATUS_NAMES[: int(codes.max(initial=0)) + 1]
    status = names[codes]
    error = np.full(B, "", dtype=object)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        for name, v in missing_values().items():
            cols[name] = cols[name].copy()
            cols[name][bad] = v
        status[bad] = _STATUS_NAMES[_core.Status.error]
        # The general path's words for the same trial (GramTrialResult::message, relucore/sweep/sweep_gram.hpp).
        error[bad] = [sys.intern(out.error_text[b]) for b in bad.tolist()]
    cols["status"] = status
    cols["error"] = error
    return cols


def gram_data(cfg: Dict[str, Any], entropy: int, key, trials: List[int], plan):
    """(K, y) of a batch of Gram-mode trials, drawn as the fast path draws them."""
    return sample_gram_keys(cfg["n"], trial_keys(entropy, key, trials), plan)
