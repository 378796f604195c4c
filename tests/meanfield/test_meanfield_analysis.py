"""relucore.meanfield.analyze and the exact combinatorics behind it.

Checked against hand-made parameters with known clusters, Cover's count for
points in general position, an independent planar formula, brute-force
enumeration of all 2^M sign patterns, and Proposition 7 of Liang et al.
"""

import itertools
from math import comb

import numpy as np
import pytest
from scipy.optimize import linprog

from relucore import meanfield
from relucore.meanfield import analyze, count_cells, count_dichotomies, dichotomies, ternary_patterns


def _brute_force_dichotomies(X):
    """All 2^M labelled strict sign patterns by LP, halved (unordered)."""
    Xu = np.unique(np.atleast_2d(X.T).T if X.ndim == 1 else X, axis=0)
    U = np.hstack([Xu, np.ones((Xu.shape[0], 1))])
    n = 0
    for s in itertools.product((-1.0, 1.0), repeat=U.shape[0]):
        s = np.array(s)
        r = linprog(
            np.zeros(U.shape[1]),
            A_ub=-(s[:, None] * U),
            b_ub=-np.ones(U.shape[0]),
            bounds=[(None, None)] * U.shape[1],
            method="highs",
        )
        n += r.status == 0
    assert n % 2 == 0
    return n // 2


def _planar_dichotomies(X):
    """P for points in R^2: 1 + sum over lines through >= 2 points of (points on it - 1).

    Regions of the central arrangement {z in R^3 : z^T (x_j, 1) = 0} are counted
    on S^2 by Euler's formula: each line through m >= 2 data points is a
    pair of antipodal vertices where m great circles cross.
    """
    X = np.unique(X, axis=0)
    M = X.shape[0]
    lines = set()
    for i, j in itertools.combinations(range(M), 2):
        u, v = X[j] - X[i], X - X[i]
        on = frozenset(np.flatnonzero(np.abs(u[0] * v[:, 1] - u[1] * v[:, 0]) < 1e-12).tolist())
        lines.add(on)
    return 1 + sum(len(line) - 1 for line in lines)


@pytest.mark.parametrize("M,d", [(5, 1), (7, 2), (9, 2), (8, 3), (7, 4), (6, 5)])
def test_general_position_matches_cover(M, d):
    X = np.random.default_rng(M * 10 + d).standard_normal((M, d))
    assert count_dichotomies(X) == sum(comb(M - 1, k) for k in range(d + 1))


def test_grid_count_is_29():
    G = np.array([[i, j] for i in range(3) for j in range(3)], float)
    assert _planar_dichotomies(G) == 29
    assert count_dichotomies(G) == 29
    assert _brute_force_dichotomies(G) == 29
    # A general-position set of 9 points would have 1 + C(9, 2) = 37.
    assert sum(comb(8, k) for k in range(3)) == 37


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degenerate_planar_sets(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(8, 2)).astype(float)  # many collinear triples and duplicates
    P = count_dichotomies(X)
    assert P == _planar_dichotomies(X) == _brute_force_dichotomies(X)


def test_one_dimensional_and_collinear_counts():
    x = np.array([3.0, -1.0, 0.5, 2.0, 0.5])  # a duplicate counts once
    assert count_dichotomies(x) == 4
    line = np.column_stack([x, 2 * x + 1])  # the same points on a line in R^2
    assert count_dichotomies(line) == 4
    assert count_dichotomies(np.array([[2.0], [-2.0]])) == 2


def test_dichotomy_patterns_are_distinct_and_realisable():
    X = np.random.default_rng(5).standard_normal((6, 2))
    D = dichotomies(X)
    assert D.shape == (16, 6)
    assert np.all(D[:, 0] == 1)
    assert len({row.tobytes() for row in D}) == 16
    # The trivial partition (all on one side) is a dichotomy.
    assert any(np.all(row == 1) for row in D)


def test_count_cells():
    assert count_cells(np.zeros((0, 2)), np.zeros(0)) == 1
    assert count_cells([[1.0], [1.0], [1.0]], [0.0, -1.0, 2.0]) == 4  # three knots on a line
    n = np.random.default_rng(0).standard_normal((5, 2))
    c = np.random.default_rng(1).standard_normal(5)
    assert count_cells(n, c) == 1 + 5 + comb(5, 2)  # lines in general position
    assert count_cells([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [0.0, -1.0, 0.0]) == 6  # two parallel + one
    assert count_cells([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0.0, 0.0, 0.0]) == 6  # concurrent lines


def _direction(w, b):
    v = np.r_[w, b]
    return v / np.linalg.norm(v)


def test_analyze_hand_made_clusters():
    rng = np.random.default_rng(0)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    dirs = [_direction([1.0, 0.0], -0.5), _direction([0.0, 1.0], -0.5), _direction([-1.0, -1.0], 1.5)]
    sizes = [40, 25, 10]
    rows = []
    for u, n in zip(dirs, sizes):
        for _ in range(n):
            jitter = u + 1e-4 * rng.standard_normal(3)
            r = rng.uniform(0.5, 2.0)
            rows.append(np.r_[rng.choice([-1.0, 1.0]) * 0.3, r * jitter / np.linalg.norm(jitter)])
    rows += [np.r_[1.0, 1e-10 * rng.standard_normal(3)] for _ in range(30)]  # dead neurons
    theta = np.array(rows)
    rng.shuffle(theta)
    an = analyze(theta, X)
    assert an.n_directions == 3
    assert an.kept.size == 75 and an.n_noise == 0
    assert sorted(an.sizes.tolist()) == sorted(sizes)
    for u, n in zip(dirs, sizes):
        k = int(np.argmax(an.directions @ u))
        assert an.sizes[k] == n
        assert np.arccos(min(1.0, an.directions[k] @ u)) < 1e-4
        assert an.spread_max[k] < 1e-3
    expected = ternary_patterns(np.array(dirs), X)
    assert sorted(map(tuple, an.patterns.tolist())) == sorted(map(tuple, expected.tolist()))
    assert expected.tolist() == [[-1, 1, -1, 1], [-1, -1, 1, 1], [1, 1, 1, -1]]
    assert an.patterns_distinct and an.patterns_incomparable and an.all_activate
    assert an.n_dichotomies == 7 and an.bound == 13 and an.within_bound  # 1 + C(4, 2): XOR is not linear
    # kinks: x1 = 0.5, x2 = 0.5, x1 + x2 = 1.5: 7 cells
    assert an.kinks.shape == (3, 3) and an.n_regions == 7
    labels_dead = an.labels[np.linalg.norm(theta[:, 1:], axis=1) < 1e-8]
    assert np.all(labels_dead == -1)


def test_analyze_flags_redundant_and_comparable_patterns():
    X = np.array([[0.0], [1.0], [2.0]])
    # two directions with the same pattern (-, +, +): kinks at 0.5 and 0.7
    u1, u2 = _direction([1.0], -0.5), _direction([1.0], -0.7)
    # a degeneration of (-, +, +): kink through x = 1, pattern (-, 0, +)
    u3 = _direction([1.0], -1.0)
    theta = np.array([np.r_[1.0, u] for u in [u1] * 5 + [u2] * 5])
    an = analyze(theta, X)
    assert an.n_directions == 2 and not an.patterns_distinct and not an.patterns_incomparable
    theta = np.array([np.r_[1.0, u] for u in [u1] * 5 + [u3] * 5])
    an = analyze(theta, X)
    assert an.patterns_distinct and not an.patterns_incomparable
    assert sorted(map(tuple, an.patterns.tolist())) == [(-1, 0, 1), (-1, 1, 1)]


def test_ternary_pattern_tolerance():
    X = np.array([[1.0], [2.0]])
    u = _direction([1.0], -1.0 - 1e-3)
    assert ternary_patterns(u, X, tol=1e-2).tolist() == [[0, 1]]
    assert ternary_patterns(u, X, tol=1e-5).tolist() == [[-1, 1]]


def test_proposition_7_odd_labels():
    """Trained on x = ±2, y = (1, -1): kinks at x = ±1/2 (b̄ = min(1, |x_1|^2) = 1), two directions."""
    X = np.array([[2.0], [-2.0]])
    res = meanfield.train(X, np.array([1.0, -1.0]), m=100, steps=60_000, rng=1, record=0)
    an = analyze(res, rel_norm=1e-3)
    assert an.n_directions == 2 and an.within_bound and an.patterns_distinct
    knots = np.sort(-an.kinks[:, 1] / an.kinks[:, 0])
    np.testing.assert_allclose(knots, [-0.5, 0.5], atol=0.02)
    # the effective network reproduces h
    xs = np.linspace(-3, 3, 13)
    h_eff = np.maximum(np.column_stack([xs, np.ones_like(xs)]) @ an.directions.T, 0) @ an.outer
    np.testing.assert_allclose(h_eff, res.predict(xs), atol=1e-3)


def test_analyze_input_errors():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError):
        analyze(np.zeros((5, 6)), X)
    with pytest.raises(TypeError):
        analyze(np.zeros((5, 4)))


def test_the_dbscan_radius_is_cluster_eps_and_eps_is_refused():
    """eps is train's positive offset; analyze's DBSCAN radius is cluster_eps (1.0), and eps= names it."""
    theta = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.001], [1.0, -1.0, 0.0]])
    X = np.array([[-1.0], [1.0]])
    a = meanfield.analyze(theta, X, bias=True, output_scale=1.0, cluster_eps=0.05, min_samples=1)
    b = meanfield.analyze(theta, X, bias=True, output_scale=1.0, cluster_eps=3.2, min_samples=1)  # > pi: one cluster
    assert a.directions.shape[0] == 2 and b.directions.shape[0] == 1  # the radius is the one used
    with pytest.raises(
        TypeError, match="meanfield.analyze\\(\\) got the 0.x keyword eps=, which 1.0 renamed: use cluster_eps="
    ):
        meanfield.analyze(theta, X, bias=True, eps=0.05)
