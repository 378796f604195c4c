"""Property-based tests (hypothesis, profile "ci" of conftest.py) of the Lemma 5/6 regimes and
the training metrics.

What the mathematics promises, checked on recorded runs:

- scale: GD commutes with ``X -> c X``, ``y -> l y`` (``W0 -> (l / c) W0``, default step
  ``/ c^2``; bitwise for powers of two, tests/reliability/test_properties.py). Lemma 5's
  conditions compare beta with h and ``||r||`` with ``||y||``; Lemma 6's thresholds
  ``y_min / (C_alpha ||lambda||_1)`` and ``C_alpha sqrt(n) y_max / ||lambda||_1`` scale like
  alpha (``l / c^2``): every regime is unchanged, bitwise. The stable rank is unchanged,
  the margins ``y f`` scale by ``l^2``;
- permuting the examples (or the neurons, with their signs) of a recorded history permutes
  the regimes and the margins;
- flipping every sign, ``(y, s) -> (-y, -s)``, leaves the same run (``h -> -h``) and the same
  regimes and margins;
- degenerate inputs give a ValueError or TypeError that names the argument, never a NaN
  read as an answer.
"""

import dataclasses

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from _strategies import power_of_two_rescalings, problem, seeds  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import relucore  # noqa: E402
from relucore.theory.metrics import training_metrics  # noqa: E402
from relucore.theory.regimes import regimes  # noqa: E402

SIGNS = [(1.0,), (1.0, -1.0), (1.0, 1.0, -1.0), (0.5, -2.0)]
REGIME_FIELDS = ("state", "active", "blue_condition", "red_condition", "residual_ok", "transitions")


def run(X, y, signs, W0, steps=60):
    return relucore.train(X, y, signs=signs, init=W0, steps=steps, tol=0.0, record=1)


def start(seed, m, d, scale=0.1):
    return scale * np.random.default_rng(seed + 7).standard_normal((m, d))


def same_regimes(a, b, perm_examples=None, perm_neurons=None):
    for name in REGIME_FIELDS:
        u, v = getattr(a, name), getattr(b, name)
        if name in ("state", "active", "blue_condition", "red_condition"):
            if perm_examples is not None:
                u = u[:, :, perm_examples]
            if perm_neurons is not None:
                u = u[:, perm_neurons, :]
        assert np.array_equal(u, v), name
    assert (a.pattern_stable_step, a.lemma5_violations, a.lemma6_violations) == (
        b.pattern_stable_step,
        b.lemma5_violations,
        b.lemma6_violations,
    )


@settings(max_examples=20)
@given(**power_of_two_rescalings(7, 30, SIGNS))
def test_rescaling_the_data_leaves_every_regime_and_the_stable_rank_unchanged(seed, n, signs, kc, kl):
    X, y = problem(seed, n, 3 * n + 2)
    c, lam = 2.0**kc, 2.0**kl
    W0 = start(seed, len(signs), X.shape[1])
    ref = run(X, y, signs, W0)
    res = run(c * X, lam * y, signs, (lam / c) * W0)
    r0, r1 = regimes(ref, X, y), regimes(res, c * X, lam * y)
    same_regimes(r0, r1)
    assert r1.lambda_l1 == c * c * r0.lambda_l1
    assert r1.red_threshold == (lam / (c * c)) * r0.red_threshold
    m0, m1 = training_metrics(ref, X, y), training_metrics(res, c * X, lam * y)
    np.testing.assert_allclose(m1.stable_rank, m0.stable_rank, rtol=1e-12)
    assert np.array_equal(m1.margins, lam * lam * m0.margins)
    np.testing.assert_allclose(m1.normalized_margins, c * lam * m0.normalized_margins, rtol=1e-12)
    np.testing.assert_allclose(m1.margin_ratio, m0.margin_ratio, rtol=1e-12)


def relabelled(res, pe=None, pk=None, flip=False):
    """The same recorded run with examples permuted by pe, neurons by pk, or every sign flipped."""
    h = res.history
    beta, alpha, signs = h.beta, h.alpha, np.asarray(res.signs)
    fields = {}
    if pe is not None:
        beta, alpha = beta[:, :, pe], alpha[:, :, pe]
        fields.update(beta=res.beta[:, pe], alpha=res.alpha[:, pe], alpha0=res.alpha0[:, pe], beta0=res.beta0[:, pe])
    if pk is not None:
        beta, alpha, signs = beta[:, pk], alpha[:, pk], signs[pk]
        fields.update(beta=res.beta[pk], alpha=res.alpha[pk], alpha0=res.alpha0[pk], beta0=res.beta0[pk])
        fields.update(W=res.W[pk], W0=res.W0[pk])
    if flip:
        signs = -signs
    hist = dataclasses.replace(h, beta=beta, alpha=alpha, mask=beta > 0)
    return dataclasses.replace(res, history=hist, signs=signs, **fields)


@settings(max_examples=20)
@given(seed=seeds, n=st.integers(2, 7), signs=st.sampled_from(SIGNS), data=st.data())
def test_permutations_and_the_sign_flip_act_on_regimes_and_margins_as_on_the_data(seed, n, signs, data):
    X, y = problem(seed, n, 3 * n + 2)
    m = len(signs)
    pe = np.array(data.draw(st.permutations(range(n)), label="examples"))
    pk = np.array(data.draw(st.permutations(range(m)), label="neurons"))
    res = run(X, y, signs, start(seed, m, X.shape[1]))
    lam1 = float(np.sum(X * X)) / n  # passed explicitly: a permuted sum rounds differently
    ref = regimes(res, X, y, lambda_l1=lam1)
    same_regimes(ref, regimes(relabelled(res, pe=pe), X[pe], y[pe], lambda_l1=lam1), perm_examples=pe)
    same_regimes(ref, regimes(relabelled(res, pk=pk), X, y, lambda_l1=lam1), perm_neurons=pk)
    same_regimes(ref, regimes(relabelled(res, flip=True), X, -y, lambda_l1=lam1))
    assert regimes(res, X[pe], y, lambda_l1=None).lambda_l1 == pytest.approx(lam1, rel=1e-14)
    met = training_metrics(res, X, y)
    assert np.array_equal(training_metrics(relabelled(res, flip=True), X, -y).margins, met.margins)
    scale = np.abs(met.margins).max()
    by_example = training_metrics(relabelled(res, pe=pe), X[pe], y[pe]).margins  # einsum may sum in another order
    np.testing.assert_allclose(by_example, met.margins[:, pe], rtol=1e-14, atol=1e-15 * scale)
    permuted = training_metrics(relabelled(res, pk=pk), X, y)
    np.testing.assert_allclose(permuted.margins, met.margins, rtol=1e-14, atol=1e-15 * scale)
    np.testing.assert_allclose(permuted.stable_rank, met.stable_rank, rtol=1e-12)
    finite = np.isfinite(met.stable_rank)
    assert np.all((met.stable_rank[finite] >= 1 - 1e-12) & (met.stable_rank[finite] <= m + 1e-12))


@pytest.fixture(scope="module")
def recorded():
    X, y = problem(3, 4, 14)
    return X, y, run(X, y, (1.0, -1.0), start(3, 2, 14))


@pytest.mark.parametrize(
    "kwargs, names",
    [
        (dict(X=lambda X: 1e200 * X), ("X",)),
        (dict(X=lambda X: np.zeros_like(X)), ("X",)),
        (dict(X=lambda X: None, gram=lambda X: -(X @ X.T)), ("gram",)),
        (dict(X=lambda X: None, gram=lambda X: np.full((4, 4), 1e308)), ("gram",)),
        (dict(X=lambda X: X[:2]), ("X",)),
        (dict(y=lambda y: y[:3]), ("y",)),
        (dict(y=lambda y: np.r_[np.nan, y[1:]]), ("y",)),
    ],
)
def test_regimes_refuse_degenerate_inputs_and_name_them(recorded, kwargs, names):
    """Regression: a huge X or a negative gram was blamed on lambda_l1, which the caller never passed."""
    X, y, res = recorded
    args = {"X": X, "y": y, "gram": None}
    for k, f in kwargs.items():
        args[k] = f(X if k in ("X", "gram") else y)
    with pytest.raises((ValueError, TypeError)) as info:
        regimes(res, args["X"], args["y"], gram=args["gram"])
    assert any(name in str(info.value) for name in names), str(info.value)


@pytest.mark.parametrize(
    "kwargs, names",
    [
        (dict(y=lambda X, y: y[:2]), ("y",)),
        (dict(X=lambda X, y: X[:2]), ("X",)),
        (dict(X=lambda X, y: None, gram=lambda X, y: np.eye(3)), ("gram",)),
        (dict(X=lambda X, y: X[:, :5]), ("X",)),
        (dict(W0_gram=lambda X, y: np.eye(3)), ("W0_gram",)),
        (dict(y=lambda X, y: np.r_[np.inf, y[1:]]), ("y",)),
    ],
)
def test_training_metrics_refuse_inputs_of_the_wrong_shape_and_name_them(recorded, kwargs, names):
    """Regression: wrong shapes surfaced as numpy broadcasting or matmul errors."""
    X, y, res = recorded
    args = {"X": X, "y": y, "gram": None, "W0_gram": None}
    for k, f in kwargs.items():
        args[k] = f(X, y)
    with pytest.raises((ValueError, TypeError)) as info:
        training_metrics(res, args["X"], args["y"], gram=args["gram"], W0_gram=args["W0_gram"])
    assert any(name in str(info.value) for name in names), str(info.value)


@settings(max_examples=15)
@given(seed=seeds, n=st.integers(2, 6), signs=st.sampled_from(SIGNS), zeros=st.integers(1, 6))
def test_zero_labels_give_valid_regimes_and_no_nan_but_the_documented_ones(seed, n, signs, zeros):
    """Zero labels (y_min = 0 disables Lemma 6) and all-zero labels: valid codes, finite thresholds;
    metrics NaN only where documented (margin_ratio while a margin is <= 0; the stable rank of a zero W)."""
    X, y = problem(seed, n, 3 * n + 2)
    y[: min(zeros, n)] = 0.0
    res = run(X, y, signs, start(seed, len(signs), X.shape[1]), steps=30)
    r = regimes(res, X, y)
    assert set(np.unique(r.state)) <= {0, 1, 2}
    assert np.isfinite([r.red_threshold, r.red_norm_bound, r.lambda_l1, r.y_min, r.y_max]).all()
    if r.y_min == 0:
        assert not r.red_condition.any()
    met = training_metrics(res, X, y)
    for name in ("loss", "fro_norm", "spectral_norm", "margins"):
        assert np.isfinite(getattr(met, name)).all(), name
    lo = met.margins.min(axis=-1)
    assert np.array_equal(np.isnan(met.margin_ratio), lo <= 0)


def test_training_metrics_of_a_batched_run_name_a_wrong_number_of_problems():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 12))
    y = rng.uniform(0.1, 1, (3, 4)) * rng.choice([-1, 1], (3, 4))
    res = relucore.train(X, y, signs=(1, -1), record=1, steps=20)
    met = training_metrics(res, X, y)
    for b in range(3):
        one = training_metrics(relucore.train(X[b], y[b], signs=(1, -1), record=1, steps=20), X[b], y[b])
        r = int(res.history.n_records[b])
        np.testing.assert_allclose(met.margins[b, :r], one.margins, rtol=1e-12, atol=1e-15)
        assert np.isnan(met.margins[b, r:]).all()  # padding of a batched history
    with pytest.raises(ValueError, match="X holds 2 problems, but the run has 3"):
        training_metrics(res, X[:2], y)
    with pytest.raises(ValueError, match="y must have shape"):
        training_metrics(res, X, y[:2])
