"""Plots of the literature experiments (Kou et al. 2023, step size, convergence probability)."""

from __future__ import annotations

import numpy as np

from relucore.plots._style import axes_doc, new_axes

__all__ = [
    "plot_stable_rank",
    "plot_margin_ratio",
    "plot_step_size_gap",
    "plot_floor_scaling",
    "plot_convergence_probability",
]


def _mean(a):
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        return a
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(a).any(axis=0)
        out = np.full(a.shape[1:], np.nan)
        out[ok] = np.nanmean(a[:, ok], axis=0)
    return out


def _plain_log_ticks(axis, values):
    """Ticks of a log axis at the given values, written as plain numbers."""
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    axis.set_major_locator(FixedLocator(np.asarray(values, dtype=float)))
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())


def _finish_axes(ax, xlabel, ylabel, *, xscale=None, yscale=None, legend=True):
    """Sets the axis scales (those given), the axis labels and the legend; returns ``ax``."""
    if xscale is not None:
        ax.set_xscale(xscale)
    if yscale is not None:
        ax.set_yscale(yscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend:
        ax.legend(fontsize=8)
    return ax


def _steps(met):
    s = np.asarray(met.steps)
    return s if s.ndim == 1 else s[0]


@axes_doc
def plot_stable_rank(metrics, *, ax=None, label=None, groups=True, whole=True, **kw):
    """Stable rank ``||W||_F^2/||W||_2^2`` against the GD step (log axis).

    Kou et al. (2023), Theorems 4.2-4.4: it tends to 1 per sign group for the leaky ReLU.

    Parameters
    ----------
    metrics : TrainingMetrics
        From :func:`relucore.training_metrics` (batched metrics are averaged over trials).
    label : str, optional
        Legend label of the curve (a legend is drawn only when given).
    groups : bool
        Draw the mean stable rank of the two sign groups (solid), as in Kou et al.
    whole : bool
        Draw the stable rank of the whole W (dashed).
    {ax_kw}

    {returns_axes}
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
        ax.plot(t[keep], _mean(metrics.stable_rank)[keep], ls="--", color=color, label=None if groups else label, **kw)
    ax.axhline(1.0, color="0.6", lw=0.8, zorder=0)
    return _finish_axes(ax, "GD step t", "stable rank", xscale="log", legend=label is not None)


@axes_doc
def plot_margin_ratio(metrics, *, ax=None, label=None, **kw):
    """``max_i / min_i`` of the normalised margins ``y_i f(x_i)/||W||_F`` against the step.

    Kou et al. (2023), Theorems 4.2-4.4 (docs/math.md §10).

    Steps where some example is still misclassified (ratio undefined) are left out.
    Both axes are logarithmic; the ratio tends to 1 (Kou et al. 2023).

    Parameters
    ----------
    metrics : relucore.TrainingMetrics
        The metrics of a recorded run (``relucore.training_metrics``); a batch is averaged.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    label : str, optional
        Legend label of the curve.
    **kw
        Passed on to ``ax.plot``.

    {returns_axes}
    """
    ax = new_axes(ax)
    t = _steps(metrics)
    r = _mean(metrics.margin_ratio)
    keep = (t > 0) & np.isfinite(r)
    ax.plot(t[keep], r[keep] - 1.0, label=label, **kw)
    return _finish_axes(ax, "GD step t", "margin ratio − 1", xscale="log", yscale="log", legend=label is not None)


@axes_doc
def plot_step_size_gap(eta_units, gaps_orthogonal, gaps_near, *, ax=None, slope=None, floor=None, **kw):
    """Gap ``||W_GD - W*||`` against ``eta mu_1(K)`` for orthogonal and near-orthogonal inputs.

    On orthogonal inputs gradient flow reaches the minimum-norm network (Boursier et al.
    2022), so the gap of GD is proportional to the step; on near-orthogonal inputs it
    levels off at a floor (the ``step-size`` experiment).

    Parameters
    ----------
    eta_units : array, shape (E,)
        The step sizes in units of ``1/mu_1(K)``.
    gaps_orthogonal, gaps_near : array, shape (trials, E) or (E,)
        Mean and spread over trials are drawn.
    slope : float, optional
        Prefactor c of the line ``c eta`` fitted on the orthogonal data.
    floor : (float, float) or (float, float, float), optional
        ``(floor, c[, p])`` of ``floor + c eta^p`` fitted on the near-orthogonal data.
    {ax_kw}

    {returns_axes}
    """
    ax = new_axes(ax)
    e = np.asarray(eta_units, dtype=float)
    for g, label, color, marker in (
        (gaps_orthogonal, "orthogonal inputs", "C0", "o"),
        (gaps_near, "near-orthogonal Gaussian inputs", "C3", "s"),
    ):
        g = np.atleast_2d(np.asarray(g, dtype=float))
        mean = g.mean(axis=0)
        ax.plot(e, mean, marker=marker, color=color, label=label, ls="none", **kw)
        if g.shape[0] > 1:
            ax.fill_between(e, g.min(axis=0), g.max(axis=0), color=color, alpha=0.15, lw=0)
    if slope is not None:
        ax.plot(e, slope * e, color="C0", lw=1, label=f"fit {slope:.3g}·ημ₁")
    if floor is not None:
        f, c = floor[0], floor[1]
        p = 1.0 if len(floor) < 3 else floor[2]
        ax.plot(e, f + c * e**p, color="C3", lw=1, label=f"fit floor + c·η^{p:.2f}, floor = {f:.2g}")
        ax.axhline(f, color="C3", lw=0.8, ls=":")
    return _finish_axes(ax, "step size η·μ₁(K)", "‖W_GD − W*‖_F", xscale="log", yscale="log")


@axes_doc
def plot_floor_scaling(n_grid, floors_n, d_grid, floors_d, *, ax=None, fixed_d=None, fixed_n=None, **kw):
    """The gradient-flow floor against n (fixed d) and against d (fixed n), log-log, with power-law fits.

    The floor is the gap ``||W_GD - W*||`` left as ``eta -> 0`` on near-orthogonal inputs,
    where the exact orthogonality of Boursier et al. (2022) fails (the ``step-size`` experiment).

    Parameters
    ----------
    n_grid, floors_n : array_like, same length
        The values of n and the floor measured at each (d fixed at ``fixed_d``).
    d_grid, floors_d : array_like, same length
        The values of d and the floor measured at each (n fixed at ``fixed_n``).
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    fixed_d, fixed_n : int, optional
        The fixed d and n, shown in the legend.
    **kw
        Passed on to ``ax.plot`` of the measured points.

    {returns_axes}
    """
    ax = new_axes(ax)
    for x, f, label, color in (
        (n_grid, floors_n, f"against n (d={fixed_d})", "C2"),
        (d_grid, floors_d, f"against d (n={fixed_n})", "C4"),
    ):
        x = np.asarray(x, dtype=float)
        f = np.asarray(f, dtype=float)
        ok = f > 0
        p, logc = np.polyfit(np.log(x[ok]), np.log(f[ok]), 1)
        ax.plot(x[ok], f[ok], "o", color=color, label=f"{label}: ∝ x^{p:.2f}", **kw)
        ax.plot(x[ok], np.exp(logc) * x[ok] ** p, color=color, lw=1)
    return _finish_axes(ax, "n  or  d", "floor  ‖W_GF − W*‖_F", xscale="log", yscale="log")


@axes_doc
def plot_convergence_probability(curves, *, ax=None, **kw):
    """Success probability against n with Wilson intervals and the fitted curve.

    The probability that GD reaches a global minimum, which falls as n grows at fixed d
    (Dana et al. 2025; the ``convergence-probability`` experiment).

    Parameters
    ----------
    curves : list of dict
        One per d with keys ``d``, ``n``, ``prob``, ``low``, ``high``, ``n_star`` and the
        fitted curve: ``fit_n`` and ``fit_prob`` (its values), as in the ``convergence-probability``
        experiment's ``data["curves"]``; or ``k`` and optionally ``plateau``, ``n_half`` (the curve
        ``plateau / (1 + (n/n_half)^k)``; without them ``1 / (1 + (n/n_star)^k)``).
    {ax_kw}

    {returns_axes}
    """
    ax = new_axes(ax)
    for j, c in enumerate(curves):
        color = f"C{j}"
        n = np.asarray(c["n"], dtype=float)
        pr = np.asarray(c["prob"], dtype=float)
        err = np.maximum(np.vstack([pr - np.asarray(c["low"]), np.asarray(c["high"]) - pr]), 0.0)
        ax.errorbar(n, pr, yerr=err, fmt="o", color=color, capsize=3, label=f"d={c['d']}: n*={c['n_star']:.1f}", **kw)
        grid = np.geomspace(n.min(), n.max(), 200)
        if "fit_n" in c:
            grid, fit = np.asarray(c["fit_n"], dtype=float), np.asarray(c["fit_prob"], dtype=float)
        elif "n_half" in c:
            fit = c.get("plateau", 1.0) / (1.0 + (grid / c["n_half"]) ** c["k"])
        else:
            fit = 1.0 / (1.0 + (grid / c["n_star"]) ** c["k"])
        ax.plot(grid, fit, color=color, lw=1)
        ax.axvline(c["n_star"], color=color, lw=0.8, ls=":")
    ax.set_xscale("log")
    ticks = []
    for v in np.unique(np.concatenate([np.asarray(c["n"]) for c in curves])):
        if not ticks or v >= 1.3 * ticks[-1]:  # keep the labels apart on the log axis
            ticks.append(v)
    _plain_log_ticks(ax.xaxis, ticks)
    ax.set_ylim(-0.03, 1.03)
    return _finish_axes(ax, "number of examples n", "P(final loss below threshold)")
