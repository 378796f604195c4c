"""Activation regimes of Lai et al. (2026), Lemmas 5 and 6 (docs/math.md §7).

For every recorded state of a run, each (neuron k, example i) entry is put in
one of three regimes:

- primal-stable ("blue", Lemma 5): ``s_k y_i > 0``, ``beta_{k,i} > 0``,
  ``beta_{k,i} >= s_k h(x_i)`` and ``||h(X) - y|| <= C_y ||y||``. Lemma 5: the
  entry is still active one step later.
- dual-frozen ("red", Lemma 6): ``alpha_{k,i} <= -y_min / (C_alpha ||lambda||_1)``
  and ``||alpha_k|| <= C_alpha sqrt(n) y_max / ||lambda||_1``. Lemma 6: then
  ``beta_{k,i} <= 0`` and ``alpha_{k,i}`` does not change at the next step.
- undetermined (grey): neither.

Everything is vectorised over the recorded history: the cost is a few passes
over the ``(R, m, n)`` arrays, negligible next to the run itself even with
``record=1``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

import numpy as np

from relucore._docstrings import shared_sections
from relucore._summary import sizes, summarized
from relucore._validation import as_float_array, check_int, check_positive
from relucore.gd.defaults import C_ALPHA, activate

_regime_doc = shared_sections(
    regime="""
    Parameters
    ----------
    regime : int
        A regime code: ``PRIMAL_STABLE``, ``DUAL_FROZEN`` or ``UNDETERMINED`` of
        :mod:`relucore.theory.regimes` (Lemmas 5 and 6 of Lai et al. 2026).
    """
)

__all__ = ["Regimes", "regimes", "UNDETERMINED", "PRIMAL_STABLE", "DUAL_FROZEN", "REGIME_NAMES"]

#: Codes of the three regimes in ``Regimes.state``.
UNDETERMINED, PRIMAL_STABLE, DUAL_FROZEN = 0, 1, 2
REGIME_NAMES = ("undetermined", "primal-stable", "dual-frozen")

#: Default ``C_y`` of Lemma 5. The lemma only needs the residual to stay within
#: a constant multiple of ``||y||``; a small init starts at ``||r|| ~ ||y||``
#: and, with ``eta <= 1/mu_1``, the loss does not grow, so 2 leaves room.
DEFAULT_C_Y = 2.0
#: Default ``C_alpha`` of Lemma 6 (and of ``train``'s default ``eps``).
DEFAULT_C_ALPHA = C_ALPHA


def _final_regimes(r: "Regimes") -> str:
    last = r.state[-1]
    return ", ".join(
        f"{int(np.sum(last == code))} {REGIME_NAMES[code]}" for code in (PRIMAL_STABLE, DUAL_FROZEN, UNDETERMINED)
    )


def _regimes_title(r: "Regimes") -> str:
    R, m, n = r.state.shape
    return f"{R} records, {sizes(m=m, n=n, record_every=r.record_every)}"


@summarized(
    title=_regimes_title,
    rows=(
        ("final regimes", _final_regimes),
        "pattern_stable_step",
        "lemma5_violations",
        "lemma6_violations",
        ("C_y", "C_alpha"),
        ("lambda_l1", "y_min", "y_max"),
        ("red_threshold", "red_norm_bound"),
    ),
)
@dataclasses.dataclass(frozen=True)
class Regimes:
    """Lemma 5/6 regimes of every (neuron, example) entry along a recorded run.

    Attributes
    ----------
    steps : ndarray of int, shape (R,)
        GD step of each recorded state.
    state : ndarray of int8, shape (R, m, n)
        ``UNDETERMINED`` (0), ``PRIMAL_STABLE`` (1, "blue") or ``DUAL_FROZEN``
        (2, "red"). An entry meeting both conditions (possible only when a
        lemma's conclusion fails) is reported primal-stable.
    active : ndarray of bool, shape (R, m, n)
        Activation masks ``beta > 0``.
    blue_condition, red_condition : ndarray of bool, shape (R, m, n)
        The two sufficient conditions, separately.
    residual_ok : ndarray of bool, shape (R,)
        ``||h(X) - y|| <= C_y ||y||`` (the risk condition of Lemma 5).
    transitions : ndarray of int, shape (R - 1, 3, 3)
        ``transitions[t, a, b]`` counts entries in regime ``a`` at record ``t``
        and regime ``b`` at record ``t + 1``.
    pattern_stable_step : int
        First recorded step from which no activation mask changes again in the
        history (the last record at which some mask differed from the record
        before it; the first record when none ever changed). With ``record=1``
        this equals ``TrainResult.pattern_stable_step``.
    lemma5_violations : int
        Entries primal-stable at a record and inactive at the next record.
    lemma6_violations : int
        Entries dual-frozen at a record that are active there, or whose
        ``alpha`` differs at the next record.
    record_every : int
        Spacing of the records (the lemmas are one-step statements, checked
        exactly only when it is 1; otherwise across each gap between records).
    C_y, C_alpha, lambda_l1, y_min, y_max : float
        The constants and data scales used.
    red_threshold : float
        ``y_min / (C_alpha ||lambda||_1)``.
    red_norm_bound : float
        ``C_alpha sqrt(n) y_max / ||lambda||_1``.
    """

    steps: np.ndarray
    state: np.ndarray
    active: np.ndarray
    blue_condition: np.ndarray
    red_condition: np.ndarray
    residual_ok: np.ndarray
    transitions: np.ndarray
    pattern_stable_step: int
    lemma5_violations: int
    lemma6_violations: int
    record_every: int
    C_y: float
    C_alpha: float
    lambda_l1: float
    y_min: float
    y_max: float
    red_threshold: float
    red_norm_bound: float

    @_regime_doc
    def fraction(self, regime: int) -> np.ndarray:
        """Share of all (neuron, example) entries in ``regime`` at each record, shape (R,).

        {regime}

        Returns
        -------
        ndarray of float, shape (R,)
            The fraction in ``[0, 1]`` at each record.
        """
        return np.mean(self.state == regime, axis=(1, 2))

    @_regime_doc
    def first_step(self, regime: int) -> np.ndarray:
        """Step at which each entry first is in ``regime`` (-1 if never), shape (m, n).

        {regime}

        Returns
        -------
        ndarray of int, shape (m, n)
            The first recorded step in ``regime`` of each (neuron, example), or -1.
        """
        hit = self.state == regime
        idx = np.argmax(hit, axis=0)
        return np.where(hit.any(axis=0), self.steps[idx], -1)

    @_regime_doc
    def stays_from(self, regime: int) -> np.ndarray:
        """First step from which each entry is in ``regime`` at every later record (-1 if not at the end), (m, n).

        {regime}

        Returns
        -------
        ndarray of int, shape (m, n)
            That step for each (neuron, example), or -1 when the entry is outside
            ``regime`` at the last record.
        """
        inside = self.state == regime
        # Last record outside the regime, per entry; the entry stays from the next record on.
        outside = ~inside
        R = inside.shape[0]
        last_out = np.where(outside.any(axis=0), R - 1 - np.argmax(outside[::-1], axis=0), -1)
        start = last_out + 1
        return np.where(start < R, self.steps[np.minimum(start, R - 1)], -1)

    def changes(self) -> np.ndarray:
        """Every regime change as rows ``(step, k, i, from, to)``, ordered by step, shape (C, 5).

        ``step`` is the record at which the entry is first seen in its new regime.

        Returns
        -------
        ndarray of int64, shape (C, 5)
            One row ``(step, k, i, from, to)`` per change.
        """
        t, k, i = np.nonzero(self.state[1:] != self.state[:-1])
        return np.stack([self.steps[t + 1], k, i, self.state[t, k, i], self.state[t + 1, k, i]], axis=1).astype(
            np.int64
        )

    def summary(self) -> str:
        """A short text summary.

        Returns
        -------
        str
            The final count of each regime, the step the pattern is stable from and the
            number of violations of Lemmas 5 and 6.
        """
        R, m, n = self.state.shape
        last = self.state[-1]
        return (
            f"{R} records (every {self.record_every} steps), m={m}, n={n}: final regimes "
            f"{int(np.sum(last == PRIMAL_STABLE))} primal-stable, {int(np.sum(last == DUAL_FROZEN))} dual-frozen, "
            f"{int(np.sum(last == UNDETERMINED))} undetermined; pattern stable from step {self.pattern_stable_step}; "
            f"Lemma 5 violations {self.lemma5_violations}, Lemma 6 violations {self.lemma6_violations}"
        )


def regimes(
    result,
    X=None,
    y=None,
    *,
    gram=None,
    C_y: float = DEFAULT_C_Y,
    C_alpha: float = DEFAULT_C_ALPHA,
    lambda_l1: Optional[float] = None,
    problem: Optional[int] = None,
) -> Regimes:
    """Classifies every recorded (neuron, example) entry by Lemmas 5 and 6.

    Implements the regimes of Lai et al. (2026), Lemma 5 (primal-stable) and
    Lemma 6 (dual-frozen), docs/math.md §7, over ``result.history``.

    Parameters
    ----------
    result : TrainResult
        A run of :func:`relucore.train` with ``record >= 1`` (``record=1`` to
        check the lemmas step by step).
    X : array_like, shape (n, d), optional
        The training inputs (used only for ``||lambda||_1``); or pass ``gram``.
    y : array_like, shape (n,)
        The labels the run was trained on.
    gram : array_like, shape (n, n), optional
        ``K = X X^T`` instead of ``X``.
    C_y : float, default 2
        Constant of Lemma 5's risk condition ``||h(X) - y|| <= C_y ||y||``.
    C_alpha : float, default 10
        Constant of Lemma 6's thresholds (the paper's ``C_alpha``, also used by
        ``train``'s default ``eps = y_min / (C_alpha m)``).
    lambda_l1 : float, optional
        ``||lambda||_1``, the trace of the feature covariance. Default
        ``trace(K) / n``, its unbiased estimate (``E ||x||^2 = ||lambda||_1``).
    problem : int, optional
        Which problem of a batched result to analyse (required for batched runs).

    Returns
    -------
    Regimes
    """
    hist = result.history
    if hist is None:
        raise ValueError("result has no history: train with record=1 (or record=k) to classify regimes")
    if y is None:
        raise TypeError("y is required")
    C_y = check_positive(C_y, "C_y")
    C_alpha = check_positive(C_alpha, "C_alpha")
    steps, beta, alpha = _problem_history(result, problem)
    R, m, n = beta.shape
    if R == 0:
        raise ValueError("result.history holds no records")
    y = as_float_array(y, "y", ndim=1)
    if y.shape[0] != n:
        raise ValueError(f"Found input variables with inconsistent numbers of samples (history: {n}, y: {y.shape[0]})")
    if lambda_l1 is None:
        lambda_l1 = _estimate_lambda_l1(X, gram, n)
    lambda_l1 = check_positive(lambda_l1, "lambda_l1")

    signs = np.asarray(result.signs, dtype=float)
    active = beta > 0
    primal = _primal_stable(result, beta, active, y, signs, C_y)
    dual = _dual_frozen(alpha, y, C_alpha, lambda_l1)
    blue, red = primal["blue_condition"], dual["red_condition"]
    state = np.full((R, m, n), UNDETERMINED, dtype=np.int8)
    state[red] = DUAL_FROZEN
    state[blue] = PRIMAL_STABLE
    diffs = np.diff(steps)
    record_every = int(diffs[0]) if diffs.size else 1
    return Regimes(
        steps=np.asarray(steps).copy(),
        state=state,
        active=active,
        **primal,
        **dual,
        **_transitions(state, active, blue, red, alpha, steps),
        record_every=max(record_every, 1),
        C_y=C_y,
    )


def _problem_history(result, problem: Optional[int]):
    """The recorded ``(steps, beta, alpha)`` of the run, or of problem ``problem`` of a batched run."""
    hist = result.history
    steps, beta, alpha = hist.steps, hist.beta, hist.alpha
    if result.batched:
        if problem is None:
            raise ValueError("result is batched: pass problem=b to choose one problem")
        b = check_int(problem, "problem", minimum=0)
        if b >= beta.shape[0]:
            raise ValueError(f"problem must be < {beta.shape[0]}, got {b}")
        r = int(hist.n_records[b])
        steps, beta, alpha = steps[b, :r], beta[b, :r], alpha[b, :r]
    elif problem not in (None, 0):
        raise ValueError("problem is only meaningful for a batched result")
    return steps, beta, alpha


def _estimate_lambda_l1(X, gram, n: int) -> float:
    """``trace(K) / n`` from ``gram`` (preferred) or ``X``, the unbiased estimate of ``||lambda||_1``.

    A trace that is not positive and finite is refused with the argument it came from named
    (lambda_l1 was not passed, so an error about it would not say what to fix).
    """
    if gram is not None:
        K = as_float_array(gram, "gram", ndim=2)
        if K.shape != (n, n):
            raise ValueError(f"gram must have shape ({n}, {n}), got {K.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(np.trace(K)) / n
        name, how = "gram", "trace(gram) / n"
    elif X is not None:
        Xa = as_float_array(X, "X", ndim=2)
        if Xa.shape[0] != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples (X: {Xa.shape[0]}, y: {n})")
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(np.einsum("ij,ij->", Xa, Xa)) / n
        name, how = "X", "sum_i ||x_i||^2 / n"
    else:
        raise TypeError("pass X, gram or lambda_l1 (needed for Lemma 6's thresholds)")
    if not np.isfinite(value):
        raise ValueError(
            f"{name} is too large: ||lambda||_1 = {how} overflows float64; rescale {name} "
            "(the regimes do not change under X -> c X, y -> l y with the run rescaled), or pass lambda_l1"
        )
    if value <= 0:
        what = "all zeros" if name == "X" else "not a Gram matrix (its trace is not positive)"
        raise ValueError(f"{name} is {what}: ||lambda||_1 = {how} = {value:.3g} must be positive; or pass lambda_l1")
    return value


def _primal_stable(result, beta, active, y, signs, C_y: float) -> Dict[str, np.ndarray]:
    """The Regimes fields of Lemma 5: its condition per entry, shape (R, m, n), and the risk
    condition per record, shape (R,)."""
    h = np.einsum("k,tkn->tn", signs, activate(beta, result.activation, result.leaky_slope))
    resid = np.linalg.norm(h - y, axis=1)
    residual_ok = resid <= C_y * np.linalg.norm(y)
    # beta_k >= s_k h for s_k = +-1; for general outer weights, neuron k's own share h / s_k.
    covers = beta >= (h[:, None, :] / signs[None, :, None])
    agree = (np.sign(signs)[:, None] * y[None, :]) > 0
    blue = agree[None] & active & covers & residual_ok[:, None, None]
    return dict(blue_condition=blue, residual_ok=residual_ok)


def _dual_frozen(alpha, y, C_alpha: float, lambda_l1: float) -> Dict[str, Any]:
    """The Regimes fields of Lemma 6: its condition per entry, shape (R, m, n), and the constants
    and data scales it uses (``y_min``: the smallest nonzero ``|y_i|``)."""
    ay = np.abs(y)
    y_max = float(ay.max())
    nz = ay[ay > 0]
    y_min = float(nz.min()) if nz.size else 0.0
    red_threshold = y_min / (C_alpha * lambda_l1)
    red_norm_bound = C_alpha * np.sqrt(y.shape[0]) * y_max / lambda_l1
    small = np.linalg.norm(alpha, axis=2) <= red_norm_bound  # (R, m)
    red = (alpha <= -red_threshold) & small[:, :, None]
    if y_min == 0:
        red = np.zeros_like(red)
    scales = dict(C_alpha=C_alpha, lambda_l1=lambda_l1, y_min=y_min, y_max=y_max)
    return dict(red_condition=red, red_threshold=float(red_threshold), red_norm_bound=float(red_norm_bound), **scales)


def _transitions(state, active, blue, red, alpha, steps) -> Dict[str, Any]:
    """The Regimes fields of the transitions: their counts, the step the pattern is stable from,
    and the Lemma 5 and Lemma 6 violation counts."""
    R = state.shape[0]
    transitions, last, l5, l6 = np.zeros((0, 3, 3), dtype=np.int64), 0, 0, 0
    if R > 1:
        flat = (state[:-1].astype(np.int64) * 3 + state[1:]).reshape(R - 1, -1)
        offsets = np.arange(R - 1)[:, None] * 9
        transitions = np.bincount((flat + offsets).ravel(), minlength=9 * (R - 1)).reshape(R - 1, 3, 3)
        changed = np.any(active[1:] != active[:-1], axis=(1, 2))
        last = int(np.flatnonzero(changed)[-1]) + 1 if changed.any() else 0
        l5 = int(np.sum(blue[:-1] & ~active[1:]))
        l6 = int(np.sum(red[:-1] & (active[:-1] | (alpha[1:] != alpha[:-1]))))
    return dict(
        transitions=transitions, pattern_stable_step=int(steps[last]), lemma5_violations=l5, lemma6_violations=l6
    )
