"""Phase diagrams: the crossings found by :func:`relucore.threshold` with their intervals."""

from __future__ import annotations

import numpy as np

from relucore.plots._style import axes_doc, new_axes

__all__ = ["plot_phase_diagram"]

#: The columns of a threshold table that are not ``given`` values.
_RESULT_COLUMNS = (
    "estimate",
    "low",
    "high",
    "trials",
    "successes",
    "crosses",
    "narrow",
    "status",
    "bracket_low",
    "bracket_high",
    "p_at_low",
    "p_at_high",
    "model",
)


@axes_doc
def plot_phase_diagram(table, ax=None, *, x=None, series=None, logx=None, logy=None, **kw):
    """Estimates of :func:`relucore.threshold` with their intervals, across the ``given`` values.

    One marker per row at its ``estimate``, the interval ``[low, high]`` as an error bar. A row
    whose probability does not cross p inside the bounds is drawn as an open triangle at the
    end of the bracket seen beyond which the crossing must lie (up: above ``bracket_high``;
    down: below ``bracket_low``).

    Parameters
    ----------
    table : pandas.DataFrame
        The table :func:`relucore.threshold` returns.
    x : str, optional
        The ``given`` column across the horizontal axis; default the first that holds more
        than one value.
    series : str or False, optional
        A ``given`` column drawn as one line per value; default the next that holds more than
        one value, if any; False: none.
    logx, logy : bool, optional
        Log scales; default log when every value on the axis is positive.
    {ax_kw}

    {returns_axes}
    """
    import pandas as pd

    attrs = dict(getattr(table, "attrs", {}))
    table = pd.DataFrame(table)
    given = [c for c in table.columns if c not in _RESULT_COLUMNS]
    if not given:
        raise ValueError("plot_phase_diagram needs a table with at least one given column")
    varying = [c for c in given if table[c].nunique() > 1] or given[:1]
    x = varying[0] if x is None else x
    rest = [c for c in varying if c != x]
    series = (rest[0] if rest else None) if series is None else (series or None)
    for c in (x, series):
        if c is not None and c not in given:
            raise ValueError(f"{c!r} is not a given column of the table (given columns: {given})")
    ax = new_axes(ax)
    groups = [(None, table)] if series is None else list(table.groupby(series, sort=True))
    p = attrs.get("p")
    fixed_color = kw.pop("color", None)
    for j, (value, rows) in enumerate(groups):
        rows = rows.sort_values(x)
        color = fixed_color or f"C{j}"
        label = f"{series}={value}" if series is not None else None
        cross = rows["crosses"].to_numpy(bool)
        xs, est = rows[x].to_numpy(float), rows["estimate"].to_numpy(float)
        err = np.vstack([est - rows["low"].to_numpy(float), rows["high"].to_numpy(float) - est])
        ax.errorbar(xs[cross], est[cross], yerr=err[:, cross], fmt="o-", color=color, capsize=3, label=label, **kw)
        above = rows["p_at_high"].to_numpy(float) >= (0.5 if p is None else p)
        increasing = (rows["p_at_high"] >= rows["p_at_low"]).to_numpy(bool)
        up = ~cross & (above != increasing)  # the crossing lies beyond the bracket's upper end
        ax.plot(xs[up], rows["bracket_high"].to_numpy(float)[up], "^", mfc="none", color=color)
        down = ~cross & ~up
        ax.plot(xs[down], rows["bracket_low"].to_numpy(float)[down], "v", mfc="none", color=color)
    values = table[x].to_numpy(float)
    ys = table[["estimate", "low", "high", "bracket_low", "bracket_high"]].to_numpy(float)
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    if logx if logx is not None else bool(np.all(values > 0)):
        ax.set_xscale("log")
        ax.set_xticks(np.unique(values))  # the given values, written as plain numbers
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    if logy if logy is not None else bool(np.nanmin(ys) > 0):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    axis = attrs.get("axis", "threshold")
    conf = attrs.get("confidence")
    ylabel = f"{axis} where P = {p:g}" if p is not None else f"{axis} at the crossing"
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel + (f"  ({conf:.0%} interval)" if conf is not None else ""))
    if series is not None:
        ax.legend(fontsize=8)
    return ax
