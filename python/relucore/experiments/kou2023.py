"""Kou, Chen, Gu (2023): stable rank and margins of GD on the logistic loss.

``kou-stable-rank``: ReLU vs leaky ReLU on nearly-orthogonal data: the stable
rank of each sign group of neurons tends to 1 for the leaky ReLU and stays
bounded away from 1 for the ReLU; the normalised margins equalise.
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from relucore.experiments._base import Claim, Context, ExperimentResult, register
from relucore.experiments._common import optional_figure
from relucore.gd.train import train
from relucore.theory.metrics import TrainingMetrics, training_metrics

__all__ = ["kou_stable_rank", "log_recorded_run"]


def _balanced_labels(rng: np.random.Generator, B: int, n: int) -> np.ndarray:
    """±1 labels, half of each sign (n odd: one more +1), shuffled per problem."""
    base = np.where(np.arange(n) < (n + 1) // 2, 1.0, -1.0)
    return np.stack([rng.permutation(base) for _ in range(B)])


def _concat_metrics(parts: Sequence[TrainingMetrics]) -> TrainingMetrics:
    fields = TrainingMetrics.__dataclass_fields__
    out = {}
    for f in fields:
        out[f] = np.concatenate(
            [getattr(p, f) for p in parts], axis=-1 if f not in ("margins", "normalized_margins") else -2
        )
    return TrainingMetrics(**out)


def log_recorded_run(X, y, *, W0, steps: int, per_decade: int = 12, **train_kw) -> TrainingMetrics:
    """GD from ``W0`` for ``steps`` steps with records roughly evenly spaced in log time.

    ``relucore.train`` records every k-th step; a log time axis needs fine records
    early and sparse ones late, so the run is split at the powers of 10 and each
    segment continues from the weights where the previous one stopped (an exact
    continuation: the array init rebuilds the same beta = X W). Every segment
    records ``per_decade`` states.

    Returns the :class:`~relucore.TrainingMetrics` of all records (batched arrays
    when X is batched), with ``steps`` counted from the start of the run.
    """
    bounds = [0]
    p = 10
    while p < steps:
        bounds.append(p)
        p *= 10
    bounds.append(steps)
    parts: List[TrainingMetrics] = []
    W = W0
    for j, (s0, s1) in enumerate(zip(bounds[:-1], bounds[1:])):
        stride = max(1, (s1 - s0) // per_decade)
        res = train(X, y, init=W, steps=s1 - s0, record=stride, tol=0.0, **train_kw)
        met = training_metrics(res, X, y)
        # Every problem runs the same number of steps (tol = 0), so all histories
        # have the same length; drop the padding and the duplicated segment start.
        r = int(np.min(res.history.n_records))
        sl = slice(0 if j == 0 else 1, r)
        vals = {}
        for f in TrainingMetrics.__dataclass_fields__:
            a = getattr(met, f)
            vals[f] = a[..., sl, :] if f in ("margins", "normalized_margins") else a[..., sl]
        vals["steps"] = vals["steps"] + s0
        parts.append(TrainingMetrics(**vals))
        W = res.W
        train_kw["eta"] = res.eta  # keep the same step size over the segments
    return _concat_metrics(parts)


@register("kou-stable-rank", "Kou et al. 2023: stable rank -> 1 for leaky ReLU, bounded for ReLU; margins equalise")
def kou_stable_rank(
    ctx: Context,
    *,
    n: int = 20,
    d: int = 10_000,
    m: int = 40,
    leaky_slope: float = 0.1,
    init_scale: float = 1e-4,
    steps: int = 100_000,
    trials: int = 5,
    eta: Optional[float] = None,
) -> ExperimentResult:
    """Stable rank and normalised margins of GD on the logistic loss (Kou, Chen, Gu 2023).

    The setting of Kou et al.: ``f(x) = sum_j a_j phi(w_j^T x)`` with ``a_j = ±1/m``
    (half each sign), Gaussian inputs with ``d >> n`` (nearly orthogonal), ±1 labels
    (half each), ``w_j ~ N(0, init_scale^2 I_d)``, full-batch GD on the mean logistic
    loss with the default step ``4 n m / mu_1(K)``. Both activations start from the
    same data and the same W0. Kou et al. state the stable rank per sign group
    (their ``W_{+1}``, ``W_{-1}``): it tends to 1 for the leaky ReLU and stays bounded
    for the ReLU; the whole W of the leaky network keeps two directions (rank <= 2,
    Frei et al. 2022), which the table reports too.
    """
    if ctx.quick:
        n, d, m, steps, trials = 10, 1000, 20, 10_000, 3
    X, y, a, W0, near_orth = _kou_data(np.random.default_rng(ctx.rng), trials, n, d, m, init_scale)
    t0 = time.perf_counter()
    mets: Dict[str, TrainingMetrics] = {}
    bar = ctx.bar(2, unit="activation")
    for act in ("relu", "leaky_relu"):
        bar.set_postfix_str(act)
        mets[act] = log_recorded_run(
            X, y, W0=W0, steps=steps, signs=a, loss="logistic", activation=act, leaky_slope=leaky_slope, eta=eta
        )
        bar.update()
    bar.close()
    elapsed = time.perf_counter() - t0
    table = _kou_table(mets)
    claims = _kou_claims(mets, steps)
    fig = optional_figure(_kou_figure, mets, leaky_slope, n, d, m, init_scale, trials, near_orth)
    recorded_eta = float(np.mean(eta)) if eta is not None else None
    return ExperimentResult(
        name=ctx.name,
        params=ctx.params(locals(), "rng", "quick", eta=recorded_eta),
        table=table,
        claims=claims,
        figure=fig,
        data={"metrics": mets, "near_orthogonality": near_orth, "seconds": elapsed},
    )


def _kou_data(rng, trials, n, d, m, init_scale):
    """Gaussian X (trials, n, d), balanced labels, outer weights ±1/m, W0 ~ N(0, init_scale^2), and
    Kou et al.'s near-orthogonality constant C in min ||x_i||^2 >= C n max |x_i^T x_j| (trial mean)."""
    X = rng.standard_normal((trials, n, d))
    y = _balanced_labels(rng, trials, n)
    a = np.where(np.arange(m) < m // 2, 1.0, -1.0) / m
    W0 = init_scale * rng.standard_normal((trials, m, d))
    K = X @ np.swapaxes(X, 1, 2)
    diag = np.diagonal(K, axis1=1, axis2=2)
    offmax = np.max(np.abs(K - diag[:, :, None] * np.eye(n)), axis=(1, 2))
    near_orth = float(np.mean(diag.min(axis=1) / (n * offmax)))
    return X, y, a, W0, near_orth


def _kou_table(mets: Dict[str, TrainingMetrics]) -> List[dict]:
    """One row per activation and record: stable ranks, margin ratio and loss (means over trials)."""
    table = []
    for act, met in mets.items():
        steps_arr = met.steps[0]
        for r, t in enumerate(steps_arr):
            table.append(
                {
                    "activation": act,
                    "step": int(t),
                    "stable_rank": float(np.nanmean(met.stable_rank[:, r])),
                    "stable_rank_pos": float(np.nanmean(met.stable_rank_pos[:, r])),
                    "stable_rank_neg": float(np.nanmean(met.stable_rank_neg[:, r])),
                    "margin_ratio": float(np.nanmean(met.margin_ratio[:, r]))
                    if np.any(np.isfinite(met.margin_ratio[:, r]))
                    else float("nan"),
                    "loss": float(np.mean(met.loss[:, r])),
                }
            )
    return table


def _group_sr(met):
    """Mean stable rank of the two sign groups, per trial and record."""
    return 0.5 * (met.stable_rank_pos + met.stable_rank_neg)


def _kou_claims(mets: Dict[str, TrainingMetrics], steps: int) -> List[Claim]:
    """Kou et al. 2023, Theorems 3.2 and 3.4, and the rank <= 2 of Frei et al. 2022."""
    lk, rl = mets["leaky_relu"], mets["relu"]
    steps_arr = lk.steps[0]
    i_dec = int(np.searchsorted(steps_arr, steps // 10))  # one decade before the end
    i_early = int(np.searchsorted(steps_arr, 10))
    sr_lk, sr_rl = _group_sr(lk), _group_sr(rl)
    lk_end, lk_dec, lk_early = sr_lk[:, -1].mean(), sr_lk[:, i_dec].mean(), sr_lk[:, i_early].mean()
    rl_end, rl_dec = sr_rl[:, -1].mean(), sr_rl[:, i_dec].mean()
    ratio_lk_end = float(np.nanmean(lk.margin_ratio[:, -1]))
    ratio_lk_dec = float(np.nanmean(lk.margin_ratio[:, i_dec]))
    ratio_rl_end = float(np.nanmean(rl.margin_ratio[:, -1]))
    full_lk_end = float(lk.stable_rank[:, -1].mean())
    return [
        Claim(
            "leaky_stable_rank_to_1",
            "leaky ReLU: stable rank of each sign group falls towards 1 (Kou et al. Thm 3.2)",
            f"{lk_early:.3f} at t=10, {lk_dec:.4f} at t={steps // 10}, {lk_end:.4f} at t={steps}",
            bool(lk_end < lk_dec < lk_early and lk_end - 1 < 0.05),
        ),
        Claim(
            "relu_stable_rank_bounded",
            "ReLU: group stable rank bounded and not -> 1; above the leaky ReLU's (Kou et al. Thm 3.4)",
            f"ReLU {rl_dec:.3f} -> {rl_end:.3f} over the last decade; leaky {lk_end:.4f}",
            bool(rl_end > lk_end and rl_end - 1 > 3 * (lk_end - 1) and abs(rl_end - rl_dec) < 0.05 * rl_end),
        ),
        Claim(
            "margin_ratio_to_1",
            "max/min normalised margin falls towards 1 (Kou et al.)",
            f"leaky {ratio_lk_dec:.4f} -> {ratio_lk_end:.4f}; ReLU {ratio_rl_end:.4f} at the end",
            bool(ratio_lk_end < ratio_lk_dec and ratio_lk_end < 1.1),
        ),
        Claim(
            "leaky_full_rank_at_most_2",
            "whole W of the leaky network: stable rank <= 2 (two directions, Frei et al. 2022)",
            f"{full_lk_end:.3f}",
            bool(1 <= full_lk_end <= 2),
        ),
    ]


def _kou_figure(mets, leaky_slope, n, d, m, init_scale, trials, near_orth):
    """Stable ranks and margin ratios of both activations against the step (ImportError without matplotlib)."""
    from relucore.plots._literature import plot_margin_ratio, plot_stable_rank
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for act, color in (("relu", "C3"), ("leaky_relu", "C0")):
        label = "ReLU" if act == "relu" else f"leaky ReLU (γ={leaky_slope:g})"
        plot_stable_rank(mets[act], ax=axes[0], label=label, color=color)
        plot_margin_ratio(mets[act], ax=axes[1], label=label, color=color)
    axes[0].set_title("stable rank ‖W‖²_F/‖W‖²₂ (solid: per sign group, dashed: whole W)", fontsize=9)
    axes[1].set_title("max/min normalised margin  y_i f(x_i)/‖W‖_F", fontsize=9)
    fig.suptitle(
        f"Kou et al. 2023: logistic GD, a_j = ±1/m, n={n}, d={d}, m={m}, init N(0,{init_scale:g}²), "
        f"{trials} trials (mean); near-orthogonality min‖x‖²/(n max|x_iᵀx_j|) = {near_orth:.2g}",
        fontsize=9,
    )
    return fig
