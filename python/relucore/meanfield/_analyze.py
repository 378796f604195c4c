"""Effective width collapse: directions, patterns and kinks of a trained network."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Dict, Optional, Union

import numpy as np

from relucore._renamed import removed_parameters
from relucore._summary import summarized
from relucore._validation import as_float_array, check_int, check_nonnegative, check_positive
from relucore.meanfield._geometry import count_cells, count_dichotomies
from relucore.meanfield._train import MeanFieldResult, output_scale_factor

__all__ = ["MeanFieldAnalysis", "analyze", "ternary_patterns", "angular_distances"]


@summarized(
    title=lambda a: f"{a.n_directions} directions from {a.kept.size} kept neurons, {a.n_regions} regions",
    rows=(
        "n_directions",
        "n_noise",
        ("n_dichotomies", "bound", "within_bound"),
        ("patterns_distinct", "patterns_incomparable"),
        "all_activate",
        "at_most_two_per_binary",
        "n_regions",
        "sizes",
    ),
)
@dataclasses.dataclass(frozen=True)
class MeanFieldAnalysis:
    """What :func:`analyze` found (Liang et al. 2026, Theorems 4-6).

    Attributes
    ----------
    kept : ndarray of int64
        Neurons with ||(w_i, b_i)|| above the threshold.
    labels : ndarray of int64, shape (N,)
        Cluster of each neuron (-1: dropped, or DBSCAN noise).
    directions : ndarray, shape (K, d + 1)
        Unit vectors (w, b)/||(w, b)|| of the clusters (normalised means of
        their members), ordered by decreasing ``mass``.
    sizes : ndarray of int64, shape (K,)
        Neurons per direction.
    mass : ndarray, shape (K,)
        sum over the cluster of ||(w_i, b_i)||^2 (the cluster's share of the
        regulariser on the input side).
    outer : ndarray, shape (K,)
        Effective outer weights a_k = kappa sum_{i in k} a_i ||(w_i, b_i)||,
        so that h(x) ≈ sum_k a_k relu(u_k^T (x, 1)) (Theorem 5, eq. (12)).
    spread_max, spread_mean : ndarray, shape (K,)
        Largest pairwise angular distance arccos(z^T z') within the cluster
        and mean distance to its direction, in radians.
    n_noise : int
        Kept neurons DBSCAN left unclustered.
    patterns : ndarray of int8, shape (K, M)
        Ternary activation pattern A_k(x_j) = sgn(u_k^T (x_j, 1)) in {-1, 0, +1}:
        0 when the angle between u_k and the hyperplane {z : z^T (x_j, 1) = 0}
        is at most ``pattern_tol``.
    patterns_distinct : bool
        Non-redundancy, Theorem 6 (i): no two directions share a pattern.
    patterns_incomparable : bool
        Theorem 6 (i): no pattern is a degeneration of another (A' ⪯ A iff
        A(x_j) in {0, A'(x_j)} for all j).
    all_activate : bool
        Theorem 6 (ii): every direction has A_k(x_j) = +1 somewhere.
    at_most_two_per_binary : bool or None
        Theorem 6 (iii): every binary pattern degenerates to at most two
        learned patterns (None when a pattern has too many zeros to enumerate).
    n_dichotomies : int
        P: linear dichotomies of the inputs (see
        :func:`relucore.meanfield.count_dichotomies`).
    bound : int
        2P - 1 (Theorem 5).
    within_bound : bool
        K <= 2P - 1.
    kinks : ndarray, shape (H, d + 1)
        Distinct kink hyperplanes {x : n^T x + c = 0} as rows (n, c) with
        ||n|| = 1 (u and -u give one; directions within ``pattern_tol`` of
        the pure-bias direction w = 0 are constant neurons and have none).
    n_regions : int
        Cells of the kink arrangement in R^d: regions on which h is affine
        (adjacent cells can carry the same affine piece).
    """

    kept: np.ndarray
    labels: np.ndarray
    directions: np.ndarray
    sizes: np.ndarray
    mass: np.ndarray
    outer: np.ndarray
    spread_max: np.ndarray
    spread_mean: np.ndarray
    n_noise: int
    patterns: np.ndarray
    patterns_distinct: bool
    patterns_incomparable: bool
    all_activate: bool
    at_most_two_per_binary: Optional[bool]
    n_dichotomies: int
    bound: int
    within_bound: bool
    kinks: np.ndarray
    n_regions: int

    @property
    def n_directions(self) -> int:
        """K, the number of learned directions."""
        return int(self.directions.shape[0])

    def summary(self) -> Dict[str, object]:
        """The scalar findings as a dict (for tables).

        Returns
        -------
        dict
            The counts (kept neurons, directions, dichotomies, kinks, ...), the bound
            ``2P - 1`` and the theorems' checks (booleans), one entry each.
        """
        return dict(
            n_kept=int(self.kept.size),
            n_directions=self.n_directions,
            n_noise=self.n_noise,
            max_spread=float(self.spread_max.max()) if self.spread_max.size else 0.0,
            n_dichotomies=self.n_dichotomies,
            bound=self.bound,
            within_bound=self.within_bound,
            patterns_distinct=self.patterns_distinct,
            patterns_incomparable=self.patterns_incomparable,
            all_activate=self.all_activate,
            at_most_two_per_binary=self.at_most_two_per_binary,
            n_kinks=int(self.kinks.shape[0]),
            n_regions=self.n_regions,
        )


def angular_distances(Z: np.ndarray) -> np.ndarray:
    """arccos(z^T z') for unit rows of Z (clipped to [-1, 1]).

    Parameters
    ----------
    Z : ndarray, shape (N, p)
        Unit vectors, one per row.

    Returns
    -------
    ndarray, shape (N, N)
        The angle in radians, in ``[0, pi]``, between every two rows.
    """
    return np.arccos(np.clip(Z @ Z.T, -1.0, 1.0))


def ternary_patterns(directions, X, *, tol: float = 1e-2) -> np.ndarray:
    """``sgn(u^T (x_j, 1))`` in {-1, 0, +1} with zero for ``|angle to the hyperplane| <= tol``.

    The angle between the unit direction u and the hyperplane
    ``{z : z^T (x_j, 1) = 0}`` is ``arcsin(|u^T (x_j, 1)| / ||(x_j, 1)||)``. Distinct
    directions of a collapsed network have distinct ternary patterns (Liang et al. 2026, Sec. 4).

    Parameters
    ----------
    directions : array_like, shape (K, d + 1) or (d + 1,)
        Directions ``u = (w, b)`` on the sphere (normalised here).
    X : array_like, shape (M, d) or (M,)
        The inputs (a 1-D array is M scalar inputs).
    tol : float, default 1e-2
        The angle (radians) within which a point counts as on the hyperplane.

    Returns
    -------
    ndarray of int8, shape (K, M)
        The pattern of each direction on each input, in {-1, 0, +1}.
    """
    U = np.atleast_2d(np.asarray(directions, dtype=float))
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    Xh = np.hstack([X, np.ones((X.shape[0], 1))])
    Xh /= np.linalg.norm(Xh, axis=1, keepdims=True)
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    s = U @ Xh.T
    out = np.sign(s).astype(np.int8)
    out[np.arcsin(np.clip(np.abs(s), 0.0, 1.0)) <= tol] = 0
    return out


def _degenerates(A: np.ndarray, B: np.ndarray) -> bool:
    """B ⪰ A in the paper's order: B(x_j) in {0, A(x_j)} for every j."""
    return bool(np.all((B == 0) | (B == A)))


@removed_parameters("meanfield.analyze")
def analyze(
    theta,
    X=None,
    *,
    bias: Optional[bool] = None,
    output_scale: Optional[Union[str, float]] = None,
    min_norm: float = 1e-8,
    rel_norm: float = 0.0,
    cluster_eps: float = 0.02,
    min_samples: int = 3,
    pattern_tol: float = 1e-2,
) -> MeanFieldAnalysis:
    """Finds the directions the neurons collapsed onto and checks Theorems 5-6.

    Follows Liang et al. (2026, Sec. 7): keep the neurons with
    ||(w_i, b_i)|| > ``min_norm`` (and > ``rel_norm`` times the largest norm),
    normalise (w_i, b_i) onto the sphere S^d, cluster with scikit-learn's
    DBSCAN under the angular distance arccos(z^T z') (``metric="precomputed"``),
    then report each cluster's direction, size, spread, effective outer
    weight and ternary activation pattern on the data, the non-redundancy
    properties of Theorem 6, the number P of linear dichotomies of the inputs
    (an unordered partition of the distinct inputs strictly separable by an
    affine hyperplane, the trivial one included), whether K <= 2P - 1
    (Theorem 5), the kink hyperplanes and the number of cells they cut R^d
    into.

    Parameters
    ----------
    theta : array (N, d + 2) / (N, d + 1), or a MeanFieldResult
        Parameters (a, w, b) per row; a result supplies X, bias and the scale.
    X : array, shape (M, d) or (M,)
        Training inputs (not needed with a result).
    bias : bool, optional
        Whether theta has a bias column (default: inferred from the widths).
    output_scale : {"1/m", "1/sqrt(m)"} or float, optional
        For the effective outer weights (default: the result's, else "1/m").
    min_norm, rel_norm : float
        Absolute (the paper's 1e-8) and relative norm thresholds.
    cluster_eps : float
        DBSCAN's neighbourhood radius (its ``eps``) in radians.
    min_samples : int
        DBSCAN core-point size.
    pattern_tol : float
        Angle (radians) below which a point counts as on a direction's
        hyperplane (pattern entry 0).

    Returns
    -------
    MeanFieldAnalysis
    """
    theta, X, bias, output_scale = _unpack(theta, X, bias, output_scale)
    M, d = X.shape
    N = theta.shape[0]
    kappa = output_scale_factor(output_scale or "1/m", N)
    min_norm = check_nonnegative(min_norm, "min_norm")
    rel_norm = check_nonnegative(rel_norm, "rel_norm")
    cluster_eps = check_positive(cluster_eps, "cluster_eps")
    min_samples = check_int(min_samples, "min_samples", minimum=1)
    pattern_tol = check_nonnegative(pattern_tol, "pattern_tol")

    cl = _cluster(theta, d, bias, kappa, min_norm, rel_norm, cluster_eps, min_samples)
    directions = cl["directions"]
    K = directions.shape[0]
    patterns = ternary_patterns(directions, X, tol=pattern_tol) if K else np.zeros((0, M), np.int8)
    distinct, incomparable, all_activate, at_most_two = _pattern_properties(patterns)

    P_dich = count_dichotomies(X)
    kinks = _kinks(directions, d, tol=pattern_tol)
    n_regions = count_cells(kinks[:, :d], kinks[:, d]) if kinks.shape[0] else 1
    return MeanFieldAnalysis(
        kept=cl["kept"],
        labels=cl["labels"],
        directions=directions,
        sizes=np.array(cl["sizes"], dtype=np.int64),
        mass=np.array(cl["mass"]),
        outer=np.array(cl["outer"]),
        spread_max=np.array(cl["smax"]),
        spread_mean=np.array(cl["smean"]),
        n_noise=cl["n_noise"],
        patterns=patterns,
        patterns_distinct=bool(distinct),
        patterns_incomparable=bool(incomparable),
        all_activate=all_activate,
        at_most_two_per_binary=at_most_two,
        n_dichotomies=P_dich,
        bound=2 * P_dich - 1,
        within_bound=bool(K <= 2 * P_dich - 1),
        kinks=kinks,
        n_regions=int(n_regions),
    )


def _unpack(theta, X, bias, output_scale):
    """theta (N, P) and X (M, d) as float arrays, ``bias`` inferred or checked against the widths
    (a MeanFieldResult supplies X, bias and the output scale where they are not given)."""
    if isinstance(theta, MeanFieldResult):
        res = theta
        X = res.X if X is None else X
        bias = res.params["bias"] if bias is None else bias
        output_scale = res.params["output_scale"] if output_scale is None else output_scale
        theta = res.theta
    if X is None:
        raise TypeError("X is required when theta is an array")
    X = as_float_array(X, "X", ndim=(1, 2))
    if X.ndim == 1:
        X = X[:, None]
    d = X.shape[1]
    theta = as_float_array(theta, "theta", ndim=2)
    P = theta.shape[1]
    if bias is None:
        if P not in (d + 1, d + 2):
            raise ValueError(f"theta must have d + 2 = {d + 2} (or d + 1 = {d + 1}) columns, got {P}")
        bias = P == d + 2
    if P != d + (2 if bias else 1):
        raise ValueError(f"theta must have {d + (2 if bias else 1)} columns for d = {d} and bias={bias}, got {P}")
    return theta, X, bias, output_scale


def _cluster(theta, d: int, bias: bool, kappa: float, min_norm, rel_norm, eps, min_samples) -> dict:
    """Keeps the neurons above the norm threshold and clusters (w_i, b_i)/||(w_i, b_i)|| with DBSCAN
    under the angular distance; the clusters' directions, sizes, masses, outer weights and spreads,
    ordered by decreasing mass."""
    from sklearn.cluster import DBSCAN

    N = theta.shape[0]
    a = theta[:, 0]
    V = np.hstack([theta[:, 1 : 1 + d], theta[:, d + 1 : d + 2] if bias else np.zeros((N, 1))])
    norms = np.linalg.norm(V, axis=1)
    thresh = max(min_norm, rel_norm * (norms.max() if N else 0.0))
    kept = np.flatnonzero(norms > thresh)
    labels = np.full(N, -1, dtype=np.int64)
    dirs, sizes, mass, outer, smax, smean = [], [], [], [], [], []
    n_noise = 0
    if kept.size:
        Z = V[kept] / norms[kept, None]
        D = angular_distances(Z)
        lab = DBSCAN(eps=eps, min_samples=min_samples, metric="precomputed").fit_predict(D)
        n_noise = int(np.sum(lab < 0))
        clusters = [np.flatnonzero(lab == c) for c in np.unique(lab[lab >= 0])]
        info = []
        for members in clusters:
            u = Z[members].mean(axis=0)
            u /= np.linalg.norm(u)
            idx = kept[members]
            info.append((float(np.sum(norms[idx] ** 2)), u, members, idx))
        info.sort(key=lambda t: -t[0])
        for k, (m2, u, members, idx) in enumerate(info):
            labels[idx] = k
            dirs.append(u)
            sizes.append(members.size)
            mass.append(m2)
            outer.append(kappa * float(np.sum(a[idx] * norms[idx])))
            smax.append(float(D[np.ix_(members, members)].max()))
            smean.append(float(np.mean(np.arccos(np.clip(Z[members] @ u, -1.0, 1.0)))))
    return dict(
        kept=kept,
        labels=labels,
        directions=np.array(dirs).reshape(-1, d + 1),
        sizes=sizes,
        mass=mass,
        outer=outer,
        smax=smax,
        smean=smean,
        n_noise=n_noise,
    )


def _pattern_properties(patterns: np.ndarray):
    """Theorem 6 (i)-(iii) on the ternary patterns: (distinct, incomparable, all_activate, at_most_two)."""
    K = patterns.shape[0]
    distinct = len({p.tobytes() for p in patterns}) == K
    incomparable = all(
        not _degenerates(patterns[i], patterns[j]) and not _degenerates(patterns[j], patterns[i])
        for i, j in itertools.combinations(range(K), 2)
    )
    all_activate = bool(np.all(np.any(patterns == 1, axis=1))) if K else True
    at_most_two: Optional[bool] = True
    counts: Dict[bytes, int] = {}
    for p in patterns:
        zeros = np.flatnonzero(p == 0)
        if zeros.size > 16:
            at_most_two = None
            break
        for fill in itertools.product((-1, 1), repeat=zeros.size):
            q = p.copy()
            q[zeros] = fill
            counts[q.tobytes()] = counts.get(q.tobytes(), 0) + 1
    if at_most_two is not None:
        at_most_two = all(c <= 2 for c in counts.values())
    return distinct, incomparable, all_activate, at_most_two


def _kinks(directions: np.ndarray, d: int, *, tol: float) -> np.ndarray:
    """Distinct hyperplanes {x : w^T x + b = 0} of the directions, rows (n, c), ||n|| = 1."""
    rows = []
    for u in directions:
        w, b = u[:d], u[d]
        nw = np.linalg.norm(w)
        if nw <= np.sin(max(tol, 1e-12)):
            continue  # (numerically) the pure-bias direction: a constant neuron, no kink
        h = np.r_[w, b] / nw
        # Orientation-free: make the first non-negligible normal entry positive.
        lead = np.flatnonzero(np.abs(h[:d]) > 1e-12)[0]
        if h[lead] < 0:
            h = -h
        hn = h / np.linalg.norm(h)
        if any(np.arccos(np.clip(hn @ (r / np.linalg.norm(r)), -1, 1)) <= tol for r in rows):
            continue
        rows.append(h)
    return np.array(rows).reshape(-1, d + 1)
