"""Exact power-of-two normalisation of a problem's scale (docs/errors.md, "Scale of the data").

The network ``h(x) = sum_k s_k phi(w_k^T x)`` without bias, with a fixed outer layer and the square
loss, is positively homogeneous: ``X -> 2^-a X`` and ``y -> 2^-b y`` map gradient descent's whole
trajectory onto itself, with ``W -> 2^(a-b) W``, ``beta -> 2^-b beta``, ``alpha -> 2^(2a-b) alpha``,
``eta -> 4^a eta``, ``||grad|| -> 2^-(a+b) ||grad||`` and ``loss -> 4^-b loss``. With powers of two
every floating-point operation of the run scales exactly, so a problem far from unit scale runs
on its normalised copy and every result is scaled back without rounding.

A problem whose binary exponents (of ``max |X|``, ``sqrt(max |K|)`` in Gram-only mode, and
``max |y|``) lie within ``[-SAFE_EXPONENT, SAFE_EXPONENT]`` runs unscaled: ordinary calls keep
their bits and pay two reductions. The minimum-norm solver applies the same exponent rule
(``relucore.theory.minnorm.scaling``).

The rule, the units, the exact arithmetic and the refusals' texts live once, in C++
(``relucore/gd/scaling.hpp``, bound in ``_core``); this module wraps them for the Python front ends.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from relucore import _core

__all__ = [
    "SAFE_EXPONENT",
    "binary_exponent",
    "Scaling",
    "plan_scaling",
    "unrepresentable_message",
    "X",
    "K",
    "Y",
    "W",
    "ALPHA",
    "ETA",
    "GRAD",
    "LOSS",
    "OBJECTIVE",
    "exponents_of",
]

#: Binary exponents of max |X| and max |y| within +-SAFE_EXPONENT run unscaled (relucore/defaults.hpp).
SAFE_EXPONENT = int(_core.defaults.scale_exponent)

# The units of each quantity (relucore/gd/scaling.hpp): a _core.ScaleUnit, x and y the powers of 2^ex, 2^ey.
_units = _core.scale_units
X = _units.X
K = _units.K  # K, mu_1
Y = _units.Y  # y, beta, eps, the certificate's margins and error bounds
W = _units.W
ALPHA = _units.ALPHA
ETA = _units.ETA  # eta, and gradient-flow time
GRAD = _units.GRAD  # gradient norms and tol
LOSS = _units.LOSS
OBJECTIVE = _units.OBJECTIVE  # 1/2 sum ||w_k||^2 (minnorm), as |W|^2


def binary_exponent(a: np.ndarray) -> int:
    """The binary exponent e of ``max |a|`` (``max |a| = f 2^e`` with f in [0.5, 1)); 0 for an all-zero array."""
    return int(_core.binary_exponent(a))


def _writable_in_place(a: np.ndarray) -> bool:
    return a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable


@dataclasses.dataclass(frozen=True)
class Scaling:
    """Per problem of a batch: the data were divided by ``2^ex`` (X) and ``2^ey`` (y); 0 where a
    problem runs unscaled. The arithmetic is that of relucore/gd/scaling.hpp."""

    ex: np.ndarray  # (B,) int
    ey: np.ndarray  # (B,) int
    data: str = "X"  # "gram" in Gram-only mode (the messages name it)

    def _times(self, a: np.ndarray, unit, sign: int, out: Optional[np.ndarray] = None) -> np.ndarray:
        """``a 2^(sign (unit.x ex + unit.y ey))``, per problem along the first axis (into ``out is a``, or a copy)."""
        if out is None or not _writable_in_place(out):
            target = np.array(a, dtype=np.float64, order="C")
        else:
            target = out
        _core.scale_exact(target, ex=self.ex, ey=self.ey, unit=unit, sign=sign)
        if out is not None and target is not out:
            out[...] = target
            return out
        return target

    def power(self, unit, ndim: int) -> np.ndarray:
        """The exponent ``unit.x ex + unit.y ey`` per problem, shaped to broadcast over ``ndim`` axes."""
        p = _core.scale_powers(unit, ex=self.ex, ey=self.ey)
        return p.reshape((-1,) + (1,) * (ndim - 1)) if ndim > 0 else p

    def down(self, a, unit):
        """``a`` (batch axis first, or a (B,) vector) in the normalised units."""
        if a is None:
            return None
        return self._times(np.asarray(a, dtype=float), unit, -1)

    def up(self, a, unit, b: Optional[int] = None):
        """``a`` in the caller's units (of problem ``b`` when ``a`` has no batch axis)."""
        if a is None:
            return None
        if b is not None:
            one = Scaling(ex=self.ex[b : b + 1], ey=self.ey[b : b + 1], data=self.data)
            if np.ndim(a) == 0:
                return float(one._times(np.array([a], dtype=float), unit, 1)[0])
            return one._times(np.asarray(a, dtype=float)[None], unit, 1)[0]
        return self._times(np.asarray(a, dtype=float), unit, 1)

    def check_representable(self, arrays, batched: bool, ok=None) -> None:
        """Refuses (ValueError) a problem whose arrays, computed in the rescaled units, do not fit in
        float64's normal range once scaled back (relucore/gd/scaling.hpp, ``representable``).
        ``arrays``: pairs ``(array with the batch axis first, or None, unit)``, or triples
        ``(array, unit, True)`` for a number that may underflow (a loss or a gradient norm near zero:
        it is checked for overflow only); ``ok`` (B,) bool marks problems not to check (a diverged run
        reports what it reached)."""
        first = -1
        for a, unit, *small in arrays:
            if a is None:
                continue
            b = _core.first_unrepresentable(a, ex=self.ex, ey=self.ey, unit=unit, may_underflow=bool(small), skip=ok)
            if b >= 0 and (first < 0 or b < first):
                first = b
        if first >= 0:
            raise ValueError(unrepresentable_message(self, first, batched))

    def up_inplace(self, a: Optional[np.ndarray], unit) -> None:
        """:meth:`up` into ``a`` itself (batch axis first)."""
        self.up_all(((a, unit),))

    def up_all(self, pairs) -> None:
        """:meth:`up_inplace` on every ``(array or None, unit, ...)`` of ``pairs``."""
        for a, unit, *_ in pairs:
            if a is not None:
                self._times(a, unit, 1, out=a)


def unrepresentable_message(sc: Scaling, b: int, batched: bool) -> str:
    """Why the result of problem ``b``, computed on its exactly rescaled copy, cannot be returned in float64."""
    return _core.unrepresentable_message(
        ex=int(sc.ex[b]), ey=int(sc.ey[b]), gram=sc.data == "gram", problem=b if batched else -1
    )


def exponents_of(X, gram, y) -> Scaling:
    """The exponents of one problem (``X`` (n, d) or None, ``gram`` (n, n) or None, ``y`` (n,)), whatever their
    range: ``ex`` of ``max |x_ij|``, else half (floor) that of ``max |K_ij|`` (``K -> 4^k K`` shifts it by k);
    ``ey`` of ``max |y_i|``. The rule of :func:`plan_scaling`, for a front end that always rescales (minnorm)."""
    e = _core.scale_exponents(X=None if X is None else X[None], gram=None if gram is None else gram[None], y=y[None])
    return Scaling(ex=e.ex, ey=e.ey)


def plan_scaling(X, gram, y, not_scale_free: str = "") -> Optional[Scaling]:
    """The exact rescaling a batch needs (None: every problem runs unscaled).

    ``X`` (B, n, d) or None, ``gram`` (B, n, n) or None, ``y`` (B, n), converted already.
    ``not_scale_free`` names what makes the model not homogeneous ("" when it is): then a
    problem out of the safe range is refused with a ValueError naming the quantity and the range.
    """
    p = _core.plan_scaling(X=X, gram=gram, y=y, not_scale_free=not_scale_free)
    if p is None:
        return None
    return Scaling(ex=p.ex, ey=p.ey, data="gram" if p.gram else "X")
