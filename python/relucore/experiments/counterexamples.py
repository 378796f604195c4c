"""Two small counterexamples: App. B.4 of Lai et al. (2026) and Vardi & Shamir (2021).

``b4``: with a not-all-positive init, a single ReLU on two positively labelled
examples converges to a local minimum that is not global.
``vardi-shamir``: on three points in R^3 the GD limit of a single ReLU depends
on a parameter gamma that leaves the minimum-norm solution unchanged, so no
norm-based implicit bias holds in the worst case.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from relucore.experiments._base import Context, ExperimentResult, register
from relucore.experiments._common import child_rngs, claim, figure
from relucore.gd.train import train

__all__ = ["b4", "vardi_shamir", "b4_limit"]


def b4_limit(X: np.ndarray, y: np.ndarray, delta: float) -> float:
    """Closed-form limit of ``beta_1`` in App. B.4 while example 1 stays inactive.

    Example 2 alone is then fitted by ``beta_2 <- beta_2 - eta ||x_2||^2 (beta_2 - y_2)``
    and ``beta_1`` moves by ``-eta x_1^T x_2 (beta_2 - y_2)`` per step; summing,
    ``beta_1^(inf) = -delta + (x_1^T x_2 / ||x_2||^2) (y_2 - delta)``.
    """
    c = float(X[0] @ X[1]) / float(X[1] @ X[1])
    return -delta + c * (y[1] - delta)


@register("b4", "App. B.4: n=2, y>0, eps=(-delta, delta): example 1 stays inactive, a non-global local minimum")
def b4(
    ctx: Context,
    *,
    d: int = 200,
    delta_fraction: float = 0.1,
    eta_fraction: float = 0.9,
    steps: int = 100_000,
    n_perturb: int = 2000,
) -> ExperimentResult:
    """Appendix B.4: convergence to a non-global local minimum.

    Draws ``x_1, x_2 ~ N(0, I_d)`` until ``x_1^T x_2 < 0`` and
    ``|x_1^T x_2| < ||x_2||^2``, labels ``y ~ U(0.5, 1)`` (both positive),
    ``w0 = X^T K^{-1} (-delta, delta)`` with ``delta = delta_fraction * y_min``,
    ``eta = eta_fraction / mu_1(K)``. Checks: ``beta_1 < 0`` at every step,
    the limit of ``beta_1`` equals :func:`b4_limit`, the final loss is
    ``y_1^2 / 2 > 0`` although ``X^T K^{-1} y`` interpolates (loss 0), and the
    end point is a local minimum (zero gradient; no small random perturbation
    lowers the loss).
    """
    if ctx.quick:
        n_perturb = min(n_perturb, 500)
    params = ctx.params(locals(), "rng")
    bar = ctx.bar(2, unit="stage")
    rng, prng = child_rngs(ctx.rng, 2)
    for _ in range(1000):
        X = rng.standard_normal((2, d))
        c = float(X[0] @ X[1])
        if c < 0 and abs(c) < float(X[1] @ X[1]):
            break
    y = rng.uniform(0.5, 1.0, 2)
    delta = delta_fraction * float(y.min())
    K = X @ X.T
    W0 = (X.T @ np.linalg.solve(K, np.array([-delta, delta])))[None, :]
    eta = eta_fraction / float(np.linalg.eigvalsh(K)[-1])
    res = train(X, y, init=W0, eta=eta, steps=steps, record=1)
    bar.update()
    beta1 = res.history.beta[:, 0, 0]
    predicted = b4_limit(X, y, delta)
    w = res.W[0]
    # Local minimality: random perturbations small enough to keep beta_1 < 0.
    radius = 0.5 * abs(float(res.beta[0, 0])) / np.linalg.norm(X[0])
    U = prng.standard_normal((n_perturb, d))
    U *= (radius * prng.uniform(0, 1, (n_perturb, 1)) ** (1 / d)) / np.linalg.norm(U, axis=1, keepdims=True)
    P = (w[None, :] + U) @ X.T
    losses = 0.5 * np.sum((np.maximum(P, 0.0) - y) ** 2, axis=1)
    w_glob = X.T @ np.linalg.solve(K, y)
    global_loss = 0.5 * float(np.sum((np.maximum(X @ w_glob, 0) - y) ** 2))
    drop = float(res.loss - losses.min())
    bar.update()
    bar.close()
    claims = [
        claim(
            "example1_inactive",
            "beta_1 = w^T x_1 <= 0 at every step (example 1 never active)",
            f"max_t beta_1 = {beta1.max():.4g}",
            beta1.max() <= 0,
        ),
        claim(
            "beta1_closed_form",
            "beta_1 -> -delta + (x1.x2/||x2||^2)(y2 - delta)",
            f"GD {res.beta[0, 0]:.10f} vs closed form {predicted:.10f}",
            abs(res.beta[0, 0] - predicted) <= 1e-9 * max(1.0, abs(predicted)),
        ),
        claim(
            "non_global",
            "final loss y_1^2/2 > 0 = loss of the interpolator X^T K^-1 y",
            f"final loss {res.loss:.6f} (y_1^2/2 = {y[0] ** 2 / 2:.6f}); interpolator loss {global_loss:.1e}",
            res.loss > 1e-3 and abs(res.loss - y[0] ** 2 / 2) <= 1e-9 and global_loss <= 1e-20,
        ),
        claim(
            "local_minimum",
            "zero gradient and no perturbation within the inactive region lowers the loss",
            f"gradient norm {res.grad_norm:.1e} (stationary {res.stationary}); over {n_perturb} perturbations "
            f"min(perturbed loss - final loss) = {-drop:+.1e}",
            bool(res.stationary) and drop <= 1e-12,
        ),
    ]
    rows = [
        dict(step=int(s), beta1=float(b[0, 0]), beta2=float(b[0, 1]), loss=float(L))
        for s, b, L in zip(res.history.steps, res.history.beta, res.history.loss)
        if s < 50 or s % 100 == 0 or s == res.nit
    ]
    fig = _b4_figure(res, y, predicted, X)
    return ExperimentResult(ctx.name, params, rows, claims, fig, data=dict(result=res, X=X, y=y, delta=delta))


def _b4_figure(res, y, predicted, X):
    from relucore.plots import plot_predictions

    fig, axes = figure(
        1,
        2,
        width=4.6,
        height=3.5,
        title=f"App. B.4: n=2, y>0, init eps=(-delta, delta), x1.x2 = {X[0] @ X[1]:.1f} < 0",
    )
    h = res.history
    plot_predictions(
        h.steps,
        h.beta[:, 0, :],
        y=y,
        ax=axes[0, 0],
        ylabel=r"prediction $\beta_i = w^\top x_i$",
        title="example 1 stays inactive, example 2 is fitted",
    )
    axes[0, 0].axhline(predicted, color="k", ls="--", lw=0.8, label=r"closed-form $\beta_1^{(\infty)}$")
    axes[0, 0].legend(fontsize=7)
    ax = axes[0, 1]
    ax.plot(h.steps, h.loss, color="tab:blue", label="GD loss")
    ax.axhline(y[0] ** 2 / 2, color="tab:red", ls="--", label=r"$y_1^2/2$ (local minimum)")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("log")
    ax.set_xlim(0, h.steps[-1])
    ax.set_xlabel("GD step")
    ax.set_ylabel(r"loss $\frac{1}{2}\|h(X) - y\|^2$")
    ax.set_title(r"loss stalls at $y_1^2/2$; the global minimum is 0", fontsize=9)
    ax.legend(fontsize=7)
    return fig


@register("vardi-shamir", "Vardi & Shamir (2021): three points, the GD limit depends on gamma (no norm-based bias)")
def vardi_shamir(
    ctx: Context,
    *,
    gammas: Sequence[float] = (0.0, 1.0, 2.0, 5.0, 20.0),
    init: float = 1e-6,
    eta: float = 1e-4,
    steps: int = 2_000_000,
    record: int = 10,
) -> ExperimentResult:
    """Vardi & Shamir (2021): ``x1=(3,-1,0)``, ``x2=(4,2,0)``, ``x3=(0,g,g)``, ``y=(16,18,0)``.

    Init ``init * (1, 1, 1)``, ``eta = 1e-4``. The minimum-norm solution is
    ``w* = (5, -1, 0)`` for every gamma (it fits x1, x2 and has
    ``w*^T x3 = -gamma <= 0``; any interpolator has ``(w1, w2) = (5, -1)``).
    Checks: every run interpolates, and the GD limit (its third coordinate,
    hence its norm) differs across gamma. ``seed`` is unused (deterministic).
    """
    gammas = tuple(float(g) for g in gammas)
    params = ctx.params(locals())
    B = len(gammas)
    X = np.stack([np.array([[3.0, -1.0, 0.0], [4.0, 2.0, 0.0], [0.0, g, g]]) for g in gammas])
    y = np.tile(np.array([16.0, 18.0, 0.0]), (B, 1))
    W0 = np.full((B, 1, 3), init)
    bar = ctx.bar(1, unit="batch")
    res = train(X, y, init=W0, eta=np.full(B, eta), steps=steps, record=record)
    bar.update()
    bar.close()
    w_star = np.array([5.0, -1.0, 0.0])
    W = res.W[:, 0, :]
    rows = []
    for b, g in enumerate(gammas):
        rows.append(
            dict(
                gamma=g,
                w1=W[b, 0],
                w2=W[b, 1],
                w3=W[b, 2],
                norm_w=float(np.linalg.norm(W[b])),
                dist_to_w_star=float(np.linalg.norm(W[b] - w_star)),
                final_loss=float(res.loss[b]),
                nit=int(res.nit[b]),
                converged=bool(res.success[b]),
                x3_prediction=float(X[b, 2] @ W[b]),
            )
        )
    pair = np.array([[np.linalg.norm(W[a] - W[b]) for b in range(B)] for a in range(B)])
    off = pair[~np.eye(B, dtype=bool)]
    feasible = all(np.allclose(X[b, :2] @ w_star, y[b, :2]) and X[b, 2] @ w_star <= 0 for b in range(B))
    claims = [
        claim(
            "interpolates",
            "every run fits the data (loss -> 0)",
            f"max final loss {res.loss.max():.1e}",
            bool(np.all(res.loss <= 1e-12)) and bool(np.all(res.success)),
        ),
        claim(
            "limit_depends_on_gamma",
            "the GD limit differs across gamma",
            f"w3 = {', '.join(f'{w:+.4f}' for w in W[:, 2])}; min pairwise distance {off.min():.2e}",
            off.min() > 1e-3,
        ),
        claim(
            "not_min_norm",
            "w* = (5, -1, 0) for all gamma, but ||w_GD - w*|| varies with gamma",
            "||w_GD - w*|| = " + ", ".join(f"{r['dist_to_w_star']:.4f}" for r in rows) + f" (w* feasible: {feasible})",
            feasible and (max(r["dist_to_w_star"] for r in rows) - min(r["dist_to_w_star"] for r in rows) > 1e-2),
        ),
    ]
    fig = _vs_figure(res, X, gammas, W, w_star)
    return ExperimentResult(ctx.name, params, rows, claims, fig, data=dict(result=res, X=X, y=y))


def _vs_figure(res, X, gammas, W, w_star):
    fig, axes = figure(
        1, 2, width=4.6, height=3.5, title="Vardi & Shamir (2021): x1=(3,-1,0), x2=(4,2,0), x3=(0,g,g), y=(16,18,0)"
    )
    ax = axes[0, 0]
    gpos = np.array(gammas)
    ax.plot(gpos, np.linalg.norm(W - w_star, axis=1), "o-", label=r"$\|w_{GD} - w^\star\|$")
    ax.plot(gpos, W[:, 2], "s--", label=r"$w_{GD,3}$ (third coordinate)")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(gpos)
    ax.set_xticklabels([f"{g:g}" for g in gammas])
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("value at the GD limit")
    ax.set_title(r"the limit depends on $\gamma$; $w^\star = (5,-1,0)$ does not", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    h = res.history
    cmap = __import__("matplotlib").colormaps["viridis"]
    for b, g in enumerate(gammas):
        r = int(h.n_records[b])
        steps = h.steps[b, :r]
        ax.plot(
            np.maximum(steps, 1), h.beta[b, :r, 0, 2], color=cmap(b / max(len(gammas) - 1, 1)), label=rf"$\gamma$={g:g}"
        )
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_xlabel("GD step")
    ax.set_ylabel(r"$w^\top x_3$ (label 0)")
    ax.set_title("x3 is active early, then switched off", fontsize=9)
    ax.legend(fontsize=7)
    return fig
