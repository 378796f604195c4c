"""Proved means proved: a success's gradient norm is provably below tol. The engines compute
||grad_W R||_F in dual form sqrt(sum_k u_k^T K u_k), which cancels where K is singular (collinear or
duplicate examples, n > d); a value below tol counts only where it plus the rounding bound of
dual_norm_sq() (gd/norm_bound.hpp, docs/math.md) is (docs/errors.md, "Success")."""

import warnings
from fractions import Fraction

import numpy as np
import pytest

import relucore
from relucore import Status, _core


def _reproducer():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20)
    c = rng.uniform(-2, 2)
    X = np.stack([x, c * x])
    y = rng.uniform(0.2, 1, 2) * rng.choice([-1, 1], 2)
    return X, y


def _train(X, y, seed, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return relucore.train(X, y, signs=(1, -1), init="gaussian", rng=seed, steps=steps)


def test_the_reproducer_is_not_a_success_and_says_why():
    X, y = _reproducer()
    r = _train(X, y, 1, np.inf)
    # Its dual-form norm at the returned point is 0 (tol 2.65e-12), the true one 8.8e-9.
    assert not r.success and r.status == Status.max_steps
    assert "could not be resolved below tol" in r.message and "rounding bound" in r.message
    v = relucore.verify(r, X, y)
    assert v.holds, str(v)
    # The gradient from W directly (numpy, primal form): far above tol, as the status says.
    s = np.array([1.0, -1.0])
    g = s @ np.maximum(X @ r.W.T, 0).T - y
    G = (s[:, None] * ((X @ r.W.T).T > 0) * g) @ X
    assert np.linalg.norm(G) > 100 * r.tol


def test_the_reproducer_finite_run_steps_on_and_never_converges():
    X, y = _reproducer()
    r = _train(X, y, 1, 3000)
    assert not r.success and r.status == Status.max_steps and r.nit == 3000
    assert relucore.verify(r, X, y).holds


def _degenerate(kind, seed):
    """Singular K: example 2 a multiple (collinear) or a copy (duplicate) of example 0, or n = 10 > d = 3.
    Odd seeds give labels no network fits exactly (random; for a copy, its own random label): GD can then
    only reach a stationary point with residuals left, where the dual form resolves the norm only to about
    sqrt(u |u|^T |K| |u|) and such a run cannot prove itself stationary. Even seeds give labels a network
    of the same kind fits (a teacher's), whose residuals vanish at the limit."""
    rng = np.random.default_rng(seed)
    if kind == "n>d":
        X = rng.standard_normal((10, 3))
    else:
        x = rng.standard_normal((2, 20))
        c = rng.uniform(-2, 2) if kind == "collinear" else 1.0
        X = np.vstack([x, c * x[:1]])
    y = rng.uniform(0.2, 1, X.shape[0]) * rng.choice([-1, 1], X.shape[0])
    if seed % 2 == 0:
        W = rng.standard_normal((2, X.shape[1])) / np.sqrt(X.shape[1])
        y = np.maximum(X @ W[0], 0) - np.maximum(X @ W[1], 0)
    return X, y


@pytest.mark.parametrize("steps", [20000, np.inf])
@pytest.mark.parametrize("kind", ["collinear", "duplicate", "n>d"])
def test_every_success_on_degenerate_data_passes_verify(kind, steps):
    successes = 0
    for seed in range(12):
        X, y = _degenerate(kind, seed)
        try:
            r = _train(X, y, seed, steps)
        except ValueError:
            continue  # refused: a clear answer
        v = relucore.verify(r, X, y)
        if r.success:
            successes += 1
            assert v.holds, (seed, r.message, str(v))
        elif r.status == Status.max_steps and "could not be resolved" in r.message:
            # An unresolved run claims nothing stationary; its other claims hold.
            assert all(c.holds for c in v.claims if c.name != "stationary (grad <= tol)"), (seed, str(v))
    assert successes > 0  # the family is not all refusals or failures: the rule was exercised


def _exact(K, U):
    Kf = [[Fraction(float(v)) for v in row] for row in K]
    total = Fraction(0)
    for u in U:
        uf = [Fraction(float(v)) for v in u]
        total += sum(uf[i] * sum(Kf[i][j] * uf[j] for j in range(len(uf))) for i in range(len(uf)))
    return total


@pytest.mark.parametrize("seed", range(20))
def test_the_bound_covers_the_rounding_of_the_dual_form(seed):
    rng = np.random.default_rng(seed)
    n, m, d = rng.integers(2, 9), rng.integers(1, 4), rng.integers(1, 5)
    X = rng.standard_normal((n, d)) * 2.0 ** rng.integers(-30, 30)
    if seed % 2:
        X[-1] = X[0] * rng.uniform(-2, 2)  # collinear: K singular, the sum cancels
    K = X @ X.T
    U = rng.standard_normal((m, n)) * 2.0 ** rng.integers(-30, 30)
    if seed % 4 == 1:
        # u in the null space of K to rounding: the exact sum is tiny, the computed one mostly error
        _, _, Vt = np.linalg.svd(X.T)
        U = Vt[-1][None, :] * np.ones((m, 1)) if n > d else U
    sq, bound, scale = _core.dual_norm_sq(K=np.ascontiguousarray(K), U=np.ascontiguousarray(U))
    exact = _exact(K, U)
    unit = Fraction(2) ** scale
    assert abs(Fraction(sq) * unit - exact) <= Fraction(bound) * unit
    # The bound holds for any order of evaluation: numpy's too.
    other = float(np.sum(U * (K @ U.T).T))
    assert abs(Fraction(other) - exact) <= Fraction(bound) * unit
    # ...and it is tight: a few hundred ulps of sum_k |u_k|^T |K| |u_k|, no more.
    abs_sum = float(np.sum(np.abs(U) * (np.abs(K) @ np.abs(U).T).T))
    N = n + m * n
    assert bound * 2.0**scale <= 2.5 * N * 2.0**-53 * abs_sum


@pytest.mark.parametrize("seed", range(3))
def test_well_conditioned_problems_still_converge(seed):
    # Fig. 4 data (n = 10, d = 2000): K well conditioned, the bound is far below tol^2 where the
    # running norm crosses tol; the run converges, its gradient norm verified.
    from relucore.experiments._common import lai_data

    X, y = lai_data(np.random.default_rng(seed), 10, 2000)
    r = relucore.train(X, y, signs=(1, -1))
    assert r.success and r.status == Status.converged and r.grad_norm < r.tol
    assert relucore.verify(r, X, y).holds


@pytest.mark.parametrize("front", ["train", "batch", "trainer"])
def test_a_run_ending_below_tol_unresolved_says_so(front):
    # The reproducer's running norm is 0 at step 25 (where steps=np.inf stops): a budget of 25 steps
    # ends there, below tol in dual form but not provably so.
    X, y = _reproducer()
    kw = dict(signs=(1, -1), init="gaussian", rng=1, steps=25)
    if front == "train":
        r = relucore.train(X, y, **kw)
        status, success, message = r.status, r.success, r.message
    elif front == "batch":
        r = relucore.train(np.stack([X, X]), np.stack([y, y]), **kw)  # problem 1 starts elsewhere
        status, success, message = r.status[0], r.success[0], r.message[0]
    else:
        r = relucore.Trainer(X, y, **kw).run()
        status, success, message = r.status, r.success, r.message
    assert not success and status == Status.max_steps and np.ravel(r.nit)[0] == 25
    assert "could not be resolved below it" in message and "rounding bound" in message, message
    assert relucore.verify(r, X, y).holds if front != "batch" else True
