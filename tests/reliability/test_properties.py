"""Property-based tests (hypothesis, profile "ci" from conftest.py) of train.

- permuting the examples permutes beta and alpha and leaves W unchanged;
- positive homogeneity: the exact rescaling invariance of GD (below), checked
  bitwise for powers of two, where floating point commutes with the scaling;
- for m = 1 and eta <= 1/mu_1(K), the loss never increases once the activation
  pattern is fixed (Lemma 2 of Lai et al.: GD is then least squares on S);
- arbitrary arrays and scalars into train give a result or a ValueError /
  TypeError / DivergenceError, nothing else, and a successful result holds
  only finite numbers.

The invariance. With h(x) = sum_k s_k relu(w_k^T x) and R = 1/2 ||h(X) - y||^2,
GD w_k <- w_k - eta s_k X^T D(X w_k) r is invariant under

    X -> c X,  y -> l y,  s -> a s,  W0 -> (l / (c a)) W0,  eta -> eta / (c^2 a^2)

for c, l, a > 0: then beta = X w -> (l / a) beta, h -> l h, r -> l r, every
iterate W_t -> (l / (c a)) W_t, alpha_t -> (l / (c^2 a)) alpha_t and the loss
-> l^2 loss. The default eta 1/(||s||^2 mu_1(K)) follows the rule by itself,
and so do the positive init (W0 = X^T K^{-1} eps with eps = y_min / (C_alpha m))
for a = 1 and the default tolerance (which scales like the gradient, l / c ...
times c^2 / l ... see test_default_settings_follow_the_rescaling).
"""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from _strategies import power_of_two_rescalings, problem, seeds  # noqa: E402
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import relucore  # noqa: E402

SIGNS = [(1.0,), (1.0, -1.0), (1.0, 1.0, -1.0), (0.5, -0.25)]


@given(
    seed=seeds,
    n=st.integers(2, 9),
    signs=st.sampled_from(SIGNS),
    init=st.sampled_from(["positive", "gaussian"]),
    data=st.data(),
)
def test_permuting_examples_permutes_beta(seed, n, signs, init, data):
    X, y = problem(seed, n, 4 * n + 5)
    perm = np.array(data.draw(st.permutations(range(n)), label="perm"))
    rng = seed if init == "gaussian" else None
    ref = relucore.train(X, y, signs=signs, init=init, rng=rng, init_scale=0.1, steps=150, tol=0.0)
    # Same starting weights (and step) for the permuted problem: W0 does not
    # depend on the order of the examples, beta0 and alpha0 are permuted.
    res = relucore.train(X[perm], y[perm], signs=signs, init=ref.W0, eta=ref.eta, steps=150, tol=0.0)
    scale = np.abs(ref.beta).max()
    np.testing.assert_allclose(res.beta, ref.beta[:, perm], rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(res.W, ref.W, rtol=0, atol=1e-9 * np.abs(ref.W).max())
    np.testing.assert_allclose(res.alpha, ref.alpha[:, perm], rtol=0, atol=1e-9 * np.abs(ref.alpha).max())
    assert res.loss == pytest.approx(ref.loss, rel=1e-9, abs=1e-12 * scale**2)


@given(
    **power_of_two_rescalings(8, 40, SIGNS),
    ka=st.integers(-6, 6),
    engine=st.sampled_from(["dual", "weights"]),
)
def test_positive_homogeneity_is_exact_for_powers_of_two(seed, n, signs, kc, kl, ka, engine):
    c, lam, a = 2.0**kc, 2.0**kl, 2.0**ka
    X, y = problem(seed, n, 3 * n + 4)
    W0 = 0.1 * np.random.default_rng(seed + 1).standard_normal((len(signs), X.shape[1]))
    ref = relucore.train(X, y, signs=signs, init=W0, steps=120, tol=0.0, engine=engine)
    res = relucore.train(
        c * X, lam * y, signs=a * np.asarray(signs), init=(lam / (c * a)) * W0, steps=120, tol=0.0, engine=engine
    )
    assert res.eta == ref.eta / (c * c * a * a)
    assert np.array_equal(res.beta, (lam / a) * ref.beta)
    assert np.array_equal(res.W, (lam / (c * a)) * ref.W)
    assert res.loss == lam * lam * ref.loss
    assert res.nit == ref.nit and res.pattern_stable_step == ref.pattern_stable_step
    if engine == "dual":
        assert np.array_equal(res.alpha, (lam / (c * c * a)) * ref.alpha)


@given(
    seed=seeds, n=st.integers(2, 8), signs=st.sampled_from(SIGNS[:3]), c=st.floats(0.05, 20), lam=st.floats(0.05, 20)
)
def test_default_settings_follow_the_rescaling(seed, n, signs, c, lam):
    """Default eta, tolerance and positive init obey the invariance for any c, l > 0 (to rounding)."""
    X, y = problem(seed, n, 3 * n + 4)
    ref = relucore.train(X, y, signs=signs, steps=400)
    res = relucore.train(c * X, lam * y, signs=signs, steps=400)
    assert res.eta == pytest.approx(ref.eta / c**2, rel=1e-12)
    assert res.tol == pytest.approx(ref.tol * lam * c, rel=1e-12)
    np.testing.assert_allclose(res.W0, (lam / c) * ref.W0, rtol=1e-9, atol=1e-12 * np.abs(res.W0).max())
    np.testing.assert_allclose(res.beta, lam * ref.beta, rtol=1e-7, atol=1e-9 * lam * np.abs(ref.beta).max())


@given(
    seed=seeds,
    n=st.integers(2, 12),
    ratio=st.integers(1, 6),
    frac=st.floats(0.05, 1.0),
    init_scale=st.sampled_from([1e-3, 0.05, 0.3]),
    sign=st.sampled_from([1.0, -1.0]),
)
def test_loss_does_not_increase_once_the_pattern_is_fixed(seed, n, ratio, frac, init_scale, sign):
    """Lemma 2: m = 1, eta <= 1/mu_1(K): from the last pattern change on, GD is least squares on S."""
    X, y = problem(seed, n, ratio * n)
    mu1 = np.linalg.eigvalsh(X @ X.T)[-1]
    res = relucore.train(
        X,
        y,
        signs=(sign,),
        init="gaussian",
        rng=seed,
        init_scale=init_scale,
        eta=frac / mu1,
        steps=1500,
        tol=0.0,
        record=1,
    )
    loss = res.history.loss
    t0 = res.pattern_stable_step
    assert res.history.steps[t0] == t0
    increase = np.diff(loss[t0:])
    # Rounding slack: the loss is a sum of n squares computed in float64.
    assert np.all(increase <= 1e-13 * loss[t0:-1] + 1e-300), (t0, increase.max())


@given(seed=seeds, n=st.integers(2, 9), ratio=st.integers(2, 6), scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_minnorm_kkt_conditions_hold_for_random_feasible_problems(seed, n, ratio, scale):
    """Eq. (7), m = 1: KKT conditions checked here from the returned w alone.

    w = X^T phi with phi = K^{-1} X w (stationarity), X+ w = y+ and X- w <= 0
    (primal), phi_j <= 0 on S- (dual), phi_j x_j^T w = 0 (complementarity).
    A full-row-rank X makes every such problem feasible; GD's limit is feasible
    too when it fits every positive example, so it cannot have a smaller norm.
    """
    X, y = problem(seed, n, ratio * n)
    X = scale * X
    sol = relucore.minnorm(X, y, signs=(1,))
    assert sol.success and sol.exact
    w = sol.W[0]
    ymax = np.abs(y).max()
    pos, neg = y > 0, y <= 0
    phi = np.linalg.solve(X @ X.T, X @ w)
    assert np.linalg.norm(w - X.T @ phi) <= 1e-9 * np.linalg.norm(w)
    Xw = X @ w
    assert np.all(np.abs(Xw[pos] - y[pos]) <= 1e-9 * ymax)
    assert np.all(Xw[neg] <= 1e-9 * ymax)
    phimax = np.abs(phi).max()
    assert np.all(phi[neg] <= 1e-8 * phimax)
    assert np.all(np.abs(phi[neg] * Xw[neg]) <= 1e-8 * phimax * ymax)
    assert sol.certificate.max_residual <= 1e-8
    gd = relucore.train(X, y, signs=(1,))
    Xg = X @ gd.W[0]
    # GD can leave a positive example dead (then its limit is not feasible for Eq. 7).
    if np.all(np.abs(Xg[pos] - y[pos]) <= 1e-9 * ymax) and np.all(Xg[neg] <= 1e-9 * ymax):
        assert sol.objective <= 0.5 * np.sum(gd.W**2) * (1 + 1e-9)


@given(seed=seeds, n=st.integers(2, 7), ratio=st.integers(2, 5))
def test_minnorm_two_neurons_is_no_larger_than_the_gd_limit(seed, n, ratio):
    """Eq. (8): GD from the positive init interpolates, so its norm bounds the global optimum."""
    X, y = problem(seed, n, ratio * n)
    sol = relucore.minnorm(X, y, signs=(1, -1))
    assert sol.success and sol.exact and sol.certificate.max_residual <= 1e-8
    h = np.maximum(sol.beta[0], 0) - np.maximum(sol.beta[1], 0)
    np.testing.assert_allclose(h, y, rtol=0, atol=1e-9 * np.abs(y).max())
    gd = relucore.train(X, y, signs=(1, -1))
    if gd.success and gd.loss <= 1e-20:
        assert sol.objective <= 0.5 * np.sum(gd.W**2) * (1 + 1e-9)


# ------------------------------------------------------------ fuzzing the public API

EXPECTED = (ValueError, TypeError, relucore.DivergenceError)

odd_floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from(
    [0.0, -0.0, 1e-320, 1e308, -1e308, 5e-324, 1e154, 1e-154]
)
numeric_dtypes = st.sampled_from(
    [np.float64, np.float32, np.float16, np.int8, np.int64, np.uint8, np.uint64, np.bool_, np.complex128, np.longdouble]
)


def odd_arrays(max_dims=3, max_side=5):
    shapes = hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=max_side)
    numeric = numeric_dtypes.flatmap(lambda dt: hnp.arrays(dt, shapes))
    weird = st.sampled_from(
        [
            np.array(["a", "b"]),
            np.array([1.0, None], dtype=object),
            np.array([[1, 2], [3, 4]], dtype=object),
            np.array(["2020-01-01"], dtype="datetime64[D]"),
            [[1.0, 2.0], [3.0]],
            "abc",
            b"xy",
            {"a": 1},
            None,
        ]
    )
    floats = hnp.arrays(np.float64, shapes, elements=odd_floats)
    return numeric | floats | weird


def odd_scalars():
    return (
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | odd_floats
        | st.complex_numbers()
        | st.text(max_size=3)
        | st.sampled_from([np.float32(0.5), np.int64(3), np.array(0.1), [0.1], (2,)])
    )


def check_outcome(call, names=None):
    """Runs ``call``: a result, or an expected exception whose message names one of ``names``."""
    try:
        res = call()
    except EXPECTED as exc:
        assert type(exc) in EXPECTED, f"{type(exc).__name__}: {exc}"  # not a subclass such as LinAlgError
        if names is not None and type(exc) is not relucore.DivergenceError:
            assert any(name in str(exc) for name in names), f"{names} not named in: {exc}"
        return None
    ok = np.asarray(res.success)
    for part in (res.W, res.alpha, res.beta, res.loss, res.grad_norm):
        if part is None:
            continue
        arr = np.asarray(part, dtype=float)
        finite = np.isfinite(arr).reshape(arr.shape[0], -1).all(axis=1) if res.batched else np.isfinite(arr).all()
        assert np.all(finite | ~ok), "a result marked success holds a NaN or an infinity"
    return res


@settings(max_examples=150)
@given(
    X=odd_arrays(),
    y=odd_arrays(max_dims=2),
    steps=st.integers(0, 30),
    init=st.sampled_from(["positive", "disjoint", "gaussian"]),
    signs=st.sampled_from(SIGNS),
)
def test_arbitrary_arrays_for_X_and_y_never_crash(X, y, steps, init, signs):
    rng = 0 if init == "gaussian" else None
    check_outcome(lambda: relucore.train(X, y, steps=steps, init=init, signs=signs, rng=rng), names=("X", "y"))


@settings(max_examples=150)
@given(arg=st.sampled_from(["signs", "eps", "eta", "init", "gram", "assignment"]), value=odd_arrays(max_side=6))
def test_arbitrary_arrays_for_the_other_array_arguments_never_crash(arg, value):
    X, y = problem(0, 4, 12)
    kw = {"signs": (1.0, -1.0), "init": "disjoint" if arg == "assignment" else "positive", arg: value}
    check_outcome(lambda: relucore.train(X if arg != "gram" else None, y, steps=20, **kw), names=(arg,))


@settings(max_examples=150)
@given(
    arg=st.sampled_from(
        [
            "eta",
            "eps",
            "tol",
            "steps",
            "record",
            "n_threads",
            "rng",
            "init_scale",
            "C_g",
            "C_alpha",
            "leaky_slope",
            "loss",
            "activation",
            "engine",
            "on_divergence",
            "init",
        ]
    ),
    value=odd_scalars(),
)
def test_arbitrary_scalars_never_crash(arg, value):
    X, y = problem(1, 4, 12)
    kw = {arg: value}
    if arg in ("init_scale", "rng"):
        kw["init"] = "gaussian"
    if arg == "leaky_slope":
        kw["activation"] = "leaky_relu"
    if arg not in ("steps", "record"):
        kw["steps"] = 20
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 10**5:
        kw["steps"] = 0 if arg == "record" else value  # a huge budget must be refused, not run
        assume(arg == "record" or value > 2**62)
    check_outcome(lambda: relucore.train(X, y, **kw), names=(arg,))


# The rest of the public API: the same contract as train.


def _call_public(name, X, y, k):
    if name == "minnorm":
        return relucore.minnorm(X, y, signs=(1.0, -1.0)[: 1 + k % 2], max_nodes=2000)
    if name == "minnorm_gram":
        return relucore.minnorm(None, y, gram=X)
    if name == "gram_stats":
        return relucore.gram_stats(X, y=y)
    if name == "gram_stats_gram":
        return relucore.gram_stats(gram=X)
    if name == "predicted_limit":
        return relucore.predicted_limit(X, y, signs=(1.0, -1.0)[: 1 + k % 2])
    if name == "trainer":
        return relucore.Trainer(X, y, signs=(1.0, -1.0)).step(k)
    if name == "meanfield":
        from relucore import meanfield

        return meanfield.train(X, y, m=4, steps=3 * k, batch_size=1, rng=0, record=1)
    if name == "meanfield_analyze":
        from relucore import meanfield

        return meanfield.analyze(X, None if k % 2 else y)
    raise AssertionError(name)


def _has(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


PUBLIC = ["minnorm", "minnorm_gram", "gram_stats", "gram_stats_gram", "predicted_limit", "trainer", "meanfield"]
PUBLIC += ["meanfield_analyze"] if _has("sklearn") else []  # the meanfield extra


@settings(max_examples=200)
@given(
    name=st.sampled_from(PUBLIC), X=odd_arrays(max_side=5), y=odd_arrays(max_dims=2, max_side=5), k=st.integers(0, 5)
)
def test_arbitrary_arrays_into_the_rest_of_the_api_never_crash(name, X, y, k):
    try:
        _call_public(name, X, y, k)
    except (ValueError, TypeError) as exc:
        assert type(exc) in (ValueError, TypeError), f"{type(exc).__name__}: {exc}"
        assert str(exc)


@settings(max_examples=100)
@given(
    name=st.sampled_from(["sample", "sample_gram"]),
    n=odd_scalars(),
    d=odd_scalars(),
    kw=st.sampled_from(
        [
            {},
            {"labels": "positive"},
            {"spectrum": ("power", 1.0)},
            {"spectrum": "bogus"},
            {"labels": (2.0, 1.0)},
            {"z": "rademacher"},
            {"rng": -1},
        ]
    ),
)
def test_arbitrary_sizes_into_the_samplers_never_crash(name, n, d, kw):
    if name == "sample_gram":
        kw = {k: v for k, v in kw.items() if k != "z"}
    # Sizes that fit: a sampler asked for more memory than the machine has must refuse.
    for v in (n, d):
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 10**4 < v:
            assume(False)
    try:
        getattr(relucore, name)(n, d, **kw)
    except (ValueError, TypeError) as exc:
        assert type(exc) in (ValueError, TypeError), f"{type(exc).__name__}: {exc}"
