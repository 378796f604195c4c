"""Plots of GD runs: gap scaling, prediction trajectories, regime diagrams, activation timelines."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from relucore.plots._style import axes_doc, new_axes, pyplot

__all__ = [
    "fit_loglog",
    "label_log_axis",
    "label_log_ticks",
    "plot_gap_scaling",
    "plot_predictions",
    "plot_regimes",
    "plot_activation_timeline",
    "REGIME_COLORS",
    "VIOLATION_COLOR",
]

#: Colours of the undetermined / primal-stable / dual-frozen regimes (grey, blue, red).
REGIME_COLORS = ("#d0d0d0", "#1f5fbf", "#c8322d")
#: Colour of entries meeting Lemma 6's condition while active (the lemma's conclusion fails).
VIOLATION_COLOR = "#f0a500"


def fit_loglog(x, y):
    """Least-squares slope and intercept of ``log y`` on ``log x`` (positive entries only).

    Parameters
    ----------
    x, y : array_like
        The data, of equal size (flattened); pairs with a non-positive or non-finite
        entry are left out.

    Returns
    -------
    slope, intercept : float
        The fit ``log y ~ slope log x + intercept`` (natural logarithms).
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    lx, ly = np.log(x[ok]), np.log(y[ok])
    A = np.vstack([lx, np.ones_like(lx)]).T
    slope, intercept = np.linalg.lstsq(A, ly, rcond=None)[0]
    return float(slope), float(intercept)


def label_log_ticks(ax, values, axis: str = "x") -> None:
    """Puts plain-number major ticks at ``values`` on a log axis and hides the minor labels.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    values : array_like
        The tick positions; more than 10 distinct values (or none) leave the axis unchanged.
    axis : {"x", "y"}, default "x"
        Which axis to label.

    Returns
    -------
    None
    """
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    vals = np.unique(np.asarray(values, dtype=float))
    if vals.size == 0 or vals.size > 10:
        return
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(vals))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
    if axis == "x":
        ax.set_xticklabels([f"{v:g}" for v in vals])
    else:
        ax.set_yticklabels([f"{v:g}" for v in vals])


def label_log_axis(ax, axis: str = "x", min_labels: int = 3) -> None:
    """Plain-number labels on a log axis: at the powers of ten, or at 1, 2 and 5 times them, or
    at all nine multiples, whichever first gives ``min_labels`` labels in view; minor ticks unlabelled.

    Use it where the data span less than a few decades, so that the default locator
    labels only one power of ten (or none).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes, with their limits already set.
    axis : {"x", "y"}, default "x"
        Which axis to label.
    min_labels : int, default 3
        The number of labels in view to aim for.

    Returns
    -------
    None
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    decades = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    for subs in ((1.0,), (1.0, 2.0, 5.0), tuple(float(m) for m in range(1, 10))):
        if sum(lo <= m * 10**k <= hi for k in decades for m in subs) >= min_labels:
            break
    target.set_major_locator(LogLocator(base=10.0, subs=subs, numticks=30))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


@axes_doc
def plot_gap_scaling(
    x,
    gap,
    *,
    ax=None,
    label: str = "GD",
    color=None,
    marker: str = "o",
    fit: bool = True,
    slope_ci: Optional[Sequence[float]] = None,
    theory_slope: Optional[float] = None,
    plain_ticks: bool = False,
    xlabel: str = "n",
    ylabel: str = r"$\|w^{(\infty)} - w^\star\|_2$",
    **kw,
):
    """Log-log scatter of a gap against a size parameter, with its fitted power law.

    Parameters
    ----------
    x, gap : array_like, same length
        One entry per trial (several trials share an ``x``); the mean per
        distinct ``x`` is drawn as a marker, the trials as faint dots.
    label : str
        Legend label of this series.
    color : color, optional
        The series' colour (matplotlib's next colour when None).
    marker : str, default "o"
        The marker of the per-``x`` means.
    fit : bool, default True
        Draw the least-squares line of ``log gap`` on ``log x`` and put its
        slope (and ``slope_ci`` when given) in the legend.
    slope_ci : (float, float), optional
        A confidence interval of the slope (e.g. a bootstrap), shown in the legend.
    theory_slope : float, optional
        Draw a dashed reference line with this slope through the data's centre.
    plain_ticks : bool, default False
        Label the x axis with the distinct ``x`` values as plain numbers.
    xlabel, ylabel : str
        Axis labels (default ``n`` and the gap of Theorems 2, 4, 6 of Lai et al. 2026).
    {ax_kw}

    {returns_axes}
    """
    ax = new_axes(ax)
    x = np.asarray(x, dtype=float).ravel()
    gap = np.asarray(gap, dtype=float).ravel()
    pts = ax.scatter(x, gap, s=6, alpha=0.25, color=color, linewidths=0)
    color = pts.get_facecolor()[0][:3] if color is None else color
    xs = np.unique(x[x > 0])
    means = np.array([gap[(x == v) & (gap > 0)].mean() if np.any((x == v) & (gap > 0)) else np.nan for v in xs])
    text = label
    if fit and xs.size >= 2:
        slope, icpt = fit_loglog(x, gap)
        text = f"{label}: slope {slope:+.2f}"
        if slope_ci is not None:
            text += f" [{slope_ci[0]:+.2f}, {slope_ci[1]:+.2f}]"
        grid = np.geomspace(xs.min(), xs.max(), 50)
        ax.plot(grid, np.exp(icpt) * grid**slope, "-", color=color, lw=1.2)
    ax.plot(xs, means, marker, color=color, label=text, ms=5, **kw)
    if theory_slope is not None and xs.size >= 2:
        cx = np.exp(np.mean(np.log(xs)))
        cy = np.exp(np.nanmean(np.log(means)))
        grid = np.geomspace(xs.min(), xs.max(), 50)
        ax.plot(
            grid, cy * (grid / cx) ** theory_slope, "--", color="0.4", lw=1, label=f"theory slope {theory_slope:+.1f}"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    if plain_ticks:
        label_log_ticks(ax, xs)
    elif ax.get_xlim()[1] / max(ax.get_xlim()[0], 1e-300) > 10:
        from matplotlib.ticker import NullFormatter

        ax.xaxis.set_minor_formatter(NullFormatter())  # a decade tick exists; minor labels would crowd
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return ax


@axes_doc
def plot_predictions(
    steps,
    values,
    *,
    y=None,
    ax=None,
    ylabel: str = r"prediction $\beta_{k,i}$",
    title: Optional[str] = None,
    xscale: str = "symlog",
    legend: bool = True,
    targets: bool = True,
    **kw,
):
    """Trajectories of per-example predictions over GD steps.

    As in Figs. 4-6 of Lai et al. (2026).

    Parameters
    ----------
    steps : array_like, shape (R,)
        The GD step of each record (e.g. ``history.steps``).
    values : array_like, shape (R, n)
        One curve per example, e.g. ``history.beta[:, k, :]`` (one neuron's
        primal variables) or the network output ``h``.
    y : array_like, shape (n,), optional
        Labels: drawn as dotted targets in the example's colour and used in
        the legend (solid line: positive label, dashed: negative).
    targets : bool, default True
        Draw the labels as dotted horizontal lines (when ``y`` is given).
    xscale : str, default "symlog"
        ``"symlog"`` shows the first steps and the tail together.
    ylabel : str
        The y-axis label.
    title : str, optional
        Axes title.
    legend : bool, default True
        Draw a legend (one entry per example, with its label when ``y`` is given).
    {ax_kw}

    {returns_axes}
    """
    ax = new_axes(ax)
    plt = pyplot()
    steps = np.asarray(steps)
    values = np.asarray(values, dtype=float)
    n = values.shape[1]
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    for i in range(n):
        c = cmap(i % cmap.N)
        style = "-" if y is None or y[i] > 0 else "--"
        lab = f"{i}" if y is None else f"{i} (y={y[i]:+.2f})"
        ax.plot(steps, values[:, i], style, color=c, lw=1.1, label=lab, **kw)
        if y is not None and targets:
            ax.axhline(y[i], color=c, lw=0.7, ls=":", alpha=0.8)
    ax.axhline(0.0, color="k", lw=0.6)
    if xscale == "symlog":
        ax.set_xscale("symlog", linthresh=max(1, int(steps[1] - steps[0]) if steps.size > 1 else 1))
    else:
        ax.set_xscale(xscale)
    pos = steps[steps > 0]
    left = steps[0] if xscale != "log" or pos.size == 0 else pos[0]
    if steps[-1] > left:
        ax.set_xlim(left, steps[-1])
    ax.set_xlabel("GD step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    if legend:
        ax.legend(fontsize=6, ncol=2, title="example", title_fontsize=6, loc="best")
    return ax


def _step_edges(steps: np.ndarray) -> np.ndarray:
    steps = np.asarray(steps, dtype=float)
    last = steps[-1] + (steps[-1] - steps[-2] if steps.size > 1 else 1.0)
    return np.append(steps, last)


@axes_doc
def plot_regimes(
    regimes,
    *,
    neuron: Optional[int] = None,
    ax=None,
    title: Optional[str] = None,
    xscale: str = "symlog",
    labels=None,
    show_violations: bool = True,
    **kw,
):
    """Regime diagram: (neuron, example) entries over steps in blue / red / grey.

    Parameters
    ----------
    regimes : relucore.Regimes
        The regimes of a recorded run (:func:`relucore.regimes`; Lemmas 5 and 6 of Lai et al. 2026).
    title : str, optional
        Axes title.
    xscale : str, default "symlog"
        ``"symlog"`` shows the first steps and the tail together.
    neuron : int, optional
        Draw only this neuron (rows = examples); default all neurons stacked.
    labels : array_like, shape (n,), optional
        Labels ``y``, shown in the row names.
    show_violations : bool, default True
        Draw entries that meet Lemma 6's condition but are active (so the
        lemma's conclusion ``beta <= 0`` fails, e.g. in low dimension) in
        orange instead of red.
    {ax_kw}

    {returns_axes}
    """
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    ax = new_axes(ax)
    state = regimes.state.astype(np.int8)
    violated = (state == 2) & regimes.active
    if show_violations:
        state = np.where(violated, 3, state)
    R, m, n = state.shape
    ks = range(m) if neuron is None else [neuron]
    grid = np.concatenate([state[:, k, :].T for k in ks], axis=0)  # rows: (k, i)
    cmap = ListedColormap(list(REGIME_COLORS) + [VIOLATION_COLOR])
    norm = BoundaryNorm([-0.5, 0.5, 1.5, 2.5, 3.5], 4)
    edges = _step_edges(regimes.steps)
    ax.pcolormesh(edges, np.arange(grid.shape[0] + 1), grid, cmap=cmap, norm=norm, shading="flat", **kw)
    names = []
    for k in ks:
        for i in range(n):
            yl = "" if labels is None else f" (y{'+' if labels[i] > 0 else '-'})"
            names.append(f"{i}{yl}" if neuron is not None else f"k{k} i{i}{yl}")
    ax.set_yticks(np.arange(len(names)) + 0.5)
    ax.set_yticklabels(names, fontsize=6 if len(names) <= 24 else 4)
    ax.invert_yaxis()
    for j in range(1, len(list(ks))):
        ax.axhline(j * n, color="k", lw=0.8)
    if xscale == "symlog":
        ax.set_xscale("symlog", linthresh=max(1.0, float(regimes.record_every)))
    else:
        ax.set_xscale(xscale)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("GD step")
    ax.set_ylabel("example" if neuron is not None else "neuron, example")
    handles = [
        Patch(color=REGIME_COLORS[1], label="primal-stable (L5)"),
        Patch(color=REGIME_COLORS[2], label="dual-frozen (L6)"),
        Patch(color=REGIME_COLORS[0], label="undetermined"),
    ]
    ks_list = list(ks)
    if show_violations and violated[:, ks_list, :].any():
        handles.append(Patch(color=VIOLATION_COLOR, label="L6 condition but active"))
    ax.legend(
        handles=handles,
        fontsize=6,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncol=len(handles) if len(handles) <= 3 else 2,
        frameon=False,
    )
    if title:
        ax.set_title(title, fontsize=9)
    return ax


@axes_doc
def plot_activation_timeline(
    steps,
    mask,
    *,
    ax=None,
    stable_step: Optional[int] = None,
    title: Optional[str] = None,
    xscale: str = "symlog",
    **kw,
):
    """Activation masks ``beta > 0`` of every (neuron, example) over steps.

    As in Figs. 4-6 of Lai et al. (2026); ``stable_step`` is the ``t_0`` of their Lemma 1.

    Parameters
    ----------
    steps : array_like, shape (R,)
        The GD step of each record (e.g. ``history.steps``).
    mask : array_like of bool, shape (R, m, n)
        E.g. ``result.history.mask``.
    title : str, optional
        Axes title.
    xscale : str, default "symlog"
        ``"symlog"`` shows the first steps and the tail together.
    stable_step : int, optional
        Pattern-stabilisation step, drawn as a vertical line.
    {ax_kw}

    {returns_axes}
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    ax = new_axes(ax)
    mask = np.asarray(mask, dtype=bool)
    R, m, n = mask.shape
    grid = np.concatenate([mask[:, k, :].T for k in range(m)], axis=0).astype(float)
    edges = _step_edges(np.asarray(steps))
    ax.pcolormesh(
        edges,
        np.arange(m * n + 1),
        grid,
        cmap=ListedColormap(["white", "#333333"]),
        vmin=0,
        vmax=1,
        shading="flat",
        **kw,
    )
    for k in range(1, m):
        ax.axhline(k * n, color="tab:orange", lw=0.8)
    ax.set_yticks(np.arange(m) * n + n / 2)
    ax.set_yticklabels([f"neuron {k}" for k in range(m)], fontsize=7)
    ax.invert_yaxis()
    handles = [Patch(facecolor="#333333", label="active"), Patch(facecolor="white", edgecolor="k", label="inactive")]
    if stable_step is not None:
        ax.axvline(stable_step, color="tab:green", lw=1.2)
        handles.append(Patch(color="tab:green", label=f"pattern stable from step {stable_step}"))
    if xscale == "symlog":
        ax.set_xscale("symlog", linthresh=1.0)
    else:
        ax.set_xscale(xscale)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("GD step")
    ax.set_ylabel("examples per neuron")
    ax.legend(handles=handles, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    return ax
