"""One neuron (Lai et al. 2026, eq. (7), Lemma 3): the dual bound-constrained QP solved in C++."""

from __future__ import annotations

import numpy as np

from relucore import _core
from relucore.theory.minnorm.linalg import knorm
from relucore.theory.minnorm.results import KKTCertificate, MinNormSolution

__all__ = ["minnorm_single"]


def minnorm_single(X, K, y, s: float) -> MinNormSolution:
    n = y.size
    t = y / s
    fit = t > 0  # examples the neuron must interpolate (S+ for s = +1)
    c = np.where(fit, t, 0.0)
    lower = np.full(n, -np.inf)
    upper = np.where(fit, np.inf, 0.0)
    qp = _core.qp_box(H=np.ascontiguousarray(K), c=c, lower=lower, upper=upper)
    z, status = qp.z, qp.status
    alpha = z[None, :].copy()
    beta = (K @ z)[None, :]
    W = None if X is None else alpha @ X
    if W is not None:
        beta = W @ X.T  # the primal check uses X directly, not K
    nu = np.where(fit, z, 0.0)  # multipliers of x_i^T w = t_i
    mu = np.where(fit, 0.0, -z)  # multipliers of x_j^T w <= 0 (>= 0)
    mu_proj = np.maximum(mu, 0.0)
    phi = nu - mu_proj
    ymax = max(float(np.max(np.abs(t))), 1e-300)
    if W is not None:
        wn = max(float(np.linalg.norm(W)), 1e-300)
        stat = float(np.linalg.norm(W[0] - X.T @ phi)) / wn
    else:
        wn = max(knorm(K, alpha), 1e-300)
        stat = knorm(K, alpha[0] - phi) / wn
    pred = beta[0]
    primal = (
        max(
            float(np.max(np.abs(pred[fit] - t[fit]), initial=0.0)),
            float(np.max(np.maximum(pred[~fit], 0.0), initial=0.0)),
        )
        / ymax
    )
    mscale = max(float(np.max(np.abs(z))), 1e-300)
    dual = float(np.max(np.maximum(-mu, 0.0), initial=0.0)) / mscale
    comp = float(np.max(np.abs(mu * pred) * (~fit), initial=0.0)) / max(mscale * ymax, 1e-300)
    cert = KKTCertificate(stat, primal, dual, comp)
    active = (fit | (z < 0))[None, :]
    obj = 0.5 * float(z @ K @ z)
    ok = status.success
    msg = (
        f"solved the dual QP of Eq. (7) in {qp.block_iterations} block pivots"
        + (f" and {qp.primal_iterations} primal active-set steps" if qp.used_fallback else "")
        + f"; |S| = {int(active.sum())}; {cert}"
        if ok
        else f"active-set solver failed ({status.message}); {cert}"
    )
    return MinNormSolution(
        W=W,
        alpha=alpha,
        beta=beta,
        signs=np.array([s]),
        objective=obj,
        active_set=active,
        partition=None,
        certificate=cert,
        search=None,
        exact=ok,
        kind="exact" if ok else "failed",
        success=ok,
        status=status,
        message=msg,
        nit=qp.block_iterations + qp.primal_iterations,
    )
