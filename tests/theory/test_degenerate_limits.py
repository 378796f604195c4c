"""steps=np.inf on degenerate data (collinear or duplicate examples, n > d): a certified correct limit
or the run to tol marked uncertified, and a final phase that is not strictly contracting reported
within ``limit_noncontracting_steps`` steps, not after the 10^7-step budget."""

import warnings

import numpy as np
import pytest

import relucore
from relucore import Status
from relucore.gd.limit import NONCONTRACTING_STEPS


def _beta_matches_W(res, X):
    """beta = X W to the rounding of the dual run: beta and W are both formed from alpha, whose
    null-space part (K singular) can grow, so the bound scales with |alpha| |K| n as well."""
    beta = np.einsum("nd,kd->kn", X, res.W)
    K = X @ X.T
    n = X.shape[0]
    scale = max(np.abs(res.W).max() * np.abs(X).max() * X.shape[1], np.abs(res.alpha).max() * np.abs(K).max() * n)
    return np.abs(beta - res.beta).max() <= 1e-12 * scale


def _run(X, y, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return relucore.train(X, y, signs=(1, -1), init="gaussian", rng=seed, steps=np.inf)


@pytest.mark.parametrize("kind", ["collinear", "duplicate"])
def test_collinear_and_duplicate_examples_never_succeed_off_the_run(kind):
    """The reproducer: 19 of 300 collinear runs returned success with beta != X W and a loss 8x the start's."""
    for seed in range(60):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(20)
        c = rng.uniform(-2, 2) if kind == "collinear" else 1.0
        X = np.stack([x, c * x])
        y = rng.uniform(0.2, 1, 2) * rng.choice([-1, 1], 2)
        try:
            res = _run(X, y, seed)
        except ValueError:
            continue  # refused (e.g. a starting point the checks reject): a clear answer
        assert _beta_matches_W(res, X), (seed, res.message)
        if res.success:
            h0 = np.array([1.0, -1.0]) @ np.maximum(res.beta0, 0)
            assert res.loss <= 0.5 * np.sum((h0 - y) ** 2), (seed, res.message)
            assert res.certificate.holds or "not certified" in res.message


@pytest.mark.parametrize("d", [3, 4, 5])
def test_a_singular_final_phase_is_reported_within_the_patience(d):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, d))
    y = rng.uniform(0.2, 1, 20) * rng.choice([-1, 1], 20)
    res = _run(X, y, 0)
    assert not res.certificate.holds and not res.success
    assert "not strictly contracting" in res.message
    # Stalled (a stationary point that leaves examples unfit), or stopped at most the patience after
    # the first failed try of the proof (the first try is at step 1): never the 10^7-step budget.
    assert res.status == Status.stalled or "n > d" in res.message
    assert res.nit <= NONCONTRACTING_STEPS + 2
    assert _beta_matches_W(res, X)


def test_n_greater_than_d_success_needs_the_gradient_at_the_returned_point_below_tol():
    # n = 12 > d = 4: K has rank 4 and the engine's running gradient norm (the dual form g K g, which cancels)
    # fell below tol at step 716 while the gradient at the returned point is ~1.4e-8 (2.1e-8 from X directly),
    # three decades above tol; this run reported success. One rule for success: it is not a stationary point.
    rng = np.random.default_rng(abs(-301 * 2003 - 285) % 1000)
    X = rng.standard_normal((12, 4))
    y = rng.uniform(0.2, 1, 12) * rng.choice([-1.0, 1.0], 12)
    W0 = rng.standard_normal((2, 4)) * 0.3
    r = relucore.train(X, y, signs=(1, -1), init=W0, steps=np.inf)
    G = (np.array([1.0, -1.0])[:, None] * (r.beta > 0) * (np.array([1.0, -1.0]) @ np.maximum(r.beta, 0) - y)) @ X
    if np.linalg.norm(G) > r.tol:  # the returned point (numpy, from X) is not stationary to tol
        assert (
            not r.success
            and r.status == Status.max_steps
            and r.grad_norm > r.tol
            and "not a stationary point" in r.message
        )
    assert not r.success or relucore.verify(r, X, y).holds
