"""The batched runs' bound result types (``_core.BatchOutput``, ``_core.BatchHistory``): the fields
the engines return, the arrays the public result exposes, and the divergence rule they carry."""

import numpy as np
import pytest
from _problems import fig4_problem

import relucore
from relucore import Status, _core
from relucore.gd.prepare import prepare
from relucore.gd.train import run_prepared

_OUTPUT_ARRAYS = {
    "status": np.int32,
    "nit": np.int64,
    "pattern_stable_step": np.int64,
    "n_records": np.int64,
    "loss": np.float64,
    "grad_norm": np.float64,
    "unfit": np.uint8,
    "out_of_reach": np.uint8,
    "finite": np.uint8,
    "overflowed": np.uint8,
}


def _batch(engine):
    X = np.stack([fig4_problem(s, n=6, d=40)[0] for s in (0, 1)])
    y = np.stack([fig4_problem(s, n=6, d=40)[1] for s in (0, 1)])
    return prepare(X, y, signs=(1, -1), engine=engine)


def _run(p, engine, steps, record):
    """The engine's own call on a prepared batch, as run_prepared makes it (outer shared, no extras)."""
    alpha, beta = p.alpha0.copy(), p.beta0.copy()
    hist = {"limit": steps // record + 2, "states": True} if record else {"limit": 0}
    shared = dict(y=p.y, outer=p.signs, alpha=alpha, beta=beta, eta=p.eta, tol=p.tol,
                  settings=p.settings(steps, record), history=hist, n_threads=1)  # fmt: skip
    if engine == "dual":
        return _core.run_dual_batch(K=p.K, **shared), alpha, beta
    W = p.W0.copy()
    return _core.run_dense_batch(X=p.X, W=W, **shared), alpha, beta


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_batch_output_is_the_bound_type_the_result_views(engine):
    p = _batch(engine)
    out, alpha, beta = _run(p, engine, 40, 3)
    assert type(out) is _core.BatchOutput and type(out.history) is _core.BatchHistory
    for name, dtype in _OUTPUT_ARRAYS.items():
        a = getattr(out, name)
        assert isinstance(a, np.ndarray) and a.dtype == dtype and a.shape[0] == 2, name
        assert getattr(out, name) is a  # the array the run filled, not a copy per read
    assert out.unfit.shape == out.out_of_reach.shape == (2, 6)
    with pytest.raises(AttributeError):
        out.status = out.status
    res = run_prepared(p, steps=40, record=3, n_threads=1, engine=engine, on_divergence="status")
    np.testing.assert_array_equal(res.alpha, alpha)
    np.testing.assert_array_equal(res.beta, beta)
    for name in ("status", "nit", "loss", "grad_norm", "pattern_stable_step"):
        np.testing.assert_array_equal(getattr(res, name), getattr(out, name), err_msg=name)
    h = out.history
    R = int(out.n_records.max())
    assert h.steps.shape == h.loss.shape == (2, R) and h.beta.shape == h.alpha.shape == h.mask.shape == (2, R, 2, 6)
    assert h.outer is None and h.mask.dtype == np.uint8
    for name in ("steps", "loss", "beta", "alpha"):
        np.testing.assert_array_equal(getattr(res.history, name), getattr(h, name), err_msg=name)
    np.testing.assert_array_equal(res.history.mask, h.mask.view(bool))
    np.testing.assert_array_equal(res.history.n_records, out.n_records)
    # The last kept state is the final one; the padding is steps -1, NaN and mask 0.
    for b in range(2):
        r = int(out.n_records[b])
        assert h.steps[b, r - 1] == out.nit[b] and h.loss[b, r - 1] == out.loss[b]
        np.testing.assert_array_equal(h.beta[b, r - 1], beta[b])
        assert (h.steps[b, r:] == -1).all() and np.isnan(h.loss[b, r:]).all() and (h.mask[b, r:] == 0).all()
    assert _run(p, engine, 40, 0)[0].history is None


def test_batch_history_keeps_the_outer_weights_of_a_trained_outer_layer():
    """``BatchHistory.outer`` (B, R, m): the effective weights ``c a_k`` at each kept state, which the
    result's history reports as ``a_k``; the last kept row is the final outer array."""
    p = _batch("dual")
    p = prepare(p.X, p.y, signs=(0.5, -0.5), engine="dual", train_outer=True, output_scale=0.5)
    B, m = p.beta0.shape[:2]
    outer = np.array(np.broadcast_to(p.signs, (B, m)), order="C")  # updated in place: the final c a_k
    alpha, beta = p.alpha0.copy(), p.beta0.copy()
    out = _core.run_dual_batch(
        K=p.K, y=p.y, outer=outer, alpha=alpha, beta=beta, eta=p.eta, tol=p.tol, settings=p.settings(30, 4),
        history={"limit": 30 // 4 + 2, "states": False, "outer": m}, n_threads=1,
    )  # fmt: skip
    h = out.history
    assert h.beta is None and h.alpha is None and h.mask is None
    R = int(out.n_records.max())
    assert h.outer.shape == (B, R, m) and h.steps.shape == (B, R)
    for b in range(B):
        r = int(out.n_records[b])
        np.testing.assert_array_equal(h.outer[b, r - 1], outer[b])
        assert np.isnan(h.outer[b, r:]).all()
    res = run_prepared(p, steps=30, record=4, n_threads=1, engine="dual", on_divergence="status")
    np.testing.assert_array_equal(res.history.outer, h.outer / 0.5)
    np.testing.assert_array_equal(res.outer, outer / 0.5)


def _problem(stalls):
    """A run that converges (two neurons of both signs), or that stalls leaving examples [1, 3, 4]
    unfit (one neuron, a large step: tests/gd/test_run_outcomes.py)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 40))
    y = np.array([0.5, -0.3, 0.8, -1.0, 0.2])
    if stalls:
        return X, np.abs(y), dict(signs=(1,), eta=3 / np.linalg.eigvalsh(X @ X.T)[-1])
    return X, y, dict(signs=(1, -1))


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("stalls", [False, True])
def test_a_state_the_loss_does_not_see_overflowing_ends_diverged(batched, stalls):
    """The guard in the batched runs (Outcomes::settle): the dual run's W = W0 + (alpha - alpha0) X
    is not finite where W0 is not, which the loss does not see; no non-finite number may leave in a
    result that is not diverged, and its unfit examples go with the status it no longer has."""
    X, y, kw = _problem(stalls)
    X, y = (X[None], y[None]) if batched else (X, y)
    p = prepare(X, y, engine="dual", **kw)
    kw = dict(steps=2000, record=0, n_threads=1, engine="dual")
    ok = run_prepared(p, **kw, on_divergence="status")
    want = Status.stalled if stalls else Status.converged
    assert np.asarray(ok.status).tolist() == (int(want) if not batched else [int(want)])
    assert np.size(ok.unfit[0] if batched else ok.unfit) == (3 if stalls else 0)
    p.W0[0, 0, 0] = np.inf  # read only to form W after the run: the engine never sees it
    res = run_prepared(p, **kw, on_divergence="status")
    np.testing.assert_array_equal(res.alpha, ok.alpha)  # the same run
    assert np.isfinite(res.loss).all() and not np.isfinite(res.W).all()
    if batched:
        assert res.status.tolist() == [int(Status.diverged)] and not res.success.any()
    else:
        assert res.status == Status.diverged and not res.success
    message = res.message[0] if batched else res.message
    assert message.startswith("diverged at step") and "overflowed to non-finite values" in message
    assert (res.unfit[0] if batched else res.unfit).size == 0
    with pytest.raises(relucore.DivergenceError, match="overflowed"):
        run_prepared(p, **kw, on_divergence="raise")


def test_batch_output_flags_only_the_problem_whose_state_is_not_finite():
    """``finite`` and ``overflowed`` per problem, from the _core call: a W0 that is not finite
    (problem 1) against the same problem's finite one (problem 0)."""
    X, y, kw = _problem(False)
    p = prepare(np.stack([X, X]), np.stack([y, y]), engine="dual", **kw)
    p.W0[1, 0, 7] = -np.inf
    alpha, beta = p.alpha0.copy(), p.beta0.copy()
    out = _core.run_dual_batch(
        K=p.K, y=p.y, outer=p.signs, alpha=alpha, beta=beta, eta=p.eta, tol=p.tol, settings=p.settings(500, 0),
        history={"limit": 0}, X=p.X, W0=p.W0, alpha0=p.alpha0, W=np.empty_like(p.W0),
    )  # fmt: skip
    assert out.finite.tolist() == [1, 0] and out.overflowed.tolist() == [0, 1]
    assert out.status.tolist() == [int(Status.converged), int(Status.diverged)]
    assert out.nit[0] == out.nit[1] and out.loss[0] == out.loss[1]  # the same run; only the status differs
