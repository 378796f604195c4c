"""Dana, Bach, Pillaud-Vivien (2025): the probability that GD reaches a global minimum.

``convergence-probability``: GD on a network with a trained outer layer, the
probability of reaching a global minimum as n grows at fixed d, and the
threshold n*(d) where it falls to 1/2.
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

from relucore.experiments._base import Claim, Context, ExperimentResult, register
from relucore.experiments._common import optional_figure, power_law

__all__ = ["convergence_probability", "trained_outer_gd", "train_trials", "wilson_interval", "fit_threshold"]


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
    ``s = eta M / 2``, ``output_scale="1/sqrt(N)"``, no bias, no weight decay, no
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
            N=p,
            eta=float(eta[t]) * n / 2,
            weight_decay=0.0,
            temperature=0.0,
            steps=steps,
            batch_size=None,
            bias=False,
            train_outer=True,
            output_scale="1/sqrt(N)",
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


def wilson_interval(successes, trials, z: float = 1.959963984540054):
    """Wilson score interval for a binomial proportion (vectorised); returns (low, high).

    ``z`` is the normal quantile (default: 97.5%, a 95% two-sided interval).
    """
    k = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)
    phat = k / t
    denom = 1 + z**2 / t
    centre = (phat + z**2 / (2 * t)) / denom
    half = z * np.sqrt(phat * (1 - phat) / t + z**2 / (4 * t**2)) / denom
    # The interval always contains phat; pin the exact ends against rounding.
    lo = np.where(k == 0, 0.0, np.clip(np.minimum(centre - half, phat), 0, 1))
    hi = np.where(k == t, 1.0, np.clip(np.maximum(centre + half, phat), 0, 1))
    return lo, hi


def fit_threshold(n_values, successes, trials):
    """Maximum-likelihood fit of ``P(n) = c / (1 + (n / n_half)^k)`` to binomial counts.

    ``c`` is the plateau at small n (a few runs fail even there: an example on
    which no neuron of the right sign is active at init), ``n_half`` where P
    falls to half the plateau and ``k`` the steepness.

    Returns
    -------
    n_star : float
        Where the fitted P equals 1/2, ``n_half (2c - 1)^(1/k)`` (NaN if c <= 1/2).
    k, c, n_half : float
    """
    from scipy.optimize import minimize

    x = np.log(np.asarray(n_values, dtype=float))
    s = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)

    def unpack(theta):
        return theta[0], np.exp(theta[1]), 1.0 / (1.0 + np.exp(-theta[2]))

    def nll(theta):
        logn, k, c = unpack(theta)
        z = k * (x - logn)
        logp = np.log(c) - np.logaddexp(0.0, z)
        P = np.clip(np.exp(logp), 1e-300, 1 - 1e-15)
        return -np.sum(s * np.log(P) + (t - s) * np.log1p(-P))

    ph = s / t
    above = np.flatnonzero(ph >= 0.5 * ph.max())
    start = x[above[-1]] if above.size else x[0]
    c0 = min(max(ph.max(), 0.6), 0.99)
    best = None
    for k0 in (1.0, 3.0, 10.0):  # a few starts: the likelihood is flat along some directions
        res = minimize(
            nll,
            x0=np.array([start, np.log(k0), np.log(c0 / (1 - c0))]),
            method="Nelder-Mead",
            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 20000, "maxfev": 20000},
        )
        if best is None or res.fun < best.fun:
            best = res
    logn, k, c = unpack(best.x)
    n_half = float(np.exp(logn))
    n_star = n_half * (2 * c - 1) ** (1 / k) if c > 0.5 else float("nan")
    return float(n_star), float(k), float(c), n_half


def _sphere_data(rng, B, N, d):
    """x = r u with u uniform on the sphere S^{d-1}, r ~ U[1, 2]; y = ±U[1, 2] (Dana et al. 2025)."""
    u = rng.standard_normal((B, N, d))
    u /= np.linalg.norm(u, axis=2, keepdims=True)
    X = u * rng.uniform(1.0, 2.0, (B, N, 1))
    y = rng.uniform(1.0, 2.0, (B, N)) * rng.choice([-1.0, 1.0], (B, N))
    return X, y


@register(
    "convergence-probability", "Dana et al. 2025: P(GD reaches a global minimum) against n at fixed d; threshold n*(d)"
)
def convergence_probability(
    ctx: Context,
    *,
    d_grid: Sequence[int] = (8, 16, 32),
    n_factors: Sequence[float] = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12),
    p: int = 12,
    trials: int = 50,
    steps: int = 10_000,
    eta_factor: float = 0.25,
    check_step_size: bool = True,
    loss_threshold: float = 1e-4,
    engine: str = "train",
) -> ExperimentResult:
    """Probability that GD interpolates, against n at fixed d, for a network with a trained outer layer.

    Model (Dana, Bach, Pillaud-Vivien 2025): ``h(x) = p^{-1/2} sum_j a_j relu(w_j^T x)``,
    both layers trained by full-batch GD on ``1/2 sum_i (h(x_i) - y_i)^2`` with
    ``eta = eta_factor / mu_1(K)``; ``a_j ~ N(0, 1)``, ``w_j ~ N(0, I_d / d)``;
    ``x = r u`` with u uniform on the sphere and ``r ~ U[1, 2]``; ``y = ±U[1, 2]``.
    The default step ``eta mu_1(K) = 0.25`` keeps GD near gradient flow: at
    ``eta mu_1 = 1`` the two-layer curvature (about twice ``mu_1(K)`` at init,
    growing with the weights) makes GD unstable for n >> d and the failures are
    then a step-size artefact (``check_step_size`` reruns the first d with half
    the step and twice the steps and compares n*). A run reaches a global minimum when its final loss is below
    ``loss_threshold`` times the loss of the zero network after ``steps`` steps
    (a finite budget: near the threshold some runs are slow rather than stuck;
    the table's ``fraction_stuck`` counts runs whose loss is still above 1e-2). For every d the
    sample sizes are ``n = n_factors * d``; each point has ``trials`` runs,
    a Wilson 95% interval, and ``P(n) = c/(1 + (n/n_half)^k)`` is fitted by maximum
    likelihood (:func:`fit_threshold`); the threshold ``n*(d)`` (fitted P = 1/2) is
    then fitted as a power of d and compared with the parameter count ``p (d + 1)``.

    ``engine="train"`` (default) runs the trials of each (d, n) in one batched call of
    relucore's engine, ``relucore.train(train_outer=True, output_scale=p**-0.5,
    engine="weights")`` (:func:`train_trials`); ``engine="numpy"`` as one vectorised numpy GD
    (:func:`trained_outer_gd`, the independent reference); ``engine="meanfield"`` runs every
    trial through ``relucore.meanfield.train`` (no bias, trained outer layer, full batch, no
    noise or weight decay, output scale ``1/sqrt(p)``) on a thread pool. All take the same
    steps to rounding (tests), so the success counts agree. The batched ``train`` call is the
    faster at p = 12 and n ~ 30-100 (its products run on the BLAS; bench/bench_outer.py).
    ``relucore.sweep`` is not used: it samples with ``relucore.sample``, whose data are not
    this experiment's.
    """
    from relucore._validation import check_choice

    check_choice(engine, "engine", ("train", "meanfield", "numpy"))
    if ctx.quick:
        d_grid, n_factors, p, trials, steps = (4, 8), (1, 2, 4, 6, 8), 12, 16, 3000
    rng = np.random.default_rng(ctx.seed)
    t0 = time.perf_counter()
    n_points = [len({max(2, int(round(f * d))) for f in n_factors}) for d in d_grid]
    bar = ctx.bar(sum(n_points) + (n_points[0] if check_step_size else 0), unit="(d, n)")
    run = dict(rng=rng, n_factors=n_factors, p=p, trials=trials, engine=engine, loss_threshold=loss_threshold, bar=bar)
    curves = [_run_curve(d, eta_factor, steps, **run) for d in d_grid]
    check = None
    if check_step_size:
        # Same gradient-flow time eta * steps with half the step: a step-size artefact would move n*.
        check = _run_curve(d_grid[0], eta_factor / 2, 2 * steps, **run)
    bar.close()
    elapsed = time.perf_counter() - t0
    q, _ = power_law(np.array(d_grid, float), np.array([c["n_star"] for c in curves]))
    table = _convergence_table(curves, p, trials)
    claims = _convergence_claims(curves, check, q, p, d_grid, eta_factor)
    fig = optional_figure(_convergence_figure, curves, check, q, d_grid, p, trials, eta_factor, loss_threshold, steps)

    return ExperimentResult(
        name=ctx.name,
        params=ctx.params(locals(), "seed", "quick", "engine"),
        table=table,
        claims=claims,
        figure=fig,
        data={"curves": curves, "step_size_check": check, "n_star_exponent": q, "seconds": elapsed},
    )


def _run_curve(d, eta_f, n_steps, *, rng, n_factors, p, trials, engine, loss_threshold, bar=None) -> dict:
    """P(global minimum) against n = n_factors * d at one d: successes, Wilson intervals, threshold fit.

    ``bar`` (a progress bar) advances by one per n.
    """
    n_values = sorted({max(2, int(round(f * d))) for f in n_factors})
    # One batch of trials per n (grouping by n avoids padding work).
    losses = []
    for n in n_values:
        if bar is not None:
            bar.set_postfix_str(f"d={d}, n={n}")
        X, y = _sphere_data(rng, trials, n, d)
        mu1 = np.linalg.eigvalsh(X @ np.swapaxes(X, 1, 2))[:, -1]
        W0 = rng.standard_normal((trials, p, d)) / np.sqrt(d)
        a0 = rng.standard_normal((trials, p))
        if engine == "meanfield":
            loss_n = _meanfield_trials(X, y, W0, a0, eta_f / mu1, n_steps)
        elif engine == "train":
            loss_n = train_trials(X, y, W0, a0, eta_f / mu1, n_steps)
        else:
            loss_n, _, _ = trained_outer_gd(X, y, np.ones((trials, n)), W0, a0, eta_f / mu1, n_steps)
        losses.append(loss_n)
        if bar is not None:
            bar.update()
    loss = np.stack(losses)
    succ = (loss < loss_threshold).sum(axis=1)
    lo, hi = wilson_interval(succ, trials)
    n_star, k, c, n_half = fit_threshold(n_values, succ, trials)
    return {
        "d": d,
        "n": np.array(n_values),
        "prob": succ / trials,
        "low": lo,
        "high": hi,
        "succ": succ,
        "n_star": n_star,
        "k": k,
        "plateau": c,
        "n_half": n_half,
        "loss": loss,
    }


def _convergence_table(curves, p, trials):
    table = []
    for cv in curves:
        d = cv["d"]
        for j, n in enumerate(cv["n"]):
            table.append(
                {
                    "d": d,
                    "n": int(n),
                    "p": p,
                    "trials": trials,
                    "successes": int(cv["succ"][j]),
                    "probability": float(cv["prob"][j]),
                    "wilson_low": float(cv["low"][j]),
                    "wilson_high": float(cv["high"][j]),
                    "median_final_loss": float(np.median(cv["loss"][j])),
                    # failures far above the threshold are stuck, not merely slow
                    "fraction_stuck": float(np.mean(cv["loss"][j] > 1e-2)),
                    "n_star_fit": cv["n_star"],
                    "slope_fit": cv["k"],
                    "plateau_fit": cv["plateau"],
                    "n_star_over_params": cv["n_star"] / (p * (d + 1)),
                }
            )
    return table


def _convergence_claims(curves, check, q, p, d_grid, eta_factor):
    claims = []
    for c in curves:
        pr = c["prob"]
        # decreasing within the sampling noise: no significant rise (Wilson intervals of
        # neighbouring points overlap whenever P goes up)
        significant_rise = any(c["low"][j + 1] > c["high"][j] for j in range(len(pr) - 1))
        claims.append(
            Claim(
                f"decreasing_in_n_d{c['d']}",
                f"d={c['d']}: P(global minimum) decreases in n, from ~1 at small n to ~0 at large n",
                "P = "
                + ", ".join(f"{pp:.2f}" for pp in pr)
                + f" at n = {list(map(int, c['n']))}; n* = {c['n_star']:.1f}",
                bool(max(pr[:2]) >= 0.8 and pr[-1] <= 0.2 and not significant_rise),
            )
        )
    if check is not None:
        rel_change = abs(check["n_star"] - curves[0]["n_star"]) / curves[0]["n_star"]
        claims.append(
            Claim(
                "threshold_not_a_step_size_artefact",
                f"d={d_grid[0]}: halving eta (same time eta*steps) leaves n* within 25%",
                f"n* = {curves[0]['n_star']:.1f} (eta*mu1={eta_factor:g}) vs {check['n_star']:.1f} "
                f"(eta*mu1={eta_factor / 2:g}); P = " + ", ".join(f"{v:.2f}" for v in check["prob"]),
                bool(rel_change < 0.25),
            )
        )
    claims.append(
        Claim(
            "threshold_grows_with_d",
            "the threshold n*(d) grows with d (high-dimensional data are weakly interacting)",
            "n* = " + ", ".join(f"{c['n_star']:.1f} (d={c['d']})" for c in curves) + f"; n* ∝ d^{q:.2f}; "
            "n*/(p(d+1)) = " + ", ".join(f"{c['n_star'] / (p * (c['d'] + 1)):.2f}" for c in curves),
            bool(all(curves[j + 1]["n_star"] > curves[j]["n_star"] for j in range(len(curves) - 1))),
        )
    )
    return claims


def _convergence_figure(curves, check, q, d_grid, p, trials, eta_factor, loss_threshold, steps):
    """P against n per d (and the step-size check), and n* against d (ImportError without matplotlib)."""
    from relucore.plots._literature import plot_convergence_probability
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained", gridspec_kw={"width_ratios": [1.6, 1]})
    plot_convergence_probability(curves, ax=axes[0])
    if check is not None:
        axes[0].plot(
            check["n"],
            check["prob"],
            "x",
            color="0.3",
            ms=7,
            label=f"d={d_grid[0]}, half step, 2x steps: n*={check['n_star']:.1f}",
        )
        axes[0].legend(fontsize=8)
    axes[0].set_title(
        f"trained outer layer, width p={p}, {trials} trials per point, η·μ₁(K)={eta_factor:g}; "
        f"success: loss < {loss_threshold:g}·loss(0) after {steps} steps",
        fontsize=8,
    )
    ds = np.array(d_grid, float)
    ns = np.array([c["n_star"] for c in curves])
    axes[1].plot(ds, ns, "o-", color="k")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    from relucore.plots._literature import _plain_log_ticks

    _plain_log_ticks(axes[1].xaxis, ds)
    _plain_log_ticks(axes[1].yaxis, np.round(ns, 1))
    axes[1].set_xlabel("d")
    axes[1].set_ylabel("threshold n*(d)  (P = 1/2)")
    axes[1].set_title(f"fitted n* ∝ d^{q:.2f}", fontsize=9)
    fig.suptitle("Probability that GD reaches a global minimum (Dana et al. 2025 setting)", fontsize=10)
    return fig
