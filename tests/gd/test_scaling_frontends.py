"""Exact normalisation of the data's scale in relucore.flow, relucore.Trainer and relucore.verify
(relucore._scaling, docs/errors.md "Scale of the data").

The reference is the same problem at unit scale. On ``2^k X, 2^j y`` the flow is the unit-scale
flow with ``beta -> 2^j beta``, ``alpha -> 2^(j-2k) alpha``, ``W -> 2^(j-k) W`` and every time
``t -> 4^-k t`` (``dW/dt = -grad R``: the gradient scales as ``2^(k+j)``, W as ``2^(j-k)``); the
contraction rate ``exp(-mu_min(M))`` per unit time becomes the unit rate to the power ``4^k``.
Powers of two scale every rounding the same way, so the comparisons are bitwise.
"""

import pickle

import numpy as np
import pytest
from _scale_families import BUDGET, shaped
from _scale_families import mixed as _mixed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relucore
from relucore import Status

SIGNS = (1, -1)


def _same_flow(fl, ref, k, j):
    assert fl.status == ref.status and fl.success == ref.success and fl.event_kinds == ref.event_kinds
    for a, b, e in (
        (fl.beta, ref.beta, j),
        (fl.alpha, ref.alpha, j - 2 * k),
        (fl.W, ref.W, j - k),
        (fl.W0, ref.W0, j - k),
        (fl.beta_t, ref.beta_t, j),
        (fl.alpha_t, ref.alpha_t, j - 2 * k),
        (fl.event_times, ref.event_times, -2 * k),
    ):
        np.testing.assert_array_equal(a, np.ldexp(b, e))
    assert fl.t_final == np.ldexp(ref.t_final, -2 * k) and fl.loss == np.ldexp(ref.loss, 2 * j)
    np.testing.assert_array_equal(fl.pattern, ref.pattern)
    c, r = fl.certificate, ref.certificate
    assert (c is None) == (r is None)
    if c is not None:
        assert c.holds == r.holds and c.step == np.ldexp(r.step, -2 * k)
        assert c.margin == np.ldexp(r.margin, j) and c.fp_error == np.ldexp(r.fp_error, j)
        assert c.motion == np.ldexp(r.motion, j)
        # exp(-mu_min) per unit time, mu_min scaling as 4^k: the unit rate to the power 4^k (one rounding of exp, log)
        assert c.contraction == pytest.approx(r.contraction ** np.ldexp(1.0, 2 * k), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("k, j", [(-330, 0), (0, -900), (300, 200), (100, 0), (-70, 70), (0, 500), (-500, -400)])
def test_the_flow_far_from_unit_scale_is_the_unit_flow_scaled_exactly(k, j):
    X, y = _mixed()
    T = np.array([0.0, 0.3, 2.0, 50.0])
    ref = relucore.flow(X, y, signs=SIGNS, times=T)
    fl = relucore.flow(np.ldexp(X, k), np.ldexp(y, j), signs=SIGNS, times=np.ldexp(T, -2 * k))
    _same_flow(fl, ref, k, j)
    np.testing.assert_array_equal(fl.times, np.ldexp(T, -2 * k))
    assert relucore.verify(fl, np.ldexp(X, k), np.ldexp(y, j)).holds
    # A finite horizon: the time t_max is in the caller's units too, and so is the time in the message.
    ref = relucore.flow(X, y, signs=SIGNS, t_max=0.7)
    fl = relucore.flow(np.ldexp(X, k), np.ldexp(y, j), signs=SIGNS, t_max=np.ldexp(0.7, -2 * k))
    _same_flow(fl, ref, k, j)
    assert f"{np.ldexp(0.7, -2 * k):.6g}" in fl.message


def test_the_flow_of_the_issue_at_x_1e80_is_the_unit_flow():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((8, 300)) / np.sqrt(300)
    y = rng.standard_normal(8)
    ref = relucore.flow(X, y, signs=SIGNS)
    fl = relucore.flow(X * 2.0**266, y, signs=SIGNS)  # 2^266 ~ 1.2e80
    _same_flow(fl, ref, 266, 0)
    assert fl.status == Status.certified and fl.certificate.holds
    assert relucore.verify(fl, X * 2.0**266, y).holds


@pytest.mark.parametrize("k, j", [(-300, 100), (200, 100), (0, -700)])
def test_gram_only_flow_and_trainer_rescale_exactly(k, j):
    X, y = _mixed()
    K = X @ X.T
    T = np.array([0.5, 3.0])
    ref = relucore.flow(None, y, gram=K, signs=SIGNS, times=T)
    Ks, ys = np.ldexp(K, 2 * k), np.ldexp(y, j)
    fl = relucore.flow(None, ys, gram=Ks, signs=SIGNS, times=np.ldexp(T, -2 * k))
    assert fl.W is None and fl.status == ref.status
    np.testing.assert_array_equal(fl.beta, np.ldexp(ref.beta, j))
    np.testing.assert_array_equal(fl.alpha, np.ldexp(ref.alpha, j - 2 * k))
    np.testing.assert_array_equal(fl.beta_t, np.ldexp(ref.beta_t, j))
    np.testing.assert_array_equal(fl.event_times, np.ldexp(ref.event_times, -2 * k))
    assert relucore.verify(fl, y=ys, gram=Ks).holds
    t_ref, t = relucore.Trainer(None, y, gram=K, signs=SIGNS), relucore.Trainer(None, ys, gram=Ks, signs=SIGNS)
    t_ref.step(20), t.step(20)
    assert t.W is None
    np.testing.assert_array_equal(t.alpha, np.ldexp(t_ref.alpha, j - 2 * k))
    np.testing.assert_array_equal(t.K, Ks)


def test_a_flow_time_float64_cannot_hold_on_the_rescaled_copy_is_refused():
    X, y = _mixed()
    with pytest.raises(ValueError, match=r"the time 1e\+300 cannot be represented"):
        relucore.flow(np.ldexp(X, 400), y, signs=SIGNS, times=[1e300])


def test_results_float64_cannot_hold_are_refused_by_flow_and_trainer():
    X, y = _mixed()
    with pytest.raises(ValueError, match="cannot be represented in float64"):
        relucore.flow(np.ldexp(X, 900), y, signs=SIGNS)
    t = relucore.Trainer(np.ldexp(X, 600), y, signs=SIGNS)  # alpha ~ 2^-1200 after the first step
    with pytest.raises(ValueError, match="cannot be represented in float64"):
        t.run(until=10)
    # Options given in the caller's units that the rescaled copy cannot hold (x 2^1000 and 2^-1000 there).
    t = relucore.Trainer(np.ldexp(X, -500), y, signs=SIGNS)
    with pytest.raises(ValueError, match="eta cannot be represented on the exactly rescaled copy"):
        t.set_eta(1e-300)
    with pytest.raises(ValueError, match="tol cannot be represented"):
        t.run(until=10, tol=1e300)
    assert t.nit == 0 and t.eta > 0


def _same_trainer(t, ref, k, j):
    for a, b, e in (
        (t.alpha, ref.alpha, j - 2 * k),
        (t.beta, ref.beta, j),
        (t.W, ref.W, j - k),
        (t.predictions, ref.predictions, j),
        (t.labels, ref.labels, j),
        (t.K, ref.K, 2 * k),
    ):
        np.testing.assert_array_equal(a, np.ldexp(b, e))
    np.testing.assert_array_equal(t.mask, ref.mask)
    assert t.loss == np.ldexp(ref.loss, 2 * j) and t.grad_norm == np.ldexp(ref.grad_norm, k + j)
    assert t.eta == np.ldexp(ref.eta, -2 * k) and t.tol == np.ldexp(ref.tol, k + j) and t.nit == ref.nit


@pytest.mark.parametrize("k, j", [(-330, 0), (0, -900), (300, 200), (-70, 70), (-500, -400)])
def test_a_trainer_far_from_unit_scale_is_the_unit_trainer_scaled_exactly(k, j):
    X, y = _mixed()
    Xs, ys = np.ldexp(X, k), np.ldexp(y, j)
    ref, t = relucore.Trainer(X, y, signs=SIGNS), relucore.Trainer(Xs, ys, signs=SIGNS)
    _same_trainer(t, ref, k, j)
    assert not t.beta.flags.writeable
    ref.step(40), t.step(40)
    _same_trainer(t, ref, k, j)
    # Options given in the caller's units: eta, labels, tol.
    ref.set_eta(ref.eta / 2), t.set_eta(t.eta / 2)
    ref.set_labels(y * 0.75), t.set_labels(ys * 0.75)
    seen = []
    r_ref = ref.run(until=3000, tol=ref.tol * 4)
    r = t.run(until=3000, tol=t.tol * 4, callback=lambda tr: seen.append(tr.loss), every=5)
    _same_trainer(t, ref, k, j)
    assert r.status == r_ref.status and r.message.split(":")[0] == r_ref.message.split(":")[0]
    np.testing.assert_array_equal(r.W, np.ldexp(r_ref.W, j - k))
    np.testing.assert_array_equal(r.beta0, np.ldexp(r_ref.beta0, j))
    assert r.loss == np.ldexp(r_ref.loss, 2 * j) and r.tol == np.ldexp(r_ref.tol, k + j)
    assert seen and all(np.isfinite(seen))
    # A checkpoint resumes bitwise, in the caller's units.
    t2 = pickle.loads(pickle.dumps(t))
    _same_trainer(t2, ref, k, j)
    lim_ref, lim = ref.run_to_limit(), t2.run_to_limit()
    assert lim.status == lim_ref.status and lim.certificate.holds == lim_ref.certificate.holds
    np.testing.assert_array_equal(lim.beta, np.ldexp(lim_ref.beta, j))
    np.testing.assert_array_equal(lim.W, np.ldexp(lim_ref.W, j - k))
    assert lim.loss == np.ldexp(lim_ref.loss, 2 * j) and lim.certificate.margin == np.ldexp(
        lim_ref.certificate.margin, j
    )
    if lim.success:
        assert relucore.verify(lim, Xs, ys * 0.75).holds


def test_verify_checks_far_from_unit_scale_on_a_rescaled_copy():
    X, y = _mixed()
    for k, j in ((-900, -800), (-900, -1000), (900, 800)):
        Xs, ys = np.ldexp(X, k), np.ldexp(y, j)
        try:
            res = relucore.train(Xs, ys, signs=SIGNS, steps=np.inf)
        except ValueError as err:  # X 2^900: the dual coordinates 2^(j - 1800) and the loss 4^j cannot both fit
            assert k > 0 and "float64" in str(err)
            continue
        with np.errstate(over="raise", invalid="raise"):  # no overflow inside verify (K of Xs underflows to 0)
            v = relucore.verify(res, Xs, ys)
        assert v.holds, str(v)
        # The claims on the arrays are as tight as at unit scale (the loss and gradient norm underflowed in the
        # caller's units, 4^j and 2^(k+j): their bounds carry that rounding and say nothing more).
        unit = relucore.verify(relucore.train(X, y, signs=SIGNS, steps=np.inf), X, y)
        for name in ("beta = X W", "stationary (r_A = 0)", "pattern"):
            assert v[name].bound <= 2 * unit[name].bound + 1e-300
        # A wrong answer is still caught at this scale.
        bad = type(res)(**{**res.__dict__, "beta": res.beta * (1 + 1e-6)})
        assert not relucore.verify(bad, Xs, ys).holds


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(-1000, 1000),
    j=st.integers(-1000, 1000),
    shape=st.sampled_from(["plain", "collinear", "duplicate", "n>d"]),
)
def test_scale_families_of_flow_and_trainer(k, j, shape):
    """Every flow and Trainer result on 2^k X, 2^j y (an explicit start: the default positive one needs K
    invertible) is a clear ValueError or the unit-scale result scaled back: the same status and certificate
    verdict, beta within 1e-12; every success passes verify."""
    X, y, W0 = shaped(shape, abs(k * 2003 + j) % 1000)
    with np.errstate(over="ignore", under="ignore"):
        Xs, ys, W0s = np.ldexp(X, k), np.ldexp(y, j), np.ldexp(W0, j - k)
    if not (np.isfinite(W0s).all() and np.abs(W0s).max() >= np.finfo(float).tiny):
        return  # the start itself is out of float64's range at this scale
    atol = 1e-12 * max(np.abs(y).max(), 1)
    for run in (
        lambda X_, y_, W_: relucore.flow(X_, y_, signs=SIGNS, init=W_),
        lambda X_, y_, W_: relucore.Trainer(X_, y_, signs=SIGNS, init=W_).run(until=1500),
        lambda X_, y_, W_: relucore.Trainer(X_, y_, signs=SIGNS, init=W_).run_to_limit(),
    ):
        try:
            ref = run(X, y, W0)
        except ValueError:
            continue  # refused at unit scale: nothing to compare
        try:
            res = run(Xs, ys, W0s)
        except ValueError as err:
            assert "float64" in str(err) or "range" in str(err), str(err)
            continue
        assert res.status == ref.status and res.success == ref.success
        verdict = [getattr(getattr(r, "certificate", None), "holds", None) for r in (res, ref)]
        assert verdict[0] == verdict[1]
        np.testing.assert_allclose(np.ldexp(res.beta, -j), ref.beta, rtol=0, atol=atol)
        if res.success:
            assert relucore.verify(res, Xs, ys).holds
