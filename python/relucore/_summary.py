"""Short printed summaries of result objects, in the manner of scipy's ``OptimizeResult``.

A result class opts in with the :func:`summarized` class decorator. Its ``repr``
(and ``str``) is then a few aligned ``key: value`` lines: a title with the sizes,
the key scalars the class names, and every remaining array as a placeholder
``array(shape=(m, d), dtype=float64)`` (arrays of the same shape and dtype share a
line; a lone small array is shown in full). Batched results summarise per-problem
arrays across the batch (status counts, ranges) instead of listing the problems.
The output is at most :data:`MAX_LINES` lines for any size; the full values stay
available as attributes and through ``to_dict()``.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import textwrap
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["summarized", "describe", "per_problem", "counts", "sizes", "MAX_LINES", "WIDTH"]

#: Longest summary, in lines.
MAX_LINES = 15
#: Width the lines are cut or wrapped to.
WIDTH = 100
#: Keys are right-aligned to the longest key up to this width.
_KEY_WIDTH = 30
#: A lone array with at most this many entries is printed with its values.
_SMALL = 8

Row = Union[str, Tuple[str, ...], Tuple[str, Callable[[Any], Any]]]


@dataclasses.dataclass(frozen=True)
class _Spec:
    rows: Optional[Tuple[Row, ...]]
    title: Optional[Callable[[Any], str]]
    batch: Optional[Callable[[Any], Optional[int]]]
    formats: Mapping[str, Callable[[Any, Optional[int]], str]]


def summarized(
    *,
    rows: Optional[Sequence[Row]] = None,
    title: Optional[Callable[[Any], str]] = None,
    batch: Optional[Callable[[Any], Optional[int]]] = None,
    formats: Optional[Mapping[str, Callable[[Any, Optional[int]], str]]] = None,
):
    """Class decorator giving a dataclass a short summary ``repr`` and ``to_dict()``.

    Apply it above ``@dataclasses.dataclass`` (it replaces the generated ``__repr__``).

    Parameters
    ----------
    rows : sequence, optional
        The lines after the title, in order. Each entry is an attribute name
        (fields and properties), a tuple of names shown on one line, or a pair
        ``(label, function)`` whose value is ``function(obj)``. Default: every
        field that is not an array. Fields neither named here nor arrays are left
        to the title.
    title : callable, optional
        ``title(obj) -> str``: what follows the class name on the first line
        (the sizes, the settings). The same text names a nested result on one line.
    batch : callable, optional
        ``batch(obj) -> B or None``: the number of problems of a batched result.
        Row values of shape (B,) (and lists of length B) are then summarised
        across the batch by :func:`per_problem`.
    formats : mapping, optional
        ``{name: function(value, B) -> str}`` for rows that need their own wording
        (status codes, say).
    """
    spec = _Spec(None if rows is None else tuple(rows), title, batch, dict(formats or {}))

    def deco(cls):
        cls._summary_spec = spec
        cls.__repr__ = _summary_repr
        if "to_dict" not in cls.__dict__:
            cls.to_dict = _to_dict
        return cls

    return deco


def _to_dict(self) -> Dict[str, Any]:
    """The fields as a dict (arrays are the result's own, not copies; nested results become dicts).

    Returns
    -------
    dict
        ``{field name: value}`` for every field of the result, in declaration order.
    """
    return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _plain(value: Any) -> Any:
    if hasattr(type(value), "_summary_spec"):
        return value.to_dict()
    return value


def one_line(obj: Any) -> str:
    """``ClassName(title)``: a summarized result on one line."""
    spec = type(obj)._summary_spec
    return f"{type(obj).__name__}({spec.title(obj) if spec.title else ''})"


def _summary_repr(self) -> str:
    spec = type(self)._summary_spec
    B = spec.batch(self) if spec.batch else None
    head = type(self).__name__ + (f": {spec.title(self)}" if spec.title else "")
    rows, shown = _rows(self, spec, B)
    arrays = _array_rows(self, shown)
    width = min(_KEY_WIDTH, max([len(k) for k, _ in rows + arrays if len(k) <= _KEY_WIDTH] or [0]))
    lines = [_cut(head)] + [_line(k, v, width) for k, v in rows]
    array_lines = [_line(k, v, width) for k, v in arrays]
    keep = len(arrays)
    while keep and _count(lines + array_lines[:keep]) + (keep < len(arrays)) > MAX_LINES:
        keep -= 1
    if keep < len(arrays):
        rest = ", ".join(k for k, _ in arrays[keep:])
        array_lines = array_lines[:keep] + [_cut(f"{'more arrays'.rjust(width)}: {rest}")]
    return "\n".join(lines + array_lines)


def _count(lines) -> int:
    return sum(line.count("\n") + 1 for line in lines)


def _rows(obj: Any, spec: _Spec, B: Optional[int]):
    entries = spec.rows
    if entries is None:
        entries = tuple(f.name for f in dataclasses.fields(obj) if not isinstance(getattr(obj, f.name), np.ndarray))
    rows, shown = [], set()
    for entry in entries:
        if isinstance(entry, tuple) and len(entry) == 2 and callable(entry[1]):
            rows.append((entry[0], describe(entry[1](obj), B)))
            continue
        names = (entry,) if isinstance(entry, str) else entry
        shown.update(names)
        values = [spec.formats.get(n, describe)(getattr(obj, n), B) for n in names]
        rows.append((", ".join(names), ", ".join(values)))
    return rows, shown


def _array_rows(obj: Any, shown: set):
    """Fields not shown as rows, grouped by shape and dtype (a lone 1-D or small array keeps its values)."""
    groups: Dict[Tuple, list] = collections.OrderedDict()
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name in shown or not isinstance(value, np.ndarray):
            continue
        groups.setdefault((value.shape, value.dtype.str), []).append(f.name)
    out = []
    for names in groups.values():
        a = getattr(obj, names[0])
        out.append(
            (", ".join(names), _values(a) if len(names) == 1 and (a.ndim <= 1 or a.size <= _SMALL) else placeholder(a))
        )
    return out


def _line(key: str, value: str, width: int) -> str:
    text = f"{key.rjust(width)}: {value}"
    if len(key) > width and len(text) > WIDTH:  # a long group of names: wrap the names, keep the value whole
        return "\n".join(textwrap.wrap(f"{key}: {value}", WIDTH, subsequent_indent=" " * 4, break_long_words=False))
    return _cut(text)


def _cut(text: str, width: int = WIDTH) -> str:
    text = text.splitlines()[0] if text else text
    return text if len(text) <= width else text[: width - 3] + "..."


# ----------------------------------------------------------------------------- values


def placeholder(a: np.ndarray) -> str:
    """``array(shape=(m, d), dtype=float64)``."""
    return f"array(shape={tuple(a.shape)}, dtype={a.dtype})"


def _values(a: np.ndarray) -> str:
    """A small or 1-D array with its (first and last) values."""
    if a.ndim > 1 and (a.size > _SMALL or a.size == 0):
        return placeholder(a)
    body = np.array2string(
        a, separator=", ", threshold=_SMALL, edgeitems=3, max_line_width=10**6, formatter={"float_kind": _float4}
    )
    extra = [] if a.size <= _SMALL else [f"shape={a.shape}"]
    if a.dtype not in (np.float64, np.int64, np.bool_) or a.size == 0:
        extra.append(f"dtype={a.dtype}")
    body = " ".join(body.split()).replace("[ ", "[")
    return f"array({', '.join([body] + extra)})"


def _float4(x: float) -> str:
    """4 significant digits, always readable as a float (``1.``, not ``1``)."""
    text = f"{x:.4g}"
    return text if any(c in text for c in ".ein") else text + "."


def _scalar(v: Any) -> str:
    if isinstance(v, enum.Enum):  # relucore.Status and the other enums: by name
        return v.name
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def describe(value: Any, batch: Optional[int] = None) -> str:
    """One line for a value: scalars as numbers, arrays by shape (1-D: first and last values),
    nested results by their title; per-problem values of a batch of ``batch`` by :func:`per_problem`."""
    if batch is not None and (_is_per_problem(value, batch)):
        return per_problem(value)
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return _scalar(value)
    if hasattr(type(value), "_summary_spec"):
        return one_line(value)
    if isinstance(value, np.ndarray):
        return _values(value) if value.ndim <= 1 else placeholder(value)
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, (list, tuple)) and len(repr(value)) > WIDTH:
        return f"{type(value).__name__} of {len(value)}"
    return _cut(repr(value))


def _mapping(value: Mapping) -> str:
    simple = all(v is None or isinstance(v, (bool, int, float, str, np.generic)) for v in value.values())
    if simple:
        return ", ".join(f"{k}={_scalar(v)}" for k, v in value.items())
    return "dict with keys " + ", ".join(map(str, value))


def _is_per_problem(value: Any, B: int) -> bool:
    if isinstance(value, np.ndarray):
        return value.shape == (B,)
    return isinstance(value, list) and len(value) == B


def per_problem(value: Any) -> str:
    """A value per problem of a batch, summarised: ``k of B`` (bool), counts (text), ``min .. max (median)``."""
    if isinstance(value, list):
        distinct = len(set(map(str, value)))
        return counts(value) if distinct <= 3 else f"{distinct} distinct; first: {value[0]}"
    a = np.asarray(value)
    if a.dtype == np.bool_:
        return f"{int(a.sum())} of {a.size}"
    finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    note = f", {a.size - finite.size} not finite" if finite.size < a.size else ""
    if finite.size == 0:
        return f"none finite ({a.size})"
    lo, hi, med = finite.min(), finite.max(), np.median(finite)
    if lo == hi:
        return f"{_scalar(lo)} (all){note}"
    if a.dtype.kind == "f":
        return f"{lo:.4g} .. {hi:.4g} (median {med:.4g}){note}"
    return f"{int(lo)} .. {int(hi)} (median {float(med):g}){note}"


def counts(values: Sequence[Any], names: Optional[Callable[[Any], str]] = None) -> str:
    """``count × name, ...`` over ``values``, most frequent first."""
    c = collections.Counter(names(v) if names else str(v) for v in np.asarray(values, dtype=object).ravel())
    return ", ".join(f"{n} × {k}" for k, n in c.most_common())


def sizes(**dims: Any) -> str:
    """``m=2, n=10, d=200`` (None values left out)."""
    return ", ".join(f"{k}={v}" for k, v in dims.items() if v is not None)
