"""``relucore.train``: gradient descent on h(x) = c sum_k a_k phi(w_k^T x + b_k).

:func:`train` = :func:`~relucore.gd.prepare.prepare` (validation and starting point) +
:func:`run_prepared` (an engine of ``relucore._core`` and the result).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from relucore import _core
from relucore import _scaling as scaling
from relucore._progress import progress_bar
from relucore._validation import check_choice, check_history_memory, check_int, check_n_threads
from relucore.gd.defaults import MAX_STEPS, default_eta
from relucore.gd.limit import check_limit_settings, train_to_limit
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import Prepared, prepare
from relucore.gd.results import (
    History,
    TrainResult,
    new_result,
    reach_note,
    status_of,
    success_of,
    unfit_message,
)

__all__ = ["train", "run_prepared", "DivergenceError", "default_eta"]

_O = TrainOptions  # the one home of every option default


class DivergenceError(FloatingPointError):
    """Raised by ``train(..., on_divergence="raise")`` when the loss blows up."""


def overflow_message(nit: int, eta: float) -> str:
    """Status-2 message for a state that overflowed where the loss did not show it."""
    return (
        f"diverged at step {nit}: the weights overflowed to non-finite values; "
        f"try a smaller eta (eta = {eta:.3g}) or rescale X"
    )


def unresolved_message(steps: int, grad: float, tol: float, bound: float) -> str:
    """Status-1 message of a run whose final gradient norm is below tol in dual form, not provably."""
    return (
        f"step budget of {steps} used up: gradient norm {grad:.3g} is below tol {tol:.3g} in dual form "
        f"but could not be resolved below it (rounding bound {bound:.3g}: K is singular or nearly so, "
        "collinear or duplicate examples, n > d, where the dual form cancels); not a proved stationary point"
    )


def _message(
    status: int,
    nit: int,
    loss: float,
    grad: float,
    tol: float,
    eta: float,
    steps: int,
    unfit=(),
    loss_name="square",
    out_of_reach=(),
    unresolved=float("nan"),
) -> str:
    if status == 1 and unresolved == unresolved:  # not NaN: below tol in dual form, not provably
        return unresolved_message(steps, grad, tol, unresolved)
    if status == 5:
        return unfit_message(nit, loss, grad, tol, unfit, loss_name)
    if status == 0:
        return f"converged after {nit} steps: gradient norm {grad:.3g} < tol {tol:.3g}" + reach_note(out_of_reach, loss)
    if status == 1:
        if tol == 0:
            return f"step budget of {steps} used up (tol = 0: never stop early); gradient norm {grad:.3g}"
        # Enough digits that the two printed numbers differ as the values do.
        digits = next((k for k in range(3, 18) if f"{grad:.{k}g}" != f"{tol:.{k}g}"), 17)
        return f"step budget of {steps} used up: gradient norm {grad:.{digits}g} still above tol {tol:.{digits}g}"
    if status == 2:
        what = (
            f"loss {loss:.3g} is not finite or exploded"
            if not np.isfinite(loss) or np.isfinite(grad)
            else (f"the gradient (loss {loss:.3g}) overflowed")
        )
        return f"diverged at step {nit}: {what}; try a smaller eta (eta = {eta:.3g})"
    return f"{status_of(status).message} at step {nit}"


def train(
    X: Optional[ArrayLike] = None,
    y: Optional[ArrayLike] = None,
    *,
    gram: Optional[ArrayLike] = None,
    signs: Union[Sequence[float], np.ndarray] = _O.signs,
    init: Union[str, ArrayLike] = _O.init,
    eps: Optional[ArrayLike] = _O.eps,
    eta: Optional[ArrayLike] = _O.eta,
    steps: Union[int, float] = _O.steps,
    tol: Optional[float] = _O.tol,
    record: Union[int, bool] = _O.record,
    rng: Any = _O.rng,
    n_threads: Optional[int] = _O.n_threads,
    engine: str = _O.engine,
    assignment: Optional[ArrayLike] = _O.assignment,
    init_scale: float = _O.init_scale,
    C_g: float = _O.C_g,
    C_alpha: float = _O.C_alpha,
    loss: str = _O.loss,
    activation: str = _O.activation,
    leaky_slope: float = _O.leaky_slope,
    on_divergence: str = _O.on_divergence,
    train_outer: bool = _O.train_outer,
    output_scale: Union[float, str] = _O.output_scale,
    bias: bool = _O.bias,
    output_bias: Optional[float] = _O.output_bias,
    reduction: str = _O.reduction,
    sample_weight: Optional[ArrayLike] = _O.sample_weight,
    progress: Optional[bool] = _O.progress,
    options: Optional[TrainOptions] = None,
) -> TrainResult:
    """Gradient descent on a shallow network ``h(x) = sum_k s_k phi(w_k^T x)``.

    Runs full-batch GD ``w_k <- w_k - eta s_k X^T (phi'(X w_k) * g)`` on the
    loss ``R(W) = 1/2 ||h(X) - y||^2`` (docs/math.md §2; Lai et al. 2026, Sec. 3)
    or the mean logistic loss (Kou et al. 2023). The default engine tracks the
    run exactly in primal-dual coordinates (``beta_k = X w_k``,
    ``w_k = w_k^perp + X^T alpha_k``): after ``K = X X^T`` is formed once, each
    step costs O(m n^2) whatever d is.

    Parameters
    ----------
    X : array_like, shape (n, d) or (B, n, d)
        Training inputs; a leading axis B trains B independent problems in one
        C++ call (OpenMP across problems). May be None when ``gram`` is given.
    y : array_like, shape (n,) or (B, n)
        Labels (``{-1, +1}`` for the logistic loss).
    signs : sequence of float or array of shape (B, m), default (1,)
        Outer-layer weights ``s_k`` (one per neuron, non-zero): ``(1,)`` is the
        single ReLU of Theorem 1, ``(1, -1)`` the two-neuron model of Theorem 3;
        values such as ``+-1/m`` are allowed. A batch may give one row per problem
        (not with ``init="disjoint"``). With ``train_outer`` these are the starting ``a_k``,
        and may be 0 (a zero-initialised output layer; all zero needs ``eta``, docs/math.md §2).
    init : {"positive", "disjoint", "gaussian"} or array of shape (m, d)
        ``"positive"``: ``w_k = X^T K^{-1} eps_k`` so every ``beta_k = eps_k > 0``
        (Theorems 1, 3). ``"disjoint"``: Assumption 4 / Theorem 5,
        ``beta_k = (1/C_g) A_k y + eps_k`` with ``assignment``. ``"gaussian"``:
        ``w_k ~ N(0, init_scale^2 I_d)``. An array gives ``W0`` directly.
    eps : float or array_like, optional
        Positive init offsets: scalar, (n,), (m, n) or (B, m, n). Default
        ``y_min / (C_alpha m)`` per problem, which satisfies the conditions of
        Theorems 1, 3 and 5.
    eta : float or array of shape (B,), optional
        Step size. Default ``1 / (||s||^2 mu_1(K))`` (square loss) or
        ``4 n / (||s||^2 mu_1(K))`` (logistic): see :func:`default_eta`.
    steps : int or np.inf, default 10000
        Maximum number of GD steps. ``np.inf`` (square loss, ReLU): run until the activation
        pattern is proved frozen, then jump to the limit in closed form; the result is a
        :class:`relucore.gd.limit.CertifiedResult` with ``certificate`` (docs/math.md §13).
    tol : float, optional
        Stop once ``||grad_W R||_F < tol`` (0: never stop early). Default
        ``1e-12 sqrt(mu_1(K)) ||y||`` for the square loss (about 1e-12 of the
        gradient at a small init; with ``y = 0``, ``||h(X; W0)||`` replaces ``||y||``)
        and 0 (never stop early) for the logistic loss. A run whose gradient
        norm falls below ``tol`` at a stationary point that leaves examples
        unfit ends "stalled" (status 5, see ``TrainResult.unfit``).
    record : int, default 0
        Keep the loss, beta, alpha and the activation masks every ``record``
        steps (and at the end) in ``result.history``; 0 keeps nothing.
    rng : None, int, SeedSequence or numpy Generator
        Randomness of the gaussian init.
    n_threads : int, optional
        Threads across problems of a batch (default: OpenMP's default).
    gram : array_like, shape (n, n) or (B, n, n), optional
        The Gram matrix ``K = X X^T``; with ``X=None`` training runs in
        Gram-only mode (``W`` is then None; see :func:`relucore.sample_gram`).
    engine : {"dual", "weights", "auto"}, default "auto"
        ``"dual"`` runs the primal-dual engine (O(m n^2) a step), ``"weights"`` the O(m n d)
        weight-space engine (cross-check; faster for small d), ``"auto"`` the one with the
        cheaper step by measured constants (:func:`relucore.gd.defaults.resolve_engine`:
        dual when d is large against n, and in Gram-only mode). ``result.engine`` names the
        engine that ran.
    assignment : array_like of int, shape (n,), optional
        For ``init="disjoint"``: the neuron ``a_i`` of each example, with
        ``s_{a_i} y_i > 0``. Default: round robin over the neurons of the right sign.
    init_scale : float, default sqrt(2e-6)
        Standard deviation of the gaussian init (Fig. 3 of Lai et al.).
    C_g, C_alpha : float, default 2 and 10
        The paper's constants used by the disjoint init (``1/C_g``) and the
        default ``eps`` (``y_min / (C_alpha m)``).
    loss : {"square", "logistic"}, default "square"
        ``"square"``: ``R(W) = 1/2 ||h(X) - y||^2`` (Lai et al. 2026); ``"logistic"``: the
        mean of ``log(1 + exp(-y_i h(x_i)))`` over the examples (Kou et al. 2023).
    activation : {"relu", "leaky_relu"}, default "relu"
        ``phi(u) = max(u, 0)`` or the leaky ReLU ``phi(u) = max(u, gamma u)``.
    leaky_slope : float, default 0.01
        ``gamma`` of ``phi(u) = max(u, gamma u)``.
    on_divergence : {"status", "raise"}, default "status"
        A diverging run ends with ``status == 2``; ``"raise"`` raises
        :class:`DivergenceError` instead.
    train_outer : bool, default False
        Train the outer layer as well: ``a_k`` moves by the same GD step as the inner weights,
        both computed at the current state (the update of autograd + SGD; docs/math.md §2,
        trained outer layer). ``result.outer`` holds the final ``a``; ``grad_norm`` and ``tol``
        then refer to the gradient over ``(W, a)``. The default ``eta`` stays the rule of the
        fixed outer layer (with ``||a^(0)||``), which does not bound the curvature of the outer
        layer: runs can oscillate with it, and a smaller ``eta`` (e.g. half) is safer.
        ``history`` keeps alpha, beta and the masks, not the outer weights. Not covered by ``steps=np.inf``, the flow
        or ``check_limit`` (ValueError).
    output_scale : float or {"1/m", "1/sqrt(m)"}, default 1.0
        ``c > 0`` in ``h(x) = c sum_k a_k phi(w_k^T x + b_k)``, or a named rule of the width m
        (the number of signs): ``"1/m"`` (mean-field) or ``"1/sqrt(m)"``, which give the floats
        ``1/m`` and ``1/sqrt(m)`` (``result.output_scale``). The same values as
        ``meanfield.train(output_scale=...)``. The default ``eta`` is then ``1/(L c^2 ||s||^2 mu_1)``.
    bias : bool, default False
        Give every neuron a bias ``b_k``, trained with ``w_k``: the extra input coordinate 1
        (``X -> [X, 1]``, ``K -> K + 1 1^T``; exact for both engines). ``result.bias`` and
        ``result.bias0`` hold ``b``; ``alpha``, ``beta`` (which include ``b_k``), the default
        eps, eta and tol are those of ``[X, 1]``. The gaussian init draws ``b_k`` with the
        weights; an array init of shape (m, d) starts from ``b = 0``, one of shape (m, d + 1)
        gives ``b`` in its last column.
    output_bias : float or array of shape (B,), optional
        The starting output bias ``b_out`` of ``h(x) = b_out + c sum_k a_k phi(w_k^T x + b_k)``
        (PyTorch's bias of the last ``nn.Linear``); None (default): no output bias. Trained with
        ``train_outer`` (``b_out <- b_out - eta sum_i dLoss/dh_i``), fixed otherwise; reported in
        ``result.output_bias`` (and ``output_bias0``). Not covered by ``steps=np.inf`` or the flow.
    reduction : {"half_sum", "sum", "mean"}, default "half_sum"
        The square loss: ``1/2 sum_i (h_i - y_i)^2`` (the papers'), ``sum_i (h_i - y_i)^2`` or
        ``1/n sum_i (h_i - y_i)^2`` (PyTorch's ``F.mse_loss``). The default ``eta``, ``tol`` and
        the reported ``loss`` follow it (docs/math.md §2, loss reductions). The logistic loss
        keeps its mean (only "half_sum", the default, is accepted with it).
    sample_weight : array_like, shape (n,) or (B, n), optional
        Non-negative, finite weights ``v_i`` of the examples in the loss (``1/n sum_i v_i (h_i -
        y_i)^2`` with ``reduction="mean"``), its gradient, the default step (divided by the
        largest weight of the loss) and tol (``||omega * y||`` for ``||y||``). A zero weight takes
        an example out of the loss. Not covered by ``steps=np.inf`` or the flow.
    progress : bool or None, default False
        A tqdm progress bar of the steps of the run (of all problems of a batch); None: only when
        stderr is a terminal. The engines count their steps every 1024 steps; the results are
        bitwise the same. tqdm is needed only for the bar. Not with ``steps=np.inf`` (ValueError).
    options : relucore.gd.options.TrainOptions, optional
        All of the options above as one object (shared with :class:`relucore.Trainer`
        and sweeps); keyword arguments given beside it override its fields.

    Returns
    -------
    TrainResult
        Final W, alpha, beta, outer weights, biases, loss, status, the
        pattern-stabilisation step and the history. ``success`` is True when the gradient norm fell below ``tol``
        at a state that leaves no example unfit.

    Notes
    -----
    **Resynchronisation** (docs/math.md §14). Both engines carry two copies of the state that
    agree in exact arithmetic (dual: ``alpha`` and ``beta = K alpha``; weights: ``W`` and
    ``alpha``) and drift apart by about one rounding error a step. Every 1024 steps
    (``relucore/defaults.hpp``, ``resync_every``) the engine recomputes the derived one from the
    other (``beta <- beta0 + K (alpha - alpha0)``; ``W <- W0 + (alpha - alpha0) X``). Runs of at
    most 1024 steps are untouched. Longer runs are a slightly different rounding of the same
    iteration than a plain loop: away from kinks the two agree to rounding, but near a kink (an
    entry of ``beta`` within rounding of 0) they may take different sides, and long runs there
    (e.g. 6e5 steps) drift ~1e-10 from a numpy or PyTorch loop. The resynchronised run keeps
    ``beta = X W`` to rounding; it is not an option.

    Examples
    --------
    >>> import relucore
    >>> data = relucore.sample(10, 2000, rng=0)  # x ~ N(0, I), |y| ~ U(0.1, 1), random signs
    >>> res = relucore.train(data.X, data.y, signs=(1, -1))
    >>> bool(res.success), res.loss < 1e-20
    (True, True)
    """
    o = TrainOptions.from_call(options, locals())
    if isinstance(o.steps, (float, np.floating)) and o.steps == np.inf:
        if o.progress is not False:
            raise ValueError("progress is for finite runs: steps=np.inf proves the limit in one C++ call without a bar")
        # The certified limit (docs/math.md §13): relucore.gd.limit.
        check_limit_settings(o.loss, o.activation, o.engine, o.record, options=o)
        o = o if o.engine == "dual" else dataclasses.replace(o, engine="dual")  # "auto": the limit is dual
        return train_to_limit(prepare(X, y, gram=gram, options=o), check_n_threads(o.n_threads))
    steps = check_int(o.steps, "steps", minimum=0)
    if steps > MAX_STEPS:
        raise ValueError(f"steps must be <= 2**62, got {steps}")
    record = o.record
    record = 1 if record is True else (0 if record is False else check_int(record, "record", minimum=0))
    if record > MAX_STEPS:
        raise ValueError(f"record must be <= 2**62, got {record}")
    check_choice(o.on_divergence, "on_divergence", ("status", "raise"))
    p = prepare(X, y, gram=gram, options=o)
    return run_prepared(
        p,
        steps=steps,
        record=record,
        n_threads=check_n_threads(o.n_threads),
        engine=p.engine,
        on_divergence=o.on_divergence,
        progress=o.progress,
    )


def _history_request(B: int, m: int, n: int, steps: int, record: int, outer: bool = False) -> dict:
    """The engines' history request: at most ``steps // record + 2`` states per problem.

    The engines grow each history with the run (a chunk, then doubling), so
    memory follows the steps actually run; the guard refuses, before anything
    is allocated, a run whose full budget could need more than the memory
    available now (states are kept twice at the end: the growing buffers and
    the returned arrays). With ``outer`` the outer weights are kept too.
    """
    if record <= 0:
        return {"limit": 0}
    R = steps // record + 2
    check_history_memory(
        2.0 * B * R * (16 + 17 * m * n + (8 * m if outer else 0)),
        "record",
        f"keeping up to {R} states of {B} problem(s) (steps={steps}, record={record})",
    )
    return {"limit": R, "states": True, "outer": m if outer else 0}


def _messages(p: Prepared, columns, unfit_mask, reach_mask, steps: int):
    """Per problem: the unfit examples (indices) and the message of the run's status; ``columns``:
    the run's status, nit, loss and grad_norm arrays, the masks ``unfit`` and ``out_of_reach``."""
    unfit = [row.nonzero()[0] for row in unfit_mask]  # rows are 1-D: np.flatnonzero without the ravel
    reach = [row.nonzero()[0] for row in reach_mask]
    status, nit, loss, grad_norm, unres = columns
    columns = zip(
        status.tolist(), nit.tolist(), loss.tolist(), grad_norm.tolist(), p.tol.tolist(), p.eta.tolist(), unfit, reach
    )
    messages = [
        _message(st, it, lo, gr, to, et, steps, un, p.loss, re, ub)
        for (st, it, lo, gr, to, et, un, re), ub in zip(columns, unres.tolist())
    ]
    return unfit, reach, messages


def run_prepared(
    p: Prepared, *, steps: int, record: int, n_threads: int, engine: str, on_divergence: str, progress=False
) -> TrainResult:
    """Runs a prepared batch on an engine and packages the result (``progress``: a bar of the steps)."""
    B, m, n = p.beta0.shape
    settings = p.settings(steps, record)
    hist = _history_request(B, m, n, steps, record, outer=p.train_outer)
    alpha = p.alpha0.copy()
    beta = p.beta0.copy()
    # The outer weights go per problem (B, m) when they move or differ between problems.
    per_problem = p.train_outer or p.signs.ndim == 2
    outer = np.array(np.broadcast_to(p.signs, (B, m)), order="C") if per_problem else p.signs
    bias_out = None if p.output_bias is None else p.output_bias.copy()  # the engines update it in place
    bar = None if progress is False else progress_bar(progress, B * steps, "train", "step")
    try:
        # W: the weight engine's, or the dual run's W = W0 + (alpha - alpha0) X (None in Gram-only mode)
        out, W = _run_engine(p, engine, alpha, beta, settings, hist, n_threads, outer, bias_out, bar)
    finally:
        if bar is not None:
            bar.close()
    if p.scaling is not None:
        _scale_back_run(p, out, alpha, beta, W)
    two_layer = _two_layer_fields(p, W, outer)
    if p.bias and W is not None:
        W = np.ascontiguousarray(W[..., :-1])

    # The run's outcomes, each field read once (a bound attribute costs a call); the status is final:
    # non-finite final states are diverged already (BatchOutput.overflowed).
    status, nit, loss, grad_norm = out.status.astype(int), out.nit, out.loss, out.grad_norm
    columns = (status, nit, loss, grad_norm, out.unresolved_bound)
    unfit, reach, messages = _messages(p, columns, out.unfit, out.out_of_reach, steps)
    if 2 in status.tolist():
        _divergence_messages(p, out, status, messages)
    if on_divergence == "raise" and 2 in status.tolist():
        b = int(np.flatnonzero(status == 2)[0])
        raise DivergenceError(("problem %d: " % b if p.batched else "") + messages[b])

    W0 = p.W0 if not (p.bias and p.W0 is not None) else np.ascontiguousarray(p.W0[..., :-1])
    arrays = dict(W=W, alpha=alpha, beta=beta, W0=W0, alpha0=p.alpha0, beta0=p.beta0, **two_layer)
    numbers = (
        ("eta", p.eta, float),
        ("loss", loss, float),
        ("grad_norm", grad_norm, float),
        ("nit", nit, int),
        ("status", status, status_of),
        ("pattern_stable_step", out.pattern_stable_step, int),
        ("tol", p.tol, float),
    )
    if p.output_bias is not None:
        numbers += (("output_bias", bias_out, float), ("output_bias0", p.output_bias, float))
    if p.batched:
        fields = {name: a.copy() for name, a, _ in numbers}
        fields.update(arrays, success=success_of(status), message=messages, unfit=unfit, out_of_reach=reach)
    else:  # one problem: arrays without the batch axis, Python scalars
        fields = {name: cast(a.item(0)) for name, a, cast in numbers}  # item: a Python number, no numpy scalar
        fields.update({k: (a if a is None or k in _UNBATCHED else a[0]) for k, a in arrays.items()})
        fields.update(success=fields["status"].success, message=messages[0], unfit=unfit[0], out_of_reach=reach[0])
    return new_result(
        **fields,
        signs=p.given_signs.copy(),
        history=_history(p, out, record),
        engine=engine,
        init=p.init,
        loss_name=p.loss,
        activation=p.activation,
        leaky_slope=p.leaky_slope,
        reduction=p.reduction,
    )


def _scale_back_run(p: Prepared, out, alpha, beta, W) -> None:
    """A run on exactly rescaled data (relucore._scaling) back in the caller's units, in place (the
    arrays of ``out``, a ``_core.BatchOutput``, too; relucore/gd/rescaled_run.hpp); refuses a result
    that float64 cannot represent there."""
    sc = p.scaling
    _core.scale_back_run(
        alpha,
        beta,
        W,
        loss=out.loss,
        grad_norm=out.grad_norm,
        unresolved_bound=out.unresolved_bound,
        status=out.status,
        ex=sc.ex,
        ey=sc.ey,
        gram=sc.data == "gram",
        batched=p.batched,
    )
    sc = p.scale_back()
    h = out.history
    if h is not None:
        sc.up_all(((h.loss, scaling.LOSS), (h.beta, scaling.Y), (h.alpha, scaling.ALPHA)))


_UNBATCHED = ("output_scale", "train_outer")  # fields of _two_layer_fields without a batch axis


def _history(p: Prepared, out, record: int) -> Optional[History]:
    """The engines' recorded states (``out.history``, a ``_core.BatchHistory``) as a :class:`History`
    (batched, or trimmed for one problem)."""
    if record <= 0:
        return None
    h = out.history
    outer = h.outer
    if outer is not None and p.output_scale != 1.0:
        outer = outer / p.output_scale  # the engines keep c a_k; the history reports a_k
    history = History(
        steps=h.steps,
        loss=h.loss,
        beta=h.beta,
        alpha=h.alpha,
        mask=h.mask.view(bool),
        n_records=out.n_records.copy(),
        outer=outer,
    )
    if p.batched:
        return history
    r = int(out.n_records[0])
    return History(
        steps=history.steps[0, :r],
        loss=history.loss[0, :r],
        beta=history.beta[0, :r],
        alpha=history.alpha[0, :r],
        mask=history.mask[0, :r],
        n_records=r,
        outer=None if outer is None else outer[0, :r],
    )


def _two_layer_fields(p: Prepared, W, outer) -> dict:
    """The result's fields of the two-layer options: final outer weights (B, m), biases (B, m) or None.

    The engines step the effective outer weights ``c a_k``; ``outer`` reports ``a_k``.
    """
    B, m = p.beta0.shape[:2]
    if p.output_scale != 1.0:
        outer = outer / p.output_scale if p.train_outer else np.broadcast_to(p.given_signs, (B, m))
    if B == 1:  # np.array(np.broadcast_to(outer, (1, m))) without broadcast_to's Python cost
        full = np.empty((1, m), dtype=outer.dtype)
        full[...] = outer
    else:  # (the copy of a broadcast keeps its memory order)
        full = np.array(np.broadcast_to(outer, (B, m)))
    fields = dict(
        outer=full,
        output_scale=p.output_scale,
        train_outer=p.train_outer,
    )
    if p.bias:
        fields["bias"] = None if W is None else W[..., -1].copy()
        fields["bias0"] = None if p.W0 is None else p.W0[..., -1].copy()
    return fields


def _divergence_messages(p: Prepared, out, status, messages) -> None:
    """Completes the messages of the diverged problems, in place.

    A run the engine stopped as diverged names a step known to work when its own was larger: the
    monotone-descent step of default_eta. A run whose final state was not finite though the engine
    did not see it (``out.overflowed``: an inactive, overflowed unit, or W rebuilt from alpha) says so.
    """
    B = status.shape[0]
    overflowed = out.overflowed.view(bool)
    safe = np.broadcast_to(default_eta(p.largest_eigenvalue(), p.signs, p.loss, p.y.shape[1]), (B,))
    for b in np.flatnonzero((status == 2) & ~overflowed & (p.eta > safe)):
        messages[b] += f"; the default step 1/(L ||s||^2 mu_1(K)) is {float(safe[b]):.3g}"
    for b in np.flatnonzero(overflowed):
        messages[b] = overflow_message(int(out.nit[b]), float(p.eta[b]))


def _run_engine(p: Prepared, engine, alpha, beta, settings, hist, n_threads, outer, output_bias=None, bar=None):
    """Runs the engine: ``(the _core.BatchOutput, the final W or None)``."""
    shared = dict(
        y=p.y,
        outer=outer,
        alpha=alpha,
        beta=beta,
        eta=p.eta,
        tol=p.tol,
        settings=settings,
        history=hist,
        n_threads=n_threads,
    )
    if output_bias is not None or p.loss_weights is not None:
        shared.update(output_bias=output_bias, loss_weights=p.loss_weights)
    if bar is not None:  # the engines count their steps; the bar follows (the runs are the same)
        shared["progress"] = lambda done: bar.update(done - bar.n)
    if engine == "dual":
        if p.X is None:
            return _core.run_dual_batch(K=p.K, **shared), None
        # The final W = W0 + (alpha - alpha0) X is formed in the same call, after each problem's run.
        W = p.take_W_room()
        return _core.run_dual_batch(K=p.K, **shared, X=p.X, W0=p.W0, alpha0=p.alpha0, W=W), W
    W = p.take_W_room()
    W[...] = p.W0
    return _core.run_dense_batch(X=p.X, W=W, **shared), W
