"""One search of :func:`relucore.threshold`: the trials of one ``given`` combination, the
fits after each batch, where the next batch goes and when to stop (docs/math.md, "Phase
diagrams: where a probability crosses p")."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from relucore.sweeps.threshold_fit import (
    Axis,
    LinkFit,
    fit_link,
    looks_monotone,
    next_design,
    profile_interval,
    wilson_interval,
)

__all__ = ["Search", "NonMonotoneWarning", "INITIAL_POINTS", "DESIGN_GROUPS", "CANDIDATES", "MIN_TRIALS", "END_TRIALS"]

#: Points of the first batch, evenly spaced over the bounds (in the axis or its logarithm).
INITIAL_POINTS = 8
#: Points of every later batch (the batch's trials shared between them).
DESIGN_GROUPS = 4
#: Candidate points of the design, evenly spaced over the bounds.
CANDIDATES = 41
#: Trials of a combination before its interval may stop the search: the profile interval's level
#: holds asymptotically, and a stop on the width of a few early batches favours data that
#: overstate the slope (bench/bench_threshold.py measures the coverage).
MIN_TRIALS = 256
#: Trials at each end of the bounds, at least, before both ends on one side of p end a search
#: (fewer leave the points between too few trials to show a P that is not monotone).
END_TRIALS = 16


class NonMonotoneWarning(UserWarning):
    """The outcomes of a :func:`relucore.threshold` search do not look monotone in the axis."""


class Search:
    """The state of one combination's search; ``batches`` is the number of batches designed."""

    def __init__(self, axis: Axis, *, p: float, confidence: float, rel_width: float, batch_size: int, link: str):
        from scipy.stats import norm

        self.axis, self.p, self.confidence, self.rel_width = axis, p, confidence, rel_width
        self.batch_size, self.link = batch_size, link
        self.z = float(norm.ppf(0.5 + confidence / 2))
        self.x: List[float] = []  # one entry per trial, in (batch, index) order
        self.y: List[bool] = []
        self.batches = 0
        self.status: Optional[str] = None  # "crossing", "never_crosses" or "max_trials" once done
        self.fit: Optional[LinkFit] = None
        self.interval: Optional[Tuple[float, float]] = None

    # --- data -------------------------------------------------------------------------------
    def grouped(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct axis values (as u), their successes and trials."""
        x = np.asarray(self.x, dtype=float)
        values, inverse = np.unique(x, return_inverse=True)
        k = np.bincount(inverse, weights=np.asarray(self.y, dtype=float), minlength=len(values))
        t = np.bincount(inverse, minlength=len(values)).astype(float)
        return self.axis.to_u(values), k, t

    def add(self, xs: List[float], ys: List[bool]) -> None:
        self.x.extend(xs)
        self.y.extend(ys)

    # --- design -----------------------------------------------------------------------------
    def design(self) -> List[float]:
        """The axis values of the next batch, one per trial (``batch_size`` of them)."""
        B = self.batch_size
        if self.batches == 0:
            u = np.linspace(-1.0, 1.0, INITIAL_POINTS)
            plan = [(float(c), B // INITIAL_POINTS + (1 if j < B % INITIAL_POINTS else 0)) for j, c in enumerate(u)]
        elif self.fit is None or not -1.0 < self.fit.u_star < 1.0:
            plan = [(-1.0, B - B // 2), (1.0, B // 2)]  # is there a crossing at all? look at both ends
        else:
            u, _, t = self.grouped()
            cand = np.unique(self.axis.to_u(self.axis.points(np.linspace(-1.0, 1.0, CANDIDATES))))
            plan = next_design(self.fit, u, t, cand, B, DESIGN_GROUPS)
        self.batches += 1
        return [v for c, m in plan for v in [float(self.axis.points(c))] * m]

    # --- after a batch ------------------------------------------------------------------------
    def update(self, max_trials: int) -> None:
        """Refits and decides whether the search is done (sets ``status``)."""
        u, k, t = self.grouped()
        self.fit = fit_link(u, k, t, p=self.p, link=self.link) if len(u) >= 2 else None
        if self._never_crosses(u, k, t):
            self.status = "never_crosses"
            return
        ready = len(self.x) >= MIN_TRIALS
        if ready and self.fit is not None and -1.0 < self.fit.u_star < 1.0 and self._wald_close():
            self.interval = profile_interval(self.fit, u, k, t, self.confidence)
            if self._narrow():
                self.status = "crossing"
                return
        if len(self.x) >= max_trials:
            if self.fit is not None and -1.0 < self.fit.u_star < 1.0:
                self.interval = profile_interval(self.fit, u, k, t, self.confidence)
            self.status = "max_trials"

    def _never_crosses(self, u, k, t) -> bool:
        """Both ends of the bounds seen, and their Wilson intervals at ``confidence`` on the same
        side of p: a monotone P does not cross p in between."""
        ends = [np.flatnonzero(u == u.min()), np.flatnonzero(u == u.max())]
        if len(u) < 2 or u.min() > -1 + 1e-9 or u.max() < 1 - 1e-9:
            return False
        sides = []
        for j in ends:
            if t[j].sum() < END_TRIALS:
                return False
            lo, hi = (float(v) for v in wilson_interval(k[j].sum(), t[j].sum(), self.z))
            sides.append(1 if lo > self.p else (-1 if hi < self.p else 0))
        # ends on one side, but not if the points between say P is not monotone (then the search
        # goes on, and the warning at its end says why)
        return sides[0] != 0 and sides[0] == sides[1] and self.monotone()[0]

    def _wald_close(self) -> bool:
        """The Wald interval of u* (from the information) is within twice the width sought, so
        that the profile interval is worth computing."""
        from relucore.sweeps.threshold_fit import information

        u, _, t = self.grouped()
        try:
            var = float(np.linalg.inv(information(self.fit, u, t))[0, 0])
        except np.linalg.LinAlgError:
            return False
        if not np.isfinite(var) or var <= 0:
            return False
        half = self.z * math.sqrt(var)
        if half >= 1.0:  # wider than half the bounds: far from the width sought
            return False
        lo, hi = self.axis.to_x(self.fit.u_star - half), self.axis.to_x(self.fit.u_star + half)
        est = float(self.axis.to_x(self.fit.u_star))
        return (hi - lo) <= 2 * self.rel_width * abs(est)

    def _narrow(self) -> bool:
        lo, hi = self.interval
        if lo <= -1.0 or hi >= 1.0:
            return False
        x_lo, x_hi = self.axis.to_x(lo), self.axis.to_x(hi)
        est = float(self.axis.to_x(self.fit.u_star))
        return bool((x_hi - x_lo) <= self.rel_width * abs(est))

    # --- the row --------------------------------------------------------------------------------
    def row(self) -> Dict[str, Any]:
        u, k, t = self.grouped()
        x_seen = np.unique(np.asarray(self.x, dtype=float))
        crosses = self.status != "never_crosses" and self.fit is not None and -1.0 < self.fit.u_star < 1.0
        est = lo = hi = float("nan")
        if crosses and self.interval is not None:
            est = float(self.axis.to_x(self.fit.u_star))
            lo, hi = (float(v) for v in self.axis.to_x(np.array(self.interval)))
        elif crosses:
            est = float(self.axis.to_x(self.fit.u_star))
        return {
            "estimate": est,
            "low": lo,
            "high": hi,
            "trials": int(t.sum()),
            "successes": int(k.sum()),
            "crosses": bool(crosses),
            "narrow": self.status == "crossing",
            "status": self.status,
            "bracket_low": float(x_seen.min()),
            "bracket_high": float(x_seen.max()),
            "p_at_low": float(k[0] / t[0]),
            "p_at_high": float(k[-1] / t[-1]),
            "model": self.fit.describe("log" if self.axis.log else "linear") if self.fit is not None else "",
        }

    def monotone(self) -> Tuple[bool, float]:
        u, k, t = self.grouped()
        direction = self.fit.direction if self.fit is not None else (1 if k[-1] / t[-1] >= k[0] / t[0] else -1)
        return looks_monotone(u, k, t, direction)
