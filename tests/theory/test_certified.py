"""train(steps=np.inf) / Trainer.run_to_limit(): the certified GD limit (docs/math.md §13)."""

import numpy as np
import pytest
from _random_problems import fig4_problem, random_problems
from hypothesis import given, settings

import relucore as rc
from relucore import Status
from relucore.gd.limit import CertifiedResult, certify_gd


@pytest.mark.parametrize("seed,eta_factor", [(0, 1.0), (1, 1.0), (0, 1 / 50), (2, 1 / 50)])
def test_limit_matches_the_converged_plain_run(seed, eta_factor):
    X, y = fig4_problem(seed)
    eta = eta_factor * rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], np.array([1.0, -1.0]))
    lim = rc.train(X, y, signs=(1, -1), eta=eta, steps=np.inf)
    assert isinstance(lim, CertifiedResult) and lim.certificate.holds and lim.success
    assert lim.certificate.margin > 0 and lim.certificate.reason == ""
    assert lim.nit < 5000
    # A plain run converged to rounding (and not so long that its beta and alpha drift apart:
    # after 10^6 steps they differ by ~1e-10 relative, the reference would then be the error).
    ref = rc.train(X, y, signs=(1, -1), eta=eta, steps=6000 if eta_factor < 1 else 1000, tol=0)
    assert np.array_equal(ref.mask, lim.mask) and ref.pattern_stable_step <= lim.nit
    assert np.linalg.norm(lim.W - ref.W) <= 2e-12 * np.linalg.norm(ref.W)
    assert lim.loss < 1e-25 and lim.grad_norm < 1e-10


@pytest.mark.parametrize(
    "signs,init", [((1,), "positive"), ((1, -1), "positive"), ((1, 1, -1, -1), "disjoint"), ((1, -1, -1), "disjoint")]
)
def test_theorem_closed_forms_agree_with_the_certified_limit(signs, init):
    X, y = fig4_problem(3)
    lim = rc.train(X, y, signs=signs, init=init, steps=np.inf)
    assert lim.certificate.holds
    W = rc.predicted_limit(X, y, signs=signs, init=init, eta=lim.eta)
    assert np.linalg.norm(lim.W - W) <= 1e-12 * np.linalg.norm(W)


def test_trainer_run_to_limit_is_train_with_steps_inf():
    X, y = fig4_problem(4, d=300)
    lim = rc.train(X, y, signs=(1, -1), steps=np.inf)
    t = rc.Trainer(X, y, signs=(1, -1))
    res = t.run_to_limit()
    assert res.certificate.holds and t.nit == res.nit == lim.nit
    np.testing.assert_array_equal(res.W, lim.W)
    np.testing.assert_array_equal(res.beta, lim.beta)


def test_batch_gives_one_certificate_per_problem():
    X = np.stack([fig4_problem(s, d=200)[0] for s in range(3)])
    y = np.stack([fig4_problem(s, d=200)[1] for s in range(3)])
    lim = rc.train(X, y, signs=(1, -1), steps=np.inf)
    assert len(lim.certificate) == 3 and lim.W.shape == (3, 2, 200)
    for b in range(3):
        one = rc.train(X[b], y[b], signs=(1, -1), steps=np.inf)
        np.testing.assert_array_equal(one.W, lim.W[b])
    assert "steps=inf" in repr(lim)


def test_chatter_on_the_boundary_is_not_certified():
    # With eta / 50 this Figure 4 problem slides along beta_ki = 0 (GD chatters there): no proof.
    X, y = fig4_problem(3)
    eta = rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], np.array([1.0, -1.0])) / 50
    lim = rc.train(X, y, signs=(1, -1), eta=eta, steps=np.inf)
    c = lim.certificate
    assert not c.holds and c.step == -1 and c.margin <= 0 and "not proved" in c.reason
    assert lim.status == Status.converged and "not certified" in lim.message
    ref = rc.train(X, y, signs=(1, -1), eta=eta, steps=10**5, tol=0, record=10)
    # The plain run's pattern keeps changing after the proof was given up (at the tolerance), on
    # entries that sit at zero: the chatter ends only when its amplitude falls below the rounding
    # level of beta = K alpha (docs/math.md §14), a step that depends on the BLAS kernels' rounding.
    assert ref.pattern_stable_step > lim.nit
    b = ref.history.beta
    chattered = (b[1:] > 0) != (b[:-1] > 0)
    late = chattered[ref.history.steps[1:] > lim.nit].any(axis=0)
    assert late.any() and np.abs(ref.beta[late]).max() < 1e-12 * np.abs(y).max()


def test_refusals_name_the_reason():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((10, 50))
    y = rng.uniform(0.1, 1, 10) * rng.choice([-1.0, 1.0], 10)
    with pytest.raises(ValueError, match="no finite limit"):
        rc.train(X, np.sign(y), loss="logistic", steps=np.inf)
    with pytest.raises(ValueError, match="relu"):
        rc.train(X, y, activation="leaky_relu", steps=np.inf)
    with pytest.raises(ValueError, match="record"):
        rc.train(X, y, record=1, steps=np.inf)
    eta = 1e3 * rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="final phase diverges"):
        rc.train(X, y, signs=(1, -1), eta=eta, steps=np.inf)
    # Ten times the default step kills every unit: a certified (trivial) limit, not a divergence.
    dead = rc.train(X, y, signs=(1, -1), eta=eta / 100, steps=np.inf)
    assert dead.certificate.holds and not dead.mask.any() and dead.loss == pytest.approx(0.5 * y @ y)
    with pytest.raises(TypeError, match="integer"):
        rc.train(X, y, steps=2.5)


def test_certificate_names_a_diverging_final_phase():
    X, y = fig4_problem(7, d=100)
    res = rc.train(X, y, steps=20, tol=0)
    cert, _ = certify_gd(X @ X.T, y, np.array([1.0]), res.alpha, res.beta, 3 / np.linalg.eigvalsh(X @ X.T)[-1], 20)
    assert not cert.holds and "diverges" in cert.reason


def test_certificate_bound_is_not_vacuous():
    # At the start the pattern of Theorem 3 is about to change: no certificate there.
    X, y = fig4_problem(6, d=500)
    res = rc.train(X, y, signs=(1, -1), steps=0, tol=0)
    K = X @ X.T
    cert, _ = certify_gd(K, y, np.array([1.0, -1.0]), res.alpha, res.beta, res.eta, 0)
    assert not cert.holds and cert.margin < 0


@settings(deadline=None, max_examples=20)
@given(problem=random_problems(n_max=7, scales=[1e-6, 1e-3, 1.0]))
def test_every_certificate_survives_a_long_plain_run(problem):
    # d > n: with d < n, K is singular and the final phase is not strictly contracting (not certified).
    X, y, signs, W0 = problem
    lim = rc.train(X, y, signs=signs, init=W0, steps=np.inf)
    if not lim.certificate.holds:
        assert lim.certificate.reason
        return
    T = lim.certificate.step
    run = rc.train(X, y, signs=signs, init=W0, steps=T + 3000, tol=0, record=1)
    masks = run.history.mask[T:]
    assert (masks == masks[0]).all(), "a certified pattern changed in the plain run"
    assert np.array_equal(masks[0], lim.certificate.pattern)
    if run.grad_norm < 1e-9 * max(np.linalg.norm(y), 1e-300):
        np.testing.assert_allclose(run.W, lim.W, atol=1e-8 * max(np.linalg.norm(lim.W), 1e-12))
