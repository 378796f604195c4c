"""One rule for success (docs/errors.md, "Success"): the returned point is stationary and every example
is fit or out of reach of every neuron (no neuron has its label's sign); the same verdict from a finite
run, steps=np.inf, the flow and the Trainer."""

import numpy as np
import pytest

import relucore
from relucore import Status


def _reach_problem():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 30))
    y = np.array([1.0, 0.5, -0.7, 0.8])  # example 2 has a negative label; the one neuron is positive
    return X, y


def _dead_problem():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 30))
    y = rng.uniform(0.2, 1, 4)
    W0 = np.repeat(-10 * X.sum(axis=0)[None, :], 2, axis=0)  # every beta_ki < 0: no neuron active anywhere
    assert (X @ W0.T < 0).all()
    return X, y, W0


@pytest.mark.parametrize("front", ["finite", "inf", "trainer", "trainer_limit", "batch"])
def test_an_example_no_neuron_can_fit_is_named_with_the_loss(front):
    X, y = _reach_problem()
    if front == "finite":
        res = relucore.train(X, y, signs=(1,))
    elif front == "inf":
        res = relucore.train(X, y, signs=(1,), steps=np.inf)
    elif front == "trainer":
        res = relucore.Trainer(X, y, signs=(1,)).run()
    elif front == "trainer_limit":
        res = relucore.Trainer(X, y, signs=(1,)).run_to_limit()
    else:
        res = relucore.train(np.stack([X, X]), np.stack([y, -y]), signs=(1,))
        assert [r.tolist() for r in res.out_of_reach] == [[2], [0, 1, 3]]
        assert res.success.tolist() == [True, True] and "out of reach" in res.message[1]
        return
    assert res.success and res.status == (Status.certified if front in ("inf", "trainer_limit") else Status.converged)
    assert res.out_of_reach.tolist() == [2]
    # Its best prediction is 0: the loss is 1/2 y_2^2, and the message says whose it is.
    assert res.loss == pytest.approx(0.5 * 0.7**2, rel=1e-9)
    assert "example [2] is out of reach of every neuron" in res.message and f"loss {res.loss:.3g}" in res.message


def test_the_flow_names_out_of_reach_examples_too():
    X, y = _reach_problem()
    fl = relucore.flow(X, y, signs=(1,))
    assert fl.success and fl.out_of_reach.tolist() == [2] and "out of reach" in fl.message


def test_no_example_out_of_reach_leaves_the_message_as_it_was():
    X, y = _reach_problem()
    res = relucore.train(X, np.abs(y), signs=(1,))
    assert res.success and res.out_of_reach.size == 0 and "out of reach" not in res.message
    res = relucore.train(X, y, signs=(1,), activation="leaky_relu")  # the leaky ReLU outputs either sign
    assert res.out_of_reach.size == 0


def test_an_all_dead_network_is_stalled_in_every_front_end():
    """The reproducer: steps=np.inf said success (status 0) where a finite run said stalled (status 5)."""
    X, y, W0 = _dead_problem()
    finite = relucore.train(X, y, signs=(1, -1), init=W0)
    limit = relucore.train(X, y, signs=(1, -1), init=W0, steps=np.inf)
    trainer = relucore.Trainer(X, y, signs=(1, -1), init=W0).run_to_limit()
    fl = relucore.flow(X, y, signs=(1, -1), init=W0)
    for res in (finite, limit, trainer):
        assert res.status == Status.stalled and not res.success, res.message
        assert res.unfit.tolist() == [0, 1, 2, 3]
    assert limit.certificate.holds and "stalled" in limit.message
    assert fl.status == relucore.Status.stalled and not fl.success and fl.unfit.tolist() == [0, 1, 2, 3]
    assert "stalled" in fl.message


@pytest.mark.parametrize("scale", [1e100, 1e200, 1e300])
def test_status_1_never_carries_a_non_finite_gradient(scale):
    """The reproducer: status-1 results held a NaN gradient norm for |X| >= 1e100."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5, 40)) * scale
    y = rng.uniform(0.2, 1, 5)
    try:
        res = relucore.train(X, y, signs=(1,), init="gaussian", init_scale=1e-3 / scale, rng=0, steps=100)
    except ValueError:
        return  # refused by name (a result float64 cannot hold)
    assert np.isfinite(res.grad_norm) or res.status == Status.diverged
    if res.status in (Status.converged, Status.max_steps, Status.stalled):
        assert np.isfinite([res.loss, res.grad_norm]).all() and np.isfinite(res.W).all()
