"""Plots for relucore.meanfield: learned function with kinks, directions, trajectories."""

from __future__ import annotations

import numpy as np

from relucore.plots._gd import label_log_axis
from relucore.plots._style import axes_doc, new_axes, pyplot

__all__ = [
    "plot_meanfield_function",
    "plot_meanfield_directions",
    "plot_meanfield_trajectories",
    "plot_meanfield_objective",
]


def _theta_X(result, X):
    from relucore.meanfield import MeanFieldResult

    if isinstance(result, MeanFieldResult):
        return result, result.theta, (result.X if X is None else np.asarray(X, float))
    raise TypeError("result must be a relucore.meanfield.MeanFieldResult")


def _cluster_colors(K: int):
    plt = pyplot()
    cmap = plt.get_cmap("tab10" if K <= 10 else "tab20")
    return [cmap(k % cmap.N) for k in range(K)]


@axes_doc
def plot_meanfield_function(
    result,
    analysis=None,
    *,
    ax=None,
    X=None,
    margin: float = 0.5,
    resolution: int = 121,
    show_kinks: bool = True,
    colorbar: bool = True,
    **kw,
):
    """The learned function h with the training data and its kink hyperplanes.

    Liang et al. (2026), effective width collapse (docs/math.md §11).

    1-D inputs: the curve h(x) (orange), the data (blue dots) and the kinks
    (dashed vertical lines). 2-D inputs: h as a colour map, the data as dots
    labelled with y, the kink lines in orange.

    Parameters
    ----------
    result : MeanFieldResult
        A run of :func:`relucore.meanfield.train` (1-D or 2-D inputs).
    analysis : MeanFieldAnalysis, optional
        Supplies the kinks (otherwise none are drawn).
    ax : matplotlib axes, optional
        The axes to draw on; a new figure's axes when None.
    X : array_like, shape (M, d) or (M,), optional
        The inputs to draw (default the training inputs of ``result``).
    show_kinks : bool, default True
        Draw the kink hyperplanes ``w^T x + b = 0`` of the directions in ``analysis``.
    colorbar : bool, default True
        Add a colour bar (2-D inputs).
    margin : float
        Extra room around the data's bounding box.
    resolution : int
        Grid points per axis.
    **kw
        Passed to ``ax.plot`` (1-D) or ``ax.imshow`` (2-D).

    {returns_axes}
    """
    res, theta, X = _theta_X(result, X)
    X = X.reshape(X.shape[0], -1)
    d = X.shape[1]
    kinks = analysis.kinks if (analysis is not None and show_kinks) else np.zeros((0, d + 1))
    if d == 1:
        ax = new_axes(ax)
        lo, hi = X.min() - margin, X.max() + margin
        if kinks.shape[0]:
            pos = -kinks[:, 1] / kinks[:, 0]
            pos = pos[np.abs(pos) < 1e3]
            if pos.size:
                lo, hi = min(lo, pos.min() - margin / 2), max(hi, pos.max() + margin / 2)
        xs = np.linspace(lo, hi, max(resolution, 2))
        ax.plot(
            xs,
            res.predict(xs[:, None]),
            color=kw.pop("color", "tab:orange"),
            lw=kw.pop("lw", 2),
            label="learned h",
            **kw,
        )
        ax.scatter(X[:, 0], res.y, color="tab:blue", zorder=3, s=40, label="data")
        for q, (n, c) in enumerate(kinks):
            ax.axvline(-c / n, color="0.4", ls="--", lw=1, label="kinks" if q == 0 else None)
        ax.set_xlabel("x")
        ax.set_ylabel("h(x)")
        ax.set_xlim(lo, hi)
        # Keep a visible vertical range: an (almost) constant h must look constant.
        y0, y1 = ax.get_ylim()
        if y1 - y0 < 1.0:
            mid = 0.5 * (y0 + y1)
            ax.set_ylim(mid - 0.5, mid + 0.5)
        ax.legend(loc="best", fontsize="small")
        return ax
    if d != 2:
        raise ValueError("plot_meanfield_function draws 1-D or 2-D inputs only")
    ax = new_axes(ax, figsize=(5.0, 4.2))
    lo, hi = X.min(axis=0) - margin, X.max(axis=0) + margin
    g1, g2 = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    G1, G2 = np.meshgrid(g1, g2)
    H = res.predict(np.column_stack([G1.ravel(), G2.ravel()])).reshape(G1.shape)
    im = ax.imshow(
        H, origin="lower", extent=(lo[0], hi[0], lo[1], hi[1]), cmap=kw.pop("cmap", "viridis"), aspect="equal", **kw
    )
    ax.contour(G1, G2, H, levels=12, colors="white", linewidths=0.4, alpha=0.6)
    for row in kinks:
        n, c = row[:2], row[2]
        # n1 x1 + n2 x2 + c = 0 clipped to the box
        if abs(n[1]) > abs(n[0]):
            xx = np.array([lo[0], hi[0]])
            ax.plot(xx, -(c + n[0] * xx) / n[1], color="tab:orange", lw=1.6)
        else:
            yy = np.array([lo[1], hi[1]])
            ax.plot(-(c + n[1] * yy) / n[0], yy, color="tab:orange", lw=1.6)
    ax.scatter(X[:, 0], X[:, 1], color="tab:blue", edgecolor="white", s=45, zorder=3)
    for (x1, x2), yy in zip(X, res.y):
        ax.annotate(
            f"y={yy:+.2g}",
            (x1, x2),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=7,
            color="black",
            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8),
        )
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, shrink=0.8, label="h(x)")
    return ax


def _azimuthal(Z: np.ndarray) -> np.ndarray:
    """Azimuthal equidistant projection of unit vectors (w1, w2, b) about the pole b = 1."""
    r = np.arccos(np.clip(Z[:, 2], -1.0, 1.0))
    phi = np.arctan2(Z[:, 1], Z[:, 0])
    return np.column_stack([r * np.cos(phi), r * np.sin(phi)])


@axes_doc
def plot_meanfield_directions(result, analysis, *, ax=None, X=None, max_points: int = 2000, **kw):
    """The normalised (w_i, b_i) of the kept neurons on the sphere, coloured by cluster.

    The directions of the width collapse of Liang et al. (2026) (docs/math.md §11).

    1-D inputs: S^1 drawn as the unit circle in the (w, b) plane, with the
    lines {(w, b) : w x_j + b = 0} of the data points. 2-D inputs: S^2 in an
    azimuthal equidistant projection about the pure-bias pole (radius = angle
    from (0, 0, 1), so the whole sphere fits in a disc of radius pi), with the
    great circles {z : z^T (x_j, 1) = 0} of the data points (grey) and the
    learned directions as red stars. Unclustered neurons are grey dots.

    Parameters
    ----------
    result : relucore.meanfield.MeanFieldResult
        The trained network.
    analysis : relucore.meanfield.MeanFieldAnalysis
        Its clusters (``relucore.meanfield.analyze``).
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    X : array_like, shape (M, 1) or (M, 2), optional
        Inputs whose lines or great circles are drawn; default the training inputs.
    max_points : int, default 2000
        At most this many kept neurons are drawn.
    **kw
        Only ``s``, the marker size of the neurons (default 14), is read; other keys are ignored.

    {returns_axes}
    """
    res, theta, X = _theta_X(result, X)
    X = X.reshape(X.shape[0], -1)
    d = X.shape[1]
    bias = res.params["bias"]
    V = np.hstack([theta[:, 1 : 1 + d], theta[:, d + 1 : d + 2] if bias else np.zeros((theta.shape[0], 1))])
    kept = analysis.kept[:max_points]
    Z = V[kept] / np.linalg.norm(V[kept], axis=1, keepdims=True)
    lab = analysis.labels[kept]
    colors = _cluster_colors(max(analysis.n_directions, 1))
    s = kw.pop("s", 14)
    if d == 1:
        ax = new_axes(ax, figsize=(4.4, 4.2))
        t = np.linspace(0, 2 * np.pi, 400)
        ax.plot(np.cos(t), np.sin(t), color="0.8", lw=1)
        for x in X[:, 0]:
            # w x + b = 0: the line through the origin with direction (1, -x)
            v = np.array([1.0, -x]) / np.hypot(1.0, x)
            ax.plot(
                [-1.15 * v[0], 1.15 * v[0]],
                [-1.15 * v[1], 1.15 * v[1]],
                color="0.6",
                lw=0.8,
                ls=":",
                label="$w x_j + b = 0$" if x == X[0, 0] else None,
            )
        P2 = Z
        ax.set_xlabel("w / ||(w, b)||")
        ax.set_ylabel("b / ||(w, b)||")
        lim = 1.25
    elif d == 2:
        ax = new_axes(ax, figsize=(4.8, 4.6))
        t = np.linspace(0, 2 * np.pi, 721)
        for x in X:
            n = np.r_[x, 1.0]
            n /= np.linalg.norm(n)
            e1 = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(n, e1)
            C = np.outer(np.cos(t), e1) + np.outer(np.sin(t), e2)
            Q = _azimuthal(C)
            # break the curve where the projection wraps around the antipode
            jumps = np.flatnonzero(np.linalg.norm(np.diff(Q, axis=0), axis=1) > 0.5)
            for seg in np.split(np.arange(Q.shape[0]), jumps + 1):
                ax.plot(
                    Q[seg, 0],
                    Q[seg, 1],
                    color="0.7",
                    lw=0.7,
                    label="$w^T x_j + b = 0$" if (x is X[0] and seg[0] == 0) else None,
                )
        tt = np.linspace(0, 2 * np.pi, 200)
        for r, ls in ((np.pi / 2, "--"), (np.pi, "-")):
            ax.plot(r * np.cos(tt), r * np.sin(tt), color="0.5", lw=0.8, ls=ls)
        P2 = _azimuthal(Z)
        ax.set_xlabel("angle from b-axis, along $w_1$ (rad)")
        ax.set_ylabel("along $w_2$ (rad)")
        lim = np.pi * 1.05
    else:
        raise ValueError("plot_meanfield_directions draws 1-D or 2-D inputs only")
    noise = lab < 0
    if noise.any():
        ax.scatter(P2[noise, 0], P2[noise, 1], s=s * 0.6, color="0.55", label="unclustered", zorder=2)
    for k in range(analysis.n_directions):
        m = lab == k
        ax.scatter(
            P2[m, 0],
            P2[m, 1],
            s=s,
            color=colors[k],
            zorder=3,
            label=f"dir {k}: {analysis.sizes[k]} neurons" if k < 8 else None,
        )
    D = analysis.directions
    if D.shape[0]:
        Q = D if d == 1 else _azimuthal(D)
        ax.scatter(
            Q[:, 0],
            Q[:, 1],
            marker="*",
            s=260,
            facecolor="none",
            edgecolor="red",
            linewidths=1.2,
            zorder=4,
            label="learned directions",
        )
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize="x-small", frameon=False)
    return ax


@axes_doc
def plot_meanfield_trajectories(result, analysis=None, *, ax=None, **kw):
    """Trajectories of the tracked neurons' (w, b) (recorded with ``track=``).

    Noisy SGD of Liang et al. (2026), Sec. 3 (docs/math.md §11).

    1-D inputs: curves in the (w, b) plane; 2-D inputs: curves in
    (w1, w2, b) space on 3-D axes (pass ``ax`` created with
    ``projection="3d"``, or none). Coloured by final cluster when ``analysis``
    is given; a dot marks the end of each trajectory.

    Parameters
    ----------
    result : relucore.meanfield.MeanFieldResult
        A run trained with ``track=``.
    analysis : relucore.meanfield.MeanFieldAnalysis, optional
        Colours the trajectories by final cluster.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    **kw
        Passed on to ``ax.plot`` of each trajectory.

    {returns_axes}
    """
    from relucore.meanfield import MeanFieldResult

    if not isinstance(result, MeanFieldResult):
        raise TypeError("result must be a relucore.meanfield.MeanFieldResult")
    T = result.trajectories
    if T.shape[1] == 0:
        raise ValueError("no trajectories were recorded: train with track=...")
    d = result.X.shape[1]
    bias = result.params["bias"]
    W = T[:, :, 1 : 1 + d]
    B = T[:, :, d + 1] if bias else np.zeros(T.shape[:2])
    if analysis is not None:
        colors = _cluster_colors(max(analysis.n_directions, 1))
        lab = analysis.labels[result.track]
        col = [colors[k] if k >= 0 else (0.6, 0.6, 0.6, 1.0) for k in lab]
    else:
        col = ["tab:blue"] * T.shape[1]
    lw = kw.pop("lw", 0.8)
    if d == 1:
        ax = new_axes(ax, figsize=(4.6, 4.0))
        for q in range(T.shape[1]):
            ax.plot(W[:, q, 0], B[:, q], color=col[q], lw=lw, **kw)
            ax.plot(W[-1, q, 0], B[-1, q], "o", color=col[q], ms=3)
        ax.set_xlabel("w")
        ax.set_ylabel("b")
        ax.axhline(0, color="0.85", lw=0.6, zorder=0)
        ax.axvline(0, color="0.85", lw=0.6, zorder=0)
        return ax
    if d != 2:
        raise ValueError("plot_meanfield_trajectories draws 1-D or 2-D inputs only")
    if ax is None:
        plt = pyplot()
        fig = plt.figure(figsize=(5.0, 4.4), layout="constrained")
        ax = fig.add_subplot(projection="3d")
    for q in range(T.shape[1]):
        ax.plot(W[:, q, 0], W[:, q, 1], B[:, q], color=col[q], lw=lw, **kw)
        ax.scatter([W[-1, q, 0]], [W[-1, q, 1]], [B[-1, q]], color=[col[q]], s=6)
    ax.set_xlabel("$w_1$")
    ax.set_ylabel("$w_2$")
    ax.set_zlabel("b")
    return ax


@axes_doc
def plot_meanfield_objective(result, *, ax=None, **kw):
    """The recorded objective L against the iteration (log-log).

    The regularised objective of Liang et al. (2026), Sec. 3 (docs/math.md §11).

    Parameters
    ----------
    result : relucore.meanfield.MeanFieldResult
        The trained network (``result.steps``, ``result.objective``).
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; a new figure's axes when None.
    **kw
        Passed on to ``ax.loglog`` (``color`` default ``"tab:blue"``).

    {returns_axes}
    """
    ax = new_axes(ax)
    steps = np.maximum(result.steps, 1)
    ax.loglog(steps, result.objective, color=kw.pop("color", "tab:blue"), **kw)
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective L")
    label_log_axis(ax, "y")  # the objective often spans less than a decade
    return ax
