"""A monotone link model of a success probability, fitted by maximum likelihood (docs/math.md,
"Phase diagrams: where a probability crosses p").

``P(x) = f + (c - f) F(F^{-1}(q) + s b (u(x) - u*))``, ``q = (p - f) / (c - f)``, where ``F`` is
the logistic or the normal distribution function (``link``), ``u`` the axis (or its logarithm,
``scale="log"``) mapped affinely onto [-1, 1] over the bounds, ``s = +-1`` the direction, ``b > 0``
the slope, ``f`` a floor and ``c`` a ceiling (0 and 1 unless the data need them, by a likelihood
ratio test). The parametrisation puts the crossing ``u*`` (where ``P = p``) first, so that its
profile likelihood (Wilks 1938) gives its interval directly, and the design (:func:`next_design`)
places trials where the asymptotic variance of ``u*`` falls most (c-optimality, Wu 1985) and where
the information of ``(u*, b)`` grows most (D-optimality, Neyer 1994), alternately. The data are
grouped: distinct axis values, their successes and trials.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "wilson_interval",
    "Axis",
    "LinkFit",
    "fit_link",
    "profile_interval",
    "information",
    "next_design",
    "looks_monotone",
]

#: Likelihood-ratio level at which a floor or a ceiling is added to the model.
EXTRA_LEVEL = 0.95
#: Level of the test of monotonicity (isotonic against saturated fit); below it, a warning.
MONOTONE_LEVEL = 0.999
#: Range of the crossing searched, in units of the mapped axis (the bounds are -1 and 1).
U_RANGE = 3.0
#: Range of log(slope) in mapped units: a slope of 0.05 (flat) to 300 (a step inside 1/300 of the bounds).
LOG_SLOPE = (math.log(0.05), math.log(300.0))
_EPS = 1e-12


def wilson_interval(successes, trials, z: float = 1.959963984540054):
    """Wilson score interval for a binomial proportion (vectorised); returns (low, high).

    ``z`` is the normal quantile (default: 97.5%, a 95% two-sided interval).
    """
    k = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)
    phat = k / t
    denom = 1 + z**2 / t
    centre = (phat + z**2 / (2 * t)) / denom
    half = z * np.sqrt(phat * (1 - phat) / t + z**2 / (4 * t**2)) / denom
    # The interval always contains phat; pin the exact ends against rounding.
    lo = np.where(k == 0, 0.0, np.clip(np.minimum(centre - half, phat), 0, 1))
    hi = np.where(k == t, 1.0, np.clip(np.maximum(centre + half, phat), 0, 1))
    return lo, hi


@dataclass(frozen=True)
class Axis:
    """The searched axis: ``bounds`` mapped onto u in [-1, 1], in log scale when ``log``."""

    low: float
    high: float
    log: bool
    integer: bool

    def to_u(self, x):
        t = np.log(np.asarray(x, dtype=float)) if self.log else np.asarray(x, dtype=float)
        a, b = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        return (2.0 * t - (a + b)) / (b - a)

    def to_x(self, u):
        a, b = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        t = 0.5 * (np.asarray(u, dtype=float) * (b - a) + (a + b))
        return np.exp(t) if self.log else t

    def points(self, u) -> np.ndarray:
        """Axis values at ``u`` inside the bounds, rounded for an integer axis."""
        x = np.clip(self.to_x(u), self.low, self.high)
        return np.round(x) if self.integer else x


@functools.lru_cache(maxsize=None)
def _cdf(link: str):
    from scipy.special import expit, logit, ndtr, ndtri

    return (expit, logit) if link == "logit" else (ndtr, ndtri)


@dataclass
class LinkFit:
    """One maximum-likelihood fit: ``theta = (u*, log b[, ceiling logit][, floor logit])``."""

    link: str
    p: float
    direction: int
    floor: bool
    ceiling: bool
    theta: np.ndarray
    nll: float
    extras: Tuple[str, ...] = field(default=())

    def levels(self, theta=None) -> Tuple[float, float]:
        """``(f, c)``: the floor and the ceiling (0 and 1 without them)."""
        th = self.theta if theta is None else theta
        j = 2
        c = 1.0
        if self.ceiling:
            c = self.p + (1 - self.p) / (1.0 + math.exp(-th[j]))
            j += 1
        f = self.p / (1.0 + math.exp(-th[j])) if self.floor else 0.0
        return f, c

    def prob(self, u, theta=None) -> np.ndarray:
        """The model's P at mapped axis values ``u``."""
        th = self.theta if theta is None else theta
        F, Finv = _cdf(self.link)
        f, c = self.levels(th)
        q = (self.p - f) / (c - f)
        z = float(Finv(q)) + self.direction * math.exp(th[1]) * (np.asarray(u, dtype=float) - th[0])
        return f + (c - f) * F(z)

    @property
    def u_star(self) -> float:
        return float(self.theta[0])

    def describe(self, scale: str) -> str:
        parts = [f"{self.link}({scale})"] + [e for e in ("floor", "ceiling") if getattr(self, e)]
        return ", ".join(parts)


def _nll(model: LinkFit, theta, u, k, t) -> float:
    P = np.minimum(np.maximum(model.prob(u, theta), _EPS), 1 - _EPS)
    return float(-(k @ np.log(P) + (t - k) @ np.log1p(-P)))


def _minimise(model: LinkFit, u, k, t, starts: Sequence[np.ndarray], u_star: Optional[float] = None):
    """Best of Nelder-Mead runs from ``starts`` (parameters clipped to their ranges inside the
    objective); with ``u_star`` the crossing is held fixed."""
    from scipy.optimize import minimize

    n_extra = int(model.floor) + int(model.ceiling)
    lo = np.array([-U_RANGE, LOG_SLOPE[0]] + [-12.0] * n_extra)
    hi = np.array([U_RANGE, LOG_SLOPE[1]] + [12.0] * n_extra)
    if u_star is None:

        def full(th):
            return np.clip(th, lo, hi)
    else:

        def full(th):
            return np.clip(np.concatenate([[u_star], th]), lo, hi)

    if u_star is not None and n_extra == 0:  # one parameter, the slope: Brent's method
        from scipy.optimize import minimize_scalar

        res = minimize_scalar(
            lambda lb: _nll(model, np.array([u_star, lb]), u, k, t),
            bounds=LOG_SLOPE,
            method="bounded",
            options={"xatol": 1e-7},
        )
        return np.array([u_star, float(res.x)]), float(res.fun)
    best = None
    for s in starts:
        x0 = np.asarray(s, float) if u_star is None else np.asarray(s[1:], float)
        res = minimize(
            lambda th: _nll(model, full(th), u, k, t),
            x0,
            method="Nelder-Mead",
            options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000, "maxfev": 4000},
        )
        if best is None or res.fun < best.fun:
            best = res
    return full(best.x), float(best.fun)


def _starts(u, k, t, p: float, n_extra: int, direction: int) -> List[np.ndarray]:
    """Starting points: the crossing of the empirical proportions (or 0), two slopes."""
    ph = k / t
    above = (ph >= p) if direction > 0 else (ph <= p)
    u0 = 0.0
    if above.any() and (~above).any():
        u0 = float(np.clip(0.5 * (u[above].min() + u[~above].max()), -U_RANGE, U_RANGE))
    extra = [2.0] * n_extra
    return [np.array([u0, math.log(b0), *extra]) for b0 in (2.0, 10.0)]


def _fit_one(link, p, direction, floor, ceiling, u, k, t, start=None) -> LinkFit:
    model = LinkFit(link, p, direction, floor, ceiling, np.zeros(2 + floor + ceiling), math.inf)
    starts = _starts(u, k, t, p, floor + ceiling, direction) if start is None else [start]
    model.theta, model.nll = _minimise(model, u, k, t, starts)
    return model


def _scoring(link: str, p: float, u, k, t) -> LinkFit:
    """The model without floor or ceiling, ``P = F(alpha + beta u)``, by Fisher scoring (a binomial
    GLM; iteratively reweighted least squares), then as ``(u*, log|beta|)`` with its direction.
    Separated data (beta growing without end) stop at the largest slope of ``LOG_SLOPE``."""
    from scipy.stats import norm

    F, Finv = _cdf(link)
    X = np.column_stack([np.ones_like(u), u])
    z = Finv((k + 0.5) / (t + 1.0))
    coef = np.linalg.lstsq(X * np.sqrt(t)[:, None], z * np.sqrt(t), rcond=None)[0]
    top = math.exp(LOG_SLOPE[1])
    for _ in range(100):
        eta = X @ coef
        P = np.clip(F(eta), 1e-12, 1 - 1e-12)
        dens = P * (1 - P) if link == "logit" else np.maximum(norm.pdf(eta), 1e-300)
        w = t * dens**2 / (P * (1 - P))
        r = eta + (k - t * P) / np.maximum(t * dens, 1e-300)
        A = X.T @ (X * w[:, None])
        new = np.linalg.lstsq(A, X.T @ (w * r), rcond=None)[0]
        new[1] = np.clip(new[1], -top, top)
        done = np.max(np.abs(new - coef)) < 1e-10 * (1 + np.max(np.abs(coef)))
        coef = new
        if done or abs(coef[1]) >= top:
            break
    alpha, beta = float(coef[0]), float(coef[1])
    direction = 1 if beta >= 0 else -1
    b = min(max(abs(beta), math.exp(LOG_SLOPE[0])), top)
    u_star = float(np.clip((float(Finv(p)) - alpha) / (direction * b), -U_RANGE, U_RANGE))
    model = LinkFit(link, p, direction, False, False, np.array([u_star, math.log(b)]), math.inf)
    model.nll = _nll(model, model.theta, u, k, t)
    return model


def fit_link(u, successes, trials, *, p: float = 0.5, link: str = "logit", extras: str = "auto") -> LinkFit:
    """Maximum-likelihood fit of the monotone link model to grouped binomial counts.

    Without floor and ceiling by Fisher scoring (its slope's sign is the direction). ``extras="auto"``
    then tries a ceiling and a floor when that model fits badly (deviance above the chi-square
    quantile at ``EXTRA_LEVEL`` with a degree of freedom per point beyond two) and keeps each that lowers
    ``-2 log L`` by more than the chi-square(1) quantile at ``EXTRA_LEVEL``; ``"none"`` fits neither,
    ``"ceiling"``, ``"floor"`` or ``"both"`` force them.
    """
    from scipy.stats import chi2

    u = np.asarray(u, dtype=float)
    k = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)
    best = _scoring(link, p, u, k, t)
    forced = {"none": (False, False), "ceiling": (False, True), "floor": (True, False), "both": (True, True)}
    if extras != "auto":
        floor, ceiling = forced[extras]
        if not (floor or ceiling):
            return best
        return _fit_one(link, p, best.direction, floor, ceiling, u, k, t)
    ph = np.clip(k / t, _EPS, 1 - _EPS)
    saturated = -float(k @ np.log(ph) + (t - k) @ np.log1p(-ph))
    if len(u) <= 2 or 2 * (best.nll - saturated) <= float(chi2.ppf(EXTRA_LEVEL, len(u) - 2)):
        return best
    crit = 0.5 * float(chi2.ppf(EXTRA_LEVEL, 1))
    for floor, ceiling in ((False, True), (True, False)):
        floor, ceiling = floor or best.floor, ceiling or best.ceiling
        start = np.concatenate([best.theta[:2], [4.0] * (floor + ceiling)])
        trial = _fit_one(link, p, best.direction, floor, ceiling, u, k, t, start=start)
        if best.nll - trial.nll > crit:
            best = trial
    return best


def profile_interval(model: LinkFit, u, successes, trials, confidence: float) -> Tuple[float, float]:
    """The profile-likelihood interval of the crossing ``u*`` (Wilks 1938): the ``u*`` whose
    profile ``-2 log L`` lies within the chi-square(1) quantile at ``confidence`` of the minimum.
    An end that does not close before -1 or 1 (the bounds) is returned as -1 or 1."""
    from scipy.optimize import brentq
    from scipy.stats import chi2

    u = np.asarray(u, dtype=float)
    k = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)
    crit = 0.5 * float(chi2.ppf(confidence, 1))
    best = model.nll

    def excess(us: float) -> float:
        starts = [model.theta] + _starts(u, k, t, model.p, len(model.theta) - 2, model.direction)
        return _minimise(model, u, k, t, starts, u_star=us)[1] - best - crit

    ends = []
    for edge in (-1.0, 1.0):
        u_hat = float(np.clip(model.u_star, -1.0, 1.0))
        if excess(edge) <= 0 or u_hat == edge:
            ends.append(edge)
        else:
            ends.append(float(brentq(excess, u_hat, edge, xtol=1e-6)) if excess(u_hat) < 0 else u_hat)
    return ends[0], ends[1]


def information(model: LinkFit, u, t) -> np.ndarray:
    """Fisher information of the binomial counts ``t`` at ``u`` (gradients by central differences)."""
    th = model.theta
    P = np.clip(model.prob(u), 1e-9, 1 - 1e-9)
    G = np.empty((len(th), len(u)))
    for j in range(len(th)):
        h = 1e-5 * max(1.0, abs(th[j]))
        e = np.zeros_like(th)
        e[j] = h
        G[j] = (model.prob(u, th + e) - model.prob(u, th - e)) / (2 * h)
    return (G * (t / (P * (1 - P)))) @ G.T


def next_design(model: LinkFit, u, trials, candidates, batch: int, groups: int) -> List[Tuple[float, int]]:
    """``groups`` points of ``batch`` trials in all, chosen one after the other among ``candidates``:
    alternately where the point lowers the asymptotic variance of ``u*`` (the first diagonal entry
    of the inverse information; c-optimality) most, and where it raises the determinant of the
    information of ``(u*, log b)`` most (D-optimality, which keeps the slope, and with it the
    interval, honest)."""
    info = information(model, np.asarray(u, float), np.asarray(trials, float))
    cand = np.asarray(candidates, dtype=float)
    per = [batch // groups + (1 if g < batch % groups else 0) for g in range(groups)]
    ridge = 1e-9 * np.eye(len(model.theta))
    each = [information(model, np.array([c]), np.array([1.0])) for c in cand]
    design = []
    for g, m in enumerate(per):
        scores = []
        for add in each:
            trial = info + m * add + ridge
            try:
                if g % 2 == 0:
                    scores.append(np.linalg.inv(trial)[0, 0])
                else:
                    scores.append(-np.linalg.slogdet(trial[:2, :2])[1])
            except np.linalg.LinAlgError:
                scores.append(np.inf)
        j = int(np.argmin(scores))
        info = info + m * each[j]
        design.append((float(cand[j]), m))
    return design


#: Trials per bin, at least, of the monotonicity check (neighbouring points pooled).
MONOTONE_BIN = 8


def _bins(k, t):
    """Neighbouring counts pooled into bins of at least ``MONOTONE_BIN`` trials (the last bin
    joins the one before when short), so that the chi-square law of the check holds roughly."""
    bk, bt = [], []
    for ki, ti in zip(k, t):
        if bt and bt[-1] < MONOTONE_BIN:
            bk[-1] += ki
            bt[-1] += ti
        else:
            bk.append(ki)
            bt.append(ti)
    if len(bt) > 1 and bt[-1] < MONOTONE_BIN:
        last_k, last_t = bk.pop(), bt.pop()
        bk[-1] += last_k
        bt[-1] += last_t
    return np.array(bk), np.array(bt)


def looks_monotone(u, successes, trials, direction: int) -> Tuple[bool, float]:
    """``(ok, G2)``: the likelihood ratio of the proportions (neighbouring points pooled into bins
    of at least ``MONOTONE_BIN`` trials) against their isotonic fit in ``direction`` (pool
    adjacent violators); not ok when above the chi-square quantile at
    ``MONOTONE_LEVEL`` with as many degrees of freedom as points pooled away (a heuristic level:
    the exact null law is a mixture of chi-squares with fewer degrees of freedom)."""
    from scipy.stats import chi2

    order = np.argsort(np.asarray(u, float) * direction)
    k, t = _bins(np.asarray(successes, float)[order], np.asarray(trials, float)[order])
    blocks: List[List[float]] = []
    for ki, ti in zip(k, t):
        blocks.append([ki, ti, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            kk, tt, nn = blocks.pop()
            blocks[-1] = [blocks[-1][0] + kk, blocks[-1][1] + tt, blocks[-1][2] + nn]
    iso = np.concatenate([[b[0] / b[1]] * int(b[2]) for b in blocks])

    def loglik(P):
        P = np.clip(P, _EPS, 1 - _EPS)
        return np.sum(k * np.log(P) + (t - k) * np.log1p(-P))

    g2 = float(2 * (loglik(k / t) - loglik(iso)))
    df = len(k) - len(blocks)
    return (df == 0 or g2 <= float(chi2.ppf(MONOTONE_LEVEL, df))), g2
