"""The results table of a sweep: pandas DataFrame, or a numpy structured array without pandas."""
from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Sequence

import numpy as np

from relucore._sweep_config import DEFAULTS, canonical_json
from relucore._sweep_task import BUILTIN_COLUMNS

__all__ = ["build_table", "save_table", "LEADING_COLUMNS"]

LEADING_COLUMNS = ("config_index", "trial", "seed")
TRAILING_COLUMNS = ("status", "error")


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


def _column(values: Sequence[Any], kind: str) -> np.ndarray:
    if kind == "b":
        return np.array(values, dtype=bool)
    if kind == "i":
        return np.array(values, dtype=np.int64)
    if kind == "f":
        return np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    return np.array(["" if v is None else str(v) for v in values], dtype=object)


def build_table(configs: List[Dict[str, Any]], rows: List[Dict[str, Any]], *, as_pandas=None):
    """One row per trial, sorted by (config_index, trial), with a fixed column order.

    Columns: ``config_index, trial, seed``, the configuration keys, the
    built-in measurements, the columns added by ``measure`` (sorted by
    name), then ``status, error``.
    """
    rows = sorted(rows, key=lambda r: (r["config_index"], r["trial"]))
    cfg_cols = list(DEFAULTS)
    measured = list(BUILTIN_COLUMNS)
    extra = sorted({k for r in rows for k in r} - set(LEADING_COLUMNS) - set(cfg_cols) - set(measured)
                   - set(TRAILING_COLUMNS))
    cols: Dict[str, np.ndarray] = {}
    cols["config_index"] = np.array([r["config_index"] for r in rows], dtype=np.int64)
    cols["trial"] = np.array([r["trial"] for r in rows], dtype=np.int64)
    cols["seed"] = _column([r["seed"] for r in rows], "U")
    for k in cfg_cols:
        vals = [_config_cell(configs[r["config_index"]][k]) for r in rows]
        cols[k] = _column(vals, _kind(vals))
    for k in measured:
        cols[k] = _column([r[k] for r in rows], BUILTIN_COLUMNS[k])
    for k in extra:
        vals = [r.get(k) for r in rows]
        cols[k] = _column(vals, _kind(vals))
    for k in TRAILING_COLUMNS:
        cols[k] = _column([r[k] for r in rows], "U")
    if as_pandas is None:
        try:
            import pandas  # noqa: F401

            as_pandas = True
        except ImportError:
            as_pandas = False
    if as_pandas:
        import pandas as pd

        return pd.DataFrame(cols)
    dtype = []
    for k, v in cols.items():
        if v.dtype == object:
            width = max([len(s) for s in v] + [1])
            dtype.append((k, f"U{width}"))
        else:
            dtype.append((k, v.dtype))
    out = np.empty(len(rows), dtype=dtype)
    for k, v in cols.items():
        out[k] = v
    return out


def save_table(table, path) -> None:
    """Saves a sweep table as CSV (``.csv``) or Parquet (``.parquet``, needs pyarrow).

    Parameters
    ----------
    table : pandas.DataFrame or numpy structured array
        What :func:`relucore.sweep` returned.
    path : str or os.PathLike
        The suffix picks the format.
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".csv", ".parquet"):
        raise ValueError(f"path must end in .csv or .parquet, got {path!r}")
    if ext == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError("saving Parquet needs pyarrow (pip install pyarrow); or save as .csv") from None
        import pandas as pd

        df = table if isinstance(table, pd.DataFrame) else pd.DataFrame({k: table[k] for k in table.dtype.names})
        df.to_parquet(path, index=False)
        return
    if isinstance(table, np.ndarray):
        import csv

        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(table.dtype.names)
            for rec in table:
                w.writerow([repr(float(x)) if isinstance(x, np.floating) else x for x in rec.tolist()])
        return
    table.to_csv(path, index=False, float_format=None)
