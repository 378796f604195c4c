"""Figure 7 of Lai et al. (2026): several neurons of one sign, and an active example that is lost.

With one neuron per sign (Theorems 1 and 3) an example whose label matches a neuron's sign
stays active for that neuron. Figure 7 shows that this fails when neurons share a sign
(the conditions of Lemma 15 are violated): a matching-sign entry that starts active leaves
the active regime during training (the caption's "example no. 0").

The mechanism, which the experiment checks on every such entry: while example i is active
for both neurons of sign s, both receive the same step ``-eta s K_ii g_i`` from its own
residual ``g_i = h(x_i) - y_i`` (plus the small cross terms ``K_ij``, j != i). When the
prediction over-shoots the label (``sign(y_i) (h(x_i) - y_i) > 0``), that step lowers both,
and the neuron with the smaller ``beta_{k,i}`` can cross zero before the prediction has come
back to the label: the entry is deactivated although its sign matches the label. The all-positive init with
offsets far below the labels never over-shoots, so the experiment starts from a Gaussian
init whose predictions have the scale of the labels, ``beta_{k,i} ~ N(0, beta_scale^2)``
(``init_scale = beta_scale / sqrt(d)``); the caption gives no initialisation.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from relucore.experiments._base import Context, ExperimentResult, register
from relucore.experiments._common import claim, optional_figure
from relucore.experiments.lai_dynamics import _analyse, _analysis_started, _batch, _draw, _table, _train_bar
from relucore.gd.defaults import C_ALPHA
from relucore.gd.train import train
from relucore.theory.regimes import DEFAULT_C_Y, PRIMAL_STABLE

__all__ = ["fig7", "matching_deactivations"]


def matching_deactivations(beta_history: np.ndarray, signs, y) -> list:
    """``(k, i, step)`` for every entry with ``s_k y_i > 0`` that is active at the start and later inactive.

    ``beta_history`` has shape (R, m, n) (one problem's ``history.beta`` up to its
    ``n_records``), recorded every step; ``step`` is the first record at which
    ``beta_{k,i} <= 0``.
    """
    act = beta_history > 0
    agree = (np.sign(np.asarray(signs, dtype=float))[:, None] * np.asarray(y)[None, :]) > 0
    lost = act[:-1] & ~act[1:] & (agree & act[0])[None]
    out = []
    for k, i in zip(*np.nonzero(lost.any(axis=0))):
        out.append((int(k), int(i), int(np.argmax(lost[:, k, i])) + 1))
    return out


def _start(init, X, y, m, beta_scale, eps_scale, seed):
    """``(init, init_scale, eps, rng)`` for train: the Gaussian start or the all-positive one."""
    B, n, d = X.shape
    if init == "gaussian":
        return "gaussian", beta_scale / np.sqrt(d), None, np.random.default_rng(seed + 7_000_001)
    if init != "positive":
        raise ValueError(f"init must be 'gaussian' or 'positive', got {init!r}")
    ymin = np.abs(y).min(axis=1)
    u = np.random.default_rng(seed + 2_000_003).uniform(0.0, 1.0, (B, m, n))
    return "positive", None, np.maximum(u * (eps_scale * ymin)[:, None, None], 1e-12), None


def _trajectory(res, b, y, lost, horizon):
    """Draws beta_{k,i} of every neuron (top) and h(x_i) against y_i (bottom) for the first lost entry."""
    k0, i, t = lost[0]
    r = int(res.history.n_records[b])
    T = min(r, max(horizon, 3 * t + 5) + 1)
    steps = res.history.steps[b, :T]
    beta = res.history.beta[b, :T, :, i]
    h = np.einsum("k,tk->t", res.signs, np.maximum(beta, 0.0))

    def draw(top, bottom):
        for k in range(beta.shape[1]):
            style = "-" if res.signs[k] > 0 else "--"
            top.plot(steps, beta[:, k], style, marker=".", ms=3, label=f"neuron {k} (s={res.signs[k]:+g})")
        top.axhline(0.0, color="0.5", lw=0.8)
        top.axvline(t, color="C3", lw=0.8, ls=":")
        top.set(xscale="symlog", xlim=(0, steps[-1]), xlabel="GD step", ylabel=rf"$\beta_{{k,{i}}}$ (all neurons)")
        top.set_title(f"example {i}, y = {y[b, i]:+.2f}:\nneuron {k0} deactivated at step {t}", fontsize=9)
        top.legend(fontsize=6)
        bottom.plot(steps, h, marker=".", ms=3, label=rf"$h(x_{{{i}}})$")
        bottom.axhline(y[b, i], color="k", ls=":", lw=1, label=rf"$y_{{{i}}} = {y[b, i]:.2f}$")
        bottom.axvline(t, color="C3", lw=0.8, ls=":")
        bottom.set(xscale="symlog", xlim=(0, steps[-1]), xlabel="GD step", ylabel=rf"$h(x_{{{i}}})$")
        bottom.set_title("the start over-shoots the label", fontsize=9)
        bottom.legend(fontsize=6)

    return draw


def _claims(found, overshoot, shares, t0s, n_seeds):
    entries = sum(len(f) for f in found)
    problems = sum(1 for f in found if f)
    steps = sorted(t for f in found for (_, _, t) in f)
    return [
        claim(
            "matching_entry_deactivated",
            "a matching-sign example active at the start leaves the active regime during training (example no. 0)",
            f"{entries} entries in {problems}/{n_seeds} problems, at steps {steps[:6]}{' ...' if len(steps) > 6 else ''}",
            problems > 0,
        ),
        claim(
            "overshoot_mechanism",
            "each such entry is lost on a step where its example over-shoots the label, sign(y_i)(h(x_i) - y_i) > 0",
            f"{sum(overshoot)}/{len(overshoot)} deactivated entries lost while their example over-shoots",
            bool(overshoot) and all(overshoot),
        ),
        claim(
            "not_primal_stable",
            "matching-sign entries do not stay primal-stable (Lemma 5/15 conditions fail)",
            f"share of matching-sign entries primal-stable after step 1: mean {np.mean(shares):.2f}",
            np.mean(shares) < 0.5,
        ),
        claim(
            "pattern_unstable",
            "activation pattern not fixed after step 1 in some problems",
            f"pattern_stable_step > 1 in {int(np.sum(t0s > 1))}/{n_seeds} problems (max {t0s.max()})",
            np.any(t0s > 1),
        ),
    ]


@register("fig7", "Fig. 7: m=4 with shared signs: a matching-sign active example is lost during training")
def fig7(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 2000,
    signs: Sequence[float] = (1.0, 1.0, -1.0, -1.0),
    n_seeds: int = 40,
    steps: int = 20_000,
    init: str = "gaussian",
    beta_scale: float = 1.0,
    eps_scale: float = 1.0,
    C_y: float = DEFAULT_C_Y,
    C_alpha: float = C_ALPHA,
) -> ExperimentResult:
    """Figure 7: m=4 neurons, signs (+1, +1, -1, -1), n=10, d=2000, x ~ N(0, I), |y| ~ U(0.1, 1).

    ``init="gaussian"`` (default): ``w_k ~ N(0, (beta_scale^2 / d) I)``, so that the starting
    predictions have the scale of the labels; ``init="positive"``: the all-positive start
    with offsets ``eps_{k,i} ~ U(0, eps_scale * y_min)``, which rarely over-shoots (a lost
    matching-sign entry then needs ``eps_scale`` of a few). Default step size. Checks: some
    matching-sign entry active at the start is deactivated, every such entry is lost while
    its example over-shoots its label, matching-sign entries are not primal-stable, and the
    pattern keeps changing after step 1 in some problems.
    """
    if ctx.quick:
        n_seeds = min(n_seeds, 10)
    signs = tuple(float(s) for s in signs)
    m = len(signs)
    params = ctx.params(locals(), "rng")
    X, y = _batch(ctx.rng, n_seeds, n, d)
    init_name, init_scale, eps, rng = _start(init, X, y, m, beta_scale, eps_scale, ctx.rng)
    bar = _train_bar(ctx, n_seeds)
    kw = dict(init_scale=init_scale) if init_scale is not None else {}
    res = train(X, y, signs=signs, init=init_name, eps=eps, steps=steps, record=1, rng=rng, **kw)
    _analysis_started(bar)
    stats = _analyse(res, X, y, C_y, C_alpha, bar)
    shares, found, overshoot = [], [], []
    for b, s in enumerate(stats):
        agree = (np.sign(res.signs)[:, None] * y[b][None, :]) > 0
        shares.append(float(np.mean(s["regimes"].state[1:][:, agree] == PRIMAL_STABLE)))
        lost = matching_deactivations(res.history.beta[b, : int(res.history.n_records[b])], res.signs, y[b])
        found.append(lost)
        beta = res.history.beta[b]
        for _, i, t in lost:  # the prediction one step before the entry is lost
            h = res.signs @ np.maximum(beta[t - 1, :, i], 0.0)
            overshoot.append(bool(np.sign(y[b, i]) * (h - y[b, i]) > 0))
    t0s = np.array([s["t0"] for s in stats])
    extra = [
        dict(
            share_matching_blue=shares[b],
            matching_entries_deactivated=len(found[b]),
            first_deactivation_step=min((t for (_, _, t) in found[b]), default=-1),
        )
        for b in range(n_seeds)
    ]
    table = _table(stats, y, extra)
    show = next((b for b in range(n_seeds) if found[b]), int(np.argmax(t0s)))
    title = (
        f"Fig. 7: m={m}, s=({', '.join(f'{v:+g}' for v in signs)}), n={n}, d={d}, {init_name} init "
        f"(problem {show} of {n_seeds})"
    )
    draw = _trajectory(res, show, y, found[show], horizon=100) if found[show] else None
    fig = optional_figure(_draw, res, show, X, y, stats[show]["regimes"], title, draw)
    claims = _claims(found, overshoot, shares, t0s, n_seeds)
    data = dict(result=res, X=X, y=y, stats=stats, deactivations=found)
    return ExperimentResult(ctx.name, params, table, claims, fig, data=data)
