"""Shared plotting plumbing: lazy matplotlib import and axes creation."""

from __future__ import annotations

from relucore._docstrings import shared_sections

#: Fills the docstring sections every ``plot_*`` function shares: ``{ax_kw}`` (the ``ax`` and
#: ``**kw`` parameters) and ``{returns_axes}`` (the Returns section: the axes drawn on).
axes_doc = shared_sections(
    ax_kw="""
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    **kw
        Passed on to the matplotlib call that draws the data.
    """,
    returns_axes="""
    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """,
)


def pyplot():
    """Imports matplotlib.pyplot with a non-interactive backend if none is set."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("plotting needs matplotlib: pip install 'relucore[plots]'") from exc
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        import os

        if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_axes(ax=None, *, figsize=(5.0, 3.6)):
    """Returns ``ax`` or the axes of a new figure.

    Parameters
    ----------
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; None makes a new figure (constrained layout).
    figsize : (float, float), default (5.0, 3.6)
        The size in inches of a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax`` itself, or the new figure's axes.
    """
    if ax is not None:
        return ax
    plt = pyplot()
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax
