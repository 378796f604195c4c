"""How the rows of a sweep become SQLite values and back, column by column.

Built-in columns are typed (``REAL``, ``INTEGER``, ``TEXT``; :mod:`relucore.sweeps.columns`).
SQLite stores a NaN as NULL, so a float NaN is written as NULL when it is the canonical NaN
(the bits of ``numpy.nan``) and as its 8 bytes (a BLOB) otherwise; reading turns NULL into the
canonical NaN and the BLOB back into its bits, so every float comes back bit for bit. ±inf are
ordinary ``REAL`` values.

Columns of the user's ``measure`` are added to the trials table without a declared type, so
each value keeps its own (integer, real, text, NULL for None); a NaN there is always its
BLOB (NULL means None), and a column that ever held a bool is flagged so that its 0/1 come
back as bools.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Dict, Iterable, List, Sequence, Set, Tuple

import numpy as np

from relucore.sweeps.columns import MEASURED, TRAILING_COLUMNS

__all__ = [
    "BUILTIN_NAMES",
    "NUMERIC_NAMES",
    "TEXT_NAMES",
    "SQL_TYPES",
    "rows_to_columns",
    "encode",
    "decode",
    "comparable",
]

#: The built-in columns of the trials table, in table order, after ``config`` and ``trial``.
BUILTIN_NAMES: Tuple[str, ...] = tuple(c.name for c in MEASURED) + TRAILING_COLUMNS
#: SQL type of each built-in column.
SQL_TYPES: Dict[str, str] = {
    **{c.name: {"f": "REAL", "i": "INTEGER", "U": "TEXT"}[c.kind] for c in MEASURED},
    **{k: "TEXT" for k in TRAILING_COLUMNS},
}
_KIND = {c.name: c.kind for c in MEASURED}
_CANONICAL_NAN = int(np.array(np.nan, dtype=np.float64).view(np.uint64))


def rows_to_columns(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Row dicts (as ``run_batch`` returns them) as columns: a list per column; the columns of
    ``measure`` included (None where a row lacks one)."""
    cols: Dict[str, Any] = {k: [r[k] for r in rows] for k in ("config_index", "trial") + BUILTIN_NAMES}
    known = set(cols) | {"seed"}
    for k in sorted({k for r in rows for k in r} - known):
        cols[k] = [r.get(k) for r in rows]
    return cols


def _floats(values) -> np.ndarray:
    """A float column as Python objects: floats, a NaN as NULL (None) or its 8 bytes."""
    arr = np.asarray(values, dtype=np.float64)
    out = arr.astype(object)
    nan = np.flatnonzero(np.isnan(arr))
    if nan.size:
        bits = arr.view(np.uint64)
        for i in nan.tolist():
            out[i] = None if int(bits[i]) == _CANONICAL_NAN else arr[i : i + 1].tobytes()
    return out


def _objects(values: List[Any]) -> np.ndarray:
    """``values`` as a 1-D object array, whatever they are (a list of equal-length lists too)."""
    return np.array([*values, None], dtype=object)[:-1]


def _extra(values: Iterable[Any], bools: Set[str], name: str) -> List[Any]:
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)):
            bools.add(name)
            out.append(int(v))
        elif isinstance(v, float) and math.isnan(v):
            out.append(np.array([v], dtype=np.float64).tobytes())
        else:
            out.append(v)
    return out


def encode(cols: Dict[str, Any], config_ids: Sequence[int]) -> Tuple[List[str], np.ndarray, List[str], Set[str]]:
    """``(names, values, extras, bools)``: the column names of an INSERT (``config``, ``trial``,
    the built-in columns, then ``extras``, the ``measure`` columns), the values as an object
    array of one row per trial (Python ints, floats, str, bytes, None: what ``sqlite3`` binds),
    and the extras that held a bool. Filled column by column, each in one numpy assignment."""
    n = len(cols["trial"])
    extras = [k for k in cols if k not in ("config_index", "trial", "seed") and k not in SQL_TYPES]
    values = np.empty((n, 2 + len(BUILTIN_NAMES) + len(extras)), dtype=object)

    def put(j: int, column) -> None:
        if len(column) != n:  # numpy would broadcast a column of one value
            raise ValueError(f"column {j} of a batch has {len(column)} values for {n} rows")
        values[:, j] = column

    put(0, np.asarray(config_ids, dtype=np.int64))
    put(1, np.asarray(cols["trial"], dtype=np.int64))
    for j, name in enumerate(BUILTIN_NAMES, start=2):
        kind = _KIND.get(name, "U")
        if kind == "f":
            put(j, _floats(cols[name]))
        elif kind == "i":
            put(j, np.asarray(cols[name], dtype=np.int64))
        else:
            text = cols[name]
            put(j, _objects(text if all(type(v) is str for v in text) else [str(v) for v in text]))
    bools: Set[str] = set()
    for j, name in enumerate(extras, start=2 + len(BUILTIN_NAMES)):
        put(j, _objects(_extra(cols[name], bools, name)))
    return ["config", "trial", *BUILTIN_NAMES, *extras], values, extras, bools


def _float_column(values: Sequence[Any]) -> np.ndarray:
    try:  # NULL (None) becomes the canonical NaN; a BLOB is not a number (see below)
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        out[i] = np.frombuffer(v, dtype=np.float64)[0] if isinstance(v, bytes) else (math.nan if v is None else v)
    return out


def _extra_value(v, is_bool: bool):
    if isinstance(v, bytes):
        return float(np.frombuffer(v, dtype=np.float64)[0])
    if is_bool and v is not None:
        return bool(v)
    return v


#: The built-in columns read in the numeric query of :func:`decode` (after config and trial),
#: and those read with the ``measure`` columns in the other.
NUMERIC_NAMES: Tuple[str, ...] = tuple(k for k in BUILTIN_NAMES if SQL_TYPES[k] != "TEXT")
TEXT_NAMES: Tuple[str, ...] = tuple(k for k in BUILTIN_NAMES if SQL_TYPES[k] == "TEXT")


def _numeric_block(rows: List[tuple]) -> np.ndarray:
    """``SELECT config, trial, <NUMERIC_NAMES>`` rows as one float64 array (NULL -> NaN) in one
    numpy call; integers are exact (all far below 2**53). A BLOB (a NaN's 8 bytes, whose last
    two bytes are not ASCII, so numpy never parses it as a number) takes the slow path."""
    try:
        return np.array(rows, dtype=np.float64).reshape(len(rows), 2 + len(NUMERIC_NAMES))
    except (TypeError, ValueError):
        pass
    cols = list(zip(*rows))
    return np.stack([_float_column(c) for c in cols], axis=1)


def decode(numeric: List[tuple], other: List[tuple], extras: Sequence[str], bools: Set[str]) -> Dict[str, np.ndarray]:
    """The same rows fetched as ``SELECT config, trial, <NUMERIC_NAMES>`` and ``SELECT
    <TEXT_NAMES>, <extras>`` as typed columns (``config`` still the store's configuration id)."""
    block = _numeric_block(numeric)
    out: Dict[str, np.ndarray] = {
        "config": block[:, 0].astype(np.int64),
        "trial": block[:, 1].astype(np.int64),
    }
    for j, name in enumerate(NUMERIC_NAMES, start=2):
        kind = _KIND[name]
        out[name] = block[:, j].astype(np.int64) if kind == "i" else np.ascontiguousarray(block[:, j])
    columns = list(zip(*other))
    for j, name in enumerate(TEXT_NAMES):
        col = np.empty(len(other), dtype=object)
        col[:] = [sys.intern(v) for v in columns[j]]
        out[name] = col
    for j, name in enumerate(extras, start=len(TEXT_NAMES)):
        col = np.empty(len(other), dtype=object)
        is_bool = name in bools
        col[:] = [_extra_value(v, is_bool) for v in columns[j]]
        out[name] = col
    return out


def comparable(row: Sequence[Any]) -> tuple:
    """A parameter tuple with floats as their exact hex text (bitwise comparison, -0.0 != 0.0)."""
    return tuple(v.hex() if isinstance(v, float) else v for v in row)
