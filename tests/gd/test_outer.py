"""train(train_outer=..., output_scale=..., bias=...): both engines, a numpy two-layer GD and meanfield.train agree."""

import numpy as np
import pytest

import relucore
from relucore import meanfield


def two_layer_gd(X, y, W, a, b, eta, c, steps, bias=True, train_a=True):
    """Plain two-layer GD written as autograd + SGD would run it (Dana et al. 2025).

    h(x) = c sum_j a_j relu(w_j^T x + b_j), R = 1/2 sum_i (h(x_i) - y_i)^2, all of W, a
    (and b when ``bias``) moved at once by -eta times their gradients. Returns W, a, b, h and
    the gradient norm over the trained parameters at the final state.
    """
    W, a, b = W.copy(), a.copy(), b.copy()

    def grads(W, a, b):
        pre = W @ X.T + b[:, None]  # (m, n)
        act = np.maximum(pre, 0.0)
        h = c * (a @ act)
        r = h - y
        ga = c * (act @ r)
        gpre = c * a[:, None] * (pre > 0) * r[None, :]
        return gpre @ X, gpre.sum(axis=1) if bias else np.zeros_like(b), ga, h

    for _ in range(steps):
        gW, gb, ga, _ = grads(W, a, b)
        W, b, a = W - eta * gW, b - eta * gb, (a - eta * ga if train_a else a)
    gW, gb, ga, h = grads(W, a, b)
    return W, a, b, h, np.sqrt(np.sum(gW**2) + np.sum(gb**2) + np.sum(ga**2))


def sphere_problem(seed, n=12, d=6, m=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.uniform(1, 2, n) * rng.choice([-1.0, 1.0], n)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    a0 = rng.standard_normal(m)
    b0 = 0.1 * rng.standard_normal(m)
    return X, y, W0, a0, b0


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_matches_numpy_two_layer_gd(engine, bias):
    # The Dana et al. setting: h = (1/p) sum_j a_j relu(w_j^T x), eta = p/n.
    X, y, W0, a0, b0 = sphere_problem(1)
    n, p = X.shape[0], a0.size
    b0 = b0 if bias else np.zeros(p)
    eta, steps = p / n, 300
    init = np.column_stack([W0, b0]) if bias else W0
    r = relucore.train(
        X, y, signs=a0, init=init, eta=eta, steps=steps, tol=0, engine=engine,
        train_outer=True, output_scale=1 / p, bias=bias,
    )  # fmt: skip
    W, a, b, h, gnorm = two_layer_gd(X, y, W0, a0, b0, eta, 1 / p, steps, bias)
    assert r.nit == steps
    assert np.max(np.abs(r.outer - a)) <= 1e-12 * np.max(np.abs(a))
    assert np.max(np.abs(r.W - W)) <= 1e-12 * np.max(np.abs(W))
    assert np.max(np.abs(r.predictions - h)) <= 1e-12 * np.max(np.abs(y))
    assert r.grad_norm == pytest.approx(gnorm, rel=1e-10)
    assert np.array_equal(r.signs, a0)
    assert np.array_equal(r.W0, W0)
    if bias:
        assert np.max(np.abs(r.bias - b)) <= 1e-12 * np.max(np.abs(b))
        assert np.array_equal(r.bias0, b0)
    else:
        assert r.bias is None
    # the outer layer did move
    assert np.max(np.abs(r.outer - a0)) > 1e-3


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("output_scale", [1.0, 0.25])
def test_engines_agree(bias, output_scale):
    X, y, W0, a0, b0 = sphere_problem(2, n=10, d=14, m=4)
    init = np.column_stack([W0, b0]) if bias else W0
    kw = dict(signs=a0, init=init, tol=0, train_outer=True, output_scale=output_scale, bias=bias)
    # Half the default step: the default (the fixed-outer-layer rule) leaves this run oscillating,
    # where rounding differences grow to 1e-10.
    eta = 0.5 * relucore.train(X, y, steps=0, **kw).eta
    kw.update(steps=400, eta=eta)
    rd = relucore.train(X, y, engine="dual", **kw)
    rw = relucore.train(X, y, engine="weights", **kw)
    assert rd.eta == rw.eta
    for name in ("W", "alpha", "beta", "outer", "predictions"):
        u, v = getattr(rd, name), getattr(rw, name)
        assert np.max(np.abs(u - v)) <= 1e-12 * max(np.max(np.abs(v)), 1.0), name
    assert rd.loss == pytest.approx(rw.loss, rel=1e-10, abs=1e-14)
    assert rd.grad_norm == pytest.approx(rw.grad_norm, rel=1e-10)
    if bias:
        assert np.max(np.abs(rd.bias - rw.bias)) <= 1e-12


@pytest.mark.parametrize(
    "activation, loss", [("leaky_relu", "square"), ("relu", "logistic"), ("leaky_relu", "logistic")]
)
def test_engines_agree_for_every_model(activation, loss):
    X, y, W0, a0, b0 = sphere_problem(2, n=10, d=14, m=4)
    y = np.sign(y) if loss == "logistic" else y
    kw = dict(signs=a0, init=W0, steps=300, tol=0, train_outer=True, bias=True, output_scale=0.5, eta=0.1)
    kw.update(activation=activation, loss=loss)
    rd = relucore.train(X, y, engine="dual", **kw)
    rw = relucore.train(X, y, engine="weights", **kw)
    assert np.max(np.abs(rd.W - rw.W)) <= 1e-13 and np.max(np.abs(rd.outer - rw.outer)) <= 1e-13
    assert rd.loss == pytest.approx(rw.loss, rel=1e-12)
    assert np.max(np.abs(rd.outer - a0)) > 1e-3


def test_dual_engine_stays_in_the_span_with_a_trained_outer_layer():
    # The inner weights still move in the row span of [X, 1]: W = W0 + (alpha - alpha0) [X, 1],
    # beta = [X, 1] w_k (the dual bookkeeping holds while the per-neuron scale a_k moves).
    X, y, W0, a0, b0 = sphere_problem(3, n=8, d=12, m=3)
    r = relucore.train(X, y, signs=a0, init=np.column_stack([W0, b0]), steps=200, tol=0, train_outer=True, bias=True)
    Xb = np.column_stack([X, np.ones(len(X))])
    Wb = np.column_stack([r.W, r.bias])
    Wb0 = np.column_stack([r.W0, r.bias0])
    assert np.max(np.abs(Wb - (Wb0 + (r.alpha - r.alpha0) @ Xb))) <= 1e-13
    assert np.max(np.abs(r.beta - Wb @ Xb.T)) <= 1e-12
    assert np.max(np.abs(r.predictions - r.outer @ np.maximum(Wb @ Xb.T, 0))) <= 1e-12


@pytest.mark.parametrize("bias", [False, True])
def test_matches_meanfield_train(bias):
    # meanfield.train minimises (1/M) sum (h - y)^2 with step s: s = eta M / 2 is GD with step eta
    # on 1/2 sum (h - y)^2. Output scale 1/N; full batch, no noise, no decay.
    X, y, W0, a0, b0 = sphere_problem(4, n=9, d=5, m=6)
    M, N = X.shape[0], a0.size
    eta, steps = 0.5 * N / M, 250
    b0 = b0 if bias else np.zeros(N)
    theta0 = np.column_stack([a0, W0, b0]) if bias else np.column_stack([a0, W0])
    mf = meanfield.train(
        X, y, m=N, eta=eta * M / 2, weight_decay=0.0, temperature=0.0, steps=steps, batch_size=None,
        bias=bias, train_outer=True, output_scale="1/m", init=theta0, record=0, n_threads=1, progress=False,
    )  # fmt: skip
    init = np.column_stack([W0, b0]) if bias else W0
    for engine in ("dual", "weights"):
        r = relucore.train(
            X, y, signs=a0, init=init, eta=eta, steps=steps, tol=0, engine=engine,
            train_outer=True, output_scale=1 / N, bias=bias,
        )  # fmt: skip
        assert np.max(np.abs(r.outer - mf.theta[:, 0])) <= 1e-12 * np.max(np.abs(mf.theta[:, 0]))
        assert np.max(np.abs(r.W - mf.theta[:, 1 : 1 + X.shape[1]])) <= 1e-12
        if bias:
            assert np.max(np.abs(r.bias - mf.theta[:, -1])) <= 1e-12
        assert np.max(np.abs(r.predictions - mf.predict(X))) <= 1e-12


def test_fixed_outer_layer_with_output_scale_is_scaled_signs():
    # A fixed outer layer with scale c is the model with signs c s (the same steps to rounding).
    X, y, W0, a0, _ = sphere_problem(5, n=8, d=10, m=3)
    r1 = relucore.train(X, y, signs=a0, init=W0, steps=300, tol=0, output_scale=0.5, eta=0.3)
    r2 = relucore.train(X, y, signs=0.5 * a0, init=W0, steps=300, tol=0, eta=0.3)
    assert np.array_equal(r1.signs, a0)
    assert np.array_equal(r1.outer, a0)
    assert np.max(np.abs(r1.W - r2.W)) <= 1e-13
    assert np.max(np.abs(r1.predictions - r2.predictions)) <= 1e-13


def test_bias_in_gram_only_mode_is_k_plus_ones():
    X, y, W0, a0, b0 = sphere_problem(6, n=7, d=9, m=2)
    kw = dict(signs=np.abs(a0), steps=150, tol=0, bias=True, train_outer=True)
    rx = relucore.train(X, y, **kw)
    rg = relucore.train(gram=X @ X.T, y=y, **kw)
    assert rg.W is None and rg.bias is None
    assert np.max(np.abs(rx.beta - rg.beta)) <= 1e-12
    assert np.max(np.abs(rx.outer - rg.outer)) <= 1e-12
    # the positive start holds with the bias coordinate: beta0 = eps > 0
    assert np.all(rx.beta0 > 0)


def test_batched_per_problem_signs_and_outer():
    B = 3
    probs = [sphere_problem(10 + b, n=8, d=6, m=4) for b in range(B)]
    X = np.stack([p[0] for p in probs])
    y = np.stack([p[1] for p in probs])
    W0 = np.stack([p[2] for p in probs])
    a0 = np.stack([p[3] for p in probs])
    kw = dict(steps=120, tol=0, train_outer=True, output_scale=0.5, eta=0.5)
    rb = relucore.train(X, y, signs=a0, init=W0, **kw)
    assert rb.outer.shape == (B, 4) and rb.W.shape == (B, 4, 6) and rb.predictions.shape == (B, 8)
    for b in range(B):
        r = relucore.train(X[b], y[b], signs=a0[b], init=W0[b], **kw)
        assert np.array_equal(rb.outer[b], r.outer)
        assert np.array_equal(rb.W[b], r.W)
    # per-problem fixed signs too
    rf = relucore.train(X, y, signs=a0, init=W0, steps=50, tol=0, eta=0.5)
    for b in range(B):
        r = relucore.train(X[b], y[b], signs=a0[b], init=W0[b], steps=50, tol=0, eta=0.5)
        assert np.array_equal(rf.W[b], r.W)
        assert np.array_equal(rf.outer[b], a0[b])


def test_defaults_report_the_signs_as_outer():
    X, y, _, _, _ = sphere_problem(7, n=6, d=12, m=2)
    r = relucore.train(X, y, signs=(1, -1))
    assert np.array_equal(r.outer, [1.0, -1.0])
    assert r.bias is None and r.train_outer is False and r.output_scale == 1.0


def test_trainer_trains_the_outer_layer_as_train_does():
    X, y, W0, a0, _ = sphere_problem(8, n=8, d=10, m=3)
    kw = dict(signs=a0, init=W0, train_outer=True, eta=0.4)
    t = relucore.Trainer(X, y, **kw)
    t.step(77)
    r = relucore.train(X, y, steps=77, tol=0, **kw)
    assert np.array_equal(np.array(t.signs), r.outer)
    assert np.array_equal(np.array(t.beta), r.beta)
    res = t.run(until=77)
    assert np.array_equal(res.signs, a0) and np.array_equal(res.outer, r.outer)
    t2 = relucore.Trainer.from_state(t.state_dict())
    t.step(10)
    t2.step(10)
    assert np.array_equal(np.array(t.signs), np.array(t2.signs))
    with pytest.raises(ValueError, match="fixed outer layer"):
        t.run_to_limit()


@pytest.mark.parametrize("train_outer", [False, True])
def test_trainer_with_output_scale_and_bias_steps_as_train_and_numpy(train_outer):
    # Dana et al.'s scale c = 1/p and a hidden bias: the Trainer, train and plain numpy GD agree.
    X, y, W0, a0, b0 = sphere_problem(10, n=9, d=7, m=4)
    p, steps = a0.size, 120
    init = np.column_stack([W0, b0])
    kw = dict(signs=a0, init=init, eta=p / X.shape[0], train_outer=train_outer, output_scale=1 / p, bias=True)
    t = relucore.Trainer(X, y, **kw)
    t.step(steps)
    r = relucore.train(X, y, steps=steps, tol=0, **kw)
    assert np.array_equal(t.W, r.W) and np.array_equal(t.bias, r.bias)
    assert np.array_equal(np.array(t.signs), r.outer) and np.array_equal(np.array(t.beta), r.beta)
    if not train_outer:
        assert np.array_equal(np.array(t.signs), a0)
    W, a, b, h, _ = two_layer_gd(X, y, W0, a0, b0, p / X.shape[0], 1 / p, steps, train_a=train_outer)
    np.testing.assert_allclose(t.W, W, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t.bias, b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.array(t.signs), a, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.array(t.predictions), h, rtol=0, atol=1e-12)
    res = t.run(until=steps)
    assert res.W.shape == W0.shape and np.array_equal(res.bias, r.bias) and np.array_equal(res.bias0, b0)
    assert np.array_equal(res.W0, W0) and np.array_equal(res.signs, a0) and res.output_scale == 1 / p
    t2 = relucore.Trainer.from_state(t.state_dict())
    t.step(15)
    t2.step(15)
    assert np.array_equal(t.W, t2.W) and np.array_equal(t.bias, t2.bias)
    assert np.array_equal(np.array(t.signs), np.array(t2.signs))
    with pytest.raises(ValueError, match="output_scale=1" if not train_outer else "fixed outer layer"):
        t.run_to_limit()


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(train_outer=True), "fixed outer layer"),
        (dict(output_scale=0.5), "output_scale=1"),
        (dict(bias=True), "without a bias"),
    ],
)
def test_closed_form_tools_refuse_two_layer_settings(kw, match):
    X, y, _, _, _ = sphere_problem(9, n=6, d=12, m=1)
    with pytest.raises(ValueError, match=match):
        relucore.train(X, y, steps=np.inf, **kw)
    with pytest.raises(ValueError, match=match):
        relucore.flow(X, y, **kw)
    r = relucore.train(X, y, steps=20, **kw)
    with pytest.raises(ValueError, match=match):
        relucore.check_limit(r, X, y)
    with pytest.raises(ValueError, match=match):
        relucore.theory.metrics.training_metrics(r, X, y)


def test_option_checks():
    X, y, _, _, _ = sphere_problem(9, n=6, d=12, m=1)
    with pytest.raises(TypeError, match="train_outer"):
        relucore.train(X, y, train_outer=1)
    with pytest.raises(TypeError, match="bias"):
        relucore.train(X, y, bias="yes")
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="output_scale"):
            relucore.train(X, y, output_scale=bad)
    with pytest.raises(ValueError, match="one row per problem"):
        relucore.train(np.stack([X, X]), np.stack([y, y]), signs=np.ones((3, 1)))


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_history_keeps_the_outer_weights_when_they_move(engine):
    X, y, W0, a0, _ = sphere_problem(11, n=8, d=6, m=3)
    p = a0.size
    kw = dict(signs=a0, init=W0, eta=0.3, tol=0, engine=engine, train_outer=True, output_scale=1 / p)
    r = relucore.train(X, y, steps=40, record=10, **kw)
    assert r.history.outer.shape == (r.history.n_records, p)
    assert np.array_equal(r.history.steps, [0, 10, 20, 30, 40, 40][: r.history.n_records])
    for i, t in enumerate(r.history.steps):
        ri = relucore.train(X, y, steps=int(t), **kw)
        assert np.array_equal(r.history.outer[i], ri.outer)
    assert np.array_equal(r.history.outer[-1], r.outer)
    kwb = dict(kw, init=np.stack([W0, W0]))
    rb = relucore.train(np.stack([X, X]), np.stack([y, y]), steps=40, record=10, **kwb)
    assert rb.history.outer.shape[:2] == (2, rb.history.steps.shape[1])
    assert np.array_equal(rb.history.outer[1, : r.history.n_records], r.history.outer)
    assert relucore.train(X, y, signs=a0, init=W0, steps=20, record=10, engine=engine).history.outer is None


@pytest.mark.parametrize("rule,c", [("1/m", lambda m: 1.0 / m), ("1/sqrt(m)", lambda m: 1.0 / np.sqrt(m))])
def test_named_output_scale_is_its_float_bitwise(rule, c):
    """train(output_scale="1/m") is train(output_scale=1/m) with m = len(signs), bit for bit (meanfield's names)."""
    ds = relucore.sample(6, 30, rng=3)
    kw = dict(signs=(1, -1, 1, -1), train_outer=True, steps=200, eta=0.05)
    named = relucore.train(ds.X, ds.y, output_scale=rule, **kw)
    given = relucore.train(ds.X, ds.y, output_scale=c(4), **kw)
    np.testing.assert_array_equal(named.W, given.W)
    np.testing.assert_array_equal(named.outer, given.outer)
    assert named.output_scale == given.output_scale == c(4)
    assert not np.array_equal(relucore.train(ds.X, ds.y, output_scale=2 * c(4), **kw).W, named.W)
    with pytest.raises(ValueError, match="renamed in 1.0"):
        relucore.train(ds.X, ds.y, output_scale="1/N", **kw)
    with pytest.raises(ValueError, match="output_scale must be"):
        relucore.train(ds.X, ds.y, output_scale="1/k", **kw)


@pytest.mark.parametrize("n, d", [(60, 120), (150, 40)])
def test_dana_exp2_shape_matches_numpy_two_layer_gd_on_the_lapack_start(n, d):
    """Dana et al.'s Exp. 2 in small from an array init: beta0 = W0 X^T is the BLAS's, and for
    n < d the start's Cholesky of K (at least lapack_cholesky_min_rows rows) LAPACK's (n > d: of
    X^T X, Eigen's); the run matches numpy's two-layer GD, the start numpy's minimum-norm solve,
    and the built-in start (scipy's BLAS and LAPACK switched off) to rounding."""
    from relucore import _core

    assert min(n, d) >= _core.defaults.lapack_cholesky_min_rows
    m, steps = 5, 30
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.sign(rng.standard_normal(n))
    a0, W0 = rng.standard_normal(m) * 0.5, rng.standard_normal((m, d)) * 0.5
    c, eta = 1 / np.sqrt(m), 1.0 / n
    kw = dict(signs=a0, init=W0, eta=eta, steps=steps, tol=0.0, train_outer=True, output_scale="1/sqrt(m)")
    r = relucore.train(X, y, engine="dual", **kw)
    W, a, _, h, gnorm = two_layer_gd(X, y, W0, a0, np.zeros(m), eta, c, steps, bias=False)
    assert r.nit == steps
    assert np.max(np.abs(r.W - W)) <= 1e-12 * np.max(np.abs(W))
    assert np.max(np.abs(r.outer - a)) <= 1e-12 * np.max(np.abs(a))
    assert np.max(np.abs(r.predictions - h)) <= 1e-12 * np.max(np.abs(h))
    assert r.grad_norm == pytest.approx(gnorm, rel=1e-10)
    # the start: beta0 = X w_k, alpha0 the minimum-norm solution of K alpha0 = beta0
    K = X @ X.T
    assert np.max(np.abs(r.beta0 - W0 @ X.T)) <= 1e-13 * np.max(np.abs(r.beta0))
    alpha0 = np.linalg.lstsq(K, (W0 @ X.T).T, rcond=None)[0].T
    assert np.max(np.abs(r.alpha0 - alpha0)) <= 1e-11 * np.max(np.abs(alpha0))
    if _core._use_blas(True):
        try:
            _core._use_blas(False)
            eigen = relucore.train(X, y, engine="dual", **kw)
        finally:
            _core._use_blas(True)
        for field in ("alpha0", "beta0", "W", "outer"):
            ref = getattr(eigen, field)
            assert np.max(np.abs(getattr(r, field) - ref)) <= 1e-12 * np.max(np.abs(ref)), field
    # one thread or two, alone or in a batch: the same bits
    batch = dict(kw, init=np.stack([W0[::-1], W0]))
    two = relucore.train(np.stack([X[::-1], X]), np.stack([y[::-1], y]), engine="dual", n_threads=2, **batch)
    for field in ("alpha0", "beta0", "W", "outer", "alpha"):
        assert np.array_equal(getattr(two, field)[1], getattr(r, field)), field
