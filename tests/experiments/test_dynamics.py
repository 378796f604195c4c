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


def test_fig7_shared_signs_are_not_primal_stable():
    r = experiments.run("fig7", quick=True, n_seeds=4)
    c = claims_of(r)
    assert c["not_primal_stable"].passed and c["pattern_unstable"].passed
    res = r.data["result"]
    # Independently: where both + neurons (and no - neuron) are active, beta_k < s_k h = beta_0 + beta_1.
    b = 0
    beta = res.history.beta[b, 1]
    h = np.einsum("k,kn->n", res.signs, np.maximum(beta, 0))
    both = (beta[0] > 0) & (beta[1] > 0) & (beta[2] <= 0) & (beta[3] <= 0)
    assert both.any()
    assert np.all(beta[0][both] < h[both])
