"""Theorem 2/4/6 bounds and the gap between the GD limit and w* (Fig. 2)."""

import numpy as np
import pytest

import relucore as rc


def test_bound_formulas():
    lo, hi = rc.theorem2_bounds(4, 0.1, 1.0, 2000.0, C=100.0, C_g=2.0)
    assert lo == pytest.approx(np.sqrt(4 * 0.01 / (100 * 2 * 2000)))
    assert hi == pytest.approx(np.sqrt(16 * 4 / (2 * 2000)))
    b = rc.theorem4_bounds(6, 4, 0.1, 1.0, 2000.0)
    assert b["plus"] == rc.theorem2_bounds(4, 0.1, 1.0, 2000.0)
    assert b["minus"] == rc.theorem2_bounds(6, 0.1, 1.0, 2000.0)
    lo6, hi6 = rc.theorem6_bounds(4, 10, 1.0, 2000.0, C_g=2.0, C_alpha=10.0)
    assert lo6 == 0.0 and hi6 == pytest.approx(np.sqrt(4 * 2 * 100 * 40 / 2000))
    with pytest.raises(AttributeError, match="theorem6_bound was renamed in 1.0: use relucore.theorem6_bounds"):
        rc.theorem6_bound  # noqa: B018 (the 0.x name)
    assert rc.step_constant(1e-3, 500.0) == pytest.approx(2.0)
    assert rc.normalized_gap(0.1, 2000.0, 5) == pytest.approx(0.1 * 20)


def test_gap_in_gram_mode_is_a_quadratic_form():
    ds = rc.sample(8, 300, rng=0)
    a, b = np.random.default_rng(0).standard_normal((2, 2, 8))
    K = ds.X @ ds.X.T
    assert rc.limit_gap(a @ ds.X, b @ ds.X) == pytest.approx(rc.limit_gap(a, b, gram=K), rel=1e-10)


def test_theorem2_over_50_seeds_with_gradient_descent():
    """n = 10, d = 2000, |y| ~ U(0.1, 1) with random signs, all-positive init, train's default step.

    Constants: C_g = 1 / (eta ||lambda||_1) (the run's step sits at the top of the
    theorem's window) and C = 100 for the lower bound. Measured normalised gaps
    ||w_inf - w*|| sqrt(||lambda||_1 / n_-) lie in about [0.26, 0.79] over these
    seeds; the bounds are y_min / sqrt(C C_g) <= . <= 4 y_max / sqrt(C_g).
    """
    seen = 0
    for seed in range(50):
        ds = rc.sample(10, 2000, rng=seed)
        n_minus = int(np.sum(ds.y <= 0))
        if n_minus == 0:
            continue
        res = rc.train(ds.X, ds.y, steps=50_000)
        assert res.success
        assert rc.check_limit(res, ds.X, ds.y).applies
        star = rc.minnorm(ds.X, ds.y)
        gap = rc.limit_gap(res.W, star.W)
        assert gap > 1e-3 * np.linalg.norm(star.W)  # the GD limit differs from w*
        C_g = rc.step_constant(res.eta, ds.norm1)
        ay = np.abs(ds.y)
        lo, hi = rc.theorem2_bounds(n_minus, ay.min(), ay.max(), ds.norm1, C=100.0, C_g=C_g)
        assert lo <= gap <= hi, (seed, lo, gap, hi)
        seen += 1
    assert seen >= 45


def test_gram_only_pipeline_at_d_1e9():
    """sample_gram -> train(gram=) -> check_limit -> minnorm(gram=) -> gap as a quadratic form in K."""
    norm_gaps = []
    for seed in range(5):
        gd = rc.sample_gram(10, 10**9, rng=seed)
        n_minus = int(np.sum(gd.y <= 0))
        res = rc.train(gram=gd.K, y=gd.y, steps=50_000)
        chk = rc.check_limit(res, gram=gd.K, y=gd.y)
        assert res.success and chk.applies and chk.relative_distance < 1e-9
        star = rc.minnorm(gram=gd.K, y=gd.y)
        assert star.certificate.max_residual <= 1e-10
        gap = rc.limit_gap(res.alpha, star.alpha, gram=gd.K)
        ay = np.abs(gd.y)
        lo, hi = rc.theorem2_bounds(
            n_minus, ay.min(), ay.max(), gd.norm1, C=100.0, C_g=rc.step_constant(res.eta, gd.norm1)
        )
        assert lo <= gap <= hi
        norm_gaps.append(rc.normalized_gap(gap, gd.norm1, n_minus))
    # Theta(1) even though the gap itself is ~ 1e-5.
    assert 0.05 < min(norm_gaps) and max(norm_gaps) < 2.0


def test_theorem4_two_neurons_over_20_seeds():
    """m = 2, s = (+1, -1), all-positive init: Theorem 4 for w_plus (n_-) and w_minus (n_+).

    Same constants as Theorem 2 (C = 100, C_g = 1/(eta ||lambda||_1), about 2.2 for
    train's default step 1/(2 mu_1)). Measured normalised gaps lie in about [0.11, 0.38].
    """
    for seed in range(20):
        ds = rc.sample(10, 2000, rng=seed)
        n_plus = int(np.sum(ds.y > 0))
        n_minus = 10 - n_plus
        if n_plus == 0 or n_minus == 0:
            continue
        res = rc.train(ds.X, ds.y, signs=(1, -1), steps=50_000)
        star = rc.minnorm(ds.X, ds.y, signs=(1, -1))
        assert star.exact
        ay = np.abs(ds.y)
        b = rc.theorem4_bounds(
            n_plus, n_minus, ay.min(), ay.max(), ds.norm1, C=100.0, C_g=rc.step_constant(res.eta, ds.norm1)
        )
        gp = rc.limit_gap(res.W[0], star.W[0])
        gm = rc.limit_gap(res.W[1], star.W[1])
        assert b["plus"][0] <= gp <= b["plus"][1]
        assert b["minus"][0] <= gm <= b["minus"][1]


def test_theorem6_three_neurons_exact_minimum_norm():
    """m = 3, s = (+1, +1, -1), disjoint init: the exact w* of Eq. (52) by the search, and Theorem 6's bound."""
    for seed in range(3):
        ds = rc.sample(6, 2000, rng=seed)
        res = rc.train(ds.X, ds.y, signs=(1, 1, -1), init="disjoint", steps=50_000)
        assert rc.check_limit(res, ds.X, ds.y).applies
        star = rc.minnorm(ds.X, ds.y, signs=(1, 1, -1))
        assert star.exact and star.kind == "exact"
        gap = rc.limit_gap(res.W, star.W)
        bound = rc.theorem6_bounds(
            3, 6, np.abs(ds.y).max(), ds.norm1, C_g=rc.step_constant(res.eta, ds.norm1), C_alpha=10.0
        ).upper
        assert 0 < gap <= bound


def test_bounds_are_named_and_unpack_as_before():
    from relucore.theory.bounds import GapBounds

    b = rc.theorem2_bounds(4, 0.1, 1.0, 2000.0)
    lo, hi = b
    assert isinstance(b, GapBounds) and isinstance(b, tuple) and len(b) == 2
    assert (b.lower, b.upper) == (lo, hi) == (b[0], b[1])
    assert b == (lo, hi) and b._asdict() == {"lower": lo, "upper": hi}
    b4 = rc.theorem4_bounds(6, 4, 0.1, 1.0, 2000.0)
    assert set(b4) == {"plus", "minus"} and b4["minus"].upper == rc.theorem2_bounds(6, 0.1, 1.0, 2000.0)[1]
