"""How runs end and what they keep: stalled stationary points, scale-free stopping,
histories that grow with the run, the default tolerance of y = 0."""

import numpy as np
import pytest

import relucore as rc
from relucore import Status, _core
from relucore.gd.defaults import UNFIT_RTOL


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 40))
    y = np.array([0.5, -0.3, 0.8, -1.0, 0.2])
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    return X, y, mu1


def _unfit_by_definition(res, y, signs):
    """The examples the docs call unfit, from the final state (independent of C++)."""
    active = (res.beta > 0).any(axis=0)
    fittable = (np.multiply.outer(np.asarray(signs), y) > 0).any(axis=0)
    h = res.predictions
    return np.flatnonzero(~active & fittable & (np.abs(h - y) > UNFIT_RTOL * np.abs(y)))


def test_a_step_that_kills_every_neuron_stalls(problem):
    X, y, mu1 = problem
    res = rc.train(X, y, signs=(1, -1), eta=4 / mu1)
    assert res.status == int(_core.Status.stalled) == 5 and not res.success and res.stationary
    assert res.grad_norm == 0 and res.loss == pytest.approx(0.5 * y @ y, rel=1e-15)
    np.testing.assert_array_equal(res.unfit, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(res.unfit, _unfit_by_definition(res, y, (1, -1)))
    assert "leaves examples [0, 1, 2, 3, 4] unfit: no neuron is active on them" in res.message


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_partial_death_names_the_examples_both_engines(problem, engine):
    X, y, mu1 = problem
    res = rc.train(X, np.abs(y), eta=3 / mu1, engine=engine)
    assert res.status == Status.stalled and not res.success
    np.testing.assert_array_equal(res.unfit, [1, 3, 4])
    np.testing.assert_array_equal(res.unfit, _unfit_by_definition(res, np.abs(y), (1,)))
    np.testing.assert_array_equal(res.predictions[res.unfit], 0.0)
    # A converged run of the same problem names nothing.
    ok = rc.train(X, y, signs=(1, -1), engine=engine)
    assert ok.status == Status.converged and ok.success and ok.unfit.size == 0


def test_one_neuron_and_mixed_labels_converges(problem):
    # h >= 0 cannot fit the negative labels: h = 0 there is the global minimum.
    X, y, _ = problem
    res = rc.train(X * 3, y, signs=(1,))
    assert res.status == Status.converged and res.loss == pytest.approx(0.5 * np.sum(y[y < 0] ** 2), rel=1e-9)


def test_batch_and_trainer(problem):
    X, y, mu1 = problem
    res = rc.train(np.stack([X, X]), np.stack([y, y]), signs=(1, -1), eta=[4 / mu1, 0.01])
    np.testing.assert_array_equal(res.status, [5, 0])
    np.testing.assert_array_equal(res.success, [False, True])
    np.testing.assert_array_equal(res.unfit[0], [0, 1, 2, 3, 4])
    assert res.unfit[1].size == 0 and "unfit" in res.message[0] and "converged" in res.message[1]
    t = rc.Trainer(X, y, signs=(1, -1), eta=4 / mu1)
    r = t.run()
    assert r.status == Status.stalled and not r.success
    np.testing.assert_array_equal(r.unfit, [0, 1, 2, 3, 4])
    assert r.message == res.message[0]


def test_logistic_stall_is_misclassification(problem):
    X, y, _ = problem
    # Every neuron inactive on every example (a start given through a
    # checkpoint in Gram-only mode): the gradient is exactly 0 and h = 0
    # classifies nothing, though each example has a neuron of its sign.
    K = X @ X.T
    beta0 = -np.ones((2, 5))
    res = _train_from_beta(K, np.sign(y), beta0, loss="logistic", tol=1e-6)
    assert res.status == Status.stalled and res.nit == 0 and res.loss == pytest.approx(np.log(2), rel=1e-15)
    np.testing.assert_array_equal(res.unfit, np.arange(5))
    assert "misclassified" in res.message


def _train_from_beta(K, y, beta0, **kw):
    t = rc.Trainer(gram=K, y=y, signs=(1, -1), steps=100, **kw)
    alpha0 = np.linalg.solve(K, beta0.T).T
    state = t.state_dict()
    state.update(alpha=alpha0, beta=beta0, mask=(beta0 > 0).astype(np.uint8), alpha0=alpha0, beta0=beta0)
    return rc.Trainer.from_state(state).run()


@pytest.mark.parametrize("engine", ["dual", "weights"])
@pytest.mark.parametrize("c", [1e150, 1e-150, 2.0**500, 2.0**-500, 1e148])
def test_scaled_X_takes_the_same_steps(problem, engine, c):
    # GD is equivariant under X -> c X (eta -> eta / c^2, tol -> c tol):
    # beta is unchanged and W scales by 1/c. Before the rescaled gradient
    # norm, X * 1e150 stopped after 122 instead of 138 steps ("gradient norm 0").
    X, y, _ = problem
    ref = rc.train(X, y, signs=(1, -1), engine=engine)
    res = rc.train(X * c, y, signs=(1, -1), engine=engine)
    assert res.status == ref.status == Status.converged and res.nit == ref.nit
    assert res.grad_norm > 0 and res.grad_norm / c == pytest.approx(ref.grad_norm, rel=1e-9)
    # Tolerance: powers of two scale every operation exactly except where the
    # rescaled branch rounds differently (and subnormal steps near the end);
    # 1e-12 of |beta| covers both, while the drift before was 4e-11.
    np.testing.assert_allclose(res.beta, ref.beta, rtol=0, atol=1e-12 * np.abs(ref.beta).max())
    np.testing.assert_allclose(res.W * c, ref.W, rtol=0, atol=1e-12 * np.abs(ref.W).max())


def test_ordinary_scale_keeps_the_plain_gradient_norm(problem):
    # The plain branch is sqrt(sum_k d_alpha_k^T K d_alpha_k) / eta, bit for bit
    # what numpy computes from the same terms in the same order at a state
    # where no rescaling is needed; the rescaled branch agrees to rounding.
    X, y, _ = problem
    res = rc.train(X, y, signs=(1, -1), steps=7, tol=0)
    g = res.predictions - y
    u = np.where(res.beta > 0, -res.signs[:, None] * g, 0.0)
    expect = np.sqrt(np.einsum("kn,nj,kj->", u, X @ X.T, u))
    assert res.grad_norm == pytest.approx(expect, rel=1e-13)


def test_history_grows_with_the_steps_run(problem):
    X, y, _ = problem
    res = rc.train(X, y, signs=(1, -1), steps=10**7, record=1)
    assert res.status == Status.converged and res.history.steps.shape == (res.nit + 1,)
    np.testing.assert_array_equal(res.history.steps, np.arange(res.nit + 1))
    ref = rc.train(X, y, signs=(1, -1), steps=res.nit + 5, record=1)
    for name in ("loss", "beta", "alpha", "mask"):
        np.testing.assert_array_equal(getattr(res.history, name), getattr(ref.history, name))
    # A batch is padded to its longest history only.
    b = rc.train(np.stack([X, X]), np.stack([y, y]), signs=(1, -1), eta=[0.01, 0.005], steps=10**7, record=7)
    R = int(b.history.n_records.max())
    assert b.history.beta.shape == (2, R, 2, 5) and R == b.nit.max() // 7 + 2 - (b.nit.max() % 7 == 0)
    short = int(np.argmin(b.history.n_records))
    assert (b.history.steps[short, b.history.n_records[short] :] == -1).all()


def test_history_request_beyond_available_memory_is_refused_before_allocation(problem, monkeypatch):
    X, y, _ = problem
    from relucore import _validation

    monkeypatch.setattr(_validation, "available_memory", lambda: 2.0**30)
    with pytest.raises(
        ValueError,
        match=r"record: keeping up to 100000002 states of 1 problem\(s\).* needs .* GiB, more than the 1 GiB",
    ):
        rc.train(X, y, steps=10**8, record=1)
    assert rc.train(X, y, steps=10**6, record=1).status == Status.converged  # 1e6 states would fit


def test_zero_labels_default_tol_follows_the_start(problem):
    X, _, _ = problem
    for init in ("gaussian", "positive"):
        kw = {"rng": 0} if init == "gaussian" else {}
        res = rc.train(X, np.zeros(5), init=init, **kw)
        h0 = np.einsum("k,kn->n", res.signs, np.maximum(res.beta0, 0))
        mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
        assert res.tol == pytest.approx(1e-12 * np.sqrt(mu1) * np.linalg.norm(h0), rel=1e-12)
        assert res.status == Status.converged and res.nit < 1000 and res.loss < 1e-20
