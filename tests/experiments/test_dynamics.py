"""fig4-fig7: the captions' facts, checked on the experiments' own runs."""

import numpy as np

from relucore import experiments
from relucore.theory.regimes import DUAL_FROZEN, PRIMAL_STABLE


def claims_of(r):
    return {c.name: c for c in r.claims}


def test_fig4_clean_split_and_theorem3_limit():
    r = experiments.run("fig4", quick=True, n_seeds=3)
    assert all(c.passed for c in r.claims), [c for c in r.claims if not c.passed]
    res, y = r.data["result"], r.data["y"]
    assert np.all(res.pattern_stable_step == 1)
    assert np.all(res.loss < 1e-16)
    for b, s in enumerate(r.data["stats"]):
        st = s["regimes"].state[1:]
        pos = y[b] > 0
        assert np.all(st[:, 0, pos] == PRIMAL_STABLE) and np.all(st[:, 0, ~pos] == DUAL_FROZEN)


def test_fig5_random_init_ends_at_a_non_global_minimum():
    r = experiments.run("fig5", quick=True, n_seeds=4)
    c = claims_of(r)
    assert c["non_global_minimum"].passed and c["positives_not_blue"].passed
    res, y = r.data["result"], r.data["y"]
    for b in range(4):
        # An interpolator exists (K invertible), so a converged run with loss > 0 is not global.
        if res.success[b] and res.loss[b] > 1e-6:
            dead = (y[b] > 0) & (res.beta[b, 0] <= 0)
            assert dead.any()
            # Those positives' loss y_i^2/2 is locked in: no neuron with s = +1 is active on them.
            assert res.loss[b] >= 0.5 * np.sum(y[b][dead] ** 2) - 1e-12
    assert sum(res.loss[b] > 1e-6 for b in range(4)) >= 2


def test_fig6_low_dimension_moves_the_pattern():
    r = experiments.run("fig6", quick=True, n_seeds=4)
    c = claims_of(r)
    assert c["pattern_moves"].passed and c["split_fails"].passed
    assert np.sum(r.data["result"].pattern_stable_step > 1) >= 3


def test_fig7_a_matching_sign_entry_is_lost():
    """The caption's example no. 0, checked against the recorded history with numpy's own GD step."""
    r = experiments.run("fig7", quick=True)
    c = claims_of(r)
    assert all(cl.passed for cl in r.claims), [cl for cl in r.claims if not cl.passed]
    assert c["matching_entry_deactivated"].passed and c["overshoot_mechanism"].passed
    res, X, y = r.data["result"], r.data["X"], r.data["y"]
    found = r.data["deactivations"]
    assert sum(map(len, found)) >= 1
    for b, lost in enumerate(found):
        beta = res.history.beta[b, : int(res.history.n_records[b])]
        # Brute force over entries: matching sign, active at step 0, inactive at the reported step only now.
        brute = []
        for k in range(beta.shape[1]):
            for i in range(beta.shape[2]):
                if res.signs[k] * y[b, i] > 0 and beta[0, k, i] > 0:
                    off = [t for t in range(1, beta.shape[0]) if beta[t - 1, k, i] > 0 and beta[t, k, i] <= 0]
                    if off:
                        brute.append((k, i, off[0]))
        assert sorted(lost) == sorted(brute)
        K = X[b] @ X[b].T
        for k, i, t in lost:
            # One GD step in primal coordinates: beta_k <- beta_k - eta s_k K (1[beta_k > 0] * g).
            g = res.signs @ np.maximum(beta[t - 1], 0.0) - y[b]
            step = beta[t - 1, k] - res.eta[b] * res.signs[k] * K @ ((beta[t - 1, k] > 0) * g)
            np.testing.assert_allclose(step, beta[t, k], rtol=0, atol=1e-12 * np.abs(beta[t - 1]).max())
            assert beta[t - 1, k, i] > 0 >= beta[t, k, i] and np.sign(y[b, i]) * g[i] > 0


def test_fig7_positive_init_option_runs():
    r = experiments.run("fig7", quick=True, n_seeds=3, init="positive", steps=200)
    assert r.params["init"] == "positive" and len(r.table) == 3
