"""train(output_bias=..., reduction=..., sample_weight=...) and a zero initial outer layer:
both engines, Trainer and batches against a numpy two-layer GD written here."""

import numpy as np
import pytest

import relucore
from relucore import Status
from relucore.gd.loss_options import ZERO_OUTER_MESSAGE


def numpy_gd(X, y, W, a, b, c0, eta, steps, *, w=None, reduction="half_sum", train_outer=True, slope=0.0):
    """Full-batch GD on h = c0 + sum_k a_k phi(w_k^T x + b_k), every trained parameter moved at once.

    The loss is 1/2 sum_i w_i r_i^2 ("half_sum"), sum_i w_i r_i^2 ("sum") or 1/n sum_i w_i r_i^2
    ("mean"), r = h - y, w = 1 when not given; c0 None: no output bias. Returns W, a, b, c0, h,
    the loss and the gradient norm over the trained parameters at the final state.
    """
    n = X.shape[0]
    w = np.ones(n) if w is None else w
    factor = {"half_sum": 1.0, "sum": 2.0, "mean": 2.0 / n}[reduction]
    W, a, b = W.copy(), a.copy(), b.copy()

    def phi(u):
        return np.where(u > 0, u, slope * u)

    def grads(W, a, b, c0):
        pre = W @ X.T + b[:, None]
        h = a @ phi(pre) + (0.0 if c0 is None else c0)
        r = h - y
        g = factor * w * r  # dLoss/dh
        loss = 0.5 * factor * np.sum(w * r * r)
        gpre = a[:, None] * np.where(pre > 0, 1.0, slope) * g[None, :]
        return gpre @ X, gpre.sum(axis=1), phi(pre) @ g, g.sum(), h, loss

    for _ in range(steps):
        gW, gb, ga, gc, _, _ = grads(W, a, b, c0)
        W, b = W - eta * gW, b - eta * gb
        if train_outer:
            a = a - eta * ga
            c0 = None if c0 is None else c0 - eta * gc
    gW, gb, ga, gc, h, loss = grads(W, a, b, c0)
    sq = np.sum(gW**2) + np.sum(gb**2)
    if train_outer:
        sq += np.sum(ga**2) + (0.0 if c0 is None else gc**2)
    return W, a, b, c0, h, loss, np.sqrt(sq)


def problem(seed, n=14, d=5, m=6, zero_outer=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    b0 = 0.3 * rng.standard_normal(m)
    a0 = np.zeros(m) if zero_outer else rng.standard_normal(m) / np.sqrt(m)
    w = rng.uniform(0.2, 2.0, n)
    w[3] = 0.0  # a zero weight takes example 3 out of the loss
    return X, y, W0, b0, a0, w


def rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300)


CASES = [
    dict(reduction="half_sum", weighted=False, out_bias=0.4),
    dict(reduction="sum", weighted=True, out_bias=None),
    dict(reduction="mean", weighted=True, out_bias=-0.2),
    dict(reduction="mean", weighted=False, out_bias=0.0),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("engine", ["dual", "weights"])
@pytest.mark.parametrize("train_outer", [True, False])
def test_matches_numpy_gd(engine, case, train_outer):
    X, y, W0, b0, a0, w = problem(1)
    eta, steps = 0.02, 400
    weights = w if case["weighted"] else None
    r = relucore.train(
        X, y, init=np.column_stack([W0, b0]), signs=a0, bias=True, train_outer=train_outer, eta=eta,
        steps=steps, tol=0, engine=engine, output_bias=case["out_bias"], reduction=case["reduction"],
        sample_weight=weights,
    )  # fmt: skip
    W, a, b, c0, h, loss, gnorm = numpy_gd(
        X, y, W0, a0, b0, case["out_bias"], eta, steps, w=weights, reduction=case["reduction"], train_outer=train_outer
    )
    assert r.nit == steps and r.engine == engine
    assert rel(r.W, W) <= 1e-11
    assert rel(r.bias, b) <= 1e-11
    assert rel(r.outer, a) <= 1e-11
    assert rel(r.predictions, h) <= 1e-11
    assert r.loss == pytest.approx(loss, rel=1e-10)
    assert r.grad_norm == pytest.approx(gnorm, rel=1e-9)
    assert r.reduction == case["reduction"]
    if case["out_bias"] is None:
        assert r.output_bias is None and r.output_bias0 is None
    else:
        assert r.output_bias == pytest.approx(c0, rel=1e-11, abs=1e-13)
        assert r.output_bias0 == case["out_bias"]
        if not train_outer:
            assert r.output_bias == case["out_bias"]  # fixed with a fixed outer layer


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_zero_weight_removes_the_example(engine):
    X, y, W0, b0, a0, w = problem(2)
    keep = w > 0
    kw = dict(init=W0, signs=a0, train_outer=True, eta=0.02, steps=200, tol=0, engine=engine, reduction="sum")
    r = relucore.train(X, y, sample_weight=w, **kw)
    r_drop = relucore.train(X[keep], y[keep], sample_weight=w[keep], **kw)
    assert rel(r.W, r_drop.W) <= 1e-12
    assert rel(r.outer, r_drop.outer) <= 1e-12
    assert r.loss == pytest.approx(r_drop.loss, rel=1e-12)


def test_zero_initial_outer_layer():
    X, y, W0, b0, a0, w = problem(3, zero_outer=True)
    with pytest.raises(ValueError, match="all-zero initial outer layer"):
        relucore.train(X, y, init=W0, signs=a0, train_outer=True, steps=10)
    assert "pass eta" in ZERO_OUTER_MESSAGE
    with pytest.raises(ValueError, match="non-zero"):  # a fixed zero outer layer still refused
        relucore.train(X, y, init=W0, signs=a0, eta=0.1, steps=10)
    r = relucore.train(
        X, y, init=W0, signs=a0, train_outer=True, eta=0.05, steps=300, tol=0, reduction="mean", output_bias=0.0,
        bias=True,
    )  # fmt: skip
    W, a, b, c0, h, loss, _ = numpy_gd(X, y, W0, a0, np.zeros(W0.shape[0]), 0.0, 0.05, 300, reduction="mean")
    assert rel(r.W, W) <= 1e-11 and rel(r.outer, a) <= 1e-11 and rel(r.predictions, h) <= 1e-11
    # partly zero: the default step is the rule with the real ||a||
    a_part = problem(3)[4].copy()
    a_part[:2] = 0.0
    r2 = relucore.train(X, y, init=W0, signs=a_part, train_outer=True, steps=5)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    assert r2.eta == pytest.approx(1.0 / (np.sum(a_part**2) * mu1), rel=1e-12)


def test_default_step_and_tol_follow_the_loss():
    X, y, W0, b0, a0, w = problem(4)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    n = X.shape[0]
    base = relucore.train(X, y, init=W0, signs=a0, steps=1)
    for reduction, omega in (("half_sum", w), ("sum", 2 * w), ("mean", 2 * w / n)):
        r = relucore.train(X, y, init=W0, signs=a0, steps=1, reduction=reduction, sample_weight=w)
        assert r.eta == pytest.approx(base.eta / omega.max(), rel=1e-12)
        assert r.eta == pytest.approx(1.0 / (omega.max() * np.sum(a0**2) * mu1), rel=1e-10)
        assert r.tol == pytest.approx(relucore.gd.defaults.TOL_FACTOR * np.sqrt(mu1) * np.linalg.norm(omega * y))
    r = relucore.train(X, y, init=W0, signs=a0, steps=1, reduction="mean")
    assert r.eta == pytest.approx(base.eta * n / 2, rel=1e-12)
    assert r.loss == pytest.approx(np.mean((r.predictions - y) ** 2), rel=1e-12)


def test_refusals():
    X, y, W0, b0, a0, w = problem(5)
    kw = dict(init=W0, signs=a0, steps=5)
    bad = w.copy()
    bad[0] = -1.0
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        relucore.train(X, y, sample_weight=bad, **kw)
    bad[0] = np.nan
    with pytest.raises(ValueError, match="sample_weight must be finite"):
        relucore.train(X, y, sample_weight=bad, **kw)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        relucore.train(X, y, sample_weight=w[:-1], **kw)
    with pytest.raises(ValueError, match="positive entry"):
        relucore.train(X, y, sample_weight=0 * w, **kw)
    with pytest.raises(ValueError, match="reduction"):
        relucore.train(X, y, reduction="avg", **kw)
    with pytest.raises(ValueError, match="output_bias"):
        relucore.train(X, y, output_bias=np.inf, **kw)
    for extra in (dict(output_bias=0.1), dict(sample_weight=w), dict(reduction="mean")):
        with pytest.raises(ValueError, match="not covered"):
            relucore.train(X, np.abs(y) + 0.1, steps=np.inf, **extra)
        with pytest.raises(ValueError, match="not covered"):
            relucore.flow(X, np.abs(y) + 0.1, **extra)
    t = relucore.Trainer(X, y, output_bias=0.1, **kw)
    with pytest.raises(ValueError, match="output bias"):
        t.run_to_limit()
    ylog = np.sign(y)
    with pytest.raises(ValueError, match="keeps its mean"):
        relucore.train(X, ylog, loss="logistic", reduction="mean", **kw)


def test_defaults_are_bitwise_unchanged():
    # The new keywords at their defaults give the run of before (the engines' plain code).
    X, y, W0, b0, a0, w = problem(6)
    for engine in ("dual", "weights"):
        a = relucore.train(X, y, init=W0, signs=a0, train_outer=True, eta=0.02, steps=100, engine=engine)
        b = relucore.train(
            X, y, init=W0, signs=a0, train_outer=True, eta=0.02, steps=100, engine=engine,
            output_bias=None, reduction="half_sum", sample_weight=None,
        )  # fmt: skip
        np.testing.assert_array_equal(a.W, b.W)
        np.testing.assert_array_equal(a.outer, b.outer)
        assert a.loss == b.loss and a.output_bias is None


def test_batch_and_trainer():
    X, y, W0, b0, a0, w = problem(7)
    rng = np.random.default_rng(0)
    Xb = np.stack([X, X + 0.1 * rng.standard_normal(X.shape)])
    yb = np.stack([y, y[::-1]])
    wb = np.stack([w, w[::-1]])
    kw = dict(init=W0, signs=a0, train_outer=True, eta=0.02, steps=150, tol=0, reduction="mean")
    rb = relucore.train(Xb, yb, sample_weight=wb, output_bias=[0.1, -0.1], **dict(kw, init=np.stack([W0, W0])))
    for i, c in enumerate((0.1, -0.1)):
        r1 = relucore.train(Xb[i], yb[i], sample_weight=wb[i], output_bias=c, **kw)
        np.testing.assert_allclose(rb.W[i], r1.W, rtol=0, atol=1e-13)
        assert rb.output_bias[i] == pytest.approx(r1.output_bias, abs=1e-14)
        np.testing.assert_allclose(rb.predictions[i], r1.predictions, rtol=0, atol=1e-13)
    t = relucore.Trainer(X, y, sample_weight=w, output_bias=0.1, **kw)
    rt = t.run()
    r1 = relucore.train(X, y, sample_weight=w, output_bias=0.1, engine="dual", **kw)
    np.testing.assert_array_equal(rt.W, r1.W)
    assert rt.output_bias == r1.output_bias and rt.loss == r1.loss
    np.testing.assert_allclose(rt.predictions, t.predictions, rtol=0, atol=1e-13)
    # a checkpoint resumes bitwise with its output bias and weights
    t2 = relucore.Trainer(X, y, sample_weight=w, output_bias=0.1, **kw)
    t2.step(70)
    t3 = relucore.Trainer.from_state(t2.state_dict())
    t2.step(30)
    t3.step(30)
    np.testing.assert_array_equal(t2.alpha, t3.alpha)
    assert t2._engine.output_bias == t3._engine.output_bias


@pytest.mark.parametrize(
    "reduction, out_bias, weighted", [("half_sum", None, False), ("sum", 0.3, True), ("mean", -0.2, True)]
)
def test_meanfield_reduction_is_train_reduction(reduction, out_bias, weighted):
    # The same name, the same loss: meanfield.train(reduction=R, eta=s) (full batch, no noise, no
    # decay, output scale 1/N) is train(reduction=R, eta=s, output_scale=1/N, train_outer=True).
    from relucore import meanfield

    X, y, W0, b0, a0, w = problem(8, n=9, d=4, m=6)
    w = w if weighted else None
    N, steps = a0.size, 200
    s = {"half_sum": 0.05, "sum": 0.025, "mean": 0.3}[reduction]  # below 2 / (the output bias's curvature)
    mf = meanfield.train(
        X, y, m=N, eta=s, weight_decay=0.0, temperature=0.0, steps=steps, batch_size=None, bias=True,
        train_outer=True, output_scale="1/m", init=np.column_stack([a0, W0, b0]), record=0, n_threads=1,
        progress=False, reduction=reduction, output_bias=out_bias, sample_weight=w,
    )  # fmt: skip
    r = relucore.train(
        X, y, signs=a0, init=np.column_stack([W0, b0]), eta=s, steps=steps, tol=0, train_outer=True,
        output_scale=1 / N, bias=True, reduction=reduction, output_bias=out_bias, sample_weight=w,
    )  # fmt: skip
    assert r.status == Status.max_steps and mf.status == Status.completed
    if out_bias is None:
        assert mf.output_bias is None
    else:
        assert mf.output_bias == pytest.approx(r.output_bias, rel=1e-12)
        assert mf.params["output_bias"] == out_bias
    assert rel(r.outer, mf.theta[:, 0]) <= 1e-12
    assert rel(r.W, mf.theta[:, 1:-1]) <= 1e-12
    h = mf.predict(X)
    factor = {"half_sum": 0.5, "sum": 1.0, "mean": 1.0 / X.shape[0]}[reduction]
    assert mf.objective[-1] == pytest.approx(factor * np.sum((1.0 if w is None else w) * (h - y) ** 2), rel=1e-12)
    assert r.loss == pytest.approx(mf.objective[-1], rel=1e-10)
    assert mf.params["reduction"] == reduction
    with pytest.raises(ValueError, match="reduction"):
        meanfield.train(X, y, m=N, steps=1, reduction="avg")
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        meanfield.train(X, y, m=N, steps=1, sample_weight=-np.ones(X.shape[0]))


def test_sweep_keys_reduction_and_output_bias(monkeypatch):
    pytest.importorskip("pandas")  # sweep tables are DataFrames (the sanitizer job has no pandas)
    from relucore.sweeps import task
    from relucore.sweeps.config import config_key, normalise_config

    seen = []
    prepare = task.prepare

    def spy(*args, **kwargs):
        seen.append((kwargs.get("reduction"), kwargs.get("output_bias")))
        return prepare(*args, **kwargs)

    monkeypatch.setattr(task, "prepare", spy)

    base = normalise_config({"n": 4, "d": 8})
    assert base["reduction"] == "half_sum" and base["output_bias"] is None
    cfg = normalise_config({"n": 4, "d": 8, "reduction": "mean", "output_bias": 0.5, "minnorm": False})
    assert config_key(cfg) != config_key(normalise_config({"n": 4, "d": 8, "minnorm": False}))
    with pytest.raises(ValueError, match="minnorm"):
        normalise_config({"n": 4, "d": 8, "reduction": "mean"})
    with pytest.raises(ValueError, match="reduction"):
        normalise_config({"n": 4, "d": 8, "reduction": "avg", "minnorm": False})
    table = relucore.sweep(
        [
            {
                "n": 4,
                "d": 30,
                "reduction": "mean",
                "output_bias": 0.1,
                "minnorm": False,
                "steps": 50,
                "gram_stats": False,
            }
        ],
        trials=2,
        rng=0,
    )
    assert len(table) == 2
    assert list(table["reduction"]) == ["mean", "mean"] and list(table["output_bias"]) == [0.1, 0.1]
    assert seen and set(seen) == {("mean", 0.1)}  # the trials trained with them


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_logistic_sample_weight(engine):
    # The logistic loss keeps its mean and takes the weights: 1/n sum_i v_i log(1 + exp(-y_i h_i)).
    X, y, W0, b0, a0, w = problem(9)
    y = np.sign(y)
    n = X.shape[0]
    eta, steps = 0.5, 300
    r = relucore.train(
        X, y, init=W0, signs=a0, loss="logistic", sample_weight=w, eta=eta, steps=steps, tol=0, engine=engine
    )
    W = W0.copy()
    for _ in range(steps + 1):
        pre = W @ X.T
        h = a0 @ np.maximum(pre, 0)
        g = -y * w / n / (1 + np.exp(y * h))
        if _ < steps:
            W = W - eta * (a0[:, None] * (pre > 0) * g[None, :]) @ X
    assert rel(r.W, W) <= 1e-11
    assert r.loss == pytest.approx(np.mean(w * np.log1p(np.exp(-y * h))), rel=1e-11)
    base = relucore.train(X, y, init=W0, signs=a0, loss="logistic", steps=1)
    weighted = relucore.train(X, y, init=W0, signs=a0, loss="logistic", sample_weight=w, steps=1)
    assert weighted.eta == pytest.approx(base.eta / w.max(), rel=1e-12)
    assert weighted.tol == 0.0


def test_meanfield_output_bias_threads_segments_and_fixed():
    # The output bias is the same whatever the thread count and however the run is cut into calls;
    # with a fixed outer layer it does not move.
    from relucore import meanfield

    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((40, 2)), rng.standard_normal(40)
    kw = dict(m=3000, eta=0.5, steps=60, rng=0, batch_size=1, output_bias=0.25, record=7)
    one = meanfield.train(X, y, n_threads=1, progress=False, **kw)
    two = meanfield.train(X, y, n_threads=2, progress=True, **kw)  # progress: the run in segments
    assert one.output_bias == two.output_bias and one.output_bias != 0.25
    np.testing.assert_array_equal(one.theta, two.theta)
    np.testing.assert_array_equal(one.objective, two.objective)
    h = one.predict(X)
    assert one.objective[-1] == pytest.approx(
        np.mean((h - y) ** 2) + one.params["weight_decay"] / kw["m"] * np.sum(one.theta**2), rel=1e-10
    )
    fixed = meanfield.train(X, y, train_outer=False, n_threads=1, progress=False, **kw)
    assert fixed.output_bias == 0.25
