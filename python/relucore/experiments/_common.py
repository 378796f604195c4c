"""Helpers shared by several experiment modules (random streams, claims, figures, fits)."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from relucore.experiments._base import Claim

__all__ = ["lai_data", "child_rngs", "claim", "fmt_set", "figure", "power_law"]


def child_rngs(seed: int, k: int) -> List[np.random.Generator]:
    """``k`` independent generators spawned from ``seed`` (one per role: data, init, ...)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k)]


def lai_data(rng: np.random.Generator, n: int, d: int) -> Tuple[np.ndarray, np.ndarray]:
    """The data of the captions of Lai et al. (2026): ``x ~ N(0, I_d)``, ``|y| ~ U(0.1, 1)``, ``sign(y)`` uniform on {+-1}."""
    X = rng.standard_normal((n, d))
    y = rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)
    return X, y


def claim(name: str, expected: str, measured: str, passed) -> Claim:
    return Claim(name=name, expected=expected, measured=measured, passed=bool(passed))


def fmt_set(idx) -> str:
    return "{" + ", ".join(str(int(i)) for i in idx) + "}"


def figure(nrows: int, ncols: int, *, width: float = 4.2, height: float = 3.2, title: str = ""):
    """A constrained-layout figure with a grid of axes (lazy matplotlib)."""
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), layout="constrained", squeeze=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig, axes


def optional_figure(draw, *args):
    """``draw(*args)``, or None when matplotlib is missing (the experiment's table and claims stand alone)."""
    try:
        return draw(*args)
    except ImportError:
        return None


def power_law(x, y) -> Tuple[float, float]:
    """Exponent and prefactor of ``y = C x^p`` (least squares in log-log)."""
    p, logc = np.polyfit(np.log(x), np.log(y), 1)
    return float(p), float(np.exp(logc))
