"""Dana, Bach, Pillaud-Vivien (2025): the probability that GD reaches a global minimum.

``convergence-probability``: GD on a network with a trained outer layer, the
probability of reaching a global minimum as n grows at fixed d, and the
threshold n*(d) where it falls to 1/2, found with its interval by
:func:`relucore.threshold`.
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

from relucore.experiments._base import Claim, Context, ExperimentResult, register
from relucore.experiments._common import optional_figure
from relucore.sweeps.threshold_fit import wilson_interval

__all__ = ["convergence_probability", "trained_outer_gd", "train_trials", "wilson_interval", "dana_trial"]


def trained_outer_gd(X, y, mask, W, a, eta, steps: int):
    """Full-batch GD on ``h(x) = p^{-1/2} sum_j a_j relu(w_j^T x)`` with BOTH layers trained.

    A small numpy engine, vectorised over a batch of independent problems, for
    the model of Dana, Bach, Pillaud-Vivien (2025): the independent reference of
    :func:`train_trials` (``relucore.train(train_outer=True)``). The loss is the sum
    ``R = 1/2 sum_i mask_i (h(x_i) - y_i)^2``; padded examples (``mask = 0``) let
    problems with different n share one batch.

    Parameters
    ----------
    X : ndarray, shape (B, N, d)
    y, mask : ndarray, shape (B, N)
    W : ndarray, shape (B, p, d)
    a : ndarray, shape (B, p)
    eta : ndarray, shape (B,)
    steps : int

    Returns
    -------
    loss : ndarray, shape (B,)
        Final loss relative to ``1/2 ||y||^2`` (the loss of the zero network).
    W, a : the final weights.
    """
    p = a.shape[1]
    sp = np.sqrt(p)
    Xt = np.swapaxes(X, 1, 2)
    e2 = eta[:, None]
    e3 = eta[:, None, None]
    for _ in range(steps):
        pre = W @ Xt  # (B, p, N)
        act = np.maximum(pre, 0.0)
        r = (np.einsum("bp,bpn->bn", a, act) / sp - y) * mask
        grad_a = np.einsum("bpn,bn->bp", act, r) / sp
        grad_W = ((a[:, :, None] / sp) * (pre > 0) * r[:, None, :]) @ X
        a = a - e2 * grad_a
        W = W - e3 * grad_W
    h = np.einsum("bp,bpn->bn", a, np.maximum(W @ Xt, 0.0)) / sp
    loss = 0.5 * np.sum(((h - y) * mask) ** 2, axis=1) / (0.5 * np.sum((y * mask) ** 2, axis=1))
    return loss, W, a


def train_trials(X, y, W0, a0, eta, steps: int, n_threads: Optional[int] = None) -> np.ndarray:
    """The same GD as :func:`trained_outer_gd`, all trials in one batched call of ``relucore.train``.

    ``train(train_outer=True, output_scale=p**-0.5, engine="weights")`` with per-problem
    starting outer weights ``a0`` (B, p) and steps ``eta`` (B,), ``tol=0`` (every step runs
    unless the run diverges). Returns the final loss relative to ``1/2 ||y||^2`` (inf for a
    run that diverged).
    """
    import relucore

    p = a0.shape[1]
    r = relucore.train(
        X,
        y,
        signs=a0,
        init=W0,
        eta=eta,
        steps=steps,
        tol=0,
        engine="weights",
        train_outer=True,
        output_scale=p**-0.5,
        n_threads=n_threads,
    )
    with np.errstate(over="ignore", invalid="ignore"):
        loss = np.sum((r.predictions - y) ** 2, axis=1) / np.sum(y**2, axis=1)
    return np.where(np.asarray(r.status) == 2, np.inf, loss)


def _meanfield_trials(X, y, W0, a0, eta, steps: int, n_threads: Optional[int] = None) -> np.ndarray:
    """The same GD as :func:`trained_outer_gd`, one trial per call of ``relucore.meanfield.train``.

    ``meanfield.train`` minimises ``(1/M) sum (h - y)^2`` with step ``s``; with
    ``s = eta M / 2``, ``output_scale="1/sqrt(m)"``, no bias, no weight decay, no
    noise and full batches its steps are exactly those of
    ``1/2 sum (h - y)^2`` with step ``eta``. Trials run on a thread pool (the C++
    run releases the GIL). Returns the final loss relative to ``1/2 ||y||^2``.
    """
    import concurrent.futures as cf
    import os

    from relucore import meanfield

    T, n, d = X.shape
    p = a0.shape[1]

    def one(t):
        r = meanfield.train(
            X[t],
            y[t],
            m=p,
            eta=float(eta[t]) * n / 2,
            weight_decay=0.0,
            temperature=0.0,
            steps=steps,
            batch_size=None,
            bias=False,
            train_outer=True,
            output_scale="1/sqrt(m)",
            init=np.column_stack([a0[t], W0[t]]),
            record=0,
            n_threads=1,
            progress=False,
        )
        a, W = r.theta[:, 0], r.theta[:, 1:]
        h = a @ np.maximum(W @ X[t].T, 0.0) / np.sqrt(p)
        return np.sum((h - y[t]) ** 2) / np.sum(y[t] ** 2)

    workers = n_threads or min(4, os.cpu_count() or 1)
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        return np.array(list(pool.map(one, range(T))))


def _sphere_data(rng, B, N, d):
    """x = r u with u uniform on the sphere S^{d-1}, r ~ U[1, 2]; y = ±U[1, 2] (Dana et al. 2025)."""
    u = rng.standard_normal((B, N, d))
    u /= np.linalg.norm(u, axis=2, keepdims=True)
    X = u * rng.uniform(1.0, 2.0, (B, N, 1))
    y = rng.uniform(1.0, 2.0, (B, N)) * rng.choice([-1.0, 1.0], (B, N))
    return X, y


def dana_trial(params, rng) -> bool:
    """One run of Dana et al.'s protocol: True when GD reaches a global minimum.

    ``params``: ``n``, ``d``, ``p`` (width), ``steps``, ``eta_factor`` (the step is
    ``eta_factor / mu_1(K)``), ``loss_threshold`` (success: final loss below it times the zero
    network's) and ``engine`` (``"train"``: :func:`train_trials`, one problem; ``"numpy"``:
    :func:`trained_outer_gd`; ``"meanfield"``). Data x = r u (u uniform on the sphere, r ~ U[1, 2]),
    y = ±U[1, 2]; start ``w_j ~ N(0, I_d / d)``, ``a_j ~ N(0, 1)``. A module-level function, so it
    runs on process and Dask executors.
    """
    n, d, p, steps = int(params["n"]), int(params["d"]), int(params["p"]), int(params["steps"])
    X, y = _sphere_data(rng, 1, n, d)
    mu1 = np.linalg.eigvalsh(X[0] @ X[0].T)[-1]
    W0 = rng.standard_normal((1, p, d)) / np.sqrt(d)
    a0 = rng.standard_normal((1, p))
    eta = np.array([params["eta_factor"] / mu1])
    engine = params.get("engine", "train")
    if engine == "train":
        loss = train_trials(X, y, W0, a0, eta, steps, n_threads=1)
    elif engine == "meanfield":
        loss = _meanfield_trials(X, y, W0, a0, eta, steps, n_threads=1)
    else:
        loss = trained_outer_gd(X, y, np.ones((1, n)), W0, a0, eta, steps)[0]
    return bool(loss[0] < params["loss_threshold"])


def growth_exponent(d_values, estimates, lows, highs, confidence: float):
    """Exponent q of ``n* = C d^q`` with its interval: weighted least squares of log n* on log d,
    each point's standard deviation read off its interval (``(log high - log low) / (2 z)``, z the
    normal quantile of ``confidence``); returns ``(q, low, high)`` (the same z around q)."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2))
    x = np.log(np.asarray(d_values, float))
    y = np.log(np.asarray(estimates, float))
    sd = (np.log(np.asarray(highs, float)) - np.log(np.asarray(lows, float))) / (2 * z)
    A = np.column_stack([np.ones_like(x), x]) / sd[:, None]
    cov = np.linalg.inv(A.T @ A)
    coef = cov @ (A.T @ (y / sd))
    half = z * float(np.sqrt(cov[1, 1]))
    return float(coef[1]), float(coef[1] - half), float(coef[1] + half)


@register(
    "convergence-probability", "Dana et al. 2025: P(GD reaches a global minimum) against n at fixed d; threshold n*(d)"
)
def convergence_probability(
    ctx: Context,
    *,
    d_grid: Sequence[int] = (10, 20, 40),
    n_range: Sequence[float] = (1, 16),
    p: int = 12,
    steps: int = 10_000,
    eta_factor: float = 0.25,
    check_step_size: bool = True,
    loss_threshold: float = 1e-4,
    engine: str = "train",
    confidence: float = 0.9,
    rel_width: float = 0.25,
    max_trials: int = 1024,
) -> ExperimentResult:
    """Probability that GD interpolates, against n at fixed d, for a network with a trained outer layer.

    Model (Dana, Bach, Pillaud-Vivien 2025): ``h(x) = p^{-1/2} sum_j a_j relu(w_j^T x)``,
    both layers trained by full-batch GD on ``1/2 sum_i (h(x_i) - y_i)^2`` with
    ``eta = eta_factor / mu_1(K)``; ``a_j ~ N(0, 1)``, ``w_j ~ N(0, I_d / d)``;
    ``x = r u`` with u uniform on the sphere and ``r ~ U[1, 2]``; ``y = ±U[1, 2]``
    (:func:`dana_trial`). The default step ``eta mu_1(K) = 0.25`` keeps GD near gradient flow: at
    ``eta mu_1 = 1`` the two-layer curvature makes GD unstable for n >> d and the failures are
    then a step-size artefact (``check_step_size`` reruns the first d with half the step and twice
    the steps and compares n*). A run reaches a global minimum when its final loss is below
    ``loss_threshold`` times the loss of the zero network after ``steps`` steps.

    For every d, :func:`relucore.threshold` searches n in ``n_range * d`` for the threshold n*(d)
    where P falls to 1/2: a sequential design of batches of 32 runs, a monotone link model fitted by
    maximum likelihood, the profile-likelihood interval at ``confidence``, until the interval is
    narrower than ``rel_width`` times n* or after ``max_trials`` runs (docs/math.md, "Phase
    diagrams"). The growth of n*(d) is then fitted as a power of d with its interval
    (:func:`growth_exponent`); the paper states no rate for it, so the exponent is reported.
    ``engine`` runs each trial through ``relucore.train`` (``"train"``, default), the numpy
    reference (``"numpy"``) or ``relucore.meanfield.train`` (``"meanfield"``): the same steps to
    rounding (tests).
    """
    from relucore._validation import check_choice

    check_choice(engine, "engine", ("train", "meanfield", "numpy"))
    if ctx.quick:
        d_grid, n_range, steps, rel_width, max_trials = (4, 8), (1, 12), 3000, 0.5, 192
    t0 = time.perf_counter()
    bar = ctx.bar(len(d_grid) + (1 if check_step_size else 0), unit="search")
    run = dict(p=p, loss_threshold=loss_threshold, engine=engine, confidence=confidence, bar=bar)
    run.update(rel_width=rel_width, max_trials=max_trials, n_range=n_range, seed=ctx.rng)
    table = _search(d_grid, eta_factor, steps, **run)
    check = _search(d_grid[:1], eta_factor / 2, 2 * steps, **run) if check_step_size else None
    bar.close()
    elapsed = time.perf_counter() - t0
    ok = table["crosses"].to_numpy(bool)
    q = growth_exponent(table["d"][ok], table["estimate"][ok], table["low"][ok], table["high"][ok], confidence)
    q = q if ok.sum() >= 2 else (float("nan"),) * 3
    curves = [_curve(table, j, p) for j in range(len(table))]
    claims = _convergence_claims(table, check, q, p, eta_factor, rel_width)
    fig = optional_figure(_convergence_figure, curves, table, q, p, eta_factor, loss_threshold, steps)
    return ExperimentResult(
        name=ctx.name,
        params=ctx.params(locals(), "rng", "quick", "engine"),
        table=_convergence_table(table, p),
        claims=claims,
        figure=fig,
        data={
            "curves": curves,
            "thresholds": table,
            "step_size_check": check,
            "n_star_exponent": q,
            "seconds": elapsed,
        },
    )


def _search(
    d_grid, eta_f, n_steps, *, p, loss_threshold, engine, confidence, rel_width, max_trials, n_range, seed, bar
):
    """``relucore.threshold`` of :func:`dana_trial` against n, one search per d (``n_range * d``);
    ``bar`` (a progress bar) advances by one per search."""
    import relucore

    lo, hi = n_range
    rows, trials = [], []
    for d in d_grid:
        given = dict(d=[int(d)], p=[p], steps=[int(n_steps)], eta_factor=[float(eta_f)])
        given.update(loss_threshold=[float(loss_threshold)], engine=[engine])
        bounds = (max(2, int(round(lo * d))), int(round(hi * d)))
        t = relucore.threshold(
            dana_trial,
            "n",
            bounds,
            given=given,
            p=0.5,
            confidence=confidence,
            rng=seed,
            progress=False,
            rel_width=rel_width,
            max_trials=max_trials,
        )
        trials += [dict(r, combination=len(rows)) for r in t.attrs["trials"]]
        rows.append(t)
        bar.set_postfix_str(f"d={d}, n*={t['estimate'][0]:.1f}")
        bar.update()
    import pandas as pd

    attrs = dict(rows[0].attrs, trials=trials)
    for r in rows:
        r.attrs = {}
    table = pd.concat(rows, ignore_index=True)
    table.attrs = attrs
    return table


def _curve(table, j: int, p: int) -> dict:
    """The runs of one d binned over n (Wilson 95% intervals) and the fitted link model."""
    from relucore.sweeps.threshold_fit import Axis, fit_link

    row = table.iloc[j]
    tr = [r for r in table.attrs["trials"] if r["combination"] == j]
    n = np.array([r["n"] for r in tr], dtype=float)
    y = np.array([r["outcome"] for r in tr], dtype=float)
    values, inv = np.unique(n, return_inverse=True)
    succ = np.bincount(inv, weights=y)
    count = np.bincount(inv).astype(float)
    axis = Axis(float(n.min()), float(n.max()) if n.max() > n.min() else float(n.min()) + 1, True, True)
    fit = fit_link(axis.to_u(values), succ, count, p=0.5)
    grid = np.geomspace(values.min(), values.max(), 200)
    # bins of at least 8 runs, for the points drawn (the fit uses every run)
    edges = [0]
    while edges[-1] < len(values):
        stop = edges[-1] + 1
        while stop < len(values) and count[edges[-1] : stop].sum() < 8:
            stop += 1
        edges.append(stop)
    k = np.array([succ[a:b].sum() for a, b in zip(edges[:-1], edges[1:])])
    t = np.array([count[a:b].sum() for a, b in zip(edges[:-1], edges[1:])])
    centre = np.array(
        [np.exp(np.average(np.log(values[a:b]), weights=count[a:b])) for a, b in zip(edges[:-1], edges[1:])]
    )
    lo, hi = wilson_interval(k, t)
    return {
        "d": int(row["d"]),
        "n": np.round(centre),  # a bin's geometric mean, rounded for the axis' labels
        "prob": k / t,
        "low": lo,
        "high": hi,
        "succ": k,
        "trials": t,
        "n_star": float(row["estimate"]),
        "n_star_low": float(row["low"]),
        "n_star_high": float(row["high"]),
        "fit_n": grid,
        "fit_prob": fit.prob(axis.to_u(grid)),
    }


def _convergence_table(table, p):
    out = []
    for row in table.itertuples():
        out.append(
            {
                "d": int(row.d),
                "p": p,
                "n_star": row.estimate,
                "n_star_low": row.low,
                "n_star_high": row.high,
                "trials": int(row.trials),
                "status": row.status,
                "model": row.model,
                "n_star_over_params": row.estimate / (p * (row.d + 1)),
            }
        )
    return out


def _convergence_claims(table, check, q, p, eta_factor, rel_width):
    claims = []
    for row in table.itertuples():
        claims.append(
            Claim(
                f"threshold_found_d{row.d}",
                f"d={row.d}: P(global minimum) falls from above 1/2 to below it inside the n range; "
                f"interval narrower than {rel_width:g} n*",
                f"n* = {row.estimate:.1f} [{row.low:.1f}, {row.high:.1f}] from {row.trials} runs ({row.status}; "
                f"P = {row.p_at_low:.2f} at n = {row.bracket_low:g}, {row.p_at_high:.2f} at n = {row.bracket_high:g})",
                bool(row.crosses and row.high - row.low <= rel_width * row.estimate and row.p_at_low > row.p_at_high),
            )
        )
    if check is not None:
        a, b = table.iloc[0], check.iloc[0]
        rel_change = abs(b["estimate"] - a["estimate"]) / a["estimate"]
        claims.append(
            Claim(
                "threshold_not_a_step_size_artefact",
                f"d={a['d']}: halving eta (same time eta*steps) leaves n* within 25%",
                f"n* = {a['estimate']:.1f} [{a['low']:.1f}, {a['high']:.1f}] (eta*mu1={eta_factor:g}) vs "
                f"{b['estimate']:.1f} [{b['low']:.1f}, {b['high']:.1f}] (eta*mu1={eta_factor / 2:g}): "
                f"{100 * rel_change:.0f}% apart",
                bool(a["crosses"] and b["crosses"] and rel_change < 0.25),
            )
        )
    est = table["estimate"].to_numpy(float)
    claims.append(
        Claim(
            "threshold_grows_with_d",
            "the threshold n*(d) grows with d (high-dimensional data are weakly interacting); the paper gives no "
            "rate, so the exponent of n* ∝ d^q is reported with its interval",
            "n* = " + ", ".join(f"{e:.1f} (d={d})" for e, d in zip(est, table["d"])) + f"; q = {q[0]:.2f} "
            f"[{q[1]:.2f}, {q[2]:.2f}]; n*/(p(d+1)) = "
            + ", ".join(f"{e / (p * (d + 1)):.2f}" for e, d in zip(est, table["d"])),
            bool(np.all(np.diff(est) > 0) and q[1] > 0),
        )
    )
    return claims


def _convergence_figure(curves, table, q, p, eta_factor, loss_threshold, steps):
    """P against n per d with the fitted curves, and n*(d) with its intervals (ImportError without matplotlib)."""
    from relucore.plots._literature import plot_convergence_probability
    from relucore.plots._phase import plot_phase_diagram
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained", gridspec_kw={"width_ratios": [1.6, 1]})
    plot_convergence_probability(curves, ax=axes[0])
    axes[0].set_title(
        f"trained outer layer, width p={p}, η·μ₁(K)={eta_factor:g}; "
        f"success: loss < {loss_threshold:g}·loss(0) after {steps} steps",
        fontsize=8,
    )
    cols = ["d", "estimate", "low", "high", "crosses", "bracket_low", "bracket_high", "p_at_low", "p_at_high"]
    phase = table[cols].copy()
    phase.attrs = {k: v for k, v in table.attrs.items() if k != "trials"}
    plot_phase_diagram(phase, ax=axes[1], color="k")
    ok = table["crosses"].to_numpy(bool)
    if np.isfinite(q[0]) and ok.sum() >= 2:
        ds = table["d"].to_numpy(float)[ok]
        est = table["estimate"].to_numpy(float)[ok]
        c = np.exp(np.mean(np.log(est) - q[0] * np.log(ds)))
        grid = np.geomspace(ds.min(), ds.max(), 50)
        axes[1].plot(grid, c * grid ** q[0], color="0.5", lw=1, ls="--")
    axes[1].set_ylabel("threshold n*(d)  (P = 1/2)")
    axes[1].set_title(f"n* ∝ d^q, q = {q[0]:.2f} [{q[1]:.2f}, {q[2]:.2f}]", fontsize=9)
    fig.suptitle("Probability that GD reaches a global minimum (Dana et al. 2025 setting)", fontsize=10)
    return fig
