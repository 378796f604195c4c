"""relucore.regimes against hand-built states, a loop reference, and Lemmas 5/6 on real runs."""

import dataclasses

import numpy as np
import pytest

import relucore
from relucore.theory.regimes import DUAL_FROZEN, PRIMAL_STABLE, UNDETERMINED


def fake_result(beta, alpha, signs, steps=None):
    """A TrainResult carrying a hand-written history (R, m, n)."""
    beta = np.asarray(beta, float)
    alpha = np.asarray(alpha, float)
    R, m, n = beta.shape
    steps = np.arange(R) if steps is None else np.asarray(steps)
    hist = relucore.History(steps=steps, loss=np.zeros(R), beta=beta, alpha=alpha, mask=beta > 0, n_records=R)
    return relucore.TrainResult(
        W=None,
        alpha=alpha[-1],
        beta=beta[-1],
        W0=None,
        alpha0=alpha[0],
        beta0=beta[0],
        signs=np.asarray(signs, float),
        eta=0.1,
        loss=0.0,
        grad_norm=0.0,
        nit=R - 1,
        success=True,
        status=0,
        message="",
        pattern_stable_step=0,
        history=hist,
        tol=0.0,
    )


def reference_state(beta, alpha, y, signs, C_y, C_alpha, l1):
    """Entry-by-entry loop over the definitions of docs/math.md §7."""
    R, m, n = beta.shape
    ymin, ymax = np.abs(y).min(), np.abs(y).max()
    out = np.zeros((R, m, n), int)
    for t in range(R):
        h = np.array([sum(signs[k] * max(beta[t, k, i], 0.0) for k in range(m)) for i in range(n)])
        rok = np.linalg.norm(h - y) <= C_y * np.linalg.norm(y)
        for k in range(m):
            small = np.linalg.norm(alpha[t, k]) <= C_alpha * np.sqrt(n) * ymax / l1
            for i in range(n):
                blue = signs[k] * y[i] > 0 and beta[t, k, i] > 0 and beta[t, k, i] >= signs[k] * h[i] and rok
                red = alpha[t, k, i] <= -ymin / (C_alpha * l1) and small
                out[t, k, i] = PRIMAL_STABLE if blue else (DUAL_FROZEN if red else UNDETERMINED)
    return out


def test_hand_built_states():
    # m = 2 (s = +1, -1), n = 3, ||lambda||_1 = 10, C_alpha = 2: red threshold y_min/(20) = 0.01,
    # norm bound 2 sqrt(3) * 1 / 10 = 0.346.
    y = np.array([1.0, -0.2, 0.5])
    beta = np.array(
        [
            [[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]],  # t0: + neuron blue on 0 and 2 (h = 0 there)
            [[0.3, -0.05, 0.2], [-0.1, 0.2, -0.1]],  # t1
            [[0.3, -0.05, 0.0], [-0.1, 0.2, -0.1]],  # t2: example 2 switched off (beta = 0 is inactive)
        ]
    )
    alpha = np.array(
        [
            [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            [[0.03, -0.02, 0.02], [-0.02, 0.02, -0.011]],
            [[0.03, -0.02, 0.02], [-0.02, 0.02, -0.009]],
        ]
    )
    res = fake_result(beta, alpha, (1, -1))
    reg = relucore.regimes(res, y=y, lambda_l1=10.0, C_y=2.0, C_alpha=2.0)
    ref = reference_state(beta, alpha, y, (1, -1), 2.0, 2.0, 10.0)
    np.testing.assert_array_equal(reg.state, ref)
    # Spot checks written out by hand.
    assert reg.state[0, 0, 0] == PRIMAL_STABLE and reg.state[0, 1, 0] == UNDETERMINED
    assert reg.state[1, 0, 1] == DUAL_FROZEN  # alpha = -0.02 <= -0.01
    assert reg.state[1, 1, 2] == DUAL_FROZEN  # -0.011 <= -0.01
    assert reg.state[2, 1, 2] == UNDETERMINED  # -0.009 > -0.01
    assert reg.state[2, 0, 2] == UNDETERMINED  # beta = 0: not active, not blue
    assert reg.state[1, 1, 1] == PRIMAL_STABLE  # s y > 0, beta = 0.2 >= -h = 0.2
    assert reg.red_threshold == pytest.approx(0.2 / 20)
    assert reg.red_norm_bound == pytest.approx(2 * np.sqrt(3) / 10)
    # Transitions: counts over (from, to) add up to m n per step and match the states.
    assert reg.transitions.shape == (2, 3, 3)
    assert np.all(reg.transitions.sum(axis=(1, 2)) == 6)
    for t in range(2):
        for a in range(3):
            for b in range(3):
                assert reg.transitions[t, a, b] == np.sum((ref[t] == a) & (ref[t + 1] == b))
    # Masks change at record 1 and record 2 (example 2 of the + neuron): stable from step 2.
    assert reg.pattern_stable_step == 2
    # Lemma 5: (+, 2) is blue at t1 and inactive at t2: one violation. Lemma 6: red entries keep
    # alpha and are inactive, except (-, 2) whose alpha moves from -0.011 to -0.009.
    assert reg.lemma5_violations == 1
    assert reg.lemma6_violations == 1
    assert reg.first_step(DUAL_FROZEN)[0, 1] == 1 and reg.first_step(DUAL_FROZEN)[0, 0] == -1
    ch = reg.changes()
    assert ch.shape == (int(reg.transitions.sum() - np.trace(reg.transitions, axis1=1, axis2=2).sum()), 5)
    assert [1, 0, 1, UNDETERMINED, DUAL_FROZEN] in ch.tolist()  # (+, 1) turns red at step 1
    assert [2, 0, 2, PRIMAL_STABLE, UNDETERMINED] in ch.tolist()  # (+, 2) switched off at step 2
    np.testing.assert_allclose(reg.fraction(PRIMAL_STABLE), np.mean(ref == PRIMAL_STABLE, axis=(1, 2)))


def test_residual_condition_blocks_blue():
    y = np.array([1.0, 1.0])
    beta = np.array([[[5.0, 5.0]]])  # h = (5, 5): ||h - y|| = 4 sqrt 2 > C_y ||y|| = 2 sqrt 2
    res = fake_result(beta, np.zeros_like(beta), (1,))
    assert relucore.regimes(res, y=y, lambda_l1=1.0, C_y=2.0).state[0, 0, 0] == UNDETERMINED
    assert relucore.regimes(res, y=y, lambda_l1=1.0, C_y=4.0).state[0, 0, 0] == PRIMAL_STABLE


def test_lambda_l1_from_X_and_gram(problem):
    X, y = problem(0)
    res = relucore.train(X, y, signs=(1, -1), record=1)
    a = relucore.regimes(res, X, y)
    b = relucore.regimes(res, y=y, gram=X @ X.T)
    assert a.lambda_l1 == pytest.approx(np.sum(X * X) / X.shape[0])
    assert b.lambda_l1 == pytest.approx(a.lambda_l1)
    np.testing.assert_array_equal(a.state, b.state)


@pytest.mark.parametrize("seed", range(5))
def test_lemmas_hold_on_fig4_runs(problem, seed):
    X, y = problem(seed)
    res = relucore.train(X, y, signs=(1, -1), record=1)
    reg = relucore.regimes(res, X, y)
    beta, alpha = res.history.beta, res.history.alpha
    red = reg.state == DUAL_FROZEN
    assert red[1:].sum() > 0
    # Lemma 6, checked directly on the history: once red, alpha never changes and beta <= 0.
    for k, i in zip(*np.nonzero(red.any(axis=0))):
        t = np.argmax(red[:, k, i])
        assert np.all(alpha[t:, k, i] == alpha[t, k, i])
        assert np.all(beta[t:, k, i] <= 0)
    # Lemma 5: blue entries are active at the next step.
    blue = reg.state == PRIMAL_STABLE
    assert np.all(beta[1:][blue[:-1]] > 0)
    assert reg.lemma5_violations == 0 and reg.lemma6_violations == 0
    assert reg.pattern_stable_step == res.pattern_stable_step == 1
    # Theorem 3's split from step 1 on.
    pos = y > 0
    assert np.all(reg.state[1:, 0, pos] == PRIMAL_STABLE) and np.all(reg.state[1:, 0, ~pos] == DUAL_FROZEN)
    assert np.all(reg.state[1:, 1, ~pos] == PRIMAL_STABLE) and np.all(reg.state[1:, 1, pos] == DUAL_FROZEN)
    # At step 0 (beta = eps, h = 0) these entries are already primal-stable and stay so.
    assert np.all(reg.stays_from(PRIMAL_STABLE)[0, pos] == 0)
    assert np.all(reg.stays_from(DUAL_FROZEN)[0, ~pos] == 1)


def test_pattern_step_matches_engine_on_moving_patterns(problem):
    X, y = problem(3, d=15)
    res = relucore.train(X, y, signs=(1, -1), record=1, steps=5000)
    reg = relucore.regimes(res, X, y)
    assert res.pattern_stable_step > 1
    assert reg.pattern_stable_step == res.pattern_stable_step


def test_batched_result_needs_problem(problem):
    Xs, ys = zip(*(problem(s) for s in range(3)))
    X, y = np.stack(Xs), np.stack(ys)
    res = relucore.train(X, y, signs=(1, -1), record=1)
    with pytest.raises(ValueError, match="problem"):
        relucore.regimes(res, X[0], y[0])
    single = relucore.train(X[2], y[2], signs=(1, -1), record=1)
    a = relucore.regimes(res, X[2], y[2], problem=2)
    b = relucore.regimes(single, X[2], y[2])
    np.testing.assert_array_equal(a.state, b.state)


def test_errors(problem):
    X, y = problem(0)
    res = relucore.train(X, y, signs=(1, -1))
    with pytest.raises(ValueError, match="record"):
        relucore.regimes(res, X, y)
    res = relucore.train(X, y, signs=(1, -1), record=1)
    with pytest.raises(TypeError, match="lambda_l1"):
        relucore.regimes(res, y=y)
    with pytest.raises(ValueError, match="inconsistent"):
        relucore.regimes(res, X, y[:5])
    with pytest.raises(ValueError, match="C_alpha"):
        relucore.regimes(res, X, y, C_alpha=0)
    assert dataclasses.is_dataclass(relucore.regimes(res, X, y))
    with pytest.raises(dataclasses.FrozenInstanceError):
        relucore.regimes(res, X, y).C_y = 3.0
