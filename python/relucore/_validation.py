"""Input validation shared by the whole public API.

Every public function converts its array inputs here, once, so that errors
read the same everywhere: they name the argument and say what was expected
(scikit-learn's wording where it has one).
"""
from __future__ import annotations

import numbers
from typing import Optional, Sequence, Tuple, Union

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
    if value is None:
        raise TypeError(f"{name} is required, got None")
    arr = np.asarray(value)
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be real-valued, got complex dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must be {want}-dimensional, got an array of shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty (shape {arr.shape}); at least one element is required")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    # Fast path: a NaN or an infinity makes the sum non-finite; only a
    # non-finite sum (which overflow can also cause) needs the full check.
    if finite and not np.isfinite(np.add.reduce(arr, axis=None)) and not np.isfinite(arr).all():
        kind = "NaN" if np.isnan(arr).any() else "infinity"
        raise ValueError(f"Input {name} contains {kind}.")
    return arr


def check_consistent_length(names: Sequence[str], lengths: Sequence[int]) -> None:
    """Raises when examples are counted differently by different arguments."""
    if len(set(lengths)) > 1:
        detail = ", ".join(f"{n}: {l}" for n, l in zip(names, lengths))
        raise ValueError(f"Found input variables with inconsistent numbers of samples ({detail})")


def _check_real(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v):
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
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_rng(rng: RngLike) -> np.random.Generator:
    """``None | int | SeedSequence | Generator`` to a Generator (SPEC 7)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (numbers.Integral, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (bool, np.bool_)):
            raise TypeError("rng must be None, an int, a SeedSequence or a numpy Generator, got bool")
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be None, an int, a SeedSequence or a numpy Generator, got {type(rng).__name__}")


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def check_n_threads(n_threads) -> int:
    """``None`` (the default thread count, passed as 0) or a positive int."""
    if n_threads is None:
        return 0
    return check_int(n_threads, "n_threads", minimum=1)
