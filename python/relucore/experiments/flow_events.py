"""The exact gradient flow with its events beside gradient descent at three step sizes.

``flow-events``: the 2-ReLU model of Lai et al. (2026), Figure 4 setting (positive init,
square loss), followed by :func:`relucore.flow` from event to event (docs/math.md §13) and
by GD at three step sizes on the same time axis ``t = eta * step``. Checks that the flow
reaches a certified limit, that GD tracks the flow with an error proportional to eta, and
that the GD limits approach the flow limit at the same rate.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from relucore import _core
from relucore.experiments._base import Context, ExperimentResult, register
from relucore.experiments._common import claim, figure, lai_data, optional_figure, power_law
from relucore.gd.train import train
from relucore.theory.flow import flow

__all__ = ["flow_events"]


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@register("flow-events", "Exact gradient flow with its events beside GD at three step sizes (Figure 4 setting)")
def flow_events(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 2000,
    steps_to_horizon: Sequence[int] = (50, 200, 800),
    horizon: float = 2.0,
) -> ExperimentResult:
    """GD at step ``eta = T / s`` for each ``s`` in ``steps_to_horizon``, against the exact flow.

    ``T = horizon *`` (time of the flow's last event). Signs (+1, -1), positive init.
    Checks: the flow reaches its limit with a certificate; the largest distance between
    GD's ``beta`` at step ``k`` and the flow's at ``t = k eta`` (up to ``T``) is
    proportional to eta; the GD limits (``train(steps=np.inf)``) approach the flow limit
    in proportion to eta; at the smallest step GD ends on the flow limit's activation
    pattern wherever the limit is away from zero.
    """
    if ctx.quick:
        steps_to_horizon = (25, 100, 400)
    rng = np.random.default_rng(ctx.rng)
    X, y = lai_data(rng, n, d)
    signs = (1.0, -1.0)
    bar = ctx.bar(1 + 2 * len(steps_to_horizon), unit="run")
    limit = flow(X, y, signs=signs)
    T = horizon * float(limit.event_times.max()) if limit.event_times.size else 1.0
    bar.update()
    rows, tracks = [], []
    for s in steps_to_horizon:
        eta = T / s
        gd = train(X, y, signs=signs, eta=eta, steps=int(s), tol=0, record=1)
        t = eta * gd.history.steps
        fl = flow(X, y, signs=signs, times=t)
        err = np.linalg.norm(gd.history.beta - fl.beta_t, axis=(1, 2)) / np.linalg.norm(fl.beta_t, axis=(1, 2))
        bar.update()
        lim = train(X, y, signs=signs, eta=eta, steps=np.inf)
        bar.update()
        rows.append(
            dict(
                steps_to_horizon=int(s),
                eta=eta,
                max_error_to_flow=float(err.max()),
                limit_gap_to_flow=_rel(lim.W, limit.W),
                limit_certified=bool(lim.certificate.holds),
                limit_nit=int(lim.nit),
            )
        )
        tracks.append((eta, t, gd.history.beta, err, lim))
    bar.close()
    claims = _claims(limit, rows, tracks)
    fig = optional_figure(_figure, X, y, signs, limit, T, tracks)
    params = ctx.params(locals(), "rng", "quick", steps_to_horizon=tuple(steps_to_horizon))
    data = dict(event_times=limit.event_times, event_kinds=list(limit.event_kinds), horizon=T, flow=limit)
    return ExperimentResult(ctx.name, params, rows, claims, fig, data=data)


def _claims(limit, rows, tracks):
    etas = np.array([r["eta"] for r in rows])
    errs = np.array([r["max_error_to_flow"] for r in rows])
    gaps = np.array([r["limit_gap_to_flow"] for r in rows])
    p_err, _ = power_law(etas, errs)
    p_gap, _ = power_law(etas, gaps)
    cert = limit.certificate
    # The smallest step's final pattern against the flow limit's, where the limit is away from zero.
    lim_small = tracks[-1][4]
    away = np.abs(limit.beta) > 1e-6 * np.abs(limit.beta).max()
    agree = np.array_equal((lim_small.beta > 0)[away], (limit.beta > 0)[away])
    slides = sum(k.startswith("slide") for k in limit.event_kinds)
    return [
        claim(
            "flow_limit_certified",
            "the exact flow reaches its limit, with a certificate that no entry changes sign again",
            f"status {limit.status}, {limit.event_times.size} events ({slides} slides), "
            f"margin {cert.margin if cert else float('nan'):.2e}",
            limit.status == _core.Status.certified and cert is not None and cert.holds,
        ),
        claim(
            "gd_tracks_flow_order_eta",
            "GD at step eta stays within O(eta) of the flow at t = k eta, events included",
            "max ||beta_GD - beta_flow|| / ||beta_flow|| = "
            + ", ".join(f"{e:.2e}" for e in errs)
            + f"; log-log slope {p_err:.2f}",
            abs(p_err - 1) < 0.2 and bool(np.all(np.diff(errs) < 0)),
        ),
        claim(
            "gd_limit_to_flow_limit_order_eta",
            "the GD limit (train(steps=np.inf)) approaches the exact flow limit in proportion to eta",
            "||W_GD - W_flow|| / ||W_flow|| = " + ", ".join(f"{g:.2e}" for g in gaps) + f"; log-log slope {p_gap:.2f}",
            abs(p_gap - 1) < 0.3 and bool(np.all(np.diff(gaps) < 0)),
        ),
        claim(
            "gd_ends_on_flow_pattern",
            "at the smallest step GD's limit has the flow limit's activation pattern where the limit is not 0",
            f"{int(away.sum())} entries away from 0; patterns agree: {agree}",
            agree,
        ),
    ]


def _figure(X, y, signs, limit, T, tracks):
    """Flow entries with their events, GD at three steps on the same time axis, and the error."""
    fig, axes = figure(1, 2, width=5.2, height=3.8, title="Exact gradient flow (relucore.flow) and GD, t = η·step")
    ax, ax_err = axes[0, 0], axes[0, 1]
    t = np.linspace(0.0, T, 400)
    fl = flow(X, y, signs=signs, times=t)
    m, n = fl.beta_t.shape[1:]
    styles = ("-", "--")
    for k in range(m):
        for i in range(n):
            ax.plot(t, fl.beta_t[:, k, i], color="k", ls=styles[k % 2], lw=0.8)
    for e, kind in zip(limit.event_times, limit.event_kinds):
        for a in (ax, ax_err):
            a.axvline(e, color="0.6" if not kind.startswith("slide") else "C2", lw=0.6, ls=":")
    markers = ("o", "s", "^")
    for j, ((eta, tk, beta, err, _), mk) in enumerate(zip(tracks, markers)):
        every = max(1, len(tk) // 30)
        color = f"C{j}"
        ax.plot(tk[::every], beta[::every].reshape(len(tk[::every]), -1), mk, ms=2.5, mfc="none", color=color, mew=0.6)
        ax.plot([], [], mk, mfc="none", color=color, ms=3, label=f"GD, η = {eta:.2e}")
        ax_err.plot(tk[1:], err[1:], lw=1, color=color, label=f"η = {eta:.2e}")
    ax.plot([], [], color="k", label="flow, neuron s = +1")
    ax.plot([], [], color="k", ls="--", label="flow, neuron s = −1")
    ax.plot([], [], color="0.6", ls=":", label="events (green: slides)")
    lo, hi = fl.beta_t.min(), fl.beta_t.max()
    ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$\beta_{k,i}(t) = w_k^\top x_i$")
    ax.legend(fontsize=6)
    ax_err.set_yscale("log")
    ax_err.set_xlabel("time t")
    ax_err.set_ylabel(r"$\|\beta_{GD}(t/\eta) - \beta_{flow}(t)\| / \|\beta_{flow}(t)\|$")
    ax_err.legend(fontsize=7)
    ax_err.set_title("GD against the exact flow: error ∝ η", fontsize=9)
    return fig
