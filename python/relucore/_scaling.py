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
"""

from __future__ import annotations

import dataclasses
import math
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

# The units of each quantity: (power of 2^a, power of 2^b) for X -> 2^a X, y -> 2^b y.
X = (1, 0)
K = (2, 0)  # K, mu_1
Y = (0, 1)  # y, beta, eps, the certificate's margins and error bounds
W = (-1, 1)
ALPHA = (-2, 1)
ETA = (-2, 0)  # eta, and gradient-flow time
GRAD = (1, 1)  # gradient norms and tol
LOSS = (0, 2)
OBJECTIVE = (-2, 2)  # 1/2 sum ||w_k||^2 (minnorm), as |W|^2


def _factor(p):
    """How to multiply by ``2^p`` (``p`` an int or an int array): ``(True, 2^p)`` where every ``|p| <= 1022``,
    so that ``2^p`` is a normal number and the product is ``np.ldexp`` bit for bit (both round ``a 2^p``
    once), else ``(False, p as int32)`` for ``np.ldexp`` (whose int64 exponents take a slow casting loop)."""
    p = np.asarray(p).astype(np.int32)
    return (True, np.ldexp(1.0, p)) if np.abs(p).max(initial=0) <= 1022 else (False, p)


def _scaled(a: np.ndarray, factor, out: Optional[np.ndarray] = None) -> np.ndarray:
    """``a 2^p`` for ``factor = _factor(p)``, correctly rounded as ``np.ldexp``."""
    mul, f = factor
    return np.multiply(a, f, out=out) if mul else np.ldexp(a, f, out=out)


def binary_exponent(a: np.ndarray) -> int:
    """The binary exponent e of ``max |a|`` (``max |a| = f 2^e`` with f in [0.5, 1)); 0 for an all-zero array."""
    if a.size == 0:
        return 0
    hi, lo = float(a.max()), float(a.min())  # no |a| temporary; NaN in both (then 0, as for an all-zero a)
    top = hi if hi >= -lo else -lo
    return math.frexp(top)[1] if top > 0 and math.isfinite(top) else 0


@dataclasses.dataclass(frozen=True)
class Scaling:
    """Per problem of a batch: the data were divided by ``2^ex`` (X) and ``2^ey`` (y); 0 where a
    problem runs unscaled."""

    ex: np.ndarray  # (B,) int
    ey: np.ndarray  # (B,) int
    data: str = "X"  # "gram" in Gram-only mode (the messages name it)
    # The factors of _factor per (unit, sign, ndim): a scale-back applies the same few many times.
    _factors: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def _times(self, a: np.ndarray, unit, sign: int, out: Optional[np.ndarray] = None) -> np.ndarray:
        """``a 2^(sign (unit[0] ex + unit[1] ey))``, per problem along the first axis."""
        key = (unit, sign, a.ndim)
        f = self._factors.get(key)
        if f is None:
            f = self._factors[key] = _factor(sign * self.power(unit, a.ndim))
        return _scaled(a, f, out)

    def power(self, unit, ndim: int) -> np.ndarray:
        """The exponent ``unit[0] ex + unit[1] ey`` per problem, shaped to broadcast over ``ndim`` axes."""
        p = unit[0] * self.ex + unit[1] * self.ey
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
        with np.errstate(over="ignore", under="ignore"):
            if b is not None:
                p = int(unit[0] * self.ex[b] + unit[1] * self.ey[b])
                return float(np.ldexp(a, p)) if np.ndim(a) == 0 else _scaled(np.asarray(a, dtype=float), _factor(p))
            return self._times(np.asarray(a, dtype=float), unit, 1)

    def check_representable(self, arrays, batched: bool, ok=None) -> None:
        """Refuses (ValueError) a problem whose arrays, computed in the rescaled units, do not fit in
        float64's normal range once scaled back: the largest entry of each must stay in
        ``[2^-1022, 2^1024)`` (smaller entries may round into the subnormals: an absolute error of
        2^-1074 at most). ``arrays``: pairs ``(array with the batch axis first, or None, unit)``, or
        triples ``(array, unit, True)`` for a number that may underflow (a loss or a gradient norm
        near zero: it is checked for overflow only);
        ``ok`` (B,) bool marks problems not to check (a diverged run reports what it reached)."""
        for b in np.flatnonzero((self.ex != 0) | (self.ey != 0)):
            if ok is not None and ok[b]:
                continue
            for a, unit, *small in arrays:
                if a is None or a[b].size == 0:
                    continue
                hi, lo = float(a[b].max()), float(a[b].min())  # NaN in both where any entry is
                top = max(hi, -lo)
                if not (math.isfinite(hi) and math.isfinite(lo)) or top == 0:
                    continue
                e = math.frexp(top)[1] + int(unit[0] * self.ex[b] + unit[1] * self.ey[b])
                if e > 1024 or (e < -1021 and not small):
                    raise ValueError(unrepresentable_message(self, int(b), batched))

    def up_inplace(self, a: Optional[np.ndarray], unit) -> None:
        """:meth:`up` into ``a`` itself (batch axis first)."""
        self.up_all(((a, unit),))

    def up_all(self, pairs) -> None:
        """:meth:`up_inplace` on every ``(array or None, unit, ...)`` of ``pairs`` (one error state for all)."""
        with np.errstate(over="ignore", under="ignore"):
            for a, unit, *_ in pairs:
                if a is not None:
                    self._times(a, unit, 1, out=a)


def unrepresentable_message(sc: Scaling, b: int, batched: bool) -> str:
    """Why the result of problem ``b``, computed on its exactly rescaled copy, cannot be returned in float64."""
    ex, ey = int(sc.ex[b]), int(sc.ey[b])
    where = f"problem {b}: " if batched else ""
    small = ey - 2 * ex > 0  # the dual coordinates (and weights) are large: X small for the labels
    what = f"{sc.data} is too small (or y too large)" if small else f"{sc.data} is too large (or y too small)"
    size = f"max |x_ij| ~ 2^{ex}" if sc.data == "X" else f"max |K_ij| ~ 2^{2 * ex}"
    return (
        f"{where}{what}: {size} and max |y_i| ~ 2^{ey}, so the weights (~ 2^{ey - ex}), the dual coordinates "
        f"(~ 2^{ey - 2 * ex}) or the loss (~ 2^{2 * ey}) cannot be represented in float64, though the run on the "
        "exactly rescaled data succeeded; rescale X or y (X -> c X, y -> l y maps W -> (l / c) W)"
    )


def _exponents(a: Optional[np.ndarray], halve: bool = False) -> Optional[np.ndarray]:
    if a is None:
        return None
    e = np.array([binary_exponent(a[b]) for b in range(a.shape[0])], dtype=np.int64)
    return e // 2 if halve else e


def exponents_of(X, gram, y) -> Scaling:
    """The exponents of one problem (``X`` (n, d) or None, ``gram`` (n, n) or None, ``y`` (n,)), whatever their
    range: ``ex`` of ``max |x_ij|``, else half (floor) that of ``max |K_ij|`` (``K -> 4^k K`` shifts it by k);
    ``ey`` of ``max |y_i|``. The rule of :func:`plan_scaling`, for a front end that always rescales (minnorm)."""
    ex = _exponents(X[None]) if X is not None else _exponents(None if gram is None else gram[None], halve=True)
    return Scaling(ex=np.zeros(1, dtype=np.int64) if ex is None else ex, ey=_exponents(y[None]))


def plan_scaling(X, gram, y, not_scale_free: str = "") -> Optional[Scaling]:
    """The exact rescaling a batch needs (None: every problem runs unscaled).

    ``X`` (B, n, d) or None, ``gram`` (B, n, n) or None, ``y`` (B, n), converted already.
    ``not_scale_free`` names what makes the model not homogeneous ("" when it is): then a
    problem out of the safe range is refused with a ValueError naming the quantity and the range.
    """
    hi = SAFE_EXPONENT
    ey = _exponents(y)
    ex = _exponents(X) if X is not None else _exponents(gram, halve=True)
    if ex is None:
        ex = np.zeros_like(ey)
    out_x = np.abs(ex) > hi
    out_y = np.abs(ey) > hi
    if not (out_x.any() or out_y.any()):
        return None
    if not_scale_free:
        b = int(np.flatnonzero(out_x | out_y)[0])
        what = (
            f"max |x_ij| ~ 2^{int(ex[b])}"
            if out_x[b] and X is not None
            else (f"max |K_ij| ~ 2^{2 * int(ex[b])}" if out_x[b] else f"max |y_i| ~ 2^{int(ey[b])}")
        )
        where = f" (problem {b})" if y.shape[0] > 1 else ""
        raise ValueError(
            f"the scale of the data is out of range for {not_scale_free}: {what}{where}; this model is not "
            f"invariant under rescaling X and y, so it runs only for max |x_ij| (sqrt max |K_ij|) and max |y_i| "
            f"within [2^-{hi}, 2^{hi}]; rescale the data (and the options in its units) yourself"
        )
    # Only the problems out of range are rescaled, so a problem's bits do not depend on its batch.
    mask = out_x | out_y
    return Scaling(ex=np.where(mask, ex, 0), ey=np.where(mask, ey, 0), data="X" if X is not None else "gram")
