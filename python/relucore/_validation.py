"""Input validation shared by the whole public API.

Every public function converts its array inputs here, once, so that errors
read the same everywhere: they name the argument and say what was expected
(scikit-learn's wording where it has one).
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Optional, Sequence, Union

import numpy as np

__all__ = [
    "as_float_array",
    "check_consistent_length",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_rng",
    "check_choice",
    "check_n_threads",
    "check_positive_per_problem",
    "check_history_memory",
    "available_memory",
    "check_available_memory",
    "check_gram_finite",
]

RngLike = Union[None, int, np.integer, np.random.SeedSequence, np.random.Generator]


def as_float_array(
    value,
    name: str,
    *,
    ndim: Union[int, Sequence[int], None] = None,
    allow_empty: bool = False,
    finite: bool = True,
) -> np.ndarray:
    """Returns ``value`` as a C-contiguous float64 array, checked.

    Non-contiguous or Fortran-ordered input is accepted and copied once;
    integer and boolean input is converted. Complex, object and string input,
    NaN or infinity (when ``finite``), a wrong number of dimensions or an empty
    array raise ``TypeError``/``ValueError`` naming ``name``.
    """
    if type(value) is np.ndarray and value.dtype == _FLOAT64 and value.flags.c_contiguous:
        # Already what the conversions below return (np.asarray would return it unchanged):
        # only the checks of dimensions, size and values remain.
        return _checked(value, name, ndim, allow_empty, finite)
    if value is None:
        raise TypeError(f"{name} is required, got None")
    if isinstance(value, np.ma.MaskedArray):
        # np.asarray would drop the mask and use the hidden values.
        raise TypeError(
            f"{name} must not be a numpy masked array: its mask would be dropped; "
            f"fill it (np.ma.filled) or keep the unmasked examples (compress) first"
        )
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{name} must be a rectangular array of numbers; numpy could not convert it: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"{name} must be an array of numbers; numpy could not convert it: {exc}") from None
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be real-valued, got complex dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    _checked(arr, name, ndim, allow_empty, finite=False)
    # (np.ascontiguousarray would turn a 0-d array into shape (1,).)
    return _checked(np.asarray(arr, dtype=np.float64, order="C"), name, None, True, finite)


_FLOAT64 = np.dtype(np.float64)


def _checked(arr: np.ndarray, name: str, ndim, allow_empty: bool, finite: bool) -> np.ndarray:
    """The checks of :func:`as_float_array` on a numeric array: dimensions, size, finite (float64) values."""
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must be {want}-dimensional, got an array of shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty (shape {arr.shape}); at least one element is required")
    if finite and not _all_finite(arr):
        kind = "NaN" if np.isnan(arr).any() else "infinity"
        raise ValueError(f"Input {name} contains {kind}.")
    return arr


def _all_finite(arr: np.ndarray) -> bool:
    if arr.size <= 4096:  # small arrays: one isfinite pass beats entering np.errstate
        return bool(np.isfinite(arr).all())
    # Large arrays: a NaN or an infinity makes the sum non-finite; only a
    # non-finite sum (which overflow can also cause) needs the full check.
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(arr, axis=None)
    return bool(np.isfinite(total)) or bool(np.isfinite(arr).all())


def check_consistent_length(names: Sequence[str], lengths: Sequence[int]) -> None:
    """Raises when examples are counted differently by different arguments."""
    if len(set(lengths)) > 1:
        detail = ", ".join(f"{n}: {l}" for n, l in zip(names, lengths))
        raise ValueError(f"Found input variables with inconsistent numbers of samples ({detail})")


def _check_real(value, name: str) -> float:
    # float and int (not bool: type(True) is bool) skip the slower ABC checks.
    if type(value) is not float and type(value) is not int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # a Python int beyond the float range
        raise ValueError(f"{name} must be finite, got an integer beyond the float64 range") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_positive(value, name: str) -> float:
    """A finite real number > 0."""
    v = _check_real(value, name)
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {v}")
    return v


def check_nonnegative(value, name: str) -> float:
    """A finite real number >= 0."""
    v = _check_real(value, name)
    if v < 0:
        raise ValueError(f"{name} must be non-negative, got {v}")
    return v


def check_int(value, name: str, *, minimum: Optional[int] = None) -> int:
    """An integer (not bool), optionally bounded below."""
    if type(value) is int:  # the common case skips the slower ABC checks (bool is not int by type)
        v = value
    else:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
        v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_rng(rng: RngLike) -> np.random.Generator:
    """``None | int | SeedSequence | Generator`` to a Generator (docs/math.md §8)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (numbers.Integral, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (bool, np.bool_)):
            raise TypeError("rng must be None, an int, a SeedSequence or a numpy Generator, got bool")
        try:
            return np.random.default_rng(rng)
        except ValueError as exc:  # a negative seed
            raise ValueError(f"rng: a seed must be a non-negative integer, got {rng} ({exc})") from None
    raise TypeError(f"rng must be None, an int, a SeedSequence or a numpy Generator, got {type(rng).__name__}")


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def check_positive_per_problem(value, name: str, B: int, batched: bool) -> np.ndarray:
    """A positive finite number, or (batched runs) one per problem: returns shape (B,)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (np.ndarray, list, tuple)):
        return np.full(B, check_positive(value, name))
    arr = as_float_array(value, name, ndim=1)
    if not batched or arr.shape != (B,):
        raise ValueError(f"{name} must be a positive number (or one per problem, shape ({B},)); got shape {arr.shape}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be positive, got {arr[~(arr > 0)][0]} at problem {int(np.argmin(arr > 0))}")
    return arr


def check_history_memory(n_bytes: float, name: str, detail: str) -> None:
    """Refuses, before anything is allocated, a history that could need more than the memory available now.

    ``n_bytes`` is the most the request can use (a history grows with the run
    up to it); :func:`available_memory` is ``MemAvailable``, else the physical
    memory. Allocating anyway could end the interpreter in the out-of-memory
    killer: an error naming the size is better.
    """
    check_available_memory(n_bytes, f"{name}: {detail}", "use a larger record or fewer steps")


def available_memory() -> float:
    """Bytes of memory available now (``MemAvailable``), else the physical total, else inf."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        pass
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            return float(os.sysconf("SC_PAGE_SIZE")) * float(os.sysconf(pages))
        except (AttributeError, ValueError, OSError):
            continue
    return float("inf")


def _bytes(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 2**10:.3g} KiB"


def check_available_memory(n_bytes: float, what: str, hint: str = "") -> None:
    """Refuses an allocation of ``n_bytes`` larger than the memory available now.

    ``what`` names the buffer (and the arguments that size it); ``hint`` says
    what to do instead.
    """
    avail = available_memory()
    if n_bytes > avail:
        raise ValueError(
            f"{what} needs {_bytes(n_bytes)}, more than the {_bytes(avail)} of memory available"
            + (f"; {hint}" if hint else "")
        )


def check_gram_finite(K: np.ndarray, X: Optional[np.ndarray] = None) -> None:
    """Refuses a Gram matrix whose sums overflow float64.

    ``K = X X^T`` computed from a large X (or a given ``gram`` when X is None)
    must have a finite sum of ``|K_ij|``: that bounds every trace, norm and
    product later computed from it.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(np.abs(K))
    if np.isfinite(total):
        return
    if X is None:
        if not np.isfinite(K).all():
            raise ValueError("Input gram contains NaN or infinity.")
        raise ValueError("gram is too large: sums of its entries overflow float64; rescale it")
    raise ValueError(
        f"X is too large: K = X X^T overflows float64 (max |x_ij| = {np.max(np.abs(X)):.3g}); rescale X "
        "(GD is equivariant: X -> c X, eta -> eta / c^2 gives the same beta)"
    )


def check_n_threads(n_threads) -> int:
    """``None`` (the default thread count, passed as 0) or a positive int."""
    if n_threads is None:
        return 0
    v = check_int(n_threads, "n_threads", minimum=1)
    if v > 2**15:
        raise ValueError(f"n_threads must be <= 32768, got {v}")
    return v
