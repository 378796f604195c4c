"""Property-based tests (hypothesis, profile "ci" of conftest.py) of the closed-form limits
(``predicted_limit``, ``check_limit``; Theorems 1, 3, 5) and the bounds of Theorems 2, 4, 6.

- scale covariance: ``X -> c X`` maps the limit to ``W / c`` and ``y -> l y`` to ``l W``
  (bitwise for powers of two: the default eps, step and start all follow the rescaling);
- the order of the examples does not matter (the disjoint init's assignment permuted
  with them), nor the labelling of the neurons;
- agreement with a long ``train`` run: when ``check_limit`` says the closed form applies
  the run ends within 1e-8 (relative) of it, and ``predicted_limit`` is bitwise the
  closed form ``check_limit`` builds from the run's own start;
- bad data (rank-deficient, too small, too large) gives a ValueError naming it, never a
  NaN, an infinity or a LinAlgError;
- the bounds are homogeneous: ``y -> l y`` scales them by ``l``, ``norm1 -> c^2 norm1`` by
  ``1 / c``, exactly for powers of two, also where the plain formula over- or underflows;
  NaN or infinite inputs are refused.
"""

import math
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from _strategies import problem, seeds  # noqa: E402
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import relucore  # noqa: E402
from relucore.theory.limits import PremiseWarning  # noqa: E402

# These properties hold for the closed form whether or not its theorem's premise holds on the
# small random problems drawn here; where it fails predicted_limit warns (checked below).
pytestmark = pytest.mark.filterwarnings("ignore::relucore.theory.limits.PremiseWarning")

CASES = [((1.0,), "positive"), ((-1.0,), "positive"), ((1.0, -1.0), "positive"), ((1.0, 1.0, -1.0), "disjoint")]
cases = st.sampled_from(CASES)


@given(seed=seeds, n=st.integers(2, 8), case=cases, kc=st.integers(-200, 200), kl=st.integers(-200, 200))
def test_powers_of_two_scale_the_limit_bitwise(seed, n, case, kc, kl):
    signs, init = case
    X, y = problem(seed, n, 3 * n + 2)
    c, lam = 2.0**kc, 2.0**kl
    ref = relucore.predicted_limit(X, y, signs=signs, init=init)
    W = relucore.predicted_limit(c * X, lam * y, signs=signs, init=init)
    assert np.array_equal(W, (lam / c) * ref)
    A0 = relucore.predicted_limit(gram=X @ X.T, y=y, signs=signs, init=init)
    A = relucore.predicted_limit(gram=(c * c) * (X @ X.T), y=lam * y, signs=signs, init=init)
    assert np.array_equal(A, (lam / (c * c)) * A0)


@settings(max_examples=15)
@given(seed=seeds, n=st.integers(2, 6), case=cases, kc=st.integers(-100, 100), kl=st.integers(-100, 100))
def test_check_limit_gives_the_same_verdict_and_relative_distance_on_rescaled_data(seed, n, case, kc, kl):
    signs, init = case
    X, y = problem(seed, n, 3 * n + 2)
    c, lam = 2.0**kc, 2.0**kl
    ref = relucore.check_limit(relucore.train(X, y, signs=signs, init=init, steps=300, record=1), X, y)
    res = relucore.check_limit(
        relucore.train(c * X, lam * y, signs=signs, init=init, steps=300, record=1), c * X, lam * y
    )
    assert (res.applies, res.frozen_after_step1, res.pattern_as_predicted) == (
        ref.applies,
        ref.frozen_after_step1,
        ref.pattern_as_predicted,
    )
    assert res.relative_distance == pytest.approx(ref.relative_distance, rel=1e-6, abs=1e-12)
    np.testing.assert_allclose(
        res.W_closed, (lam / c) * ref.W_closed, rtol=0, atol=1e-12 * (lam / c) * np.abs(ref.W_closed).max()
    )


@settings(max_examples=15)
@given(seed=seeds, n=st.integers(2, 8), case=cases, c=st.sampled_from([1e-150, 1e150, 0.3, 7.0]))
def test_decimal_scales_give_the_same_limit_to_rounding(seed, n, case, c):
    signs, init = case
    X, y = problem(seed, n, 3 * n + 2)
    ref = relucore.predicted_limit(X, y, signs=signs, init=init)
    W = relucore.predicted_limit(c * X, y, signs=signs, init=init)
    np.testing.assert_allclose(c * W, ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@given(seed=seeds, n=st.integers(2, 8), case=cases, data=st.data())
def test_order_of_examples_and_neurons_does_not_matter(seed, n, case, data):
    signs, init = case
    X, y = problem(seed, n, 3 * n + 2)
    m = len(signs)
    pe = np.array(data.draw(st.permutations(range(n)), label="examples"))
    pk = np.array(data.draw(st.permutations(range(m)), label="neurons"))
    s = np.asarray(signs)
    a = None
    if init == "disjoint":
        from relucore.gd.inits import default_assignment

        a = default_assignment(y[None], s)[0]
    ref = relucore.predicted_limit(X, y, signs=signs, init=init, assignment=a)
    scale = np.abs(ref).max()
    W = relucore.predicted_limit(X[pe], y[pe], signs=signs, init=init, assignment=None if a is None else a[pe])
    np.testing.assert_allclose(W, ref, rtol=0, atol=1e-12 * scale)
    # Relabel the neurons: neuron j of the new network is neuron pk[j] of the old one.
    inv = np.argsort(pk)
    W = relucore.predicted_limit(X, y, signs=tuple(s[pk]), init=init, assignment=None if a is None else inv[a])
    np.testing.assert_allclose(W, ref[pk], rtol=0, atol=1e-12 * scale)


@settings(max_examples=30)
@given(seed=seeds, n=st.integers(2, 7), ratio=st.integers(3, 20), case=cases)
def test_the_closed_form_matches_a_long_run_whenever_it_applies(seed, n, ratio, case):
    signs, init = case
    X, y = problem(seed, n, ratio * n)
    res = relucore.train(X, y, signs=signs, init=init, steps=20000, tol=0.0 if n < 4 else None, record=1)
    chk = relucore.check_limit(res, X, y)
    # The closed form built from the run's own start is predicted_limit's (same start, same step).
    A = relucore.predicted_limit(gram=X @ X.T, y=y, signs=signs, init=init)
    W = relucore.predicted_limit(X, y, signs=signs, init=init)
    np.testing.assert_allclose(chk.alpha_closed, A, rtol=0, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(chk.W_closed, W, rtol=0, atol=1e-12 * np.abs(W).max())
    assert np.isfinite(chk.relative_distance)
    if chk.applies and res.success:
        assert chk.relative_distance <= 1e-8
    if chk.applies:
        assert np.array_equal(chk.mask_final, chk.predicted_sets)
    # predicted_limit's warning: never where the closed form describes a run that converged to it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PremiseWarning)
        relucore.predicted_limit(X, y, signs=signs, init=init)
    if chk.applies and res.success:
        assert not any(issubclass(w.category, PremiseWarning) for w in caught)


@settings(max_examples=40)
@given(
    seed=seeds,
    n=st.integers(2, 6),
    case=cases,
    how=st.sampled_from(["n>d", "duplicate", "zeros", "tiny", "huge", "rows"]),
    gram=st.booleans(),
)
def test_bad_data_gives_a_clear_error_never_nan(seed, n, case, how, gram):
    signs, init = case
    X, y = problem(seed, n, 3 * n)
    if how == "n>d":
        X = X[:, : n - 1]
    elif how == "duplicate":
        X[1] = X[0]
    elif how == "zeros":
        X[:] = 0.0
    elif how == "tiny":
        X *= 1e-160
    elif how == "huge":
        X *= 1e160
    else:
        X *= 10.0 ** np.linspace(-150, 150, n)[:, None]
    with np.errstate(all="ignore"):
        K = X @ X.T
    try:
        W = relucore.predicted_limit(None if gram else X, y, signs=signs, init=init, gram=K if gram else None)
    except ValueError as exc:
        name = "gram" if gram else "X"
        assert name in str(exc) or "K" in str(exc), str(exc)
        return
    assert np.all(np.isfinite(W))
    assume(False)  # only the refusals are of interest here


# ------------------------------------------------------------------------------ bounds

labels = st.floats(1e-3, 1e3)


@given(
    n_minus=st.integers(0, 1000),
    y1=labels,
    y2=labels,
    norm1=st.floats(1e-6, 1e9),
    C=st.floats(0.01, 1e3),
    C_g=st.floats(0.01, 1e3),
    kl=st.integers(-1000, 1000),
    kc=st.integers(-480, 480),
)
def test_theorem2_bounds_are_homogeneous_even_beyond_the_float_range_of_y_squared(
    n_minus, y1, y2, norm1, C, C_g, kl, kc
):
    y_min, y_max = min(y1, y2), max(y1, y2)
    lam, c2 = 2.0**kl, 4.0**kc
    ref = relucore.theorem2_bounds(n_minus, y_min, y_max, norm1, C=C, C_g=C_g)
    assert ref.lower >= 0 and ref.upper >= 0
    with np.errstate(all="ignore"):
        expected = np.ldexp(np.array(ref), kl - kc)  # may over- or underflow in float64
    try:
        res = relucore.theorem2_bounds(n_minus, lam * y_min, lam * y_max, c2 * norm1, C=C, C_g=C_g)
    except ValueError as exc:
        assert "overflows" in str(exc)
        assert not np.all(np.isfinite(expected))
        return
    # Exact unless a result lands among the subnormals, which hold fewer digits.
    for got, want in zip(res, expected):
        if abs(want) >= np.finfo(float).tiny:
            assert got == want
    six = relucore.theorem6_bounds(2, n_minus + 1, y_max, norm1).upper
    with np.errstate(all="ignore"):
        six_expected = float(np.ldexp(six, kl - kc))
    try:
        got = relucore.theorem6_bounds(2, n_minus + 1, lam * y_max, c2 * norm1).upper
    except ValueError as exc:
        assert "overflows" in str(exc) and not np.isfinite(six_expected)
        return
    if six_expected >= np.finfo(float).tiny:
        assert got == pytest.approx(six_expected, rel=1e-15, abs=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: relucore.theorem2_bounds(3, float("nan"), 1.0, 1.0),
        lambda: relucore.theorem2_bounds(3, 0.1, float("inf"), 1.0),
        lambda: relucore.theorem2_bounds(3, -0.1, 1.0, 1.0),
        lambda: relucore.theorem2_bounds(3, 1.0, 0.1, 1.0),
        lambda: relucore.theorem2_bounds(3.5, 0.1, 1.0, 1.0),
        lambda: relucore.theorem2_bounds(3, 1e300, 1e300, 1e-300),
        lambda: relucore.theorem6_bounds(2, 3, float("nan"), 1.0),
        lambda: relucore.theorem6_bounds(2, 3, 1e300, 1e-300),
        lambda: relucore.normalized_gap(float("nan"), 1.0, 2),
        lambda: relucore.normalized_gap(-1.0, 1.0, 2),
        lambda: relucore.limit_gap(np.full(3, 1e308), np.full(3, -1e308)),
        lambda: relucore.theory.bounds.step_constant(1e-300, 1e-300),
        lambda: relucore.theory.bounds.step_constant(float("inf"), 1.0),
    ],
)
def test_bounds_refuse_what_would_be_nan_or_inf(call):
    """Regression: NaN labels gave NaN bounds, y_min > y_max was accepted, 1e300 labels raised
    OverflowError, step_constant(1e-300, 1e-300) raised ZeroDivisionError."""
    with pytest.raises((ValueError, TypeError)):
        call()


@given(
    W=st.integers(-1000, 1000),
    seed=seeds,
    gram=st.booleans(),
)
def test_limit_gap_is_homogeneous_and_never_overflows_in_its_squares(W, seed, gram):
    """Regression: gaps of weights ~1e200 were inf (the squares overflowed)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, 3, 5))
    K = rng.standard_normal((5, 5))
    K = K @ K.T
    ref = relucore.limit_gap(a, b, gram=K if gram else None)
    c = 2.0**W
    assume(np.isfinite(math.ldexp(ref, W)) and math.ldexp(ref, W) >= np.finfo(float).tiny)
    got = relucore.limit_gap(c * a, c * b, gram=K if gram else None)
    if np.all(np.abs(c * (a - b)) >= np.finfo(float).tiny):
        assert got == math.ldexp(ref, W)
    else:
        assert got == pytest.approx(math.ldexp(ref, W), rel=1e-12)


@given(eta=st.floats(1e-6, 1e3), norm1=st.floats(1e-3, 1e9), k=st.integers(-1000, 1000), j=st.integers(-1000, 1000))
def test_step_constant_is_homogeneous_and_exact_where_the_plain_formula_holds(eta, norm1, k, j):
    """``C_g = 1 / (eta ||lambda||_1)``: ``eta -> 2^k eta``, ``norm1 -> 2^j norm1`` divide it by ``2^(k+j)``
    (regression: a ZeroDivisionError when the product underflowed, 0 instead of the subnormal
    result when it overflowed)."""
    from relucore.theory.bounds import step_constant

    ref = step_constant(eta, norm1)
    assert ref == 1.0 / (eta * norm1)
    with np.errstate(all="ignore"):
        want = float(np.ldexp(ref, -(k + j)))
    try:
        got = step_constant(math.ldexp(eta, k), math.ldexp(norm1, j))
    except ValueError as exc:
        assert "overflows" in str(exc) and not np.isfinite(want)
        return
    if want >= np.finfo(float).tiny:
        assert got == want
