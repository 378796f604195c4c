"""Plots of the literature experiments (Kou et al. 2023, step size, convergence probability)."""
from __future__ import annotations

import numpy as np

from relucore.plots._style import new_axes

__all__ = ["plot_stable_rank", "plot_margin_ratio"]


def _mean(a):
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        return a
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(a).any(axis=0)
        out = np.full(a.shape[1:], np.nan)
        out[ok] = np.nanmean(a[:, ok], axis=0)
    return out


def _steps(met):
    s = np.asarray(met.steps)
    return s if s.ndim == 1 else s[0]


def plot_stable_rank(metrics, *, ax=None, label=None, groups=True, whole=True, **kw):
    """Stable rank ``||W||_F^2/||W||_2^2`` against the GD step (log axis).

    Parameters
    ----------
    metrics : TrainingMetrics
        From :func:`relucore.training_metrics` (batched metrics are averaged over trials).
    groups : bool
        Draw the mean stable rank of the two sign groups (solid), as in Kou et al.
    whole : bool
        Draw the stable rank of the whole W (dashed).
    """
    ax = new_axes(ax)
    t = _steps(metrics)
    keep = t > 0
    color = kw.pop("color", None)
    if groups:
        g = 0.5 * (_mean(metrics.stable_rank_pos) + _mean(metrics.stable_rank_neg))
        (line,) = ax.plot(t[keep], g[keep], label=label, color=color, **kw)
        color = line.get_color()
    if whole:
        ax.plot(t[keep], _mean(metrics.stable_rank)[keep], ls="--", color=color,
                label=None if groups else label, **kw)
    ax.axhline(1.0, color="0.6", lw=0.8, zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel("GD step t")
    ax.set_ylabel("stable rank")
    if label is not None:
        ax.legend(fontsize=8)
    return ax


def plot_margin_ratio(metrics, *, ax=None, label=None, **kw):
    """``max_i / min_i`` of the normalised margins ``y_i f(x_i)/||W||_F`` against the step.

    Steps where some example is still misclassified (ratio undefined) are left out.
    Both axes are logarithmic; the ratio tends to 1 (Kou et al. 2023).
    """
    ax = new_axes(ax)
    t = _steps(metrics)
    r = _mean(metrics.margin_ratio)
    keep = (t > 0) & np.isfinite(r)
    ax.plot(t[keep], r[keep] - 1.0, label=label, **kw)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("GD step t")
    ax.set_ylabel("margin ratio − 1")
    if label is not None:
        ax.legend(fontsize=8)
    return ax
