"""``relucore.verify``: every claim of a result re-derived from its returned arrays (docs/math.md §13, "verify").

The one place where Python recomputes what C++ returned. Every product that decides a claim is a
correctly rounded dot product (TwoProduct by Dekker's split, the exact terms summed by ``math.fsum``;
``np.longdouble`` is plain double on some platforms), so the only rounding left in the reference is
one unit ``u = 2^-53`` per entry, and each claim compares the result with the bound of the rounding
model of docs/math.md §13.

Data far from unit scale (a binary exponent of ``max |x_ij|``, ``sqrt(max |K_ij|)`` or ``max |y_i|`` outside
``+-relucore._scaling.SAFE_EXPONENT``) are checked on their exactly rescaled copy, X / 2^ex and y / 2^ey as the
engines run them, with the result's arrays and numbers mapped into those units by the same powers of two
(relucore._scaling): ``K = X X^T`` of X 2^900 overflows, that of the copy does not. A number the result had to
round into the subnormals (or to zero) in the caller's units carries that rounding, 2^-1074 there, into each bound.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from relucore import _core
from relucore import _scaling as scaling
from relucore._inputs import single_problem
from relucore._validation import as_float_array

__all__ = ["Claim", "Verification", "verify"]

_U = 2.0**-53
_SPLIT = 2.0**27 + 1.0


def _gamma(k) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``."""
    return k * _U / (1.0 - k * _U)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a result: its name, whether it holds, the measured quantity and its bound (math.md §13).

    Attributes
    ----------
    name : str
        The claim (``"beta = X W"``, ``"loss"``, ``"pattern"``, ...; listed in :func:`verify`).
    holds : bool
        ``value <= bound``.
    value : float
        The measured quantity (a deviation, a count of wrong entries, ...).
    bound : float
        What the rounding model of docs/math.md §13 allows it.
    problem : int or None
        The index of the problem in a batch (None for one problem).
    """

    name: str
    holds: bool
    value: float
    bound: float
    problem: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Verification:
    """What :func:`verify` found: one :class:`Claim` per claim of the result (math.md §13).

    ``str()`` prints the table (claim, holds, measured value, bound); ``v["loss"]`` is the claim
    of that name (the first that fails, if any does).

    Attributes
    ----------
    claims : tuple of Claim
        Every claim checked, in order.
    """

    claims: tuple

    @property
    def holds(self) -> bool:
        """True when every claim holds."""
        return all(c.holds for c in self.claims)

    @property
    def failed(self) -> list:
        """The claims that do not hold."""
        return [c for c in self.claims if not c.holds]

    def __getitem__(self, name: str) -> Claim:
        """The first claim called ``name`` that fails, else the first one called ``name``."""
        found = [c for c in self.claims if c.name == name]
        if not found:
            raise KeyError(f"no claim named {name!r}; the claims are {sorted({c.name for c in self.claims})}")
        return next((c for c in found if not c.holds), found[0])

    def __repr__(self) -> str:
        verdict = "holds" if self.holds else f"fails ({', '.join(sorted({c.name for c in self.failed}))})"
        return f"Verification: {len(self.claims)} claims, {verdict}"

    def __str__(self) -> str:
        rows = [repr(self)]
        for c in self.claims:
            where = "" if c.problem is None else f"[{c.problem}] "
            mark = "ok  " if c.holds else "FAIL"
            rows.append(f"  {mark} {where}{c.name:<22} {c.value:>11.3g} <= {c.bound:.3g}")
        return "\n".join(rows)


# ----------------------------------------------------------------------------- exact products
def _two_product(a, b):
    """``a * b = p + e`` exactly (Dekker; inputs scaled so that nothing overflows or underflows)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _unit(a):
    """``(a / 2^e, e)`` with ``2^e`` the power of two at the top of ``max|a|`` (exact)."""
    top = float(np.max(np.abs(a), initial=0.0))
    if not (top > 0 and np.isfinite(top)):
        return a, 0
    e = math.frexp(top)[1]
    return np.ldexp(a, -e), e


def exact_matmul(A, B) -> np.ndarray:
    """``A @ B`` correctly rounded entry by entry (TwoProduct + ``math.fsum``)."""
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    (a, ea), (b, eb) = _unit(A), _unit(B)
    out = np.empty((A.shape[0], B.shape[1]))
    for i in range(out.shape[0]):  # one row at a time: the exact terms of a row take 2 x B's size
        p, e = _two_product(a[i, :, None], b)
        terms = np.concatenate((p, e)).T
        for j in range(out.shape[1]):
            out[i, j] = math.fsum(terms[j])
    return np.ldexp(out, ea + eb)


def _residual(beta, signs, y) -> np.ndarray:
    """``sum_k s_k relu(beta_k) - y`` correctly rounded."""
    relu = np.maximum(beta, 0.0)
    return exact_matmul(np.append(signs, -1.0)[None, :], np.vstack([relu, y[None, :]]))[0]


# ----------------------------------------------------------------------------- claims
class _Claims:
    def __init__(self, problem, sub=None):
        self.problem, self.out = problem, []
        # Per unit of relucore._scaling: the subnormal rounding (2^-1074 in the caller's units) of a reported number,
        # in the units the claims are checked in; 0 where the data are checked unscaled.
        self.sub = sub or _NO_SUB

    def s(self, unit) -> float:
        return self.sub.get(unit, 0.0)

    def add(self, name, value, bound):
        value, bound = float(value), float(bound)
        self.out.append(Claim(name, bool(value <= bound), value, bound, self.problem))


def _consistency(c, X, K, W, W0, alpha, alpha0, beta, beta0, steps, kappa=1.0):
    """``beta = X W`` (or ``K alpha``): the rounding of one product, of rebuilding ``W``, and of ``steps``
    accumulated engine steps (flow phases: each amplified by up to ``kappa``) since the last
    resynchronisation (docs/math.md §13, "verify")."""
    dal = np.abs(alpha - alpha0)
    n = K.shape[0]
    drift = (steps + 2) * _gamma(n + 2) * (dal @ np.abs(K) + np.abs(beta) + np.abs(beta0))
    if kappa != 1.0:  # a flow: each phase is evaluated in modal form, at the scale of the whole state
        scale = np.abs(K).max(initial=0.0) * (np.abs(alpha).sum() + np.abs(alpha0).sum())
        drift = kappa * (drift + (steps + 2) * _gamma(n + 2) * (scale + np.abs(beta).max() + np.abs(beta0).max()))
    if W is None:
        ref = exact_matmul(alpha, K)
        bound = _gamma(n) * (np.abs(alpha) @ np.abs(K)) + drift
        name = "beta = K alpha"
    else:
        ref = exact_matmul(W, X.T)
        aW0 = 0.0 if W0 is None else np.abs(W0)
        bound = _gamma(X.shape[1]) * ((np.abs(W) + aW0) @ np.abs(X).T)
        bound = bound + _gamma(n + 1) * ((aW0 + dal @ np.abs(X)) @ np.abs(X).T) + drift
        name = "beta = X W"
    if c.sub is not _NO_SUB:
        data = np.abs(K).sum(axis=1) * c.s(scaling.ALPHA) if W is None else 2 * np.abs(X).sum(axis=1) * c.s(scaling.W)
        bound = bound + c.s(scaling.Y) + data[None, :]
    dev = np.abs(beta - ref) - bound
    k = np.unravel_index(np.argmax(dev), dev.shape)
    c.add(name, abs(beta[k] - ref[k]), bound[k] + _U * abs(ref[k]))


def _stationarity(c, K, signs, y, beta, extra):
    """The residual on every example active in some neuron is zero to its rounding plus ``extra``
    (per example): the returned point is a limit (docs/math.md §13, the self-check)."""
    r = _residual(beta, signs, y)
    A = (beta > 0).any(axis=0)
    f = np.abs(signs) @ np.maximum(beta, 0.0) + np.abs(y)
    bound = _gamma(len(signs) + 1) * f + extra + _U * np.abs(r)
    if c.sub is not _NO_SUB:
        bound = bound + (len(signs) + 1) * c.s(scaling.Y) * np.abs(signs).max()
    ratio = np.where(A, np.abs(r) - bound, -np.inf)
    i = int(np.argmax(ratio)) if A.any() else 0
    c.add("stationary (r_A = 0)", abs(r[i]) if A.any() else 0.0, bound[i] if A.any() else 0.0)


def _grad_norm(K, signs, beta, r) -> float:
    g = signs[:, None] * (beta > 0) * r[None, :]
    return math.sqrt(max(math.fsum((exact_matmul(g, K) * g).ravel()), 0.0))


def _loss_and_grad(c, K, signs, y, beta, loss, grad_norm, tol, success):
    """The reported loss and gradient norm against their recomputation (square loss, ReLU)."""
    r = _residual(beta, signs, y)
    m, n = beta.shape
    f = np.abs(signs) @ np.maximum(beta, 0.0) + np.abs(y)
    e = _gamma(m + 2) * f
    exact = 0.5 * math.fsum(r * r)
    sub_r = (m + 1) * c.s(scaling.Y) * float(np.abs(signs).max(initial=1.0))  # beta rounded into the subnormals
    bound = float(np.abs(r) @ e + 0.5 * e @ e) + _gamma(n + 2) * exact
    if c.sub is not _NO_SUB:
        bound += c.s(scaling.LOSS) + sub_r * float(np.abs(r).sum() + n * sub_r)
    c.add("loss", abs(loss - exact), bound)
    g = _grad_norm(K, signs, beta, r)
    ge = float(np.sqrt(np.sum((np.abs(signs)[:, None] * (beta > 0) * e[None, :]) @ np.abs(K) * e[None, :])))
    S = float(np.sum((np.abs(signs)[:, None] * np.abs(r)[None, :]) @ np.abs(K) * np.abs(r)[None, :]))
    ge += _gamma(n + 4) * math.sqrt(S)
    # The reported norm is the square root of a rounded quadratic form, off by at most delta = gamma |g|^T |K| |g|,
    # and |sqrt(a) - sqrt(b)| <= min(delta / sqrt(b), sqrt(delta)): near a zero gradient (K singular, the form a
    # cancellation) that is sqrt(delta), not gamma sqrt(S).
    delta = _gamma(n + 4) * S
    if c.sub is not _NO_SUB:
        ge += c.s(scaling.GRAD) + sub_r * math.sqrt(n * float(np.abs(K).max(initial=0.0))) * float(np.abs(signs).sum())
    reported = ge + (min(delta / g, math.sqrt(delta)) if g > 0 else math.sqrt(delta))
    c.add("grad_norm", abs(grad_norm - g), reported + _gamma(n + 4) * g)
    if success and tol is not None:
        c.add("stationary (grad <= tol)", g, float(tol) + ge + c.s(scaling.GRAD))
    return r


def _pattern(c, cert, beta, sliding=None, entry_margin=True):
    """The certified pattern is the sign pattern of the returned beta, each moving entry at least the margin."""
    want = np.asarray(cert.pattern, dtype=bool)
    if sliding is not None:
        want = want & ~sliding
    c.add("pattern", int(np.count_nonzero((beta > 0) != want)), 0)
    moving = want.any(axis=1)[:, None] & np.ones_like(want)
    if sliding is not None:
        moving &= ~sliding
    sb = np.where(want, beta, -beta)[moving]
    margin = float(cert.margin)
    finite = all(np.isfinite(v) for v in (cert.contraction, cert.fp_error)) and (np.isfinite(margin) or not want.any())
    c.add("bound terms finite", 0 if finite else 1, 0)
    if entry_margin and sb.size:
        c.add("margin", margin - float(sb.min()), 2 * c.s(scaling.Y))
    if want.any():
        c.add("margin >= 0", -margin, c.s(scaling.Y))
    return want


def _condition(K) -> float:
    """``cond_2(K)`` (at most ``1/u``: a singular K makes the flow's models vacuous, not wrong)."""
    lam = np.linalg.eigvalsh(K) if K.size else np.ones(1)
    return float(min(lam[-1] / lam[0], 1 / _U)) if lam[0] > 0 else 1 / _U


def _limit_claims(c, K, signs, y, beta, cert, sliding=None, entry_margin=True, events=0, kappa=1.0):
    """Claims 1-3 of the self-check; a flow limit's state also carries the rounding of its ``events``
    phases, each at the scale of the returned point (docs/math.md §13, "verify")."""
    m = beta.shape[0]
    fp = float(cert.fp_error) if np.isfinite(cert.fp_error) else np.inf
    motion = float(cert.motion) if np.isfinite(cert.motion) else 0.0
    extra = (np.abs(signs) @ ((beta > 0) * fp) + motion * np.abs(signs).sum()) * (1 + _gamma(m + 2))
    if events:
        extra = extra + kappa * (events + 2) * _gamma(m + 2) * (np.abs(signs) @ np.maximum(beta, 0.0) + np.abs(y))
    if cert.motion == 0:
        _pattern(c, cert, beta, sliding, entry_margin)
    else:
        c.add("margin", -float(cert.margin), 0.0)
    _stationarity(c, K, signs, y, beta, extra)


def _kkt(c, result, K, signs, alpha, beta, tau, ymax):
    """The KKT conditions of the returned convex piece with ``alpha`` as its multipliers (``w_k = X^T
    alpha_k``; docs/math.md §9, §13 "verify"): on an example where several neurons are strictly active
    (``beta > tau``) ``alpha_ki / s_k`` is the example's one multiplier; a strictly inactive entry
    (``beta < -tau``) has ``alpha_ki = 0``; an entry outside the active set has ``alpha_ki <= 0``.
    Relative as ``result.certificate``; bound: its largest residual plus ``cond(K) gamma_{n+m+2}``."""
    m, n = beta.shape
    amax = float(np.max(np.abs(alpha), initial=0.0)) or 1.0
    bound = float(result.certificate.max_residual) + _condition(K) * _gamma(n + m + 2)
    nu = alpha / signs[:, None]
    on = beta > tau
    spread = [np.ptp(nu[on[:, i], i]) for i in range(n) if on[:, i].sum() > 1]
    c.add("KKT stationarity", max(spread, default=0.0) / amax, bound)
    off = beta < -tau
    c.add("KKT complementarity", float(np.max(np.abs(alpha * beta) * off, initial=0.0)) / (amax * ymax), bound)
    outside = ~np.asarray(result.active_set, dtype=bool)
    c.add("KKT dual feasibility", float(np.max(np.maximum(alpha, 0.0) * outside, initial=0.0)) / amax, bound)


def _minnorm(result, X, K, y, sub=None) -> list:
    """The claims of a :func:`relucore.minnorm` solution: ``beta = X W``, interpolation and the sign
    constraints within the reported primal feasibility, the KKT conditions and the objective."""
    c = _Claims(None, sub)
    signs = np.asarray(result.signs, dtype=float)
    alpha, beta = np.asarray(result.alpha, dtype=float), np.asarray(result.beta, dtype=float)
    W = result.W if X is not None else None
    finite = bool(np.isfinite(alpha).all() and np.isfinite(beta).all() and (W is None or np.isfinite(W).all()))
    c.add("finite", 0 if finite else 1, 0)
    if not finite:
        return c.out
    zero = np.zeros_like(alpha)
    _consistency(c, X, K, W, None, alpha, zero, beta, zero, 0)
    m, n = beta.shape
    ymax = float(np.max(np.abs(y), initial=0.0)) or 1.0
    f = np.abs(signs) @ np.maximum(beta, 0.0) + np.abs(y)
    feas = float(result.certificate.primal_feasibility)
    slack = feas + _gamma(m + 2) * float(f.max(initial=0.0)) / ymax
    r = _residual(beta, signs, y)
    c.add("interpolation", float(np.max(np.abs(r), initial=0.0)) / ymax, slack)
    side = np.where(result.active_set, -beta, beta)
    c.add("sign constraints", float(np.max(side, initial=0.0)) / ymax, slack)
    _kkt(c, result, K, signs, alpha, beta, slack * ymax, ymax)
    q = exact_matmul(alpha, K)
    obj = 0.5 * math.fsum((q * alpha).ravel())
    scale = 0.5 * float(np.sum((np.abs(alpha) @ np.abs(K)) * np.abs(alpha)))
    c.add("objective", abs(float(result.objective) - obj), _gamma(2 * n + 4) * scale)
    return c.out


def verify(result, X=None, y=None, *, gram=None) -> Verification:
    """Re-derives every claim of ``result`` from its returned arrays and the data (docs/math.md §13, "verify").

    Parameters
    ----------
    result : TrainResult, CertifiedResult, FlowResult or MinNormSolution
        A result of :func:`relucore.train` (finite ``steps``, one problem or a batch),
        ``train(..., steps=np.inf)`` / :meth:`relucore.Trainer.run_to_limit`, :func:`relucore.flow`
        or :func:`relucore.minnorm`.
    X : array_like, shape (n, d) or (B, n, d), optional
        The data the result was computed from.
    y : array_like, shape (n,) or (B, n)
        The labels.
    gram : array_like, shape (n, n) or (B, n, n), optional
        ``K = X X^T`` instead of ``X`` (for a result without ``W``).

    Returns
    -------
    Verification
        One :class:`Claim` per claim (name, holds, measured value, bound); ``.holds`` is True
        when every claim holds. The claims: ``beta = X W`` (``beta = K alpha`` without X);
        ``loss`` and ``grad_norm`` as reported (square loss, ReLU); for a success, ``stationary
        (grad <= tol)``; for a certified limit or a flow limit, ``pattern``, ``margin``, ``bound terms
        finite`` and ``stationary (r_A = 0)``; for :func:`relucore.minnorm`, ``interpolation``,
        ``objective`` and ``KKT``.
    """
    if y is None:
        raise TypeError("verify needs the labels y")
    kind = type(result).__name__
    if kind == "MinNormSolution":
        Xb, Kb, yb, sc = _normalised(X, gram, y)
        Xb, K, yb = single_problem(Xb, yb, Kb)
        return Verification(tuple(_minnorm(_in_units(result, sc), Xb, K, yb, _subnormal(sc))))
    batched = bool(getattr(result, "batched", False))
    Xa = None if X is None else np.asarray(X, dtype=float)
    Ka = None if gram is None else np.asarray(gram, dtype=float)
    ya = np.asarray(y, dtype=float)
    if not batched:
        Xa, Ka, ya = (None if Xa is None else Xa[None]), (None if Ka is None else Ka[None]), ya[None]
    claims = []
    for b in range(ya.shape[0]):
        Xb = None if Xa is None else Xa[b if Xa.shape[0] > 1 else 0]
        Xb, Kb, yb, sc = _normalised(Xb, None if Ka is None else Ka[b if Ka.shape[0] > 1 else 0], ya[b])
        Xb, K, yb = single_problem(Xb, yb, Kb)
        claims += _one(_in_units(result, sc), kind, b if batched else None, Xb, K, yb, _subnormal(sc))
    return Verification(tuple(claims))


def _pick(result, name, b):
    v = getattr(result, name, None)
    if v is None or b is None:
        return v
    if isinstance(v, list):
        return v[b]
    return v[b] if np.ndim(v) >= 1 else v


_CLAIMS_NOTHING = (int(_core.Status.diverged), int(_core.Status.nonfinite))


def _one(result, kind, b, X, K, y, sub=None) -> list:
    c = _Claims(b, sub)
    get = lambda name: _pick(result, name, b)  # noqa: E731
    signs = np.asarray(result.signs, dtype=float)
    alpha, beta = np.asarray(get("alpha"), dtype=float), np.asarray(get("beta"), dtype=float)
    W = get("W") if X is not None else None
    alpha0, beta0 = np.asarray(get("alpha0"), dtype=float), np.asarray(get("beta0"), dtype=float)
    finite = bool(np.isfinite(alpha).all() and np.isfinite(beta).all() and (W is None or np.isfinite(W).all()))
    if getattr(result, "status", None) is not None and int(get("status")) in _CLAIMS_NOTHING:
        return c.out  # a divergence (or a solution whose residuals are not finite) claims nothing about its arrays
    c.add("finite", 0 if finite else 1, 0)
    if not finite:
        return c.out
    if getattr(result, "bias", None) is not None:
        return c.out  # beta carries the bias: the claims below are derived without one
    flow = kind == "FlowResult"
    steps = len(result.event_times) if flow else min(int(get("nit")), int(_core.defaults.resync_every))
    kappa = _condition(K) if flow else 1.0
    _consistency(c, X, K, W, get("W0") if W is not None else None, alpha, alpha0, beta, beta0, steps, kappa)
    plain = getattr(result, "loss_name", "square") == "square" and getattr(result, "activation", "relu") == "relu"
    plain = plain and not getattr(result, "train_outer", False) and getattr(result, "bias", None) is None
    if flow:
        if result.status in (_core.Status.certified, _core.Status.stalled):  # a limit, stalled or not
            events = len(result.event_times) + 1
            _limit_claims(c, K, signs, y, beta, result.certificate, result.sliding, events=events, kappa=kappa)
        r = _residual(beta, signs, y)
        f = np.abs(signs) @ np.maximum(beta, 0) + np.abs(y)
        sub_r = (len(signs) + 1) * c.s(scaling.Y) * float(np.abs(signs).max(initial=1.0))
        bound = 4 * _gamma(len(y) + len(signs) + 2) * (0.5 * float(f @ f))
        if c.sub is not _NO_SUB:
            bound += c.s(scaling.LOSS) + sub_r * float(np.abs(r).sum() + len(y) * sub_r)
        c.add("loss", abs(result.loss - 0.5 * math.fsum(r * r)), bound)
        return c.out
    if plain and float(getattr(result, "output_scale", 1.0)) == 1.0:
        _loss_and_grad(
            c, K, signs, y, beta, float(get("loss")), float(get("grad_norm")), get("tol"), bool(get("success"))
        )
    cert = get("certificate")
    if cert is not None and cert.holds:
        _limit_claims(c, K, signs, y, beta, cert)
    return c.out


# ----------------------------------------------------------------------------- scale
_NO_SUB: dict = {}
#: The units (relucore._scaling) of the result fields a claim reads.
_UNITS = {
    "alpha": scaling.ALPHA,
    "alpha0": scaling.ALPHA,
    "beta": scaling.Y,
    "beta0": scaling.Y,
    "W": scaling.W,
    "W0": scaling.W,
    "loss": scaling.LOSS,
    "grad_norm": scaling.GRAD,
    "tol": scaling.GRAD,
    "objective": scaling.OBJECTIVE,  # (1/2) alpha K alpha, as |W|^2
}


def _normalised(X, K, y):
    """``(X, K, y, Scaling or None)`` of one problem: the data divided by the powers of two of relucore._scaling
    where a binary exponent lies outside the safe range (None: unchanged)."""
    Xa = None if X is None else as_float_array(X, "X", ndim=2)
    Ka = None if K is None or Xa is not None else as_float_array(K, "gram", ndim=2)
    ya = as_float_array(y, "y", ndim=1)
    sc = scaling.plan_scaling(None if Xa is None else Xa[None], None if Ka is None else Ka[None], ya[None])
    if sc is None:
        return X, K, y, None
    Xn = None if Xa is None else sc.down(Xa[None], scaling.X)[0]
    Kn = None if Ka is None else sc.down(Ka[None], scaling.K)[0]
    return Xn, Kn, sc.down(ya[None], scaling.Y)[0], sc


def _subnormal(sc) -> Optional[dict]:
    """Per unit: 2^-1074 of the caller's units in those of the rescaled copy (None: checked unscaled)."""
    if sc is None:
        return None
    units = set(_UNITS.values())
    return {u: float(sc.down(np.array([2.0**-1074]), u)[0]) for u in units}


class _InUnits:
    """A result read through, with the fields of ``_UNITS`` and the certificate's numbers in the units of the
    rescaled copy of the data (every field of a batch by the exponents of the problem being checked)."""

    def __init__(self, result, sc):
        self._result, self._sc = result, sc

    def __getattr__(self, name):
        v = getattr(self._result, name)
        if v is None:
            return v
        if name in _UNITS:
            return self._down(v, _UNITS[name])
        if name == "certificate":
            return [self._cert(c) for c in v] if isinstance(v, list) else self._cert(v)
        return v

    def _down(self, v, unit):
        out = self._sc.down(np.asarray(v, dtype=float)[None], unit)[0]
        return float(out) if np.ndim(out) == 0 else out

    def _cert(self, c):
        if c is None or not dataclasses.is_dataclass(c):
            return c
        fields = {f.name for f in dataclasses.fields(c)} & {"margin", "fp_error", "motion"}
        return dataclasses.replace(c, **{f: self._down(getattr(c, f), scaling.Y) for f in fields})


def _in_units(result, sc):
    return result if sc is None else _InUnits(result, sc)
