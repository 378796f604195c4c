"""Figure 3 of Lai et al. (2026): example selection at moderate dimension.

Single ReLU, n=10, d=50, ``x ~ N(0, I)``, ``y ~ N(0, 1)``, random inits
``w ~ N(0, 2e-6 I)``, ``eta = 1e-4``. Different inits end with different
active sets S, and the limit is (close to) the linear minimum-norm
interpolator on S, ``X_S^T (X_S X_S^T)^{-1} y~_S`` with ``y~ = max(y, 0)``.
Exactly (Lemma 1): once the pattern is fixed at ``t0``, the limit is the
projection ``argmin_{X_S w = y_S} ||w - w^(t0)||``; its distance to the
minimum-norm interpolator on S is ``||(I - P_S) w^(t0)||``, the memory of the
init and of examples that were active early and died.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from relucore.experiments._base import Context, ExperimentResult, register
from relucore.experiments._common import child_rngs, claim, figure, fmt_set
from relucore.gd.train import train

__all__ = ["fig3"]


def _project(X: np.ndarray, w: np.ndarray, S: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``argmin_{X_S v = target} ||v - w||``."""
    XS = X[S]
    return w + XS.T @ np.linalg.solve(XS @ XS.T, target - XS @ w)


@register("fig3", "Fig. 3: n=10, d=50, random inits select different example subsets S (linear MNI on S)")
def fig3(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 50,
    n_inits: int = 8,
    init_variance: float = 2e-6,
    eta: float = 1e-4,
    steps: int = 400_000,
    record: int = 20,
    mni_tolerance: float = 0.2,
) -> ExperimentResult:
    """Figure 3: initialisation-dependent example selection (single ReLU, moderate d).

    Parameters
    ----------
    n_inits : number of random inits on the same data.
    mni_tolerance : largest relative distance ``||w_GD - w_MNI,S|| / ||w_MNI,S||``
        accepted as "of the form" of the caption (the exact statement is Lemma 1,
        checked to 1e-8).
    """
    if ctx.quick:
        n_inits = min(n_inits, 4)
    params = ctx.params(locals(), "rng")
    data_rng, init_rng = child_rngs(ctx.rng, 2)
    X, y = _data(data_rng, n, d)
    W0 = np.sqrt(init_variance) * init_rng.standard_normal((n_inits, 1, d))
    Xb = np.broadcast_to(X, (n_inits, n, d)).copy()
    yb = np.broadcast_to(y, (n_inits, n)).copy()
    bar = ctx.bar(1 + n_inits, unit="task")
    res = train(Xb, yb, init=W0, eta=np.full(n_inits, eta), steps=steps, record=record)
    bar.update()
    rows, subsets, lemma1, mni = [], [], [], []
    for b in range(n_inits):
        row, S = _init_row(res, X, y, b)
        rows.append(row)
        subsets.append(tuple(S))
        lemma1.append(row["dist_lemma1"])
        mni.append(row["dist_mni_S"])
        bar.update()
    bar.close()
    a = 0
    others = [b for b in range(n_inits) if subsets[b] != subsets[a]]
    bsel = others[0] if others else min(1, n_inits - 1)
    claims = _claims(res, rows, subsets, lemma1, mni, n_inits, mni_tolerance)
    fig = _figure(res, X, y, a, bsel, subsets, n, d, eta)
    return ExperimentResult(ctx.name, params, rows, claims, fig, data=dict(result=res, X=X, y=y))


def _data(rng: np.random.Generator, n: int, d: int) -> Tuple[np.ndarray, np.ndarray]:
    """``X ~ N(0, I)``, ``y ~ N(0, 1)``, redrawn until at least half the labels are positive.

    With fewer positive labels there is little to select from.
    """
    for _ in range(1000):
        X = rng.standard_normal((n, d))
        y = rng.standard_normal(n)
        if np.sum(y > 0) >= n / 2:
            break
    return X, y


def _init_row(res, X: np.ndarray, y: np.ndarray, b: int) -> Tuple[dict, np.ndarray]:
    """The table row of init ``b`` and its selected subset S (the examples active at the end)."""
    d = X.shape[1]
    yt = np.maximum(y, 0.0)
    w = res.W[b, 0]
    S = np.flatnonzero(res.beta[b, 0] > 0)
    w_mni = X[S].T @ np.linalg.solve(X[S] @ X[S].T, yt[S]) if S.size else np.zeros(d)
    # A recorded state at or after t0: from there GD is linear regression on S (Lemma 1).
    r = int(res.history.n_records[b])
    steps_b = res.history.steps[b, :r]
    j = int(np.searchsorted(steps_b, res.pattern_stable_step[b]))
    w_t0 = res.W0[b, 0] + (res.history.alpha[b, j, 0] - res.alpha0[b, 0]) @ X
    w_lemma1 = _project(X, w_t0, S, y[S]) if S.size else w_t0
    scale = max(np.linalg.norm(w), 1e-300)
    lemma1 = float(np.linalg.norm(w - w_lemma1) / scale)
    mni = float(np.linalg.norm(w - w_mni) / np.linalg.norm(w_mni)) if S.size else np.nan

    # w_GD - w_MNI,S = (I - P_S) w^(t0): split into the init's and the dead examples' memory.
    def perp(v):
        return v - X[S].T @ np.linalg.solve(X[S] @ X[S].T, X[S] @ v) if S.size else v

    mem_init = perp(res.W0[b, 0])
    mem_dead = perp(w_t0 - res.W0[b, 0])
    norm_mni = np.linalg.norm(w_mni) if S.size else np.nan
    row = dict(
        init=b,
        S=fmt_set(S),
        size_S=int(S.size),
        S_within_positives=bool(np.all(y[S] > 0)),
        final_loss=float(res.loss[b]),
        converged=bool(res.stationary[b]),
        nit=int(res.nit[b]),
        pattern_stable_step=int(res.pattern_stable_step[b]),
        dist_lemma1=lemma1,
        dist_mni_S=mni,
        init_memory=float(np.linalg.norm(mem_init) / norm_mni),
        dead_example_memory=float(np.linalg.norm(mem_dead) / norm_mni),
    )
    return row, S


def _claims(res, rows, subsets, lemma1, mni, n_inits: int, mni_tolerance: float) -> list:
    """The claims of Fig. 3: distinct subsets, Lemma 1, the caption's linear MNI on S, S positive, convergence."""
    distinct = sorted(set(subsets))
    return [
        claim(
            "different_subsets",
            "different random inits select different example subsets S (S != S')",
            f"{len(distinct)} distinct subsets over {n_inits} inits: " + ", ".join(fmt_set(s) for s in distinct),
            len(distinct) >= 2,
        ),
        claim(
            "lemma1_projection",
            "w_GD = argmin_{X_S w = y_S} ||w - w^(t0)|| (Lemma 1), relative error <= 1e-8",
            f"max relative error {max(lemma1):.1e}",
            max(lemma1) <= 1e-8,
        ),
        claim(
            "linear_mni_on_S",
            f"w_GD ~ X_S^T (X_S X_S^T)^-1 y~_S (caption), relative distance <= {mni_tolerance:g}",
            f"relative distances {np.nanmin(mni):.3f} .. {np.nanmax(mni):.3f}"
            + (f"; {int(np.sum(np.isnan(mni)))} inits died (S empty)" if np.any(np.isnan(mni)) else "")
            + "; memory (I - P_S) w^(t0) of the init: up to "
            + f"{np.nanmax([r['init_memory'] for r in rows]):.3f}, of examples active early: up to "
            + f"{np.nanmax([r['dead_example_memory'] for r in rows]):.3f}",
            np.nanmax(mni) <= mni_tolerance if not np.all(np.isnan(mni)) else False,
        ),
        claim(
            "S_positive",
            "S holds positively labelled examples only (y~_S = y_S)",
            f"{sum(r['S_within_positives'] for r in rows)}/{n_inits} inits",
            all(r["S_within_positives"] for r in rows),
        ),
        claim(
            "converged",
            "GD converged for every init",
            f"{int(np.sum(res.stationary))}/{n_inits}",
            bool(np.all(res.stationary)),
        ),
    ]


def _figure(res, X, y, a, b, subsets, n, d, eta):
    from relucore.plots import plot_predictions

    fig, axes = figure(
        1,
        3,
        width=4.3,
        height=3.5,
        title=f"Fig. 3: single ReLU, n={n}, d={d}, random inits, eta={eta:g}: "
        "different inits select different subsets S",
    )
    for ax, idx, name in ((axes[0, 0], a, "init A"), (axes[0, 1], b, "init B")):
        r = int(res.history.n_records[idx])
        plot_predictions(
            res.history.steps[idx, :r],
            res.history.beta[idx, :r, 0, :],
            y=y,
            ax=ax,
            legend=(ax is axes[0, 0]),
            xscale="log" if res.history.steps[idx, 1] > 0 else "symlog",
            ylabel=r"prediction $\beta_i = w^\top x_i$",
            title=f"{name}: S = {fmt_set(subsets[idx])}",
        )
    ax = axes[0, 2]
    M = np.zeros((len(subsets), n))
    for i, S in enumerate(subsets):
        M[i, list(S)] = 1.0
    from matplotlib.colors import ListedColormap

    ax.pcolormesh(
        np.arange(n + 1),
        np.arange(len(subsets) + 1),
        M,
        cmap=ListedColormap(["white", "tab:blue"]),
        edgecolors="0.7",
        linewidth=0.5,
        vmin=0,
        vmax=1,
    )
    ax.set_xticks(np.arange(n) + 0.5)
    ax.set_xticklabels([f"{i}\n{'+' if y[i] > 0 else '-'}" for i in range(n)], fontsize=7)
    ax.set_yticks(np.arange(len(subsets)) + 0.5)
    ax.set_yticklabels([f"init {i}" for i in range(len(subsets))], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("example (label sign)")
    ax.set_title("selected subset S per init (blue: in S)", fontsize=9)
    return fig
