"""Exact normalisation of the data's scale (relucore._scaling, docs/errors.md "Scale of the data").

The reference is the same problem at unit scale: by the homogeneity of the model, the run on
``2^k X, 2^j y`` is the unit-scale run with ``W -> 2^(j-k) W``, ``beta -> 2^j beta``,
``alpha -> 2^(j-2k) alpha``, and with powers of two every rounding is the same.
"""

import warnings

import numpy as np
import pytest
from _scale_families import BUDGET, shaped
from _scale_families import mixed as _mixed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relucore
from relucore import Status
from relucore._scaling import SAFE_EXPONENT, binary_exponent, plan_scaling
from relucore.gd.prepare import prepare
from relucore.theory.limits import PremiseWarning


def _inside(k, j, X, y) -> bool:
    """Whether 2^k X, 2^j y lie in the range that runs unscaled."""
    return abs(binary_exponent(X) + k) <= SAFE_EXPONENT and abs(binary_exponent(y) + j) <= SAFE_EXPONENT


def _same_run(res, ref, k, j):
    """res is ref on 2^k X, 2^j y: every array scaled exactly, the same status and step count."""
    assert res.status == ref.status and res.nit == ref.nit and res.success == ref.success
    np.testing.assert_array_equal(res.beta, np.ldexp(ref.beta, j))
    np.testing.assert_array_equal(res.alpha, np.ldexp(ref.alpha, j - 2 * k))
    np.testing.assert_array_equal(res.W, np.ldexp(ref.W, j - k))
    np.testing.assert_array_equal(res.W0, np.ldexp(ref.W0, j - k))
    assert res.loss == np.ldexp(ref.loss, 2 * j) and res.grad_norm == np.ldexp(ref.grad_norm, k + j)
    assert res.eta == np.ldexp(ref.eta, -2 * k) and res.tol == np.ldexp(ref.tol, k + j)


def test_binary_exponent_is_the_exponent_of_the_largest_magnitude():
    assert binary_exponent(np.array([0.5, -0.75])) == 0
    assert binary_exponent(np.array([3.0, -1.0])) == 2
    assert binary_exponent(np.array([1.0, -4.0])) == 3
    assert binary_exponent(np.zeros(3)) == 0
    assert binary_exponent(np.array([np.ldexp(1.0, -1074)])) == -1073


def test_ordinary_scales_are_not_rescaled():
    X, y = _mixed()
    for k in (-SAFE_EXPONENT + 1, 0, SAFE_EXPONENT - 1):
        assert plan_scaling(np.ldexp(X, k)[None], None, y[None]) is None
        assert prepare(np.ldexp(X, k), y, signs=(1, -1)).scaling is None
    sc = plan_scaling(np.stack([X, np.ldexp(X, 100)]), None, np.stack([y, y]))
    # Only the problem out of range is rescaled: a problem's bits do not depend on its batch.
    assert sc.ex.tolist() == [0, binary_exponent(X) + 100] and sc.ey.tolist() == [0, binary_exponent(y)]


def test_the_prepare_step_rescales_only_the_flagged_problem_of_a_batch():
    """The C++ step (PrepareSettings.rescale) returns the exponents of the rule, and the prepared copy of a
    far-from-unit problem is the unit-scale problem's start, bit for bit, in the copy's units."""
    X, y = _mixed()
    Xb, yb = np.stack([X, np.ldexp(X, -300)]), np.stack([y, np.ldexp(y, 120)])
    p = prepare(Xb, yb, signs=(1, -1), eta=np.array([0.1, np.ldexp(0.1, 600)]))
    sc = plan_scaling(Xb, None, yb)
    assert p.scaling.ex.tolist() == sc.ex.tolist() and p.scaling.ey.tolist() == sc.ey.tolist()
    assert p.caller[0] is not None and p.eta.tolist() == [0.1, np.ldexp(0.1, 2 * binary_exponent(X))]
    ref = prepare(np.ldexp(X, -binary_exponent(X)), np.ldexp(y, -binary_exponent(y)), signs=(1, -1))
    np.testing.assert_array_equal(p.X[1], ref.X[0])
    for got, want in ((p.y, ref.y), (p.alpha0, ref.alpha0), (p.W0, ref.W0), (p.beta0, ref.beta0), (p.K, ref.K)):
        np.testing.assert_array_equal(got[1], want[0])
    unit = prepare(X, y, signs=(1, -1), eta=0.1)
    np.testing.assert_array_equal(p.alpha0[0], unit.alpha0[0])


@pytest.mark.parametrize("k, j", [(-330, 0), (0, -900), (300, 200), (100, 0), (-70, 70), (0, 500)])
def test_a_finite_run_far_from_unit_scale_is_the_unit_run_scaled_exactly(k, j):
    X, y = _mixed()
    ref = relucore.train(X, y, signs=(1, -1))
    _same_run(relucore.train(np.ldexp(X, k), np.ldexp(y, j), signs=(1, -1)), ref, k, j)


def test_a_gaussian_start_is_drawn_in_the_callers_units():
    X, y = _mixed()
    k, j = 150, -120
    ref = relucore.train(X, y, signs=(1, -1), init="gaussian", init_scale=0.01, rng=5)
    res = relucore.train(
        np.ldexp(X, k), np.ldexp(y, j), signs=(1, -1), init="gaussian", init_scale=np.ldexp(0.01, j - k), rng=5
    )
    _same_run(res, ref, k, j)
    K = X @ X.T
    ref = relucore.train(None, y, gram=K, signs=(1, -1), init="gaussian", init_scale=0.01, rng=5)
    res = relucore.train(
        None,
        np.ldexp(y, j),
        gram=np.ldexp(K, 2 * k),
        signs=(1, -1),
        init="gaussian",
        init_scale=np.ldexp(0.01, j - k),
        rng=5,
    )
    assert res.status == ref.status and res.nit == ref.nit
    np.testing.assert_array_equal(res.beta, np.ldexp(ref.beta, j))
    np.testing.assert_array_equal(res.alpha, np.ldexp(ref.alpha, j - 2 * k))


def test_given_options_are_taken_in_the_callers_units():
    X, y = _mixed()
    k, j = -200, 90
    W0 = np.random.default_rng(4).standard_normal((2, X.shape[1])) * 0.1
    ref = relucore.train(X, y, signs=(1, -1), init=W0, eta=0.05, tol=1e-9, steps=300, engine="dual")
    res = relucore.train(
        np.ldexp(X, k),
        np.ldexp(y, j),
        signs=(1, -1),
        init=np.ldexp(W0, j - k),
        eta=np.ldexp(0.05, -2 * k),
        tol=np.ldexp(1e-9, k + j),
        steps=300,
        engine="dual",
    )
    _same_run(res, ref, k, j)
    ref = relucore.train(X, y, signs=(1, -1), eps=0.01, record=7)
    res = relucore.train(np.ldexp(X, k), np.ldexp(y, j), signs=(1, -1), eps=np.ldexp(0.01, j), record=7)
    _same_run(res, ref, k, j)
    np.testing.assert_array_equal(res.history.beta, np.ldexp(ref.history.beta, j))
    np.testing.assert_array_equal(res.history.loss, np.ldexp(ref.history.loss, 2 * j))


def test_a_batch_mixing_scales_gives_each_problem_its_own_run():
    X, y = _mixed()
    X2, y2 = _mixed(seed=2)
    batch = relucore.train(np.stack([X, np.ldexp(X2, -200)]), np.stack([y, np.ldexp(y2, 100)]), signs=(1, -1))
    one = relucore.train(X, y, signs=(1, -1))
    two = relucore.train(X2, y2, signs=(1, -1))
    np.testing.assert_array_equal(batch.beta[0], one.beta)
    np.testing.assert_array_equal(batch.W[0], one.W)
    np.testing.assert_array_equal(batch.beta[1], np.ldexp(two.beta, 100))
    np.testing.assert_array_equal(batch.W[1], np.ldexp(two.W, 300))
    assert batch.status.tolist() == [one.status, two.status]


def test_the_certified_limit_of_tiny_data_is_the_limit_of_the_data():
    """The reproducer: X 1e-100 certified a wrong limit with margin inf."""
    X, y = _mixed()
    ref = relucore.train(X, y, signs=(1, -1), steps=np.inf)
    assert ref.certificate.holds
    for c in (1e-100, 2.0**-330, 1e80, 1e100):
        res = relucore.train(X * c, y, signs=(1, -1), steps=np.inf)
        assert res.certificate.holds and res.status == Status.certified
        np.testing.assert_allclose(res.beta, ref.beta, rtol=0, atol=1e-12 * np.abs(ref.beta).max())
        np.testing.assert_allclose(res.W * c, ref.W, rtol=0, atol=1e-12 * np.abs(ref.W).max())
        assert np.isclose(res.certificate.margin, ref.certificate.margin, rtol=1e-10)
        assert res.certificate.step == ref.certificate.step


def test_tiny_labels_on_large_data_are_fitted_or_refused():
    """The reproducer: X 1e150 with y 1e-100 reported 'converged after 0 steps' with nothing fitted."""
    X, y = _mixed()
    for steps in (10000, np.inf):
        res = relucore.train(X * 1e150, y * 1e-5, signs=(1, -1), steps=steps)
        assert res.success and res.nit > 0
        np.testing.assert_allclose(res.predictions, y * 1e-5, rtol=1e-9)
        beta = np.einsum("nd,kd->kn", X * 1e150, res.W)
        np.testing.assert_allclose(beta, res.beta, rtol=0, atol=1e-12 * np.abs(res.beta).max())
        # alpha ~ 1e-100 / 1e300 is below float64's range: refused with the reason.
        with pytest.raises(ValueError, match=r"X is too large \(or y too small\).*dual coordinates \(~ 2\^-1328\)"):
            relucore.train(X * 1e150, y * 1e-100, signs=(1, -1), steps=steps)


def test_results_float64_cannot_hold_are_refused():
    X, y = _mixed()
    for steps in (10000, np.inf):
        with pytest.raises(ValueError, match=r"X is too small \(or y too large\): max \|x_ij\| ~ 2\^-1001"):
            relucore.train(np.ldexp(X, -1000), y, signs=(1, -1), steps=steps)


@pytest.mark.parametrize(
    "kwargs, what",
    [
        (dict(loss="logistic"), "loss='logistic'"),
        (dict(bias=True, steps=10), "bias=True"),
        (dict(train_outer=True, steps=10), "train_outer=True"),
    ],
)
def test_models_that_do_not_rescale_refuse_out_of_range_data(kwargs, what):
    X, y = _mixed()
    if kwargs.get("loss") == "logistic":
        y = np.sign(y)
    with pytest.raises(ValueError, match=r"out of range for " + what.replace("(", r"\(") + r".*\[2\^-64, 2\^64\]"):
        relucore.train(X * 1e30, y, signs=(1, -1), **kwargs)
    relucore.train(X * 1e15, y, signs=(1, -1), **{**kwargs, "steps": 1})  # inside the range: runs


def test_front_ends_without_a_scale_back_refuse_clearly():
    X, y = _mixed()
    with pytest.raises(ValueError, match=r"out of range for meanfield.train .*max \|x_ij\| ~ 2\^-333"):
        relucore.meanfield.train(X * 1e-100, y, m=4, steps=2, progress=False)
    with pytest.raises(ValueError, match=r"out of range for meanfield.train .*max \|y_i\| ~ 2\^"):
        relucore.meanfield.train(X, y * 1e30, m=4, steps=2, progress=False)
    # The closed form scales back like train: 2^k X, 2^j y give W -> 2^(j-k) W exactly.
    with warnings.catch_warnings():  # n = 5, d = 40: the theorem's premise may fail (a warning); the scaling holds
        warnings.simplefilter("ignore", PremiseWarning)
        W = relucore.predicted_limit(X, y, signs=(1, -1))
        W2 = relucore.predicted_limit(np.ldexp(X, -300), np.ldexp(y, 80), signs=(1, -1))
    np.testing.assert_array_equal(W2, np.ldexp(W, 380))


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(-1000, 1000),
    j=st.integers(-1000, 1000),
    shape=st.sampled_from(["plain", "collinear", "duplicate", "n>d"]),
    steps=st.sampled_from([2000, np.inf]),
)
def test_scale_families_are_covariant_or_refused(k, j, shape, steps):
    """Every result on 2^k X, 2^j y is a clear ValueError or the unit-scale result scaled back:
    the same status and certificate verdict, beta within 1e-12 (exactly, with powers of two)."""
    X, y, W0 = shaped(shape, abs(k * 2003 + j) % 1000)
    try:
        ref = relucore.train(X, y, signs=(1, -1), init=W0, steps=steps)
    except ValueError:
        return  # refused at unit scale (e.g. an ill-conditioned K): nothing to compare
    with np.errstate(over="ignore", under="ignore"):
        W0s = np.ldexp(W0, j - k)
    if not (np.isfinite(W0s).all() and np.abs(W0s).max() >= np.finfo(float).tiny):
        return  # the start itself is out of float64's range at this scale
    try:
        res = relucore.train(np.ldexp(X, k), np.ldexp(y, j), signs=(1, -1), init=W0s, steps=steps)
    except ValueError as err:
        assert "float64" in str(err) or "range" in str(err)
        return
    assert res.status == ref.status and res.success == ref.success
    np.testing.assert_allclose(np.ldexp(res.beta, -j), ref.beta, rtol=0, atol=1e-12 * max(np.abs(ref.beta).max(), 1))
    if steps == np.inf:
        assert res.certificate.holds == ref.certificate.holds
    if res.success:
        assert relucore.verify(res, np.ldexp(X, k), np.ldexp(y, j)).holds


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(-1000, 1000), j=st.integers(-1000, 1000), shape=st.sampled_from(["plain", "duplicate"]))
def test_scale_families_of_the_flow_and_minnorm(k, j, shape):
    """The flow and minnorm rescale exactly: scale-covariant, or a clear ValueError where float64 cannot hold
    the answer; every success passes verify."""
    X, y = _mixed(seed=4)
    if shape == "duplicate":
        X[2], y[2] = X[0], y[0]
    Xs, ys = np.ldexp(X, k), np.ldexp(y, j)
    inside = _inside(k, j, X, y)
    try:
        ref = relucore.flow(X, y, signs=(1, -1))
    except ValueError:  # duplicate rows: the positive start needs K invertible, refused at every scale
        with pytest.raises(ValueError):
            relucore.flow(Xs, ys, signs=(1, -1))
        ref = None
    if ref is not None:
        try:
            fl = relucore.flow(Xs, ys, signs=(1, -1))
        except ValueError as err:  # only where float64 cannot hold the result in the caller's units
            assert not inside and "float64" in str(err)
        else:
            assert fl.status == ref.status and fl.success == ref.success
            np.testing.assert_allclose(np.ldexp(fl.beta, -j), ref.beta, rtol=0, atol=1e-12 * np.abs(ref.beta).max())
            if fl.success:
                assert relucore.verify(fl, Xs, ys).holds
    try:
        mref = relucore.minnorm(X, y, signs=(1, -1))
    except ValueError:  # duplicate rows: K singular, refused at every scale
        with pytest.raises(ValueError, match="singular"):
            relucore.minnorm(Xs, ys, signs=(1, -1))
        return
    try:
        mn = relucore.minnorm(Xs, ys, signs=(1, -1))
    except ValueError as err:
        assert "too small" in str(err) or "too large" in str(err)
        return
    assert mn.success == mref.success
    np.testing.assert_allclose(np.ldexp(mn.beta, -j), mref.beta, rtol=0, atol=1e-12 * np.abs(mref.beta).max())
    if mn.success and inside:
        assert relucore.verify(mn, Xs, ys).holds
