"""_core.certify_gd (relucore/gd/certify.hpp) against the proof of docs/math.md §13 written here in numpy."""

import numpy as np
import pytest

import relucore as rc
from relucore import _core
from relucore.gd.limit import linear_phase

U = np.finfo(float).eps / 2


def _gamma(k):
    return k * U / (1 - k * U)


def _reference(K, y, signs, alpha, beta, eta):
    """The frozen-pattern proof of §13 ("The certificate", "Floating-point error of the proof") in numpy."""
    active = beta > 0
    ph = linear_phase(K, y, signs, alpha, beta, active)
    A, M, lam, z, rA, B = ph.A, ph.M, ph.lam, ph.z, ph.rA, ph.B
    nA, m = A.size, signs.size
    dM = (_gamma(m + 2) + _gamma(2 * nA + 2)) * (signs @ signs) * np.linalg.norm(K[np.ix_(A, A)])
    dlam = 8 * nA * U * np.linalg.norm(M) + dM
    lam_lo, lam_hi = lam[0] - dlam, lam[-1] + dlam
    nz = np.linalg.norm(z)
    res = np.linalg.norm(rA - M @ z) + _gamma(nA + 1) * (np.linalg.norm(rA) + np.linalg.norm(M) * nz) + dM * nz
    Bn = np.linalg.norm(B, axis=2) * (1 + _gamma(nA + 1))
    dz = res / lam_lo
    err = Bn * dz + _gamma(nA + 2) * (abs(beta) + abs(B) @ abs(z)) + _gamma(2) * abs(beta)
    rho = max(abs(1 - eta * lam_lo), abs(1 - eta * lam_hi)) * (1 + 4 * U)
    moving = active.any(axis=1)
    bound = Bn * rho * (nz + dz)
    sigma = np.where(active, 1.0, -1.0)
    slack = (sigma * ph.beta_inf - bound - err)[moving]
    res_part = (Bn * dz)[moving]  # holds the computed residual ||r_A - M z||: a rounding-level number
    # Steps after which the proof holds while the pattern stays (the bound shrinks by rho a step).
    room, b = (sigma * ph.beta_inf - err)[moving], bound[moving]
    ratio = np.min(np.where(b > 0, room / np.where(b > 0, b, 1.0), np.inf))
    need = 0 if slack.min() > 0 else np.inf if (room <= 0).any() else int(np.ceil(np.log(ratio) / np.log(rho))) + 1
    return ph, rho, float(slack.min()), float(err[moving].max()), float(res_part.max()), need


def _states():
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((10, 300))
        y = rng.uniform(0.1, 1.0, 10) * rng.choice([-1.0, 1.0], 10)
        for steps in (0, 3, 40, 400):
            yield X, y, np.array([1.0, -1.0]), steps


@pytest.mark.parametrize("X,y,signs,steps", list(_states()))
def test_certify_gd_matches_the_numpy_proof(X, y, signs, steps):
    res = rc.train(X, y, signs=signs, steps=steps, tol=0)
    K = X @ X.T
    ph, rho, margin, fp, fp_res, need = _reference(K, y, signs, res.alpha, res.beta, res.eta)
    c = _core.certify_gd(K=K, y=y, signs=signs, alpha=res.alpha, beta=res.beta, eta=res.eta)
    # The limit is the same computation (linear_phase.hpp): bitwise.
    np.testing.assert_array_equal(c.beta_inf, ph.beta_inf)
    np.testing.assert_array_equal(c.alpha_inf, ph.alpha_inf)
    assert c.contraction == pytest.approx(rho, rel=1e-14)
    assert c.status == (0 if margin > 0 else 3)
    # fp_error and the margin carry the computed residual ||r_A - M z||, a rounding-level number whose
    # value depends on the summation order (numpy's against the C++ loop): they agree up to that term.
    assert abs(c.fp_error - fp) <= 1e-12 * fp + fp_res
    assert abs(c.margin - margin) <= 1e-12 * abs(margin) + 2 * fp_res
    assert c.need == need
