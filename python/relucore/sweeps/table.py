"""The results table of a sweep (a pandas DataFrame) and :func:`save_table`."""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from relucore.sweeps.columns import LEADING_COLUMNS, MEASURED, TRAILING_COLUMNS
from relucore.sweeps.config import (
    CONFIG_KINDS,
    DEFAULTS,
    canonical_json,
    config_column,
    config_key,
    seed_column,
    stored_config,
)
from relucore.sweeps.files import write_atomically

__all__ = ["Results", "build_table", "save_table", "LEADING_COLUMNS"]


def _config_cell(v):
    """Lists (signs, spectra) become compact JSON text so every cell is a scalar."""
    return canonical_json(v) if isinstance(v, list) else v


def _kind(values: Sequence[Any]) -> str:
    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals) and len(vals) == len(values):
        return "b"
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals) and len(vals) == len(values):
        return "i"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return "f"
    return "U"


def _config_kind(key: str, cells: Sequence[Any]) -> str:
    """The column type of a configuration key: fixed by the key (config.CONFIG_KINDS), not by the grid."""
    kind = CONFIG_KINDS[key]
    if kind == "f" and any(isinstance(v, str) for v in cells):
        return "U"  # a list-valued setting (as JSON text), e.g. per-example eps
    if key == "steps" and "inf" in cells:
        return "f"  # steps = inf (the certified limit) as float inf
    if kind in ("i", "b") and _kind(cells) != kind:
        return _kind(cells)  # not reached for normalised configurations; never lose a value
    return kind


def _column(values: Sequence[Any], kind: str) -> np.ndarray:
    if kind == "b":
        return np.array(values, dtype=bool)
    if kind == "i":
        return np.array(values, dtype=np.int64)
    if kind == "f":
        return np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    return np.array(["" if v is None else str(v) for v in values], dtype=object)


def _interned(values) -> np.ndarray:
    """The strings of ``values`` as an object array of interned str, one Python call per distinct value."""
    text = np.asarray(values, dtype=object).astype(str)
    if text.size == 0:
        return np.empty(0, dtype=object)
    distinct, inverse = np.unique(text, return_inverse=True)
    return np.array([sys.intern(str(v)) for v in distinct], dtype=object)[inverse.reshape(-1)]


class Results:
    """Rows of a sweep, kept column-wise (a few hundred bytes per row, not a dict each).

    Built-in measurements go straight into typed arrays; ``measure`` columns
    (whose types are the user's) are kept as object arrays and typed once, at
    the end, from all their values, so the result never depends on how the
    rows were split into batches.
    """

    def __init__(self, n_configs: int, trials: int, dense: bool = False):
        """``dense``: every built-in column is an array of all ``n_configs x trials`` rows in
        the table's order, filled as batches arrive (a sweep, which fills all of them: the
        table is then those arrays, nothing moved at the end); otherwise batches are kept
        as they came and sorted at the end (a store's rows, possibly sparse)."""
        self.done = np.zeros((n_configs, trials), dtype=bool)
        self._chunks: List[Dict[str, np.ndarray]] = []
        self._extra: Dict[str, List] = {}
        self._dense: Optional[Dict[str, np.ndarray]] = None
        if dense:
            size = n_configs * trials
            self._dense = {c.name: np.empty(size, dtype=c.dtype) for c in MEASURED}
            self._dense.update({k: np.empty(size, dtype=object) for k in TRAILING_COLUMNS})

    def __len__(self) -> int:
        return int(self.done.sum())

    def add(self, rows: List[Dict[str, Any]]) -> None:
        """Adds one batch of rows (dicts as returned by ``run_batch``)."""
        if not rows:
            return
        chunk = {
            "config_index": np.array([r["config_index"] for r in rows], dtype=np.int64),
            "trial": np.array([r["trial"] for r in rows], dtype=np.int64),
        }
        for c in MEASURED:
            chunk[c.name] = _column([r[c.name] for r in rows], c.kind)
        for k in TRAILING_COLUMNS:
            chunk[k] = np.array([sys.intern(str(r[k])) for r in rows], dtype=object)
        known = set(chunk) | {"seed"}
        i = len(self._chunks)
        for k in sorted({k for r in rows for k in r} - known):
            self._extra.setdefault(k, []).append((i, np.array([r.get(k) for r in rows] + [None], dtype=object)[:-1]))
        self._append(chunk)

    def add_columns(self, cols: Dict[str, np.ndarray], interned: bool = False) -> None:
        """Adds one batch given as columns: ``config_index``, ``trial``, every
        built-in column and ``status``/``error``, one array each, and any ``measure``
        columns as object arrays (rows read back from a store). ``interned``: the
        ``status``/``error`` arrays already hold one str object per distinct value
        (the Gram fast path's batches), kept as they are."""
        chunk = {
            "config_index": np.asarray(cols["config_index"], dtype=np.int64),
            "trial": np.asarray(cols["trial"], dtype=np.int64),
        }
        if chunk["trial"].size == 0:
            return
        for c in MEASURED:
            chunk[c.name] = np.asarray(cols[c.name], dtype=c.dtype)
        for k in TRAILING_COLUMNS:
            chunk[k] = np.asarray(cols[k], dtype=object) if interned else _interned(cols[k])
        i = len(self._chunks)
        for k in sorted(set(cols) - set(chunk) - {"seed"}):
            self._extra.setdefault(k, []).append((i, np.asarray(cols[k], dtype=object)))
        self._append(chunk)

    def _append(self, chunk: Dict[str, np.ndarray]) -> None:
        if np.any(self.done[chunk["config_index"], chunk["trial"]]):
            raise ValueError("a trial was recorded twice")
        self.done[chunk["config_index"], chunk["trial"]] = True
        if self._dense is not None:
            at = chunk["config_index"] * self.done.shape[1] + chunk["trial"]
            for name, col in self._dense.items():
                col[at] = chunk.pop(name)
        self._chunks.append(chunk)

    def leading(self, configs: List[Dict[str, Any]], entropy: int) -> Dict[str, np.ndarray]:
        """The columns of the complete table (every configuration x trial) that do not depend on
        the results: ``config_index, trial, seed`` and the configuration keys. ``sweep`` builds
        them while its batches run; :meth:`table` uses them when every trial is done."""
        C, T = self.done.shape
        ci = np.repeat(np.arange(C, dtype=np.int64), T)
        tr = np.tile(np.arange(T, dtype=np.int64), C)
        return _leading_columns(configs, entropy, ci, tr)

    def table(self, configs: List[Dict[str, Any]], entropy: int, leading=None):
        """One row per trial, sorted by (config_index, trial), with a fixed column order.

        Columns: ``config_index, trial, seed``, the configuration keys, the
        built-in measurements, the columns added by ``measure`` (sorted by
        name), then ``status, error``. ``leading``: what :meth:`leading` returned
        (used when every trial is done; computed here otherwise).
        """
        import pandas as pd

        # The chunks in the order of their first row: batches cover disjoint runs of trials,
        # so this is usually the table's order already and no row needs moving.
        chunks = sorted(range(len(self._chunks)), key=lambda i: self._first(self._chunks[i]))
        sizes = [len(self._chunks[i]["trial"]) for i in chunks]
        offsets = dict(zip(chunks, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()))

        def cat(name, dtype):
            if not chunks:
                return np.empty(0, dtype=dtype)
            return np.concatenate([self._chunks[i][name] for i in chunks])

        ci, tr = cat("config_index", np.int64), cat("trial", np.int64)
        pos = ci * self.done.shape[1] + tr
        if np.all(pos[1:] > pos[:-1]):

            def sort(a):
                return a
        else:
            order = np.lexsort((tr, ci))

            def sort(a):
                return a[order]

        def column(name, dtype):
            """A built-in column in the table's order."""
            if self._dense is None:
                return sort(cat(name, dtype))
            col = self._dense[name]
            return col if col.size == len(pos) else col[np.flatnonzero(self.done.ravel())]

        if leading is None or len(pos) != self.done.size:
            leading = _leading_columns(configs, entropy, sort(ci), sort(tr))
        cols: Dict[str, Any] = dict(leading)
        for c in MEASURED:
            cols[c.name] = column(c.name, c.dtype)
        for k in sorted(self._extra):
            vals = np.full(len(pos), None, dtype=object)
            for i, arr in self._extra[k]:
                vals[offsets[i] : offsets[i] + len(arr)] = arr
            vals = sort(vals).tolist()
            cols[k] = _column(vals, _kind(vals))
        for k in TRAILING_COLUMNS:
            cols[k] = column(k, object)
        # Every column is a fresh array: no copy into consolidated blocks.
        return pd.DataFrame(cols, copy=False)

    @staticmethod
    def _first(chunk: Dict[str, np.ndarray]):
        return (int(chunk["config_index"][0]), int(chunk["trial"][0]))


def _leading_columns(configs, entropy: int, ci: np.ndarray, tr: np.ndarray) -> Dict[str, np.ndarray]:
    """``config_index, trial, seed`` and the configuration keys of the rows (ci, tr)."""
    cols: Dict[str, np.ndarray] = {"config_index": ci, "trial": tr}
    keys = [config_key(c) for c in configs]
    cols["seed"] = seed_column(entropy, keys, ci, tr)
    # seeds from each configuration as given; values under today's keys (an old store's
    # configurations have the old ones)
    current = [stored_config(c) for c in configs]
    for k in DEFAULTS:
        per_config = [_config_cell(c[k]) for c in current]
        col = _column(per_config, _config_kind(k, per_config))
        cols[config_column(k)] = col[ci] if len(col) else col
    return _as_pandas(cols)


def _as_pandas(cols: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """The text columns as the arrays pandas makes of them (what ``DataFrame`` would do at the
    end), so that :meth:`Results.leading`, running while the batches run, does that work too."""
    import pandas as pd

    return {k: pd.Series(v, copy=False).array if v.dtype == object else v for k, v in cols.items()}


def build_table(configs: List[Dict[str, Any]], rows: List[Dict[str, Any]], entropy: int, trials: int):
    """The table of a list of rows (see :meth:`Results.table`)."""
    res = Results(len(configs), trials)
    res.add(rows)
    return res.table(configs, entropy)


def save_table(table, path) -> None:
    """Saves a sweep table as CSV (``.csv``) or Parquet (``.parquet``, needs pyarrow).

    Parameters
    ----------
    table : pandas.DataFrame
        What :func:`relucore.sweep` returned (anything ``pandas.DataFrame`` accepts,
        e.g. a numpy structured array, is converted first).
    path : str or os.PathLike
        The suffix picks the format. Written whole or not at all (a temporary file renamed
        over it); a failure raises ``OSError`` naming ``path``.

    Returns
    -------
    None
    """
    import pandas as pd

    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".csv", ".parquet"):
        raise ValueError(f"path must end in .csv or .parquet, got {path!r}")
    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    if ext == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError("saving Parquet needs pyarrow (pip install pyarrow); or save as .csv") from None
        write_atomically(path, lambda tmp: df.to_parquet(tmp, index=False))
    else:
        write_atomically(path, lambda tmp: df.to_csv(tmp, index=False, float_format=None))
