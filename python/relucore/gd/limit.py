"""Certified GD limits: ``train(..., steps=np.inf)`` and ``Trainer.run_to_limit()`` (docs/math.md §13).

Once the activation pattern is frozen, GD on the square loss is linear: the residual on
the examples active in some neuron obeys ``r_A <- (I - eta M) r_A`` with
``M = sum_k s_k^2 (D_k K D_k)_AA`` symmetric positive definite, and every ``beta_k`` is
an affine function of ``r_A``. The limit is then one n x n solve away, and a rigorous bound
on the rest of the trajectory proves that no entry of any ``beta_k`` changes sign again.
The run steps GD in growing chunks until that proof (the :class:`Certificate`) holds,
then jumps to the limit. :func:`linear_phase` is shared with :func:`relucore.flow`.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from relucore import _core
from relucore import _scaling as scaling
from relucore._summary import sizes, summarized
from relucore.gd.results import TrainResult, reach_note, status_of, success_of, unfit_message

__all__ = ["Certificate", "CertifiedResult", "linear_phase", "certify_gd", "LIMIT_MAX_STEPS"]

#: GD steps taken at most while trying to certify the limit.
LIMIT_MAX_STEPS = int(_core.defaults.limit_max_steps)
#: A steps=inf run stops this many steps after a try of the proof first found its final phase not strictly contracting.
NONCONTRACTING_STEPS = int(_core.defaults.limit_noncontracting_steps)


#: The start of a certificate's reason when the proof held but its limit failed the self-check.
_SELF_CHECK = "the limit failed its self-check"


def _since(step) -> str:
    """``from step T`` (GD) or ``from t = T`` (the flow's certificate starts at an event time)."""
    return f" from step {step}" if isinstance(step, (int, np.integer)) else f" from t = {step:.6g}"


@summarized(
    title=lambda c: ("holds" if c.holds else "does not hold") + (_since(c.step) if c.holds else ""),
    rows=("holds", "step", "margin", "contraction", "fp_error", "motion", "reason"),
)
@dataclasses.dataclass(frozen=True)
class Certificate:
    """Proof that the activation pattern stays frozen for all later steps (docs/math.md §13).

    Attributes
    ----------
    holds : bool
        The proof succeeded: from ``step`` on, every entry of every ``beta_k`` keeps its sign
        for ever (exact arithmetic from the state at ``step``), so the returned limit is the
        limit of the run.
    step : int
        GD step of the state the proof starts from (-1 when it does not hold). For
        :func:`relucore.flow`: the time of the last event, as a float.
    margin : float
        ``min_{k,i} (sigma_ki beta_inf_ki - sup_t |beta_ki(t) - beta_inf_ki| - fp_ki)`` over the
        entries that move (``sigma = +1`` active, ``-1`` inactive): every entry keeps its sign
        with at least this much room. Positive exactly when the proof holds.
    contraction : float
        ``rho = ||I - eta M||_2`` (upper bound), the rate of the final phase; for the flow
        ``exp(-mu_min(M))`` per unit time.
    fp_error : float
        Largest floating-point error bound ``fp_ki`` added to what the margin must beat (for
        :func:`relucore.flow`: of its final phase's limit, computed with the same rounding model).
    reason : str
        Why the proof fails (empty when it holds); it starts with "the limit failed its self-check"
        when the proof held but its returned state did not pass the check of docs/math.md §13.
    pattern : ndarray of bool, shape (m, n)
        The frozen activation pattern ``beta > 0``.
    motion : float
        For :func:`relucore.flow`: 0 when the pattern is proved frozen; otherwise the flow ended
        once the rest of any continuation was proved to move every entry of ``beta`` by at most
        this (docs/math.md §13, remaining motion), and the returned ``beta`` is the limit to within
        it. For an uncertified ``steps=inf`` run: the same bound for the flow continuation it
        returns (0 when the continuation's pattern is frozen; NaN when there is none).
    sliding : ndarray of bool, shape (m, n), or None
        For an uncertified ``steps=inf`` run: the entries that slid (were held at zero) in the
        exact continuation from the ``tol`` state, where GD chatters and no frozen-pattern proof
        exists. None otherwise.
    """

    holds: bool
    step: float
    margin: float
    contraction: float
    fp_error: float
    reason: str
    pattern: np.ndarray
    motion: float = 0.0
    sliding: Optional[np.ndarray] = None


def _limit_title(r) -> str:
    m, n = r.alpha.shape[-2:]
    d = None if r.W is None else r.W.shape[-1]
    return sizes(B=r.alpha.shape[0] if r.batched else None, m=m, n=n, d=d) + ", steps=inf"


@summarized(
    title=_limit_title,
    rows=("message", "certificate", "success", "status", "nit", "loss", "grad_norm", "eta", "tol"),
    batch=lambda r: r.alpha.shape[0] if r.batched else None,
)
@dataclasses.dataclass(frozen=True)
class CertifiedResult(TrainResult):
    """A :class:`~relucore.gd.results.TrainResult` of ``train(..., steps=np.inf)``.

    ``W``, ``alpha``, ``beta`` are the limit when ``certificate.holds`` (``nit`` is the
    number of GD steps actually taken); otherwise the state where the run stopped (at
    ``tol`` or after ``LIMIT_MAX_STEPS`` steps), which is not proved to be the limit.
    ``certificate`` is a :class:`Certificate` (a list of them for a batch).
    """

    certificate: Optional[object] = None


def linear_phase(K, y, signs, alpha, beta, active, sliding=None, r=None):
    """The linear dynamics of one activation pattern in modal form (docs/math.md §13).

    Computed in C++ (``relucore/gd/linear_phase.hpp``, shared with :func:`relucore.flow`).
    With ``D_k = diag(active[k])`` and (flow only) entries ``sliding[k]`` held at zero,
    ``r_A`` decays as ``exp(-M t) r_A`` (flow) or ``(I - eta M)^t r_A`` (GD) and
    ``beta_k(t) = beta_inf_k + B_k M^{-1} r_A(t)``, ``alpha_k(t) = alpha_inf_k + C_k M^{-1} r_A(t)``.

    Returns the phase (read-only attributes, every array a copy): ``A`` (indices of the examples active
    in some neuron), ``M``,
    ``lam`` and ``V`` (``M = V diag(lam) V^T``), ``c = V^T r_A``, ``z = M^{-1} r_A``,
    ``B``, ``C`` (m, n, ``|A|``), ``beta_inf``, ``alpha_inf`` and ``r`` (the full residual). The flow
    passes ``r`` (carried in modal form from the previous phase, so that it keeps its relative
    accuracy when it is far below the rounding level of ``beta``); by default it is computed from beta.
    """
    sliding = np.zeros(np.shape(active), dtype=bool) if sliding is None else sliding
    return _core.linear_phase(K=K, y=y, signs=signs, alpha=alpha, beta=beta, active=active, sliding=sliding, r=r)


def certify_gd(K, y, signs, alpha, beta, eta, step) -> tuple:
    """The certificate of the state ``(alpha, beta)`` at GD step ``step``, and the linear phase.

    Returns ``(Certificate, phase)`` (the phase as :func:`linear_phase` returns it); ``phase.alpha_inf``,
    ``phase.beta_inf`` is the limit when the certificate holds.
    """
    c = _core.certify_gd(K=K, y=y, signs=signs, alpha=alpha, beta=beta, eta=eta)
    return _certificate(c, beta, eta, step), c.phase


def _same(value, unit):
    return value


_C = _core.CertificateStatus


def _certificate(c, beta, eta, step, up=_same) -> Certificate:
    """The :class:`Certificate` of one try of the proof in C++ (``_core.certify_gd``, a ``CertificateOutput``:
    the proof, its error terms and the steps it needs, ``relucore/gd/certify.hpp``) at the state ``beta`` of
    GD step ``step``, its numbers in the caller's units (``up(value, unit)``, see :func:`run_engine_to_limit`)."""
    active = beta > 0
    status = c.status
    if up is _same:
        margin, fp_error = c.margin, c.fp_error
    else:
        margin, fp_error = up(c.margin, scaling.Y), up(c.fp_error, scaling.Y)
    if status == _C.holds:
        return Certificate(True, step, margin, c.contraction, fp_error, "", active)
    if status == _C.not_contracting:
        why = "the final phase is not strictly contracting (mu_min(M) <= its error bound)"
        return _fails(step, why, active)
    if status == _C.unverified:
        why = f"{_SELF_CHECK}: {c.reason} (docs/math.md §13, the self-check)"
        return Certificate(False, -1, margin, c.contraction, fp_error, why, active, motion=np.nan)
    if status == _C.diverges:
        why = f"eta mu_max(M) = {eta * c.lam_max:.6g} >= 2: the linear phase of this pattern diverges"
        return _fails(step, why, active, contraction=c.contraction)
    entry = (c.limit, c.bound, c.err) if up is _same else (up(v, scaling.Y) for v in (c.limit, c.bound, c.err))
    why = (
        "entry beta[{}, {}] is not proved to keep its sign: limit {:.3g}, deviation bound {:.3g}, "
        "floating-point bound {:.3g}".format(c.k, c.i, *entry)
    )
    return Certificate(False, -1, margin, c.contraction, fp_error, why, active, motion=np.nan)


def _fails(step, reason, active, contraction=np.nan) -> Certificate:
    return Certificate(False, -1, -np.inf, contraction, np.nan, reason, active, motion=np.nan)


def refuse_two_layer(what: str, train_outer=False, output_scale=1.0, bias=False, signs=None) -> None:
    """Refuses, naming ``what``, a trained outer layer, an output scale != 1, a bias or per-problem signs.

    The closed forms, the certified limit, the flow and the minimum-norm problems are derived
    for ``h(x) = sum_k s_k relu(w_k^T x)`` with fixed signs (docs/math.md §13).
    """
    if train_outer is True or (train_outer is not False and bool(train_outer)):
        raise ValueError(
            f"{what} is derived for a fixed outer layer: train_outer=True is not covered (run finite steps instead)"
        )
    if output_scale is not None and (isinstance(output_scale, str) or float(output_scale) != 1.0):
        raise ValueError(
            f"{what} is derived for output_scale=1: fold the scale into signs (h = sum_k (c s_k) relu(w_k^T x)) "
            f"instead of output_scale={output_scale!r}"
        )
    if bias is True or (bias is not False and bool(bias)):
        raise ValueError(f"{what} is derived without a bias: bias=True is not covered (append a column of ones to X)")
    if signs is not None and np.ndim(signs) != 1:
        raise ValueError(f"{what} needs signs of shape (m,) shared by the problems")


def refuse_loss_options(what: str, options) -> None:
    """Refuses, naming ``what``, an output bias, a reduction other than "half_sum" or example weights:
    the certified limit and the flow are derived for ``1/2 ||h(X) - y||^2`` without them."""
    for name, value, plain in (
        ("output_bias", options.output_bias, None),
        ("sample_weight", options.sample_weight, None),
        ("reduction", options.reduction, "half_sum"),
    ):
        if value is not plain and not (isinstance(value, str) and value == plain):
            raise ValueError(
                f"{what} is derived for the loss 1/2 ||h(X) - y||^2 without an output bias or example weights: "
                f"{name}={value!r} is not covered (run finite steps instead)"
            )


def refuse_two_layer_run(what: str, result) -> None:
    """:func:`refuse_two_layer` on the settings of a finished run (a setting it does not carry counts as the plain model)."""
    refuse_two_layer(
        what,
        getattr(result, "train_outer", False),
        getattr(result, "output_scale", 1.0),
        getattr(result, "bias", None) is not None,
        getattr(result, "signs", None),
    )
    if getattr(result, "output_bias", None) is not None or getattr(result, "reduction", "half_sum") != "half_sum":
        raise ValueError(f"{what} is derived for the loss 1/2 ||h(X) - y||^2 without an output bias: not covered")


def check_limit_settings(
    loss: str, activation: str, engine: str = "dual", record: int = 0, *, what: str = "steps=inf", options=None
) -> None:
    """Refuses, with the reason, the settings whose limit is not derived in closed form."""
    if options is not None:
        refuse_two_layer(what, options.train_outer, options.output_scale, options.bias, options.signs)
        refuse_loss_options(what, options)
    if loss != "square":
        raise ValueError(
            f"steps=inf needs the square loss: the {loss} loss has no finite limit (on separable data "
            "the weights grow without bound), so there is no limit to certify"
        )
    if activation != "relu":
        raise ValueError(
            "steps=inf is derived for activation='relu' only; the final phase of the leaky ReLU is not derived"
        )
    if engine not in ("dual", "auto"):
        raise ValueError("steps=inf runs the primal-dual engine (engine='dual')")
    if record not in (0, False):
        raise ValueError("steps=inf keeps no history: use record=0")


def _divergence(engine, out) -> ValueError:
    """The error of a steps=inf run that diverged, with the pattern's mu_max(M) (C++: ``out.diverged_mu_max``)."""
    return ValueError(
        f"steps=inf: the run diverged at step {engine.steps_taken}: eta = {engine.eta:.6g} and the pattern's "
        f"eta mu_max(M) = {engine.eta * out.diverged_mu_max:.6g} >= 2, so the linear final phase diverges; "
        "use a smaller eta"
    )


_S = _core.Status


def _continued(cert: Certificate, out, step: int) -> Certificate:
    """The certificate of an uncertified run that returned the exact continuation from its ``tol`` state
    (docs/math.md §13), computed in C++ (``DualTrainer.run_to_certificate``).

    Where GD chatters on a pattern boundary no frozen-pattern proof exists. The motion left at
    ``tol`` is followed exactly instead: gradient flow, with the entries GD chatters on held at
    zero (Filippov sliding), to its limit (``relucore.flow``'s event loop). GD's own remaining
    motion differs from it by O(eta) of a motion that is already at the ``tol`` level. The
    certificate does not hold and names the sliding entries.
    """
    slid, events = out.sliding, out.continuation_events
    if slid.any():
        entries = ", ".join(f"({k}, {i})" for k, i in zip(*np.nonzero(slid)))
        why = (
            "the proof's own evaluation is not trusted"
            if cert.reason.startswith(_SELF_CHECK)
            else f"GD chatters on the pattern boundary (sliding entries: {entries}), so no frozen-pattern proof exists"
        )
        reason = (
            f"{cert.reason}; {why}; returned the exact continuation from the tol state at step {step} "
            f"(gradient flow with sliding entries held at zero, {events} events)"
        )
    else:
        reason = (
            f"{cert.reason}; returned the exact continuation from the tol state at step {step} "
            f"(gradient flow, {events} events, no entry sliding)"
        )
    return dataclasses.replace(cert, reason=reason, motion=float(out.motion), sliding=slid)


def run_engine_to_limit(engine, K, y, signs, tol: float, max_steps: int = LIMIT_MAX_STEPS, up=_same) -> dict:
    """Steps a ``_core.DualTrainer`` in doubling chunks until the certificate holds, ``tol`` is reached
    or ``max_steps`` steps are taken; returns the limit (when certified) or the state reached.

    The loop runs in C++ (``DualTrainer.run_to_certificate``): it tries the proof when the pattern held
    through the last chunk (and always at the end), unless a try on this same pattern showed that no
    number of steps makes it hold; a failed try says how many more steps the proof needs if the
    pattern stays, and the next try is then. Every status but "max_steps of this chunk" ends the run.
    C++ also chooses the returned point (the limit; where GD chatters on a pattern boundary, the exact
    continuation from the tol state; where the final phase is not strictly contracting, M singular to its
    error bound, the run's own tol state, whose beta is X W to rounding), evaluates its loss and gradient
    norm and decides the status; this function words the outcome.
    ``up(value, unit)`` returns a number of the run to the caller's units where the problem runs
    exactly rescaled (relucore._scaling): the loss, the gradient norm, tol and the certificate's
    numbers are returned in the caller's units, alpha and beta in the run's (K, y, tol given in them).
    """
    out = engine.run_to_certificate(K=K, y=y, signs=signs, tol=tol, max_steps=max_steps)
    if out.diverged:
        raise _divergence(engine, out)
    step = int(engine.steps_taken)
    cert = _certificate(out.certificate, np.array(engine.beta), float(engine.eta), step, up)
    if out.continued:
        cert = _continued(cert, out, step)
    loss, grad, status = out.loss, out.grad_norm, int(out.status)
    if up is not _same:
        loss, grad, tol = up(loss, scaling.LOSS), up(grad, scaling.GRAD), up(tol, scaling.GRAD)
        cert = dataclasses.replace(cert, motion=up(cert.motion, scaling.Y))
    unfit, reach = out.unfit, out.out_of_reach
    if out.stalled_by_rule:  # a stationary point or a proved limit that leaves examples unfit: stalled
        message = unfit_message(step, loss, grad, tol, unfit, "square")
        if cert.holds:
            message = f"certified limit (the pattern is proved frozen from step {cert.step}), {message}"
    elif cert.holds:
        message = (
            f"certified limit: the activation pattern is proved frozen from step {cert.step} "
            f"(margin {cert.margin:.3g}); jumped to the limit of the linear final phase"
        ) + reach_note(reach, loss)
    else:
        message = _uncertified_message(out, cert, step, grad, tol, max_steps, up)
    if status == _S.converged and not cert.holds:
        message += reach_note(reach, loss)
    return dict(
        alpha=out.alpha,
        beta=out.beta,
        loss=loss,
        grad_norm=grad,
        nit=step,
        status=status_of(status),
        message=message,
        pattern_stable_step=int(out.pattern_stable_step),
        certificate=cert,
        unfit=unfit,
        out_of_reach=reach,
    )


def _uncertified_message(out, cert: Certificate, step: int, grad: float, tol: float, max_steps: int, up) -> str:
    """The message of a run whose limit is not certified (``out``: its ``_core.LimitRunOutput``; ``grad``
    and ``tol`` in the caller's units, ``up`` returns the run's numbers to them)."""
    if out.off_tol and out.unresolved_bound == out.unresolved_bound:  # not NaN
        bound = up(float(out.unresolved_bound), scaling.GRAD)
        return (
            f"limit not certified: {cert.reason}; the engine's gradient norm fell below tol {tol:.3g} at step "
            f"{step}, and at the returned point it is {grad:.3g} in dual form, but it could not be resolved below "
            f"tol (rounding bound {bound:.3g}: K is singular or nearly so, collinear or duplicate examples, n > d, "
            "where the dual form cancels); not a proved stationary point"
        )
    if out.off_tol:
        return (
            f"limit not certified: {cert.reason}; the engine's gradient norm fell below tol {tol:.3g} at step "
            f"{step}, but at the returned point it is {grad:.3g}, above tol (K is singular or nearly so: "
            "collinear or duplicate examples, n > d, where the norm of the dual form cancels); not a stationary point"
        )
    if cert.sliding is not None:
        return f"limit not certified: {cert.reason} (docs/math.md §13)"
    if out.noncontracting_stop:
        return (
            f"limit not certified: {cert.reason}, so no number of steps can prove such a pattern frozen (K is "
            f"singular or nearly so: collinear or duplicate examples, n > d); stopped at step {step}, "
            f"{NONCONTRACTING_STEPS} steps after a try of the proof first found this (step "
            f"{out.noncontracting_since}), with gradient norm {grad:.3g} above tol {tol:.3g}"
        )
    status = out.status
    what = {_S.converged: f"gradient norm below tol {tol:.3g}", _S.max_steps: f"{max_steps} steps taken"}.get(
        status, f"status {status.name} ({status.message})"
    )
    return f"limit not certified: {cert.reason}; stopped with {what} at step {step}"


def train_to_limit(p, n_threads: int, max_steps: int = LIMIT_MAX_STEPS) -> CertifiedResult:
    """``train(..., steps=np.inf)`` on a prepared batch (``relucore.gd.prepare.Prepared``)."""
    check_limit_settings(p.loss, p.activation)
    B = p.y.shape[0]
    runs = []
    for b in range(B):
        settings = p.settings(0, 0)
        settings.eta, settings.tol = float(p.eta[b]), float(p.tol[b])
        engine = _core.DualTrainer(
            K=p.K[b], y=p.y[b], outer=p.signs, alpha0=p.alpha0[b], beta0=p.beta0[b], settings=settings
        )
        sc = p.scaling
        up = _same if sc is None else (lambda v, unit, b=b: sc.up(v, unit, b))
        runs.append(run_engine_to_limit(engine, p.K[b], p.y[b], p.signs, float(p.tol[b]), max_steps, up))
    alpha = np.stack([r["alpha"] for r in runs])
    W = None
    if p.X is not None:
        W = p.take_W_room()
        _core.weights_from_dual_batch(X=p.X, W0=p.W0, alpha0=p.alpha0, alpha=alpha, W=W, n_threads=n_threads)
    if p.scaling is not None:
        beta = np.stack([r["beta"] for r in runs])
        p.scaling.check_representable(((alpha, scaling.ALPHA), (beta, scaling.Y), (W, scaling.W)), p.batched)
        for a, unit in ((alpha, scaling.ALPHA), (beta, scaling.Y), (W, scaling.W)):
            p.scaling.up_inplace(a, unit)
        for b, r in enumerate(runs):
            r["alpha"], r["beta"] = alpha[b], beta[b]
            if not (np.isfinite(r["loss"]) and np.isfinite(r["grad_norm"])):
                raise ValueError(scaling.unrepresentable_message(p.scaling, b, p.batched))
    p.scale_back()

    def field(name, cast):
        vals = [r[name] for r in runs]
        if name in ("alpha", "beta"):
            return np.stack(vals) if p.batched else vals[0]
        if name in ("message", "certificate", "unfit", "out_of_reach"):
            return vals if p.batched else vals[0]
        return np.array(vals, dtype=cast) if p.batched else cast(vals[0])

    def one(a):
        return a if p.batched or a is None else a[0]

    status = field("status", int)
    status = status if p.batched else status_of(status)
    return CertifiedResult(
        W=one(W),
        alpha=field("alpha", float),
        beta=field("beta", float),
        W0=one(p.W0),
        alpha0=one(p.alpha0),
        beta0=one(p.beta0),
        signs=p.signs.copy(),
        eta=p.eta.copy() if p.batched else float(p.eta[0]),
        loss=field("loss", float),
        grad_norm=field("grad_norm", float),
        nit=field("nit", int),
        success=success_of(status),
        status=status,
        message=field("message", str),
        pattern_stable_step=field("pattern_stable_step", int),
        history=None,
        tol=p.tol.copy() if p.batched else float(p.tol[0]),
        engine="dual",
        init=p.init,
        loss_name=p.loss,
        activation=p.activation,
        leaky_slope=p.leaky_slope,
        certificate=field("certificate", object),
        unfit=field("unfit", object),
        out_of_reach=field("out_of_reach", object),
    )


def trainer_to_limit(trainer, max_steps: int = LIMIT_MAX_STEPS) -> CertifiedResult:
    """``Trainer.run_to_limit()``: steps the trainer until its limit is certified (it keeps the state
    reached; the limit is in the result)."""
    e = trainer._engine
    s = e.settings
    check_limit_settings(s.loss.name, s.activation.name)
    refuse_two_layer("run_to_limit", s.train_outer, s.output_scale, trainer._bias)
    K, y, signs = np.array(e.K), np.array(e.labels), np.array(e.outer)
    sc = trainer._sc  # the engine runs on the exactly rescaled copy of the data (relucore._scaling), or None
    up = _same if sc is None else (lambda v, unit: sc.up(v, unit, 0))
    run = run_engine_to_limit(e, K, y, signs, trainer._tol, max_steps, up)
    W = None
    if trainer._X is not None:
        W = np.empty((1,) + trainer._W0.shape)
        _core.weights_from_dual_batch(
            X=trainer._X[None],
            W0=trainer._W0[None],
            alpha0=trainer._alpha0[None],
            alpha=run["alpha"][None],
            W=W,
            n_threads=1,
        )
        W = W[0]
    if sc is not None:
        states = ((run["alpha"], scaling.ALPHA), (run["beta"], scaling.Y), (W, scaling.W))
        sc.check_representable(tuple((None if a is None else a[None], u) for a, u in states), batched=False)
        if not (np.isfinite(run["loss"]) and np.isfinite(run["grad_norm"])):
            raise ValueError(scaling.unrepresentable_message(sc, 0, False))
        run["alpha"], run["beta"], W = (up(a, u) for a, u in states)
    return CertifiedResult(
        W=W,
        W0=None if trainer._W0 is None else np.array(up(trainer._W0, scaling.W)),
        alpha0=np.array(up(trainer._alpha0, scaling.ALPHA)),
        beta0=np.array(up(trainer._beta0, scaling.Y)),
        signs=signs,
        eta=float(trainer.eta),
        success=run["status"].success,
        history=None,
        tol=float(trainer.tol),
        engine="dual",
        init=trainer._init,
        loss_name=s.loss.name,
        activation=s.activation.name,
        leaky_slope=float(s.leaky_slope),
        **run,
    )
