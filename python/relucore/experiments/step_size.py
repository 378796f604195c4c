"""The gap between the GD limit and the minimum-norm solution against the step size.

``step-size``: 2-ReLU model, positive init, on orthogonal inputs (where gradient
flow reaches the minimum-norm solution, Boursier et al. 2022, and the gap of GD
is proportional to the step) and on near-orthogonal inputs (where the gap levels
off at a floor). The floor is the gap of the exact gradient-flow limit
(:func:`relucore.flow`, docs/math.md §13), and the GD limits are measured against it.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from relucore import _core
from relucore.experiments._base import Claim, Context, ExperimentResult, register
from relucore.experiments._common import optional_figure, power_law
from relucore.gd.train import train
from relucore.theory.flow import flow

__all__ = ["step_size", "orthogonal_minnorm", "minnorm_alpha"]


def orthogonal_minnorm(gram, y) -> np.ndarray:
    """Minimum-norm 2-ReLU interpolant (signs (+1, -1)) for exactly orthogonal inputs.

    With ``x_i^T x_j = 0`` (i != j) a weight vector's squared norm (within the data
    span) is ``sum_i (w^T x_i)^2 / ||x_i||^2``, so Eq. (8) splits into one problem
    per example: ``min (p^2 + q^2)/||x_i||^2`` s.t. ``relu(p) - relu(q) = y_i``. For
    ``y_i > 0`` any ``q > 0`` forces ``p = y_i + q`` and costs more than ``q = 0,
    p = y_i``; symmetrically for ``y_i < 0``. Hence every example is fitted by the
    neuron of its own sign alone:

        w+* = sum_{y_i > 0}  y_i x_i / ||x_i||^2,    w-* = sum_{y_i < 0} -y_i x_i / ||x_i||^2.

    Parameters
    ----------
    gram : ndarray, shape (..., n, n)
        ``K = X X^T`` (diagonal for orthogonal data; only its diagonal is used).
    y : ndarray, shape (..., n)

    Returns
    -------
    alpha : ndarray, shape (..., 2, n)
        Dual coordinates, ``W* = alpha X``.
    """
    k = np.diagonal(np.asarray(gram, dtype=float), axis1=-2, axis2=-1)
    y = np.asarray(y, dtype=float)
    return np.stack([np.where(y > 0, y, 0.0) / k, np.where(y < 0, -y, 0.0) / k], axis=-2)


def _own_sign_qp(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Program (9) for the partition S1 = S+, S3 = S- (each example on its own-sign neuron).

    With this partition the 2-neuron program splits into two single-neuron QPs
    (Eq. 7): ``w+ = argmin ||w||`` s.t. ``X+ w = y+``, ``X- w <= 0`` and ``w- = argmin``
    s.t. ``X- w = -y-``, ``X+ w <= 0``. Each is solved through its dual
    ``min 1/2 l^T K l - t^T l`` s.t. ``l_j <= 0`` on the inequality rows, written as
    the bounded least-squares problem ``min ||L^T l - L^{-1} t||`` (``K = L L^T``).
    It is the exact minimum-norm solution when this partition is the optimal one
    (the typical case on near-orthogonal data); ``relucore.minnorm`` searches
    every partition.
    """
    from scipy.optimize import lsq_linear

    L = np.linalg.cholesky(K)
    n = y.size
    alpha = np.zeros((2, n))
    for k, (target, ineq) in enumerate(((np.where(y > 0, y, 0.0), y <= 0), (np.where(y < 0, -y, 0.0), y > 0))):
        b = np.linalg.solve(L, target)
        sol = lsq_linear(L.T, b, bounds=(np.full(n, -np.inf), np.where(ineq, 0.0, np.inf)), method="bvls", tol=1e-14)
        alpha[k] = sol.x
    return alpha


def minnorm_alpha(gram: np.ndarray, y: np.ndarray):
    """Dual coordinates (2, n) of the minimum-norm 2-ReLU solution, and where they came from.

    Uses ``relucore.minnorm(gram=K, y, signs=(1, -1))`` (exact search over the
    partitions of Lemma 4) when this relucore has it; otherwise the own-sign
    partition QP :func:`_own_sign_qp`.
    """
    import relucore

    if hasattr(relucore, "minnorm"):
        sol = relucore.minnorm(None, y, signs=(1, -1), gram=gram, progress=False)
        return np.asarray(sol.alpha), ("relucore.minnorm (exact)" if sol.exact else "relucore.minnorm (upper bound)")
    return _own_sign_qp(gram, y), "own-sign partition QP (relucore.minnorm not available)"


def _gap(alpha: np.ndarray, alpha_star: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``||W - W*||_F`` for ``W = alpha X``, ``W* = alpha* X``: ``sqrt(sum_k D_k^T K D_k)``."""
    D = alpha - alpha_star
    return np.sqrt(np.maximum(np.einsum("...kn,...nj,...kj->...", D, K, D), 0.0))


def _step_size_data(rng, trials, n, d, orthogonal):
    """Gaussian X (or its rows orthogonalised, norms kept), |y| ~ U(0.1, 1) with random signs."""
    X = rng.standard_normal((trials, n, d))
    if orthogonal:
        Q = np.linalg.qr(np.swapaxes(X, 1, 2))[0]
        X = np.swapaxes(Q, 1, 2) * np.linalg.norm(X, axis=2)[:, :, None]
    y = rng.uniform(0.1, 1.0, (trials, n)) * rng.choice([-1.0, 1.0], (trials, n))
    K = X @ np.swapaxes(X, 1, 2)
    if orthogonal:  # exactly diagonal (QR leaves ~1e-13 off the diagonal)
        K = np.einsum("bii->bi", K)[:, :, None] * np.eye(n)
    return K, y


def _gd_gaps(K, y, alpha_star, eta_units, *, conv_steps: float, eps=None):
    """GD limits of the 2-ReLU model from the positive init, for every step size, and their gaps.

    ``eta_units`` are step sizes in units of ``1/mu_1(K)``. Runs in Gram-only mode
    (the positive init and W* lie in the data span, so K is all that is needed).
    Returns gaps (trials, len(eta_units)) and the fraction of runs that converged.
    """
    alpha, conv = _gd_limits(K, y, eta_units, conv_steps=conv_steps, eps=eps)
    return _gaps_to(alpha, alpha_star, K), conv


def _gaps_to(alpha, alpha_ref, K) -> np.ndarray:
    """``||W - W_ref||`` (trials, E) of GD limits alpha (trials, E, 2, n) against one reference per trial."""
    return _gap(alpha, alpha_ref[:, None], K[:, None])


def _gd_limits(K, y, eta_units, *, conv_steps: float, eps=None):
    """The GD runs of :func:`_gd_gaps`: alpha (trials, E, 2, n) and the fraction converged."""
    trials, n = y.shape
    E = len(eta_units)
    mu1 = np.linalg.eigvalsh(K)[:, -1]
    mun = np.linalg.eigvalsh(K)[:, 0]
    KB = np.repeat(K, E, axis=0)
    yB = np.repeat(y, E, axis=0)
    etaB = np.tile(np.asarray(eta_units, dtype=float), trials) * np.repeat(1.0 / mu1, E)
    steps = int(np.ceil(conv_steps * np.max(mu1 / mun) / np.min(eta_units)))
    res = train(None, yB, gram=KB, signs=(1.0, -1.0), init="positive", eps=eps, eta=etaB, steps=steps)
    return res.alpha.reshape(trials, E, 2, n), float(np.mean(res.stationary))


def _flow_limits(K, y, eps=None):
    """The exact gradient-flow limits (trials, 2, n) from the positive init, and which are certified.

    ``eps``: one positive-init offset per trial, or None for train's default (y_min / 20).
    A flow that stops before its limit (status ``stuck`` or ``max_events``) gives NaN.
    """
    runs = [
        flow(None, y[b], gram=K[b], signs=(1.0, -1.0), init="positive", eps=None if eps is None else float(eps[b]))
        for b in range(y.shape[0])
    ]
    ok = np.array(
        [r.status == _core.Status.certified and r.certificate is not None and bool(r.certificate.holds) for r in runs]
    )
    alpha = np.stack([r.alpha for r in runs])
    alpha[~ok] = np.nan
    return alpha, ok


def _fit_floor(eta, gap, p=1.0):
    """Fits ``gap = floor + c eta^p`` (p given) by least squares in relative error; returns (floor, c)."""
    A = np.stack([1.0 / gap, eta**p / gap], axis=1)
    coef, *_ = np.linalg.lstsq(A, np.ones_like(gap), rcond=None)
    return float(coef[0]), float(coef[1])


def _floor_estimate(rng, trials, n, d, eps_frac=None):
    """Gradient-flow-limit gap on near-orthogonal data: ``||W_flow - W*||`` of the exact flow limit.

    ``eps_frac``: positive-init offset as a fraction of y_min (default: train's y_min/20).
    The floor is the mean over the problems whose flow limit is certified. Returns (floor,
    its spread, mean ||W*||, which flow limits are certified, own-sign fraction).
    """
    K, y = _step_size_data(rng, trials, n, d, orthogonal=False)
    astar = np.stack([minnorm_alpha(K[b], y[b])[0] for b in range(trials)])
    eps = None if eps_frac is None else eps_frac * np.abs(y).min(axis=1)
    aflow, ok = _flow_limits(K, y, eps)
    gaps = _gap(aflow[ok], astar[ok], K[ok])
    wstar = float(np.mean(np.sqrt(np.einsum("bkn,bnj,bkj->b", astar, K, astar))))
    return float(gaps.mean()), float(gaps.std()), wstar, ok, _own_sign_fraction(K, y, astar)


def _own_sign_fraction(K, y, astar) -> float:
    """Fraction of problems whose W* fits every example with its own-sign neuron alone
    (the wrong neuron inactive: partition S1 = S+, S3 = S- of Lemma 4)."""
    beta = astar @ K  # (B, 2, n)
    tol = 1e-9 * np.abs(y).max()
    wrong = np.where(y > 0, beta[:, 1, :], beta[:, 0, :])
    return float(np.mean(np.all(wrong <= tol, axis=1)))


@register(
    "step-size",
    "Gap ||W_GD - W*|| of the 2-ReLU model against eta: orthogonal (prop. to eta) vs near-orthogonal (floor)",
)
def step_size(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 2000,
    trials: int = 10,
    eta_units: Sequence[float] = tuple(np.geomspace(1e-4, 0.5, 12)),
    n_grid: Sequence[int] = (5, 10, 20, 40),
    d_grid: Sequence[int] = (500, 1000, 2000, 4000, 8000),
    eps_grid: Sequence[float] = (0.05, 0.015, 0.005),
    conv_steps: float = 40.0,
) -> ExperimentResult:
    """The distance between the GD limit and the minimum-norm solution against the step size.

    2-ReLU model ``h = relu(w+^T x) - relu(w-^T x)``, positive init
    (``beta_k = eps = y_min/20``, Theorem 3), square loss, GD run to convergence
    for step sizes ``eta = eta_units / mu_1(K)``; labels ``|y| ~ U(0.1, 1)`` with
    random signs.

    * Orthogonal inputs (Gaussian rows orthogonalised, norms kept): gradient flow
      reaches the minimum-norm solution (Boursier et al. 2022), whose closed form
      is :func:`orthogonal_minnorm`. GD differs from it only because the neuron of
      the wrong sign crosses zero by a finite step and its dual variable freezes
      below zero: the gap is proportional to eta.
    * Near-orthogonal Gaussian inputs: the gap falls with eta but levels off at a
      floor, the gradient-flow gap caused by the cross-interactions ``x_i^T x_j``
      (the wrong neuron's frozen predictions keep moving through them). The floor
      is the gap of the exact gradient-flow limit (:func:`relucore.flow`, no step
      size), and its scaling with n, d
      and the init offset ``eps`` (``eps_grid``, fractions of y_min) is fitted as a
      power law. This scaling goes beyond the papers.

    Every GD limit is also measured against the exact flow limit of its problem: that
    distance falls in proportion to eta on both kinds of data.

    W* on near-orthogonal data comes from :func:`minnorm_alpha` (the exact search
    of ``relucore.minnorm``). The table's ``own_sign_fraction`` says how often W*
    fits every example with its own-sign neuron alone (then GD from the positive
    init converges to the same partition, Theorem 3); where the optimum shares an
    example between both neurons, part of the floor is that partition mismatch.
    """
    if ctx.quick:
        n, d, trials = 10, 500, 3
        eta_units = tuple(np.geomspace(1e-3, 0.5, 7))
        n_grid, d_grid, eps_grid = (5, 10, 20), (250, 1000, 4000), (0.05, 0.005)
    eta_units = np.asarray(eta_units, dtype=float)
    rng = np.random.default_rng(ctx.rng)
    t0 = time.perf_counter()
    bar = ctx.bar(1 + len(n_grid) + len(d_grid) + len(eps_grid), unit="sweep")
    bar.set_postfix_str("gap against eta")
    g = _gap_vs_eta(rng, trials, n, d, eta_units, conv_steps)
    bar.update()
    fl = _floor_scaling(rng, trials, n, d, n_grid, d_grid, eps_grid, bar)
    bar.close()
    elapsed = time.perf_counter() - t0
    table = _step_size_table(eta_units, g, fl, n, d, n_grid, d_grid, eps_grid)
    claims = _step_size_claims(eta_units, g, fl, n, d)
    fig = optional_figure(_step_size_figure, eta_units, g, fl, n, d, trials, n_grid, d_grid)
    return ExperimentResult(
        name=ctx.name,
        params=ctx.params(locals(), "rng", "quick", minnorm=g["source"]),
        table=table,
        claims=claims,
        figure=fig,
        data={
            "gaps_orthogonal": g["gaps_o"],
            "gaps_near_orthogonal": g["gaps_n"],
            "floor": g["floor_n"],
            "floor_fit": g["floor_fit"],
            "gaps_to_flow_orthogonal": g["to_flow_o"],
            "gaps_to_flow_near_orthogonal": g["to_flow_n"],
            "slope_orthogonal": g["slope_o"],
            "floor_exponent_n": fl["p_n"],
            "floor_exponent_d": fl["p_d"],
            "floor_exponent_eps": fl["p_eps"],
            "seconds": elapsed,
        },
    )


def _gap_vs_eta(rng, trials, n, d, eta_units, conv_steps) -> dict:
    """Gaps against eta on orthogonal and near-orthogonal data, to W* and to the exact flow
    limit, and the fits of their shapes."""
    K_o, y_o = _step_size_data(rng, trials, n, d, orthogonal=True)
    astar_o = orthogonal_minnorm(K_o, y_o)
    flow_o, cert_o = _flow_limits(K_o, y_o)
    alpha_o, conv_o = _gd_limits(K_o, y_o, eta_units, conv_steps=conv_steps)
    gaps_o, to_flow_o = _gaps_to(alpha_o, astar_o, K_o), _gaps_to(alpha_o, flow_o, K_o)
    K_n, y_n = _step_size_data(rng, trials, n, d, orthogonal=False)
    sols = [minnorm_alpha(K_n[b], y_n[b]) for b in range(trials)]
    astar_n = np.stack([s[0] for s in sols])
    flow_n, cert_n = _flow_limits(K_n, y_n)
    alpha_n, conv_n = _gd_limits(K_n, y_n, eta_units, conv_steps=conv_steps)
    gaps_n, to_flow_n = _gaps_to(alpha_n, astar_n, K_n), _gaps_to(alpha_n, flow_n, K_n)
    g_o, g_n = gaps_o.mean(axis=0), gaps_n.mean(axis=0)
    slope_o, _ = power_law(eta_units, g_o)
    # The floor is the exact flow limit's gap; the eta-driven part behaves as on orthogonal data:
    # floor + c eta^p with c fitted (and, for comparison, the floor fitted too).
    floor_n = float(np.nanmean(_gap(flow_n, astar_n, K_n)))
    floor_fit, _ = _fit_floor(eta_units, g_n, slope_o)
    e = eta_units**slope_o
    c_n = float(np.sum(e / g_n * (1 - floor_n / g_n)) / np.sum(e**2 / g_n**2))
    return dict(
        to_flow_o=to_flow_o,
        to_flow_n=to_flow_n,
        slope_to_flow_o=power_law(eta_units, np.nanmean(to_flow_o, axis=0))[0],
        slope_to_flow_n=power_law(eta_units, np.nanmean(to_flow_n, axis=0))[0],
        flow_gap_o=float(
            np.nanmax(_gap(flow_o, astar_o, K_o) / np.sqrt(np.einsum("bkn,bnj,bkj->b", astar_o, K_o, astar_o)))
        ),
        flow_certified=np.concatenate([cert_o, cert_n]),
        floor_fit=floor_fit,
        gaps_o=gaps_o,
        gaps_n=gaps_n,
        g_o=g_o,
        g_n=g_n,
        conv_o=conv_o,
        conv_n=conv_n,
        source=sols[0][1],
        own_n=_own_sign_fraction(K_n, y_n, astar_n),
        slope_o=slope_o,
        c_o=float(np.exp(np.mean(np.log(g_o / eta_units)))),  # gap = c eta (slope fixed to 1)
        floor_n=floor_n,
        c_n=c_n,
        local_slope_n=float(np.log(g_n[1] / g_n[0]) / np.log(eta_units[1] / eta_units[0])),
        local_slope_o=float(np.log(g_o[1] / g_o[0]) / np.log(eta_units[1] / eta_units[0])),
    )


def _local_exponents(x, fl):
    """Log-log slopes between neighbouring floors."""
    f = np.array([v[0] for v in fl])
    return np.diff(np.log(f)) / np.diff(np.log(np.asarray(x, float)))


def _floor_scaling(rng, trials, n, d, n_grid, d_grid, eps_grid, bar=None) -> dict:
    """Floors over n at fixed d, over d at fixed n and over the init offset, with power-law fits.

    ``bar`` (a progress bar) advances by one per floor estimate.
    """

    def estimate(nn, dd, eps_frac=None):
        if bar is not None:
            bar.set_postfix_str(f"floor at n={nn}, d={dd}" + ("" if eps_frac is None else f", eps={eps_frac:g} y_min"))
        out = _floor_estimate(rng, trials, nn, dd, eps_frac=eps_frac)
        if bar is not None:
            bar.update()
        return out

    floors_n = [estimate(nn, d) for nn in n_grid]
    floors_d = [estimate(n, dd) for dd in d_grid]
    p_n, _ = power_law(np.asarray(n_grid, float), np.array([f[0] for f in floors_n]))
    p_d, _ = power_law(np.asarray(d_grid, float), np.array([f[0] for f in floors_d]))
    floors_eps = [estimate(n, d, eps_frac=f) for f in eps_grid]
    p_eps, _ = power_law(np.asarray(eps_grid, float), np.array([f[0] for f in floors_eps]))
    rel = lambda fl: np.array([f[0] / f[2] for f in fl])  # noqa: E731
    p_n_rel, _ = power_law(np.asarray(n_grid, float), rel(floors_n))
    p_d_rel, _ = power_law(np.asarray(d_grid, float), rel(floors_d))
    return dict(
        floors_n=floors_n,
        floors_d=floors_d,
        floors_eps=floors_eps,
        p_n=p_n,
        p_d=p_d,
        p_eps=p_eps,
        p_n_rel=p_n_rel,
        p_d_rel=p_d_rel,
        loc_n=_local_exponents(n_grid, floors_n),
        loc_d=_local_exponents(d_grid, floors_d),
    )


def _step_size_table(eta_units, g, fl, n, d, n_grid, d_grid, eps_grid):
    table = []
    for j, e in enumerate(eta_units):
        table.append(
            {
                "part": "gap_vs_eta",
                "eta_mu1": float(e),
                "gap_orthogonal": float(g["g_o"][j]),
                "gap_orthogonal_std": float(g["gaps_o"][:, j].std()),
                "gap_near_orthogonal": float(g["g_n"][j]),
                "gap_near_orthogonal_std": float(g["gaps_n"][:, j].std()),
                "gap_to_flow_orthogonal": float(np.nanmean(g["to_flow_o"][:, j])),
                "gap_to_flow_near_orthogonal": float(np.nanmean(g["to_flow_n"][:, j])),
            }
        )
    floors = [("floor_vs_n", {"n": nn, "d": d}, f) for nn, f in zip(n_grid, fl["floors_n"])]
    floors += [("floor_vs_d", {"n": n, "d": dd}, f) for dd, f in zip(d_grid, fl["floors_d"])]
    floors += [("floor_vs_eps", {"n": n, "d": d, "eps_over_ymin": e}, f) for e, f in zip(eps_grid, fl["floors_eps"])]
    for part, where, f in floors:
        row = {"part": part, **where}
        row.update(floor=f[0], floor_over_norm_Wstar=f[0] / f[2], own_sign_fraction=f[4])
        table.append(row)
    return table


def _step_size_claims(eta_units, g, fl, n, d):
    g_o, g_n, slope_o, local_slope_n = g["g_o"], g["g_n"], g["slope_o"], g["local_slope_n"]
    floor_n, p_n, p_d = g["floor_n"], fl["p_n"], fl["p_d"]
    conv = min(g["conv_o"], g["conv_n"])
    estimates = [f[3] for f in fl["floors_n"] + fl["floors_d"] + fl["floors_eps"]]
    certified = np.concatenate([g["flow_certified"], *estimates])
    return [
        Claim(
            "orthogonal_gap_proportional_to_eta",
            "orthogonal inputs: gap ∝ eta (log-log slope 1; -> 0 in the gradient-flow limit, Boursier et al. 2022)",
            f"slope {slope_o:.3f} over eta*mu1 in [{eta_units[0]:.2g}, {eta_units[-1]:.2g}]; gap/(eta*mu1) = {g['c_o']:.3g}",
            bool(abs(slope_o - 1) < 0.15),
        ),
        Claim(
            "near_orthogonal_gap_levels_off",
            "near-orthogonal inputs: gap falls with eta, then levels off at a floor (slope at the small-eta end << 1)",
            f"slope at small eta {local_slope_n:.3f} (orthogonal: {g['local_slope_o']:.3f}); exact flow-limit floor "
            f"{floor_n:.3g} (floor + c eta^p fitted to the GD gaps: {g['floor_fit']:.3g}), "
            f"gap at eta*mu1={eta_units[0]:.2g}: {g_n[0]:.3g} vs orthogonal {g_o[0]:.3g}; "
            f"W* of own-sign partition in {g['own_n']:.0%} of trials",
            bool(local_slope_n < 0.4 and floor_n > 0 and g_n[0] > 2 * g_o[0] and g_n[-1] > 3 * g_n[0]),
        ),
        Claim(
            "floor_scaling_beyond_papers",
            "(beyond the papers) the floor grows with n and falls with d",
            f"floor ∝ n^{p_n:.2f} (d={d}), ∝ d^{p_d:.2f} (n={n}), ∝ eps^{fl['p_eps']:.2f} (init offset); "
            f"relative to ||W*||: n^{fl['p_n_rel']:.2f}, d^{fl['p_d_rel']:.2f}; local exponents in n "
            + ", ".join(f"{v:.2f}" for v in fl["loc_n"])
            + "; in d "
            + ", ".join(f"{v:.2f}" for v in fl["loc_d"]),
            bool(p_n > 0 and p_d < 0),
        ),
        Claim(
            "orthogonal_flow_limit_is_min_norm",
            "orthogonal inputs: the exact gradient-flow limit is the minimum-norm solution (Boursier et al. 2022)",
            f"max ||W_flow - W*|| / ||W*|| = {g['flow_gap_o']:.1e} (closed form of W*)",
            bool(g["flow_gap_o"] < 1e-10),
        ),
        Claim(
            "gd_limit_to_flow_limit_proportional_to_eta",
            "the GD limit approaches the exact gradient-flow limit in proportion to eta, on both kinds of data",
            f"log-log slope of ||W_GD - W_flow|| against eta: orthogonal {g['slope_to_flow_o']:.3f}, "
            f"near-orthogonal {g['slope_to_flow_n']:.3f}",
            bool(abs(g["slope_to_flow_o"] - 1) < 0.15 and abs(g["slope_to_flow_n"] - 1) < 0.3),
        ),
        Claim(
            "runs_converged", "every GD run reached the gradient tolerance", f"{conv:.0%} converged", bool(conv == 1.0)
        ),
        Claim(
            "flow_limits_certified",
            "the exact flow reaches a certified limit on every problem (a flow that stopped early, status stuck or "
            "max_events, would be left out of the floors and of the distances to the flow limit)",
            f"{int(certified.sum())} of {certified.size} flow limits certified; gap against eta: "
            f"{int(g['flow_certified'].sum())} of {g['flow_certified'].size}; fewest in one floor estimate: "
            f"{min(int(e.sum()) for e in estimates)} of {len(estimates[0])}",
            bool(certified.all()),
        ),
    ]


def _step_size_figure(eta_units, g, fl, n, d, trials, n_grid, d_grid):
    """Gap against eta (both data kinds) and the floor against n and d (ImportError without matplotlib)."""
    from relucore.plots._literature import plot_floor_scaling, plot_step_size_gap
    from relucore.plots._style import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained")
    plot_step_size_gap(
        eta_units, g["gaps_o"], g["gaps_n"], ax=axes[0], slope=g["c_o"], floor=(g["floor_n"], g["c_n"], g["slope_o"])
    )
    for gaps, color, label in ((g["to_flow_o"], "C0", "orthogonal"), (g["to_flow_n"], "C3", "near-orthogonal")):
        axes[0].plot(
            eta_units, np.nanmean(gaps, axis=0), ls="--", lw=0.8, color=color, label=f"‖W_GD − W_flow‖, {label}"
        )
    axes[0].legend(fontsize=6)
    plot_floor_scaling(
        n_grid, [f[0] for f in fl["floors_n"]], d_grid, [f[0] for f in fl["floors_d"]], ax=axes[1], fixed_d=d, fixed_n=n
    )
    axes[0].set_title(f"2-ReLU, positive init, square loss: n={n}, d={d}, {trials} trials", fontsize=9)
    axes[1].set_title(
        "floor = exact gradient-flow gap on near-orthogonal data\n(beyond the papers: relucore.flow, power-law fits)",
        fontsize=9,
    )
    fig.suptitle(
        "‖W_GD − W*‖ against the step size (W*: " + g["source"] + "; W_flow: exact gradient-flow limit)", fontsize=9
    )
    return fig
