"""How the rows of a sweep become SQLite values and back, column by column.

Built-in columns are typed (``REAL``, ``INTEGER``, ``TEXT``; :mod:`relucore.sweeps.columns`).
SQLite stores a NaN as NULL, so a float NaN is written as NULL when it is the canonical NaN
(the bits of ``numpy.nan``, bound as a float: SQLite makes it NULL) and as its 8 bytes (a BLOB)
otherwise; reading turns NULL into the
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


def _float_objects(arr: np.ndarray) -> np.ndarray:
    """A float64 array as Python objects of the same shape, in one conversion: floats (the
    canonical NaN stays a float: SQLite binds any NaN as NULL, and ``sqlite3`` binds a float
    much faster than None, which it first tries to adapt) and a NaN of other bits as its 8 bytes."""
    out = arr.astype(object)
    nan = np.isnan(arr)
    if nan.any():
        for i in zip(*np.nonzero(nan & (arr.view(np.uint64) != _CANONICAL_NAN))):
            out[i] = arr[i].tobytes()
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


#: Positions in an INSERT's values (after ``config`` and ``trial``) of the float columns and of
#: the integer ones (``config`` and ``trial`` first), and the text columns with their positions.
_FLOAT_NAMES = tuple(k for k in BUILTIN_NAMES if _KIND.get(k) == "f")
_INT_NAMES = tuple(k for k in BUILTIN_NAMES if _KIND.get(k) == "i")
_FLOAT_AT = np.array([2 + BUILTIN_NAMES.index(k) for k in _FLOAT_NAMES], dtype=np.intp)
_INT_AT = np.array([0, 1] + [2 + BUILTIN_NAMES.index(k) for k in _INT_NAMES], dtype=np.intp)
_TEXT_AT = tuple((2 + j, k) for j, k in enumerate(BUILTIN_NAMES) if _KIND.get(k, "U") == "U")


def _block(columns, n: int, dtype) -> np.ndarray:
    """Columns of ``n`` values side by side in one ``(n, len(columns))`` array of ``dtype``."""
    out = np.empty((n, len(columns)), dtype=dtype)
    for j, column in enumerate(columns):
        if len(column) != n:  # numpy would broadcast a column of one value
            raise ValueError(f"a column of a batch has {len(column)} values for {n} rows")
        out[:, j] = np.asarray(column, dtype=dtype)
    return out


def encode(cols: Dict[str, Any], config_ids: Sequence[int]) -> Tuple[List[str], np.ndarray, List[str], Set[str]]:
    """``(names, values, extras, bools)``: the column names of an INSERT (``config``, ``trial``,
    the built-in columns, then ``extras``, the ``measure`` columns), the values as an object
    array of one row per trial (Python ints, floats, str, bytes, None: what ``sqlite3`` binds;
    a canonical NaN is a float, which SQLite stores as NULL),
    and the extras that held a bool. The float columns are converted in one numpy call, the
    integer ones in another, then placed in ``values`` by one assignment each."""
    n = len(cols["trial"])
    extras = [k for k in cols if k not in ("config_index", "trial", "seed") and k not in SQL_TYPES]
    values = np.empty((n, 2 + len(BUILTIN_NAMES) + len(extras)), dtype=object)
    ints = [config_ids, cols["trial"], *(cols[k] for k in _INT_NAMES)]
    values[:, _INT_AT] = _block(ints, n, np.int64).astype(object)
    values[:, _FLOAT_AT] = _float_objects(_block([cols[k] for k in _FLOAT_NAMES], n, np.float64))

    def put(j: int, column) -> None:
        if len(column) != n:
            raise ValueError(f"a column of a batch has {len(column)} values for {n} rows")
        values[:, j] = column

    for j, name in _TEXT_AT:
        text = cols[name]
        if set(map(type, text)) - {str}:
            text = [str(v) for v in text]
        put(j, text if isinstance(text, np.ndarray) and text.dtype == object and text.ndim == 1 else _objects(text))
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
    """A parameter tuple or a stored row with floats as their exact hex text (bitwise comparison,
    -0.0 != 0.0) and a float NaN as None (SQLite stores a bound NaN as NULL)."""
    return tuple((None if v != v else v.hex()) if isinstance(v, float) else v for v in row)
