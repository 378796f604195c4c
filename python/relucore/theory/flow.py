"""Exact gradient flow of a shallow ReLU network on the square loss (docs/math.md §13).

Between activation events the flow is linear: with the pattern fixed, ``r_A' = -M r_A``
(``M`` symmetric positive definite) and every ``beta_k``, ``alpha_k`` is affine in ``r_A``.
:func:`~relucore.flow` solves each phase by an eigendecomposition, finds the first time any watched
quantity reaches zero with a root finder that cannot skip a root (a quadratic lower bound
from the second-derivative bound of the exponential sum), switches the pattern and goes on.
An entry pushed back onto zero from both sides slides (Filippov): it is held at zero, with the
convex combination of the two gradients that keeps it there, until that combination leaves
``[0, 1]``. Gradient descent with a small step shows the same sliding as chatter.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from relucore import _core
from relucore import _scaling as scaling
from relucore._progress import progress_bar
from relucore._summary import sizes, summarized
from relucore._validation import check_int
from relucore.gd.limit import Certificate, check_limit_settings
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare
from relucore.gd.results import reach_note, stalled_note

__all__ = ["flow", "FlowResult", "DEFAULT_MAX_EVENTS"]

if TYPE_CHECKING:
    from typing_extensions import Never

_O = TrainOptions  # the one home of every option default

#: Events followed at most before :func:`~relucore.flow` stops with status ``Status.max_events``.
DEFAULT_MAX_EVENTS = int(_core.defaults.flow_max_events)


_OPTION_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TrainOptions)}


def _flow_title(r: "FlowResult") -> str:
    m, n = r.beta.shape
    d = None if r.W is None else r.W.shape[1]
    return f"{sizes(m=m, n=n, d=d)}, {r.event_times.size} events, t = {r.t_final:.6g}"


@summarized(
    title=_flow_title,
    rows=("status", "message", "certificate", "t_final", "loss", ("event_times",)),
)
@dataclasses.dataclass(frozen=True)
class FlowResult:
    """Outcome of :func:`relucore.flow`: the exact gradient flow, event by event (docs/math.md §13).

    Attributes
    ----------
    status : relucore.Status
        ``certified`` (no event after the last one: ``alpha``, ``beta``, ``W`` are the limit
        t = inf, with ``certificate``, and it leaves no example unfit), ``stalled`` (such a limit
        that leaves examples unfit), ``t_max`` (state at ``t_max``), ``max_events``, ``stuck`` (an
        event whose continuation could not be decided; ``message`` says which) or ``uncertified``
        (the limit failed its self-check, docs/math.md §13: the returned state is not proved to be
        the limit; ``certificate`` does not hold and gives the reason).
    message : str
        The status in words.
    certificate : Certificate or None
        For a limit (``certified`` or ``stalled``): holds, ``step`` the time of the last event, ``margin`` the smallest
        ``sigma beta_inf`` over the entries not sliding, ``fp_error`` the largest floating-point
        bound of the returned ``beta`` (computed, docs/math.md §13). For ``uncertified``: does
        not hold, ``reason`` the failed claim. None otherwise.
    t_final : float
        Time of the returned state (inf for the limit).
    event_times : ndarray, shape (E,)
        The time of each event (an entry switching off or on, or starting or ending to slide).
    event_patterns, event_sliding : ndarray of bool, shape (E, m, n)
        Active entries ``beta > 0`` and sliding entries (held at zero) after each event.
    event_kinds : list of str
        ``"off k i"``, ``"on k i"``, ``"slide k i"``, ``"leave-off k i"``, ``"leave-on k i"``.
    times : ndarray, shape (T,)
        The requested times, sorted.
    alpha_t, beta_t : ndarray, shape (T, m, n)
        The state at the requested ``times``. Times after the flow ended by its remaining-motion
        bound (``certificate.motion > 0``) get the state of its last phase, within that bound.
    alpha, beta : ndarray, shape (m, n)
        Dual and primal coordinates of the returned state (the limit for ``certified`` and ``stalled``).
    W : ndarray, shape (m, d), or None
        The weights of the returned state; None in Gram-only mode.
    loss : float
        The square loss of the returned state.
    alpha0, beta0 : ndarray, shape (m, n)
        The starting point.
    W0 : ndarray, shape (m, d), or None
        The starting weights; None in Gram-only mode.
    signs : ndarray, shape (m,)
        The outer weights ``s_k``.
    pattern, sliding : ndarray of bool, shape (m, n)
        Final activation pattern and sliding entries.
    unfit, out_of_reach : ndarray of int
        As for :class:`~relucore.gd.results.TrainResult`: the examples the returned state leaves
        unfit (no neuron active on them, though one could fit them: then the limit is a stalled
        stationary point and ``success`` is False), and those no neuron can fit (named in
        ``message`` with the loss).
    """

    status: _core.Status
    message: str
    certificate: Optional[Certificate]
    t_final: float
    event_times: np.ndarray
    event_patterns: np.ndarray
    event_sliding: np.ndarray
    event_kinds: list
    times: np.ndarray
    alpha_t: np.ndarray
    beta_t: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    W: Optional[np.ndarray]
    loss: float
    alpha0: np.ndarray
    beta0: np.ndarray
    W0: Optional[np.ndarray]
    signs: np.ndarray
    pattern: np.ndarray
    sliding: np.ndarray
    unfit: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    out_of_reach: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def success(self) -> bool:
        """``status.success``: True when the flow was followed to its limit and that limit leaves no
        example unfit (``status`` certified), the rule of every result."""
        return self.status.success


def flow(
    X: Optional[ArrayLike] = None,
    y: Optional[ArrayLike] = None,
    *,
    gram: Optional[ArrayLike] = None,
    t_max: float = np.inf,
    times=None,
    max_events: int = DEFAULT_MAX_EVENTS,
    signs: Union[Sequence[float], np.ndarray] = _O.signs,
    init: Union[str, ArrayLike] = _O.init,
    eps: Optional[ArrayLike] = _O.eps,
    rng: Any = _O.rng,
    assignment: Optional[ArrayLike] = _O.assignment,
    init_scale: float = _O.init_scale,
    C_g: float = _O.C_g,
    C_alpha: float = _O.C_alpha,
    loss: str = _O.loss,
    activation: str = _O.activation,
    leaky_slope: float = _O.leaky_slope,
    train_outer: bool = _O.train_outer,
    output_scale: Union[float, str] = _O.output_scale,
    bias: bool = _O.bias,
    output_bias: Optional[float] = _O.output_bias,
    reduction: str = _O.reduction,
    sample_weight: Optional[ArrayLike] = _O.sample_weight,
    progress: Optional[bool] = _O.progress,
    options: Optional[TrainOptions] = None,
    **refused: Never,
) -> FlowResult:
    """Exact gradient flow ``dW/dt = -grad R(W)`` of ``h(x) = sum_k s_k relu(w_k^T x)`` on the square loss.

    Follows the flow from event to event in closed form (docs/math.md §13): no step size,
    no discretisation error; entries pushed onto zero from both sides slide (Filippov). The
    event loop runs in C++ (``relucore/gd/flow.hpp``, ``flow_follow.hpp``).

    Parameters
    ----------
    X, y, gram
        As for :func:`relucore.train` (one problem).
    t_max : float, default inf
        Follow the flow up to this time; ``inf``: to the limit, with its certificate.
    times : array_like, optional
        Times at which to return the state (``alpha_t``, ``beta_t``).
    max_events : int, default 10000
        Stop with status ``max_events`` after this many events.
    signs, init, eps, rng, assignment, init_scale, C_g, C_alpha
        The start, as for :func:`relucore.train`.
    loss, activation, leaky_slope, train_outer, output_scale, bias, output_bias, reduction, sample_weight
        As for :func:`relucore.train`. The flow follows the square loss of a ReLU network with a fixed
        outer layer; other values are refused with a ``ValueError``.
    progress : bool or None, default False
        A tqdm bar counting the flow's events (None: only when stderr is a terminal); the flow is the
        same with or without it.
    options : TrainOptions, optional
        The options as one object; a keyword given beside it overrides its field.
    **refused
        The options of a GD run that the flow has no use for (``eta``, ``steps``, ``tol``,
        ``record``, ``engine``, ``n_threads``, ``on_divergence``) are refused with a ``TypeError``
        that says why, when given as keywords or set in ``options``; ``t_max`` and ``max_events``
        bound the flow instead.

    Returns
    -------
    FlowResult
        The state at ``t_max`` or the limit, every event on the way and the states at ``times``.
        Data far from unit scale run on an exactly rescaled copy (docs/errors.md, "Scale of the
        data"); every number comes back in the caller's units, times scaling as ``1 / K``
        (``X -> 2^k X`` maps ``t -> 4^-k t``).

    Examples
    --------
    The flow limit, and the certified GD limits approaching it as the step size shrinks:

    >>> import numpy as np, relucore
    >>> ds = relucore.sample(10, 2000, rng=0)
    >>> fl = relucore.flow(ds.X, ds.y, signs=(1, -1))
    >>> fl.status.name, bool(fl.certificate.holds), fl.loss < 1e-20
    ('certified', True, True)
    >>> gd = relucore.train(ds.X, ds.y, signs=(1, -1), steps=np.inf)
    >>> gd8 = relucore.train(ds.X, ds.y, signs=(1, -1), eta=gd.eta / 8, steps=np.inf)
    >>> bool(gd8.certificate.holds)
    True
    >>> relucore.limit_gap(gd8.W, fl.W) < relucore.limit_gap(gd.W, fl.W) / 4
    True
    """
    o = TrainOptions.from_call(options, locals())
    _refuse_gd_only(o, refused)
    check_limit_settings(o.loss, o.activation, what="flow", options=o)
    t_max = float(t_max)
    if not t_max >= 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    p = prepare(X, y, gram=gram, options=o)
    if p.batched:
        raise ValueError("flow follows one problem: X of shape (n, d) (or gram (n, n)) and y of shape (n,)")
    times = np.sort(np.atleast_1d(np.asarray([] if times is None else times, dtype=float)))
    if times.size and not (np.isfinite(times).all() and times[0] >= 0):
        raise ValueError("times must be finite and >= 0")
    sc = p.scaling
    t_run, times_run = (t_max, times) if sc is None else _times_in_run_units(sc, t_max, times)
    out = _follow(p, t_run, times_run, check_int(max_events, "max_events", minimum=0), o.progress)
    run = _Scaled.of(out)
    X0 = None if p.X is None else p.X[0]
    W0 = None if p.W0 is None else p.W0[0]
    W = None if X0 is None else W0 + (run.alpha - p.alpha0[0]) @ X0
    loss, unfit, reach = out.loss, out.unfit, out.out_of_reach  # of the returned state, computed in C++
    if sc is not None:
        W, loss = _scale_back_flow(p, run, W, loss)
    if out.status == _core.Status.stalled:  # a limit that leaves examples unfit (decided in C++)
        run.message += stalled_note(unfit, loss)
    elif out.status == _core.Status.certified:
        run.message += reach_note(reach, loss)
    pattern = out.pattern
    return FlowResult(
        status=out.status,
        message=run.message,
        certificate=_flow_certificate(out, run, pattern),
        t_final=run.t_final,
        event_times=np.asarray(run.event_times, dtype=float),
        event_patterns=out.event_patterns,
        event_sliding=out.event_sliding,
        event_kinds=out.event_kinds,
        times=times,
        alpha_t=run.alpha_t,
        beta_t=run.beta_t,
        alpha=run.alpha,
        beta=run.beta,
        W=W,
        loss=loss,
        alpha0=p.alpha0[0],
        beta0=p.beta0[0],
        W0=W0,
        signs=p.signs.copy(),
        pattern=pattern,
        sliding=out.sliding,
        unfit=unfit,
        out_of_reach=reach,
    )


@dataclasses.dataclass
class _Scaled:
    """The numbers of a flow run (``_core.FlowOutput``) that :func:`_scale_back_flow` returns to the caller's
    units when the problem runs exactly rescaled (relucore._scaling)."""

    alpha: np.ndarray
    beta: np.ndarray
    alpha_t: np.ndarray
    beta_t: np.ndarray
    t_final: float
    event_times: np.ndarray
    last_event: float
    margin: float
    fp_error: float
    motion: float
    rate: float
    reason: str
    message: str

    @classmethod
    def of(cls, out) -> "_Scaled":
        return cls(**{f.name: getattr(out, f.name) for f in dataclasses.fields(cls)})


#: The options of a GD run the flow cannot implement, each with what replaces it.
_GD_ONLY = {
    "eta": "the flow has no step size",
    "steps": "bound the flow by t_max or max_events",
    "tol": "the flow runs to t_max or its certified limit",
    "record": "ask for states with times=",
    "engine": "the flow has one event loop",
    "n_threads": "the flow follows one problem",
    "on_divergence": "the flow does not diverge",
}


def _refuse_gd_only(o: TrainOptions, refused: dict) -> None:
    """A ``TypeError`` for a keyword flow does not declare, naming why for an option of :data:`_GD_ONLY`,
    and for an option of :data:`_GD_ONLY` set away from its default in ``options`` (rather than ignoring it)."""
    for name, value in refused.items():
        if name not in _GD_ONLY:
            raise TypeError(f"flow() got an unexpected keyword argument {name!r}")
        raise TypeError(f"flow() got {name}={value!r}, which it cannot implement: {_GD_ONLY[name]}")
    for name, why in _GD_ONLY.items():
        value, default = getattr(o, name), _OPTION_DEFAULTS[name]
        if value is not default and not (isinstance(value, (int, float, str)) and value == default):
            raise TypeError(f"flow() got {name}={value!r}, which it cannot implement: {why}")


def _follow(p, t_run: float, times_run: np.ndarray, max_events: int, progress):
    """The C++ event loop on the prepared problem (run units), with a bar of its events when ``progress`` asks."""
    sc = p.scaling
    bar = None if progress is False else progress_bar(progress, None, "flow", "event")
    kw = {} if bar is None else {"progress": lambda done: bar.update(done - bar.n)}
    try:
        return _core.flow_follow(
            K=p.K[0],
            y=p.y[0],
            signs=p.signs,
            alpha=p.alpha0[0],
            beta=p.beta0[0],
            t_max=t_run,
            times=times_run.tolist(),
            max_events=max_events,
            time_exponent=0 if sc is None else int(sc.power(scaling.ETA, 0)[0]),
            beta_exponent=0 if sc is None else int(sc.ey[0]),
            **kw,
        )
    finally:
        if bar is not None:
            bar.close()


def _times_in_run_units(sc, t_max: float, times: np.ndarray):
    """``t_max`` and ``times`` on the exactly rescaled copy (time scales as 1 / K: ``t -> 4^ex t``); refuses a
    time that float64 cannot hold there."""
    given = np.append(times, t_max)
    ran = sc.down(given[None], scaling.ETA)[0]
    t_run, times_run = float(ran[-1]), ran[:-1]
    bad = (given > 0) & np.isfinite(given) & ~((ran >= np.finfo(float).tiny) & np.isfinite(ran))
    if bad.any():
        t = float(given[np.flatnonzero(bad)[0]])
        raise ValueError(_core.time_out_of_range_message(t, ex=int(sc.ex[0]), ey=int(sc.ey[0])))
    return t_run, times_run


def _scale_back_flow(p, run: _Scaled, W, loss: float):
    """A flow run on exactly rescaled data (relucore._scaling) back in the caller's units, in place: the
    states by their units, times as eta (``t -> 4^-ex t``), the certificate's numbers by theirs. Refuses a
    result that float64 cannot hold there. Returns W and the loss in the caller's units."""
    sc = p.scaling
    states = ((run.alpha, scaling.ALPHA), (run.beta, scaling.Y), (W, scaling.W))
    arrays = tuple((None if a is None else a[None], unit) for a, unit in states)
    for a, unit in ((run.alpha_t, scaling.ALPHA), (run.beta_t, scaling.Y)):
        if a.size:
            arrays += ((a.reshape(1, -1), unit),)
    p.scaling.check_representable(arrays + ((np.array([[loss]]), scaling.LOSS, True),), batched=False)
    sc = p.scale_back()
    run.alpha, run.beta = sc.up(run.alpha, scaling.ALPHA, 0), sc.up(run.beta, scaling.Y, 0)
    run.alpha_t, run.beta_t = sc.up(run.alpha_t, scaling.ALPHA, 0), sc.up(run.beta_t, scaling.Y, 0)
    run.t_final = sc.up(run.t_final, scaling.ETA, 0)
    run.event_times = sc.up(np.asarray(run.event_times, dtype=float), scaling.ETA, 0)
    run.last_event = sc.up(run.last_event, scaling.ETA, 0)
    run.margin, run.fp_error, run.motion = (sc.up(v, scaling.Y, 0) for v in (run.margin, run.fp_error, run.motion))
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        # exp(-mu_min(M)) per unit time: mu_min scales as K, so the rate is the run's to the power 4^ex.
        run.rate = float(np.exp(np.ldexp(np.log(run.rate), -int(sc.power(scaling.ETA, 0)[0]))))
    if run.reason:
        run.reason += (
            f" (numbers of the exactly rescaled copy of the data: X / 2^{int(sc.ex[0])}, y / 2^{int(sc.ey[0])})"
        )
        run.message += f" (numbers in the reason: X / 2^{int(sc.ex[0])}, y / 2^{int(sc.ey[0])})"
    return sc.up(W, scaling.W, 0), sc.up(loss, scaling.LOSS, 0)


def _flow_certificate(out, run: _Scaled, pattern: np.ndarray) -> Optional[Certificate]:
    """The certificate of a flow run (None unless it reached a limit or failed the limit's self-check), its
    numbers from ``run`` (in the caller's units)."""
    cert = None
    numbers = (run.margin, run.rate, run.fp_error)
    if run.reason:
        cert = Certificate(False, -1, *numbers, run.reason, pattern.copy(), motion=run.motion)
    if out.limit:
        cert = Certificate(True, run.last_event, *numbers, "", pattern.copy(), motion=run.motion)
    return cert
