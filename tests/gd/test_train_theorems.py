"""Closed-form limits of Theorems 1 and 3 (docs/math.md §5), computed here from scratch."""

import numpy as np
import pytest
from _problems import fig4_problem

import relucore


def project(X, w1, rows, target):
    """argmin_{X_S w = target} ||w - w1||."""
    XS = X[rows]
    return w1 + XS.T @ np.linalg.solve(XS @ XS.T, target - XS @ w1)


@pytest.mark.parametrize("seed", range(20))
def test_theorem1_single_relu_limit(seed):
    X, y = fig4_problem(seed)
    res = relucore.train(X, y, signs=(1,))
    assert res.success
    eps, eta = res.beta0[0], res.eta
    w1 = eta * X.T @ (y - eps + np.linalg.solve(X @ X.T, eps) / eta)
    pos = y > 0
    w_inf = project(X, w1, pos, y[pos])
    assert np.linalg.norm(res.W[0] - w_inf) <= 1e-10 * np.linalg.norm(w_inf)
    assert np.all(X[~pos] @ w_inf <= 0)
    assert res.pattern_stable_step == 1


@pytest.mark.parametrize("seed", range(20))
def test_theorem3_two_relu_limit(seed):
    X, y = fig4_problem(seed)
    res = relucore.train(X, y, signs=(1, -1))
    assert res.success
    ep, em, eta = res.beta0[0], res.beta0[1], res.eta
    Kinv = np.linalg.inv(X @ X.T)
    w1p = eta * X.T @ (y - ep + em + Kinv @ ep / eta)
    w1m = eta * X.T @ (-y + ep - em + Kinv @ em / eta)
    pos = y > 0
    wp = project(X, w1p, pos, y[pos])
    wm = project(X, w1m, ~pos, -y[~pos])
    assert np.linalg.norm(res.W[0] - wp) <= 1e-10 * np.linalg.norm(wp)
    assert np.linalg.norm(res.W[1] - wm) <= 1e-10 * np.linalg.norm(wm)
    assert np.all(X[~pos] @ wp <= 0) and np.all(X[pos] @ wm <= 0)


def test_positive_labels_only_give_the_linear_min_norm_interpolator():
    # Thm 2 remark: with all labels positive, w_inf = w* = X^T K^{-1} y... up to the init's memory.
    X, y = fig4_problem(1)
    y = np.abs(y)
    res = relucore.train(X, y, signs=(1,))
    eps, eta = res.beta0[0], res.eta
    w1 = eta * X.T @ (y - eps + np.linalg.solve(X @ X.T, eps) / eta)
    w_inf = project(X, w1, np.ones(len(y), bool), y)
    # The projection onto {Xw = y} of anything in the row space is the min-norm interpolator.
    w_mni = X.T @ np.linalg.solve(X @ X.T, y)
    assert np.linalg.norm(res.W[0] - w_mni) <= 1e-10 * np.linalg.norm(w_mni)
    assert np.linalg.norm(w_inf - w_mni) <= 1e-10 * np.linalg.norm(w_mni)


def test_disjoint_init_has_the_assumption4_form():
    X, y = fig4_problem(3)
    signs = np.array([1.0, 1.0, -1.0, -1.0])
    a = relucore.gd.inits.default_assignment(y[None], signs)[0]
    res = relucore.train(X, y, signs=signs, init="disjoint", C_g=2.0, eps=1e-3, steps=0)
    for k in range(4):
        for i in range(len(y)):
            own = a[i] == k
            same_sign = signs[k] * y[i] > 0
            expected = 1e-3 + (0.0 if (own or not same_sign) else -np.sign(y[i]) * y[i] / 2.0)
            assert res.beta0[k, i] == pytest.approx(expected, abs=1e-15)
    assert np.all(signs[a] * y > 0)
    assert np.allclose(res.W0 @ X.T, res.beta0, atol=1e-12)
