"""Effective width collapse under noisy SGD with weight decay (Liang et al. 2026, Sec. 7).

Four experiments (Liang et al. 2026, Sec. 7; the model is in ``docs/math.md``):

- ``meanfield-1d``: the symmetric two-point data sets of Proposition 7 and
  Figure 3 (x = ±2 or ±1/3, y = (1, -1) or (1, 1)); the kinks must sit on the
  predicted hyperplanes x_1 x ± b̄ = 0.
- ``meanfield-grid``: the 3×3 grid in 2-D of Figures 1-2: collapse onto at
  most 2P - 1 directions with distinct, incomparable ternary patterns.
- ``meanfield-weight-decay``: the sweep lambda in {0.5, 0.1, 0.05, 0.01} of
  Figure 5: piecewise affine for every lambda, flatter for larger lambda.
- ``meanfield-noise``: the sweep 1/beta in {0.1, 0.01, 0.001, 0} of Figure 6:
  the collapse sharpens as the noise vanishes.

Full settings follow the paper: m = 1000 neurons, theta^(0) ~ N(0, 1e-6 I), step
s = 1 (the paper's per-neuron step 1e-3), lambda = 1e-2, 2e6 iterations for
the grid and 1e6 for the others. ``quick=True`` uses m = 200 with the same
time horizon per neuron shortened (a few seconds in all).

The paper does not print the labels of its 2-D data set (Figures 1-2 only
show M = 9 points); we use the grid {0, 1, 2}^2 (the inputs of Figures 1-2) with the fixed
labels :data:`GRID_LABELS` (pass ``labels=`` to change them).
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Sequence

import numpy as np

from relucore.experiments._base import Claim, Context, ExperimentResult, register, with_context

__all__ = ["GRID_X", "GRID_LABELS", "ONE_D_SETS", "collapse_index", "lipschitz_constant"]

GRID_X = np.array([[i, j] for i in range(3) for j in range(3)], dtype=float)
#: Labels of the grid points (row-major over x1 = 0, 1, 2 then x2 = 0, 1, 2).
GRID_LABELS = np.array([0.5, -0.5, 1.0, 1.0, 0.0, -1.0, -0.5, 1.0, 0.5])
#: (name, x_1, (y_1, y_2)) with inputs x = (x_1, -x_1).
ONE_D_SETS = (
    ("x=±2, odd", 2.0, (1.0, -1.0)),
    ("x=±2, even", 2.0, (1.0, 1.0)),
    ("x=±1/3, odd", 1.0 / 3.0, (1.0, -1.0)),
    ("x=±1/3, even", 1.0 / 3.0, (1.0, 1.0)),
)


def _settings(quick: bool, full_steps: int, *, m=None, steps=None, quick_divisor: int = 10) -> Dict[str, object]:
    """Engine settings: full (m = 1000) or quick (m = 200, steps / quick_divisor), then the caller's overrides."""
    st = (
        dict(m=200, steps=full_steps // quick_divisor, init_scale=1e-3, eta=1.0)
        if quick
        else dict(m=1000, steps=full_steps, init_scale=1e-3, eta=1.0)
    )
    if m is not None:
        st["m"] = m
    if steps is not None:
        st["steps"] = steps
    return st


def _analysis_kw(quick: bool) -> Dict[str, object]:
    # Quick runs are too short for unused neurons to decay below the paper's
    # 1e-8, so they are also dropped relative to the largest norm.
    return dict(min_norm=1e-8, rel_norm=1e-3 if quick else 0.0, cluster_eps=0.02, min_samples=3, pattern_tol=1e-2)


def collapse_index(theta, d: int, *, bias: bool = True, radius: float = 0.05) -> float:
    """Probability that two neurons drawn with weights ||(w, b)||^2 point within ``radius`` radians.

    1 when all input-side mass sits on one direction, sum_k share_k^2 for K
    exact directions, and about the area fraction of a spherical cap of
    angular radius ``radius`` for a diffuse (noise-dominated) measure.
    """
    theta = np.asarray(theta, float)
    V = np.hstack([theta[:, 1 : 1 + d], theta[:, d + 1 : d + 2] if bias else np.zeros((theta.shape[0], 1))])
    m = np.sum(V**2, axis=1)
    keep = m > 0
    V, m = V[keep], m[keep]
    Z = V / np.sqrt(m)[:, None]
    close = (Z @ Z.T) >= np.cos(radius)
    return float(m @ close @ m / m.sum() ** 2)


def lipschitz_constant(result, *, margin: float = 0.5, resolution: int = 81) -> float:
    """max ||grad h(x)|| over a grid covering the data's bounding box (plus margin).

    grad h(x) = kappa sum_i a_i 1[w_i^T x + b_i > 0] w_i, exact on each cell.
    """
    theta, X = result.theta, result.X
    d = X.shape[1]
    lo, hi = X.min(axis=0) - margin, X.max(axis=0) + margin
    axes = [np.linspace(lo[k], hi[k], resolution) for k in range(d)]
    G = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    a, W = theta[:, 0], theta[:, 1 : 1 + d]
    b = theta[:, d + 1] if result.params["bias"] else 0.0
    # Only neurons that matter: the others change no gradient by more than rounding.
    live = np.abs(a) * np.linalg.norm(W, axis=1) > 1e-12 * max(
        float(np.max(np.abs(a) * np.linalg.norm(W, axis=1))), 1e-300
    )
    a, W = a[live], W[live]
    b = b[live] if np.ndim(b) else b
    active = (G @ W.T + b) > 0
    grads = result.kappa * (active * a) @ W
    return float(np.linalg.norm(grads, axis=1).max())


def _experiment(name: str, summary: str):
    """Registers a mean-field experiment as ``name``."""

    def wrap(body):
        return register(name, summary)(with_context(name, body))

    return wrap


def _directions_claim(name: str, an, *, expected: Optional[str] = None, allow_none: bool = False) -> Claim:
    """Theorem 5's claim on ``an``: at most 2P - 1 directions, and at least one unless ``allow_none``.

    ``allow_none`` admits K = 0 (every neuron decayed, h = 0), the theorem's degenerate case.
    """
    expected = f"<= {an.bound}" if expected is None else expected
    if allow_none:
        note = " (h = 0: every neuron decayed)" if an.n_directions == 0 else ""
        return Claim(name, expected, str(an.n_directions) + note, an.within_bound)
    return Claim(name, expected, str(an.n_directions), an.within_bound and an.n_directions >= 1)


def _figure(ncols: int, nrows: int = 1, width: float = 4.0, height: float = 3.5):
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), layout="constrained", squeeze=False)
    return fig, axes


def _plot_row(fig, axes, entries):
    """Learned functions side by side on one colour scale, with one colour bar."""
    from relucore.plots import plot_meanfield_function

    grid = [
        e["result"].predict(
            np.column_stack([g.ravel() for g in np.meshgrid(np.linspace(-0.5, 2.5, 61), np.linspace(-0.5, 2.5, 61))])
        )
        for e in entries
    ]
    vmin, vmax = min(float(g.min()) for g in grid), max(float(g.max()) for g in grid)
    for q, e in enumerate(entries):
        plot_meanfield_function(e["result"], e["analysis"], ax=axes[0, q], colorbar=False, vmin=vmin, vmax=vmax)
        axes[0, q].set_title(e["title"], fontsize=10)
    fig.colorbar(axes[0, -1].images[0], ax=axes[0, -1], shrink=0.85, label="h(x) (common scale)")


def _grid_y(labels) -> np.ndarray:
    """The grid's labels: :data:`GRID_LABELS` unless the caller gives others."""
    return GRID_LABELS if labels is None else np.asarray(labels, float)


class _Sweep(NamedTuple):
    """A sweep experiment on the grid: the keyword of ``meanfield.train`` it sweeps, how a swept
    value is shown (a format), the progress unit, and its claim that the measure does not
    increase along the sweep (beyond ``tol``)."""

    key: str
    label: str
    unit: str
    claim: str
    expected: str
    tol: float


_SWEEPS = {
    "meanfield-weight-decay": _Sweep(
        "weight_decay",
        "λ={}",
        "lambda",
        "larger λ gives a flatter function (eq. (9), Fig. 5)",
        "Lipschitz constant non-increasing in λ",
        1e-9,
    ),
    "meanfield-noise": _Sweep(
        "temperature",
        "1/β={:g}",
        "temperature",
        "collapse sharpens as the noise vanishes (Thm. 4, Fig. 6)",
        "collapse index non-increasing in 1/β",
        1e-3,
    ),
}


def _grid_sweep(ctx: Context, values, *, y, st, **fixed):
    """Yields ``(v, meanfield.train(...))`` on the grid data for each swept value ``v`` of the
    sweep ``ctx.name`` (``fixed``: the keywords every run shares), with a progress bar over them."""
    from relucore import meanfield

    sweep = _SWEEPS[ctx.name]
    bar = ctx.bar(len(values), unit=sweep.unit)
    for v in values:
        bar.set_postfix_str(sweep.label.format(v))
        record = max(1, st["steps"] // 100)
        kw = dict(rng=ctx.rng, record=record, progress=ctx.progress)
        yield v, meanfield.train(GRID_X, y, **kw, **{sweep.key: v}, **fixed, **st)
        bar.update()
    bar.close()


def _sweep_result(name: str, values, measured, rows, claims, data, params, title: str) -> ExperimentResult:
    """Ends sweep ``name``: its claim that ``measured`` does not increase as the swept value
    grows, and the learned functions side by side."""
    sweep = _SWEEPS[name]
    order = np.argsort(values)
    claims.append(
        Claim(
            sweep.claim,
            sweep.expected,
            ", ".join(f"{sweep.label.format(values[i])}: {measured[i]:.3f}" for i in order),
            bool(np.all(np.diff(np.array(measured)[order]) <= sweep.tol)),
        )
    )
    fig, axes = _figure(len(values), width=3.9, height=3.5)
    _plot_row(fig, axes, [data[v] for v in values])
    fig.suptitle(title, fontsize=11)
    return ExperimentResult(name, params, rows, claims, fig, data)


@_experiment("meanfield-1d", "Prop. 7 / Fig. 3: kinks of the two-point symmetric data sets in 1-D")
def meanfield_1d(
    ctx: Context,
    *,
    m: Optional[int] = None,
    steps: Optional[int] = None,
    weight_decay: float = 1e-2,
    position_tol: float = 0.03,
) -> ExperimentResult:
    """Proposition 7 / Figure 3: kinks of the two-point symmetric data sets in 1-D.

    For x = (x_1, -x_1), |y_1| = |y_2|: even labels with |x_1| < 1 give an
    affine function (no kink); otherwise the kinks lie in
    {x : x_1 x ± b̄ = 0} with b̄ = 1 (even) or min(1, x_1^2) (odd).
    """
    from relucore import meanfield
    from relucore.plots import plot_meanfield_directions, plot_meanfield_function

    st = _settings(ctx.quick, 1_000_000, m=m, steps=steps)
    akw = _analysis_kw(ctx.quick)
    fig, axes = _figure(4, 2, width=3.6, height=3.3)
    rows, claims, data = [], [], {}
    bar = ctx.bar(len(ONE_D_SETS), unit="data set")
    for q, (name, x1, yy) in enumerate(ONE_D_SETS):
        bar.set_postfix_str(name)
        X = np.array([[x1], [-x1]])
        y = np.array(yy)
        res = meanfield.train(
            X,
            y,
            weight_decay=weight_decay,
            rng=ctx.rng + q,
            record=max(1, st["steps"] // 200),
            progress=ctx.progress,
            **st,
        )
        an = meanfield.analyze(res, **akw)
        even = yy[0] == yy[1]
        bbar = 1.0 if even else min(1.0, x1**2)
        predicted = [] if (even and abs(x1) < 1) else sorted({-bbar / x1, bbar / x1})
        found = sorted(-an.kinks[:, 1] / an.kinks[:, 0]) if an.kinks.shape[0] else []
        ok_pos = all(any(abs(f - p) <= position_tol for p in predicted) for f in found)
        rows.append(
            dict(
                dataset=name,
                **an.summary(),
                kinks=" ".join(f"{f:+.3f}" for f in found),
                predicted=" ".join(f"{p:+.3f}" for p in predicted),
                objective=float(res.objective[-1]),
            )
        )
        claims.append(
            Claim(
                f"{name}: kinks where Prop. 7 puts them",
                f"kinks ⊂ {{{', '.join(f'{p:+.3f}' for p in predicted) or 'none'}}} (±{position_tol})",
                f"kinks at {{{', '.join(f'{f:+.3f}' for f in found) or 'none'}}}",
                bool(ok_pos),
            )
        )
        claims.append(_directions_claim(f"{name}: #directions <= 2P - 1", an))
        claims.append(
            Claim(
                f"{name}: non-redundant patterns (Thm. 6)",
                "distinct, incomparable, each activates a point",
                f"distinct={an.patterns_distinct}, incomparable={an.patterns_incomparable}, activate={an.all_activate}",
                an.patterns_distinct and an.patterns_incomparable and an.all_activate,
            )
        )
        plot_meanfield_function(res, an, ax=axes[0, q])
        axes[0, q].set_title(name, fontsize=10)
        plot_meanfield_directions(res, an, ax=axes[1, q])
        data[name] = dict(result=res, analysis=an)
        bar.update()
    bar.close()
    fig.suptitle(f"Fig. 3 / Prop. 7: m={st['m']}, {st['steps']:.0e} SGD steps, λ={weight_decay}", fontsize=11)
    params = dict(st, weight_decay=weight_decay, rng=ctx.rng, quick=ctx.quick)
    return ExperimentResult(ctx.name, params, rows, claims, fig, data)


@_experiment("meanfield-grid", "Figs. 1-2: collapse onto <= 2P-1 non-redundant directions on the 3x3 grid")
def meanfield_grid(
    ctx: Context,
    *,
    m: Optional[int] = None,
    steps: Optional[int] = None,
    weight_decay: float = 1e-2,
    labels: Optional[Sequence[float]] = None,
    spread_tol: float = 1e-2,
) -> ExperimentResult:
    """Figures 1-2: effective width collapse on the 3×3 grid {0, 1, 2}^2.

    Checks Theorem 5 (K <= 2P - 1 directions, P = 29 dichotomies here) and
    Theorem 6 (distinct, pairwise incomparable ternary patterns; every
    direction activates a point; at most two patterns per binary pattern).
    """
    from relucore import meanfield

    st = _settings(ctx.quick, 2_000_000, m=m, steps=steps)
    y = _grid_y(labels)
    bar = ctx.bar(2, unit="stage")
    bar.set_postfix_str("SGD")
    res = meanfield.train(
        GRID_X,
        y,
        weight_decay=weight_decay,
        rng=ctx.rng,
        record=max(1, st["steps"] // 400),
        track=60,
        progress=ctx.progress,
        **st,
    )
    bar.update()
    bar.set_postfix_str("analysis")
    an = meanfield.analyze(res, **_analysis_kw(ctx.quick))
    bar.update()
    bar.close()
    spread = float(an.spread_max.max()) if an.n_directions else 0.0
    claims = [
        _directions_claim("#directions <= 2P - 1 (Thm. 5)", an, expected=f"<= {an.bound} (P = {an.n_dichotomies})"),
        Claim(
            "effective width collapse",
            f"a few directions among m = {st['m']} neurons, spread <= {spread_tol} rad",
            f"{an.n_directions} directions, {an.n_noise} unclustered of {an.kept.size} kept, max spread {spread:.2e}",
            an.n_directions <= an.bound and spread <= spread_tol and an.n_noise <= 0.05 * max(an.kept.size, 1),
        ),
        Claim("distinct ternary patterns (Thm. 6 i)", "yes", str(an.patterns_distinct), an.patterns_distinct),
        Claim("incomparable patterns (Thm. 6 i)", "yes", str(an.patterns_incomparable), an.patterns_incomparable),
        Claim("every direction activates a point (Thm. 6 ii)", "yes", str(an.all_activate), an.all_activate),
        Claim(
            "<= 2 patterns per binary pattern (Thm. 6 iii)",
            "yes",
            str(an.at_most_two_per_binary),
            bool(an.at_most_two_per_binary),
        ),
        Claim(
            "objective decreased",
            "L(final) < L(0) / 2",
            f"{res.objective[0]:.3g} -> {res.objective[-1]:.3g}",
            bool(res.objective[-1] < res.objective[0] / 2),
        ),
    ]
    rows = [
        dict(
            k=k,
            direction=" ".join(f"{v:+.4f}" for v in an.directions[k]),
            size=int(an.sizes[k]),
            outer=float(an.outer[k]),
            spread_max=float(an.spread_max[k]),
            pattern="".join({-1: "-", 0: "0", 1: "+"}[int(v)] for v in an.patterns[k]),
        )
        for k in range(an.n_directions)
    ]
    fig = _grid_figure(res, an, st, weight_decay)
    params = dict(st, weight_decay=weight_decay, rng=ctx.rng, quick=ctx.quick, labels=y.tolist())
    return ExperimentResult(ctx.name, params, rows, claims, fig, dict(result=res, analysis=an))


def _grid_figure(res, an, st, weight_decay):
    """The four panels of Figs. 1-2: learned function, directions, trajectories, objective."""
    from relucore.plots import (
        plot_meanfield_directions,
        plot_meanfield_function,
        plot_meanfield_objective,
        plot_meanfield_trajectories,
    )
    from relucore.plots._style import pyplot

    plt = pyplot()
    # Three square panels side by side, the objective (a time series) as a wide strip below them.
    fig = plt.figure(figsize=(14.0, 8.0), layout="constrained")
    grid = fig.add_gridspec(2, 3, height_ratios=(1.7, 1.0))
    ax1 = fig.add_subplot(grid[0, 0])
    ax2 = fig.add_subplot(grid[0, 1])
    ax3 = fig.add_subplot(grid[0, 2], projection="3d")
    ax4 = fig.add_subplot(grid[1, :])
    plot_meanfield_function(res, an, ax=ax1)
    ax1.set_title(f"learned h and its {an.kinks.shape[0]} kink lines", fontsize=10)
    plot_meanfield_directions(res, an, ax=ax2)
    ax2.set_title(f"{an.n_directions} directions on $S^2$ (bound 2P-1 = {an.bound})", fontsize=10)
    plot_meanfield_trajectories(res, an, ax=ax3)
    ax3.set_title("trajectories of 60 neurons' (w, b)", fontsize=10)
    plot_meanfield_objective(res, ax=ax4)
    ax4.set_title("objective", fontsize=10)
    fig.suptitle(
        f"Figs. 1-2: 3×3 grid, m={st['m']}, {st['steps']:.0e} SGD steps, λ={weight_decay}, no noise", fontsize=11
    )
    return fig


@_experiment("meanfield-weight-decay", "Fig. 5: weight-decay sweep; piecewise affine, flatter for larger lambda")
def meanfield_weight_decay(
    ctx: Context,
    *,
    m: Optional[int] = None,
    steps: Optional[int] = None,
    weight_decays: Sequence[float] = (0.5, 0.1, 0.05, 0.01),
    labels: Optional[Sequence[float]] = None,
) -> ExperimentResult:
    """Figure 5: the grid data under lambda in {0.5, 0.1, 0.05, 0.01}, no noise.

    Expected (Theorem 4 and eq. (9)): piecewise affine with at most 2P - 1
    kinks for every lambda; the Lipschitz constant decreases as lambda grows.
    """
    from relucore import meanfield

    st = _settings(ctx.quick, 1_000_000, m=m, steps=steps)
    rows, claims, data = [], [], {}
    lips = []
    for lam, res in _grid_sweep(ctx, weight_decays, y=_grid_y(labels), st=st):
        an = meanfield.analyze(res, **_analysis_kw(ctx.quick))
        lip = lipschitz_constant(res)
        lips.append(lip)
        rows.append(dict(weight_decay=lam, lipschitz=lip, objective=float(res.objective[-1]), **an.summary()))
        # K = 0 (all neurons decayed: h = 0) is Theorem 5's degenerate case, allowed for strong decay.
        claims.append(_directions_claim(f"λ={lam}: #directions <= 2P - 1", an, allow_none=True))
        data[lam] = dict(result=res, analysis=an, title=f"λ = {lam}: Lip ≈ {lip:.2f}, {an.n_directions} dirs")
    params = dict(st, weight_decays=list(weight_decays), rng=ctx.rng, quick=ctx.quick)
    title = f"Fig. 5: weight decay sweep, m={st['m']}, {st['steps']:.0e} steps, no noise"
    return _sweep_result(ctx.name, weight_decays, lips, rows, claims, data, params, title)


@_experiment("meanfield-noise", "Fig. 6: noise sweep; the collapse sharpens as the temperature vanishes")
def meanfield_noise(
    ctx: Context,
    *,
    m: Optional[int] = None,
    steps: Optional[int] = None,
    temperatures: Sequence[float] = (0.1, 0.01, 0.001, 0.0),
    weight_decay: float = 1e-2,
    labels: Optional[Sequence[float]] = None,
) -> ExperimentResult:
    """Figure 6: the grid data under 1/beta in {0.1, 0.01, 0.001, 0} with lambda = 1e-2.

    Expected (Theorem 4): as the noise vanishes the function becomes
    piecewise affine and the neurons collapse; larger noise gives smoother
    functions and diffuse neurons. Measured by :func:`collapse_index`
    (non-increasing in the temperature) and, at zero noise, K <= 2P - 1.
    """
    from relucore import meanfield

    # Quick: a third of the usual quick budget, because the noise (four normals per neuron and step) dominates.
    st = _settings(ctx.quick, 1_000_000, m=m, steps=steps, quick_divisor=30)
    rows, claims, data = [], [], {}
    cidx = []
    for T, res in _grid_sweep(ctx, temperatures, y=_grid_y(labels), st=st, weight_decay=weight_decay):
        c = collapse_index(res.theta, 2)
        cidx.append(c)
        row = dict(
            temperature=T, collapse_index=c, objective=float(res.objective[-1]), lipschitz=lipschitz_constant(res)
        )
        an = None
        if T == 0:
            an = meanfield.analyze(res, **_analysis_kw(ctx.quick))
            row.update(an.summary())
            claims.append(_directions_claim("1/β = 0: #directions <= 2P - 1", an))
        rows.append(row)
        data[T] = dict(result=res, analysis=an, title=f"1/β = {T:g}: collapse index {c:.2f}")
    params = dict(st, temperatures=list(temperatures), weight_decay=weight_decay, rng=ctx.rng, quick=ctx.quick)
    title = f"Fig. 6: noise sweep, m={st['m']}, {st['steps']:.0e} steps, λ={weight_decay}"
    return _sweep_result(ctx.name, temperatures, cidx, rows, claims, data, params, title)
