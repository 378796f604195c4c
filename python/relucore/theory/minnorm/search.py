"""Several neurons (Lai et al. 2026, eq. (8)/(52)): the exact search over activation patterns.

For a fixed pattern the problem is a convex QP (:class:`~relucore.theory.minnorm.patterns.PatternQP`); :class:`PatternSearch`
finds the best pattern by branch and bound with valid lower bounds (each open node carries
its parent's relaxed optimum), or by trying every pattern (``method="exhaustive"``, for
tests). When the budget runs out the best candidate is returned as an upper bound together
with the smallest bound still open.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import time
from typing import List, Optional

import numpy as np

from relucore import _core
from relucore.theory.minnorm.linalg import check_pd, kinv, ksolve
from relucore.theory.minnorm.patterns import (
    PatternQP,
    admissible_pieces,
    certificate_multi,
    lemma4_partition,
    pattern_of,
    structured_pattern,
    violations,
)
from relucore.theory.minnorm.results import MinNormSolution, SearchCertificate

__all__ = ["minnorm_multi", "PatternSearch"]

_OPTIMAL = int(_core.Status.optimal)  # the QP of a pattern solved


class PatternSearch:
    """State of one search: the incumbent, the counters and what is still open."""

    def __init__(
        self,
        qp: PatternQP,
        y: np.ndarray,
        signs: np.ndarray,
        *,
        max_nodes: int,
        tol: float,
        assignment,
        time_limit: Optional[float] = None,
        progress: Optional[bool] = None,
    ):
        self.qp, self.y, self.signs = qp, y, signs
        self.m, self.n = signs.size, y.size
        self.max_nodes, self.rel = max_nodes, tol
        self.time_limit = time_limit
        self.start = time.monotonic()
        self.bar = _progress_bar(progress, max_nodes)
        self.pieces_all = [admissible_pieces(float(y[i]), signs) for i in range(self.n)]
        self.n_patterns = int(np.prod([len(p) for p in self.pieces_all], dtype=object))
        self.ftol = 1e-10 * float(np.max(np.abs(y)))
        # Incumbent: the structured pattern of Theorems 3/5.
        self.inc_pattern = structured_pattern(y, signs, assignment)
        inc = qp.solve_fast(self.inc_pattern)
        self.best_val = inc["objective"] if inc["status"] == _OPTIMAL else np.inf
        self.best = (self.inc_pattern, inc)
        self.runner_up = np.inf
        self.stats = {
            "nodes": 1,
            "pruned": 0,
            "closed_feasible": 0,
            "leaves": 1,
            "patterns_pruned": 0,
            "patterns_by_symmetry": 0,
        }
        self.min_pruned = np.inf
        self.complete = True
        self.reasons: List[str] = []
        self.open_bounds: List[float] = []
        self.bounds_solved = 0

    def count(self, partial) -> int:
        """Number of complete patterns below a partial one."""
        c = 1
        for i, A in enumerate(partial):
            if A is None:
                c *= len(self.pieces_all[i])
        return c

    def _give_up(self, reason: str, *bounds: float) -> None:
        self.complete = False
        self.reasons.append(reason)
        # The objective is a sum of squares: 0 bounds any subtree without a relaxation.
        self.open_bounds.extend(max(b, 0.0) for b in bounds)

    def _out_of_budget(self) -> Optional[str]:
        """Why the search must stop now (the node budget or the time limit), or None."""
        if self.stats["nodes"] >= self.max_nodes:
            return f"the search budget of {self.max_nodes} QPs was used up"
        if self.time_limit is not None and time.monotonic() - self.start > self.time_limit:
            return f"the time limit of {self.time_limit:g} s was reached"
        return None

    def _tick(self) -> None:
        self.stats["nodes"] += 1
        if self.bar is not None:
            self.bar.update(1)
            if self.stats["nodes"] % 10 == 0:
                self.bar.set_postfix(best=f"{self.best_val:.6g}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def _offer(self, value: float, pattern, res) -> None:
        """A solved complete pattern: the new incumbent if it is better."""
        if value < self.best_val:
            self.runner_up = min(self.runner_up, self.best_val)
            self.best_val, self.best = value, (pattern, res)
        else:
            self.runner_up = min(self.runner_up, value)

    def exhaustive(self) -> None:
        for combo in itertools.product(*self.pieces_all):
            pat = list(combo)
            if pat == self.inc_pattern:
                continue
            reason = self._out_of_budget()
            if reason is not None:
                self._give_up(reason, 0.0)
                break
            res = self.qp.solve_fast(pat)
            self._tick()
            self.stats["leaves"] += 1
            if res["status"] != _OPTIMAL:
                self._give_up("a pattern QP failed", -np.inf)
                continue
            self._offer(res["objective"], pat, res)

    def branch_and_bound(self) -> None:
        # Neurons with equal outer weights are interchangeable until a decided example
        # tells them apart: ``classes`` holds those still interchangeable at a node,
        # and of the children that differ only by permuting a class one is kept
        # (they have equal optima): the canonical one activates a prefix of each class.
        signs = self.signs
        root_classes = tuple(tuple(int(k) for k in np.flatnonzero(signs == v)) for v in np.unique(signs))
        stack = [([None] * self.n, -np.inf, root_classes)]
        while stack:
            partial, parent_lb, classes = stack.pop()
            reason = self._out_of_budget()
            if reason is not None:
                self._give_up(reason, *self._open_bounds([(partial, parent_lb)] + [(p, b) for p, b, _ in stack]))
                break
            stack.extend(self._visit(partial, parent_lb, classes))

    def _open_bounds(self, open_nodes) -> List[float]:
        """Lower bounds of the open subtrees: each node's own relaxed optimum where there is time to solve it.

        An open node carries its parent's relaxed optimum, which can be far below its own
        (0 for the children of a root without relaxed constraints). The nodes with the
        smallest bounds are solved first, for at most a tenth of the time limit (1 s without one).
        """
        extra = 1.0 if self.time_limit is None else max(0.1 * self.time_limit, 0.05)
        stop = time.monotonic() + extra
        threshold = self.best_val - self.rel * max(abs(self.best_val), 1e-300)
        bounds = []
        for partial, parent_lb in sorted(open_nodes, key=lambda node: node[1]):
            lb = max(parent_lb, 0.0)
            if lb < threshold and time.monotonic() < stop:
                res = self.qp.solve_fast(partial)
                self.bounds_solved += 1
                if res["status"] == _OPTIMAL:
                    lb = max(lb, res["objective"])
            bounds.append(lb)
        return bounds

    def _visit(self, partial, parent_lb, classes) -> list:
        """Solves one node's relaxation; returns its children to explore (none if pruned or closed)."""
        res = self.qp.solve_fast(partial)
        self._tick()
        if res["status"] != _OPTIMAL:
            # Numerical failure: the subtree can be neither pruned nor closed.
            self._give_up("a relaxed QP failed", parent_lb)
            return []
        lb = res["objective"]
        undecided = [i for i, A in enumerate(partial) if A is None]
        if lb >= self.best_val - self.rel * max(abs(self.best_val), 1e-300):
            self.stats["pruned"] += 1
            self.stats["patterns_pruned"] += self.count(partial)
            self.min_pruned = min(self.min_pruned, lb)
            return []
        beta = res["z"].reshape(self.m, self.n)
        if not undecided:
            self.stats["leaves"] += 1
            self.runner_up = min(self.runner_up, self.best_val)
            self.best_val, self.best = lb, (list(partial), res)
            return []
        viol = violations(beta, self.y, self.signs)
        worst = max(undecided, key=lambda i: viol[i])
        if viol[worst] <= self.ftol:
            self._close_feasible(partial, beta)
            return []
        return self._children(partial, lb, classes, worst, beta)

    def _close_feasible(self, partial, beta) -> None:
        """The relaxed optimum is feasible: optimal for the whole subtree."""
        self.stats["closed_feasible"] += 1
        pat = pattern_of(beta, self.y, self.signs, self.pieces_all, 1e-12 * float(np.max(np.abs(beta))))
        pat = [A if partial[i] is None else partial[i] for i, A in enumerate(pat)]
        full = self.qp.solve_fast(pat)
        if full["status"] == _OPTIMAL and full["objective"] < self.best_val:
            self.runner_up = min(self.runner_up, self.best_val)
            self.best_val, self.best = full["objective"], (pat, full)

    def _children(self, partial, lb, classes, worst, beta) -> list:
        """The canonical children of a node branching on example ``worst`` (pushed in reverse order)."""
        natural = tuple(int(k) for k in np.flatnonzero(beta[:, worst] > 0))
        canonical = []
        for A in self.pieces_all[worst]:
            if all(tuple(k for k in C if k in A) == C[: sum(k in A for k in C)] for C in classes):
                canonical.append(A)
            else:
                child = list(partial)
                child[worst] = A
                self.stats["patterns_by_symmetry"] += self.count(child)
        kids = sorted(canonical, key=lambda A: (A != natural, len(A)))
        out = []
        for A in reversed(kids):  # the natural piece is popped first
            child = list(partial)
            child[worst] = A
            split = []
            for C in classes:
                inside = tuple(k for k in C if k in A)
                outside = tuple(k for k in C if k not in A)
                split.extend(c for c in (inside, outside) if c)
            out.append((child, lb, tuple(split)))
        return out

    def certificate(self) -> SearchCertificate:
        s = self.stats
        lower_bound = self.best_val if self.complete else min([self.best_val] + self.open_bounds)
        return SearchCertificate(
            optimum=float(self.best_val),
            lower_bound=float(lower_bound),
            complete=self.complete,
            n_patterns=self.n_patterns,
            nodes=s["nodes"],
            pruned=s["pruned"],
            closed_feasible=s["closed_feasible"],
            leaves=s["leaves"],
            patterns_pruned=int(s["patterns_pruned"]),
            patterns_by_symmetry=int(s["patterns_by_symmetry"]),
            min_pruned_bound=float(self.min_pruned),
            runner_up=float(self.runner_up),
            solver_tol=self.rel,
        )


def _progress_bar(progress: Optional[bool], total: int):
    """A tqdm bar over the QPs of the search (None: only when stderr is a terminal), or None."""
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="minnorm", unit="QP", leave=False)


def minnorm_multi(
    X,
    K,
    y,
    signs,
    *,
    max_nodes: int,
    method: str,
    assignment,
    tol: float,
    time_limit: Optional[float] = None,
    progress: Optional[bool] = None,
) -> MinNormSolution:
    for sg, name in ((1, "positive"), (-1, "negative")):
        if np.any(sg * y > 0) and not np.any(sg * signs > 0):
            raise ValueError(f"Eq. (52) has no solution: there are {name} labels but no neuron with a {name} sign")
    L = check_pd(K)
    Kinv = kinv(L)
    qp = PatternQP(Kinv, y, signs)
    search = PatternSearch(
        qp, y, signs, max_nodes=max_nodes, tol=tol, assignment=assignment, time_limit=time_limit, progress=progress
    )
    try:
        if method == "exhaustive":
            search.exhaustive()
        else:
            search.branch_and_bound()
    finally:
        search.close()
    pattern, res = search.best
    best_val = search.best_val
    if not np.isfinite(best_val):
        raise RuntimeError("no activation pattern could be solved; K may be badly conditioned")
    # Re-solve the winning piece in raw prediction coordinates: this gives the
    # multipliers of the KKT certificate (and an independent second solve).
    res = qp.solve(pattern, z0=res["z"])
    if res["status"] != _OPTIMAL or abs(res["objective"] - best_val) > 1e-8 * max(best_val, 1e-300):
        search._give_up("the re-solve of the winning pattern disagreed with the search")
    return _solution(search, res, X, K, Kinv, L, y, signs)


def _solution(search: PatternSearch, res, X, K, Kinv, L, y, signs) -> MinNormSolution:
    """Packages the re-solved winning pattern with its KKT and search certificates."""
    m, n = signs.size, y.size
    # Report the smallest piece that holds the solution (ties on a boundary
    # such as beta_minus,i = 0 belong to both S1 and S2; S1 is reported).
    pattern = pattern_of(res["z"].reshape(m, n), y, signs, search.pieces_all, 1e-12 * float(np.max(np.abs(res["z"]))))
    beta = res["z"].reshape(m, n).copy()
    alpha = ksolve(L, beta.T).T.copy()
    W = None if X is None else alpha @ X
    beta_chk = W @ X.T if W is not None else beta
    cert = certificate_multi(res, K, Kinv, X, signs, y, m, n)
    if X is not None:
        # Primal feasibility measured with X itself, not through K^{-1}.
        ymax = max(float(np.max(np.abs(y))), 1e-300)
        cert = dataclasses.replace(
            cert, primal_feasibility=max(cert.primal_feasibility, float(np.max(violations(beta_chk, y, signs))) / ymax)
        )
    active = np.zeros((m, n), dtype=bool)
    for i, A in enumerate(pattern):
        active[list(A), i] = True
    sc = search.certificate()
    stats, complete = search.stats, search.complete
    kind = "exact" if complete else "upper bound (best candidate)"
    status = _core.Status.optimal if complete else _core.Status.best_candidate
    if search.bounds_solved:
        search.reasons.append(f"{search.bounds_solved} relaxations of open subtrees solved for the lower bound")
    msg = (
        f"{'global optimum' if complete else 'best candidate (' + '; '.join(dict.fromkeys(search.reasons)) + ')'} "
        f"over {search.n_patterns} activation patterns: {stats['nodes']} QPs, {stats['pruned']} subtrees pruned "
        f"({stats['patterns_pruned']} patterns), {stats['closed_feasible']} closed by a feasible relaxation; {cert}"
    )
    return MinNormSolution(
        W=W,
        alpha=alpha,
        beta=beta_chk if X is not None else beta,
        signs=signs.copy(),
        objective=float(0.5 * np.sum(alpha * beta)),
        active_set=active,
        partition=lemma4_partition(pattern, y, signs),
        certificate=cert,
        search=sc,
        exact=complete,
        kind=kind,
        success=status.success,
        status=status,
        message=msg,
        nit=stats["nodes"],
    )
