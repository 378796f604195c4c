"""What steps=inf and relucore.flow return where the pattern cannot be proved frozen (docs/math.md §13):
the exact continuation of a chattering GD run, the flow's end once its remaining motion is proved
below rounding, and a stalled run that returns at once."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _random_problems import fig4_problem

import relucore as rc
from relucore import Status, _core
from relucore.experiments.step_size import _step_size_data

_U = np.finfo(float).eps / 2


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("seed", range(8))
def test_steps_inf_is_the_limit_on_every_figure4_problem(seed):
    # eta / 50: in 6 of the 8 problems GD chatters on the pattern boundary and no frozen-pattern
    # proof exists. The run then returns the exact continuation from its tol state. Reference: a
    # plain run of 10^5 steps (converged; bench/bench_limit.py compares with 10^6 steps: 1.7e-14 -
    # 1.8e-13). Returning the tol state instead was 1.1-1.2e-12 from it (the state of main before).
    X, y = fig4_problem(seed)
    signs = np.array([1.0, -1.0])
    eta = rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], signs) / 50
    lim = rc.train(X, y, signs=signs, eta=eta, steps=np.inf)
    ref = rc.train(X, y, signs=signs, eta=eta, steps=10**5, tol=0)
    assert _rel(lim.W, ref.W) < 2e-13
    c = lim.certificate
    if seed in (0, 2):
        assert c.holds and c.sliding is None and c.motion == 0
        return
    # Never a false certificate: the proof does not hold. Whether the exact continuation slides
    # depends on the rounding of the tol state (BLAS kernels, SIMD level); the reason names the
    # sliding entries when it does, and says that none slid otherwise.
    assert not c.holds and lim.status == Status.converged and "not certified" in lim.message
    assert c.sliding is not None and 0 <= c.motion < 1e-12
    if c.sliding.any():
        assert "sliding entries" in c.reason and "none" not in c.reason
        # The entries named are the ones the plain run chatters on: they end at zero to rounding.
        assert np.abs(ref.beta[c.sliding]).max() < 1e-9 * np.abs(y).max()
    else:
        assert "no entry sliding" in c.reason and "chatters" not in c.reason
    # The continuation's result is a rest point: residual zero on every example some neuron is active on.
    r = signs @ np.maximum(lim.beta, 0) - y
    assert np.abs(r[(lim.beta > 0).any(axis=0)]).max() < 1e-13


def _step_size_problems():
    """The 140 near-orthogonal and orthogonal problems of the full step-size experiment (seed 0),
    drawn in its order (relucore/experiments/step_size.py: _gap_vs_eta, then _floor_scaling)."""
    rng = np.random.default_rng(0)
    out = []

    def draw(n, d, orthogonal=False, frac=None):
        K, y = _step_size_data(rng, 10, n, d, orthogonal)
        eps = [None] * 10 if frac is None else list(frac * np.abs(y).min(axis=1))
        out.extend(zip(K, y, eps))

    draw(10, 2000, orthogonal=True)
    draw(10, 2000)
    for n in (5, 10, 20, 40):
        draw(n, 2000)
    for d in (500, 1000, 2000, 4000, 8000):
        draw(10, d)
    for frac in (0.05, 0.015, 0.005):
        draw(10, 2000, frac=frac)
    return out


def _remaining_motion(K, y, signs, beta):
    """docs/math.md §13 "remaining motion", written out here: (A fixed for ever, bound on every |d beta_ki|)."""
    active = beta > 0
    A = active.any(axis=0)
    r = signs @ np.maximum(beta, 0) - y
    path = np.linalg.norm(r[A]) / (np.abs(signs).min() * np.sqrt(np.linalg.eigvalsh(K)[0]))
    d = np.sqrt(np.diag(K)) * path
    fixed = bool(np.all(beta[:, ~A] < -d[~A]) and np.all(beta[:, A].max(axis=0) > d[A]))
    return fixed, float(d.max())


def test_flow_ends_certified_on_every_step_size_problem():
    # Main stopped 11 of these 140 flows early ("stuck" 10, "max_events" 1: 10^4 rounding-level
    # events at one time). Each now ends once its remaining motion is proved below rounding.
    probs = _step_size_problems()
    assert len(probs) == 140
    by_motion = 0
    for K, y, eps in probs:
        f = rc.flow(None, y, gram=K, signs=(1.0, -1.0), init="positive", eps=eps)
        c = f.certificate
        assert f.status == Status.certified and c is not None and c.holds, f.message
        assert f.event_times.size < 200
        scale = max(np.abs(f.beta).max(), np.abs(y).max())
        assert 0 <= c.motion <= _core.defaults.flow_rest_rtol * scale
        if c.motion > 0:
            by_motion += 1
            assert "(proved)" in f.message
        # Independently of the C++ bound: the returned point is a rest point, and any flow from it
        # moves beta by little (eigenvalues of numpy; measured up to 1.4e-13 of the scale at n = 40,
        # where the returned points' residuals are that large also for frozen-pattern certificates).
        fixed, moves = _remaining_motion(K, y, f.signs, f.beta)
        assert fixed and moves < 3e-13 * scale
    assert by_motion >= 11


def test_flow_motion_bound_holds_on_a_gd_reference():
    # The flow limit of a problem that main chased through 10^4 events (step-size problem 90):
    # the bound says where every continuation ends; GD with a small step ends there to O(eta).
    K, y, eps = _step_size_problems()[90]
    times = [1e-3, 0.1, 10.0]
    f = rc.flow(None, y, gram=K, signs=(1.0, -1.0), init="positive", eps=eps, times=times)
    assert f.certificate.motion > 0 and f.event_times.size < 100
    # Every requested time gets a state, also those after the flow ended by its bound: the last
    # phase's state there, within the bound of the limit.
    assert f.beta_t.shape == (3,) + f.beta.shape and f.event_times[-1] < times[-1]
    assert np.abs(f.beta_t[-1] - f.beta).max() <= f.certificate.motion
    mu1 = np.linalg.eigvalsh(K)[-1]
    gaps = []
    for eta in (1e-2 / mu1, 1e-3 / mu1):
        gd = rc.train(None, y, gram=K, signs=(1.0, -1.0), init="positive", eps=eps, eta=eta, steps=np.inf)
        gaps.append(np.abs(gd.beta - f.beta).max())
    assert gaps[1] < gaps[0] / 5 and gaps[1] < 1e-3


def test_a_stalled_run_returns_at_once():
    # d < n makes M singular: no proof, and the run stalls (a stationary point leaving examples
    # unfit). Main looped for ever here (every chunk returned at once without a step).
    code = textwrap.dedent(
        """
        import numpy as np, relucore as rc
        rng = np.random.default_rng(28)
        X = rng.standard_normal((8, 3)); y = rng.uniform(0.1, 1, 8) * rng.choice([-1, 1], 8)
        eta = 1.9 / np.linalg.eigvalsh(X @ X.T)[-1]
        r = rc.train(X, y, steps=np.inf, signs=(1, -1), eta=eta, init="gaussian", init_scale=0.3, rng=28)
        print(r.status, r.nit, r.certificate.holds, r.message)
        """
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(rc.__file__)), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, env=env)
    status, nit, holds, message = out.stdout.split(" ", 3)
    assert status == "5" and holds == "False" and int(nit) < 10**5
    assert "stalled" in message and "not certified" in message


def test_trainer_run_to_limit_follows_the_same_continuation():
    X, y = fig4_problem(3)
    eta = rc.default_eta(np.linalg.eigvalsh(X @ X.T)[-1], np.array([1.0, -1.0])) / 50
    lim = rc.train(X, y, signs=(1, -1), eta=eta, steps=np.inf)
    res = rc.Trainer(X, y, signs=(1, -1), eta=eta).run_to_limit()
    assert not res.certificate.holds and res.certificate.sliding.any()
    np.testing.assert_array_equal(res.certificate.sliding, lim.certificate.sliding)
    np.testing.assert_array_equal(res.W, lim.W)
