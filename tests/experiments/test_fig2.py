"""fig2: gap scaling of Theorem 2; the Gram-space gap checked against weight space."""

import numpy as np
import pytest

import relucore
from relucore import experiments
from relucore.experiments import lai_gap


def test_fig2_tiny_slopes_have_the_theorem2_signs_and_sizes():
    r = experiments.run(
        "fig2",
        n_grid=(4, 8, 16, 32),
        d_fixed=2000,
        d_grid=(400, 1600, 6400),
        n_fixed=8,
        powerlaw_d=6400,
        powerlaw_exponents=(0.15, 0.4),
        trials=8,
        n_boot=200,
        rng=1,
    )
    s = r.data["slopes"]
    slope_n, ci_n = s["n_minus"]
    slope_l, ci_l = s["lambda_all"]
    assert 0.3 <= slope_n <= 0.75 and ci_n[0] < slope_n < ci_n[1]
    assert -0.75 <= slope_l <= -0.3 and ci_l[0] < slope_l < ci_l[1]
    assert -0.75 <= s["lambda_isotropic"][0] <= -0.3
    assert -0.8 <= s["lambda_powerlaw"][0] <= -0.2
    claims = {c.name: c for c in r.claims}
    assert claims["slope_n_minus"].passed and claims["slope_lambda_all"].passed and claims["converged"].passed
    assert {row["spectrum"] for row in r.table} >= {"isotropic", "power law a=0.15"}
    assert r.figure is not None


def test_gram_space_gap_equals_weight_space_gap(problem):
    X, y = problem(4, n=8, d=500)
    K = X @ X.T
    gaps, eta, ok = lai_gap._gaps(K[None], y[None], 20_000, None)
    res = relucore.train(X, y)
    w_star = relucore.minnorm(X, y).W[0]
    assert ok[0]
    assert gaps[0] == pytest.approx(np.linalg.norm(res.W[0] - w_star), rel=1e-8)


def test_bootstrap_slope_recovers_an_exact_power_law():
    x = np.repeat([1.0, 2.0, 4.0, 8.0], 5)
    s, (lo, hi) = lai_gap.bootstrap_slope(x, 3.0 * x**-0.5, n_boot=100, rng=0)
    assert s == pytest.approx(-0.5, abs=1e-12)
    assert lo == pytest.approx(-0.5, abs=1e-12) and hi == pytest.approx(-0.5, abs=1e-12)
