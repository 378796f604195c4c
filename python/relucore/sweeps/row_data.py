"""The data of any sweep row rebuilt from the row itself: :func:`row_data`.

A row is a function of its configuration and its ``seed`` (docs/sweeps.md,
"Reproducibility"); this module reads both back from the row's cells and draws
the trial's data exactly as the sweep drew them (same streams, same order), so
that a row can be inspected, re-trained or plotted without rerunning the sweep. An explicit-X
row's X and y are ``relucore.sample``'s for the trial's generator
(``numpy.random.default_rng(seed)``: z from the counter-based stream keyed by one 64-bit draw
of it), and its K is the one the fused trial accumulated, bitwise.
Rows of another sweep format (``relucore.sweeps.config.SWEEP_FORMAT``) may have
been drawn from other streams.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any, Dict, Mapping, Optional

import numpy as np

from relucore._summary import sizes, summarized
from relucore.sweeps.config import CONFIG_KINDS, DEFAULTS, config_column, config_key, normalise_config, trial_seed
from relucore.sweeps.gram_trial import gram_data, gram_plan
from relucore.sweeps.task import _init_for, _sample, explicit_data, gram_gaussian_start

__all__ = ["RowData", "row_config", "row_data"]

_SEED = re.compile(r"^SeedSequence\(entropy=(\d+), spawn_key=\((\d+), (\d+), (\d+)\)\)$")


@summarized(title=lambda r: sizes(n=r.y.size) + (" (Gram matrix only)" if r.X is None else f", d={r.X.shape[1]}"))
@dataclasses.dataclass(frozen=True)
class RowData:
    """The data of one sweep row.

    Attributes
    ----------
    X : ndarray, shape (n, d), or None
        The examples (None for a ``use_gram`` configuration, which never draws X).
    K : ndarray, shape (n, n)
        The Gram matrix the trial trained on (``X X^T`` when X exists).
    y : ndarray, shape (n,)
    init : str or ndarray
        The trial's start: the init's name when it is a function of the data
        (``"positive"``, ``"disjoint"``), else the drawn start: ``W0`` (m, d) with
        X, ``beta0`` (m, n) (``beta0 = W0 X^T``) in Gram mode.
    config : dict
        The row's normalised configuration.
    seed : numpy.random.SeedSequence
        The trial's seed.
    """

    X: Optional[np.ndarray]
    K: np.ndarray
    y: np.ndarray
    init: Any
    config: Dict[str, Any]
    seed: np.random.SeedSequence


def _cell(row, key: str):
    try:
        return row[key]
    except (KeyError, IndexError):
        raise KeyError(f"the row has no column {key!r}: pass a row of a sweep table (table.iloc[i])") from None


def _decode(key: str, v):
    """A configuration cell back to its configuration value (see table._column)."""
    if isinstance(v, np.generic):
        v = v.item()
    kind = CONFIG_KINDS[key]
    if isinstance(v, str):
        if v == "":
            return None
        if v[0] in "[{":
            return json.loads(v)
        return v
    if kind == "f" and isinstance(v, float) and math.isnan(v):
        return None
    return v


def row_config(row: Mapping[str, Any]) -> Dict[str, Any]:
    """The normalised configuration of a sweep row (a ``table.iloc[i]`` or a dict of its cells).

    The ``eta`` column holds the step actually used, which is the configuration's ``eta`` or,
    when that was unset, train's default: the one whose configuration hashes to the row's seed
    key is returned (the row's value when the seed cannot tell).
    """
    cfg = normalise_config({k: _decode(k, _cell(row, config_column(k))) for k in DEFAULTS}, "row")
    m = _SEED.match(str(row.get("seed", "")) if hasattr(row, "get") else "")
    if m is not None and cfg["eta"] is not None and config_key(cfg) != (int(m.group(2)), int(m.group(3))):
        unset = dict(cfg, eta=None)
        if config_key(unset) == (int(m.group(2)), int(m.group(3))):
            return unset
    return cfg


def row_data(row: Mapping[str, Any]) -> RowData:
    """The data (X or K, y, init) of a sweep row, drawn again from the row's configuration and seed.

    Bitwise what the sweep's trial used, whichever path (fast Gram trial or general) ran it.
    A row whose configuration does not hash to its seed's key (an edited row) is refused.

    Parameters
    ----------
    row : pandas.Series or mapping
        A row of :func:`relucore.sweep`'s table (configuration columns and ``seed``).

    Returns
    -------
    RowData
    """
    cfg = row_config(row)
    m = _SEED.match(str(_cell(row, "seed")))
    if m is None:
        raise ValueError(f"seed cell {_cell(row, 'seed')!r} is not a sweep seed (SeedSequence(entropy=..., ...))")
    entropy, k0, k1, trial = (int(g) for g in m.groups())
    if config_key(cfg) != (k0, k1):
        raise ValueError(
            f"the row's configuration hashes to {config_key(cfg)}, its seed to {(k0, k1)}: the row was edited "
            "or comes from another sweep format"
        )
    seed = trial_seed(entropy, (k0, k1), trial)
    rng = np.random.default_rng(seed)
    plan = gram_plan(cfg)
    if plan is not None:
        K, y = gram_data(cfg, entropy, (k0, k1), [trial], plan)
        X, K, y = None, K[0], y[0]
    elif cfg["use_gram"]:
        data = _sample(cfg, rng)
        X, K, y = None, data.K, data.y
    else:
        datas, Xb, Kb = explicit_data(cfg, [rng], keep_x=True)
        X, K, y = Xb[0], Kb[0], datas[0].y
    init, gram_gaussian = _init_for(cfg, rng, _Data(X), cfg["n"], cfg["d"])
    if gram_gaussian is not None:
        scale, r = gram_gaussian
        init = gram_gaussian_start(K, cfg["signs"], scale, r)[1]
    return RowData(X=X, K=K, y=y, init=init, config=cfg, seed=seed)


@dataclasses.dataclass(frozen=True)
class _Data:
    X: Optional[np.ndarray]
