"""Exact gradient flow of a shallow ReLU network on the square loss (docs/math.md §13).

Between activation events the flow is linear: with the pattern fixed, ``r_A' = -M r_A``
(``M`` symmetric positive definite) and every ``beta_k``, ``alpha_k`` is affine in ``r_A``.
:func:`flow` solves each phase by an eigendecomposition, finds the first time any watched
quantity reaches zero with a root finder that cannot skip a root (a quadratic lower bound
from the second-derivative bound of the exponential sum), switches the pattern and goes on.
An entry pushed back onto zero from both sides slides (Filippov): it is held at zero, with the
convex combination of the two gradients that keeps it there, until that combination leaves
``[0, 1]``. Gradient descent with a small step shows the same sliding as chatter.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from relucore._summary import sizes, summarized
from relucore.gd.limit import Certificate, linear_phase
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare

__all__ = ["flow", "FlowResult", "DEFAULT_MAX_EVENTS"]

#: Events followed at most before :func:`flow` stops with status ``"max_events"``.
DEFAULT_MAX_EVENTS = 10_000
_U = np.finfo(float).eps / 2
_TINY = 64 * _U  # relative size below which a value is treated as zero (rounding level)
_DTINY = 1e-8  # relative size below which a derivative at a switching point is treated as zero
_MAX_ITER = 200  # root-finder iterations per phase before a near-tangency is taken as an event


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
    """Outcome of :func:`relucore.flow`.

    Attributes
    ----------
    status : str
        ``"limit"`` (no event after the last one: ``alpha``, ``beta``, ``W`` are the limit
        t = inf, with ``certificate``), ``"t_max"`` (state at ``t_max``), ``"max_events"``
        or ``"stuck"`` (an event whose continuation could not be decided; ``message`` says which).
    message : str
    certificate : Certificate or None
        For ``"limit"``: holds, ``step`` the time of the last event, ``margin`` the smallest
        ``sigma beta_inf`` over the entries not sliding.
    t_final : float
        Time of the returned state (inf for the limit).
    event_times : ndarray, shape (E,)
    event_patterns, event_sliding : ndarray of bool, shape (E, m, n)
        Active entries ``beta > 0`` and sliding entries (held at zero) after each event.
    event_kinds : list of str
        ``"off k i"``, ``"on k i"``, ``"slide k i"``, ``"leave-off k i"``, ``"leave-on k i"``.
    times : ndarray, shape (T,)
    alpha_t, beta_t : ndarray, shape (T, m, n)
        The state at the requested ``times``.
    alpha, beta : ndarray, shape (m, n)
    W : ndarray, shape (m, d), or None (Gram-only mode)
    loss : float
    alpha0, beta0 : ndarray, shape (m, n); W0 : ndarray or None; signs : ndarray, shape (m,)
    pattern, sliding : ndarray of bool, shape (m, n)
        Final activation pattern and sliding entries.
    """

    status: str
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

    @property
    def success(self) -> bool:
        """True when the flow was followed to its limit (``status == "limit"``)."""
        return self.status == "limit"


# ------------------------------------------------------------------ one phase


def _state_at(ph, alpha, beta, sliding, s):
    """``(alpha, beta)`` a time ``s`` after the start of phase ``ph`` (sliding entries exactly 0)."""
    if s == 0:
        return alpha.copy(), beta.copy()
    lam, V, c = ph["lam"], ph["V"], ph["c"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        zt = V @ np.where(lam > 0, np.exp(-lam * s) * c / lam, 0.0)
    a = ph["alpha_inf"] + ph["C"] @ zt
    b = ph["beta_inf"] + ph["B"] @ zt
    b[sliding] = 0.0
    return a, b


def _residual_at(ph, s):
    """The residual a time ``s`` into phase ``ph``, in modal form (relative accuracy kept as it decays)."""
    r = ph["r"].copy()
    r[ph["A"]] = ph["V"] @ (np.exp(-ph["lam"] * s) * ph["c"])
    return r


def _watched(ph, signs, active, sliding, y):
    """The watched exponential sums ``f_j(s) = a_j + sum_l G_jl exp(-Lam_jl s)`` with their signs.

    Rows: every entry of a moving neuron that is not sliding (``beta_ki``, sign + active / - inactive),
    and for each sliding entry the two Filippov conditions ``theta > 0`` and ``theta < 1``.
    Returns ``a, G, Lam, sigma, tags`` (tags: ``(kind, k, i)``).
    """
    lam, V, c, A = ph["lam"], ph["V"], ph["c"], ph["A"]
    m, n = active.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        modal = np.where(lam > 0, c / lam, 0.0)
    moving = (active | sliding).any(axis=1)
    BV = ph["B"] @ V * modal  # (m, n, nA): beta_k(s) - beta_inf = BV @ exp(-lam s)
    watch = moving[:, None] & ~sliding
    ks, is_ = np.nonzero(watch)
    rows_a, rows_G = [ph["beta_inf"][watch]], [BV[watch]]
    sig = [np.where(active[watch], 1.0, -1.0)]
    tags = [("beta", k, i) for k, i in zip(ks.tolist(), is_.tolist())]
    shift = [np.zeros(ks.size, dtype=bool)]
    if sliding.any():
        CV = ph["C"] @ V * c  # alpha_k' = -(C_k r_A) = -CV @ exp(-lam s)
        rpos = {int(a): j for j, a in enumerate(A)}
        for k, i in zip(*np.nonzero(sliding)):
            dalpha = -CV[k, i]
            if i in rpos:
                act_a, act_G = 0.0, -signs[k] * V[rpos[i]] * c  # -s_k r_i(s)
            else:
                act_a, act_G = -signs[k] * ph["r"][i], np.zeros_like(c)
            s0 = 1.0 if (act_a + act_G.sum()) > 0 else -1.0
            rows_a.append(np.array([0.0, s0 * act_a]))
            rows_G.append(np.stack([s0 * dalpha, s0 * (act_G - dalpha)]))
            sig.append(np.ones(2))
            tags += [("theta0", int(k), int(i)), ("theta1", int(k), int(i))]
            shift.append(np.array([True, i in rpos]))
    a = np.concatenate(rows_a)
    G = np.concatenate(rows_G).reshape(a.size, lam.size)
    Lam = np.broadcast_to(lam, G.shape).copy()
    shift = np.concatenate(shift)
    if shift.any() and lam.size:
        _normalise(shift, a, G, Lam)
    return a, G, Lam, np.concatenate(sig), tags


def _normalise(rows, a, G, Lam) -> None:
    """A sum with no constant term keeps its sign when divided by its slowest exponential: shift
    ``rows`` (coefficients below 1e-12 of a row's largest are rounding and dropped)."""
    g, L = G[rows], Lam[rows]
    big = np.abs(g) > 1e-12 * np.maximum(np.abs(g).max(axis=1, keepdims=True), 1e-300)
    lo = np.where(big, L, np.inf).min(axis=1, keepdims=True)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    near = big & (L - lo <= 1e-12 * np.maximum(lo, 1e-300))
    a[rows] += np.where(near, g, 0.0).sum(axis=1)
    G[rows] = np.where(big & ~near, g, 0.0)
    Lam[rows] = np.maximum(L - lo, 0.0)


def _derivs(a, G, Lam, s):
    E = np.exp(-Lam * s[:, None])
    GE = G * E
    f = a + GE.sum(axis=1)
    f1 = -(GE * Lam).sum(axis=1)
    f2 = (GE * Lam**2).sum(axis=1)
    aG = np.abs(GE)
    return f, f1, f2, aG


def _first_event(a, G, Lam, sigma, s_max):
    """Earliest ``s`` in ``[0, s_max]`` where some ``sigma_j f_j`` reaches zero (or wants to go negative
    from zero at ``s = 0``): ``(s, j)``, or ``(inf, -1)`` when none does before ``s_max``."""
    F = len(a)
    if F == 0:
        return np.inf, -1
    bad, s = _zero_start(a, G, Lam, sigma)
    if bad.any():
        return 0.0, int(np.flatnonzero(bad)[0])
    best, who = s_max, -1
    live = np.ones(F, dtype=bool)
    for _ in range(_MAX_ITER):
        live &= s < best
        if not live.any():
            break
        idx = np.flatnonzero(live)
        f, f1, _, aG = _derivs(a[idx], G[idx], Lam[idx], s[idx])
        Ff, F1 = sigma[idx] * f, sigma[idx] * f1
        tail = sigma[idx] * a[idx] - aG.sum(axis=1)
        size = np.abs(a[idx]) + aG.sum(axis=1)
        done = (tail > _TINY * size) | (size == 0)  # never reaches zero after s (or identically zero)
        L2 = (aG * Lam[idx] ** 2).sum(axis=1)
        root = Ff <= _TINY * (np.abs(a[idx]) + aG.sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            h = (F1 + np.sqrt(np.maximum(F1 * F1 + 2 * L2 * Ff, 0.0))) / L2
        h = np.where(L2 > 0, h, np.inf)
        root |= h <= 4 * _U * np.maximum(s[idx], 1e-300)
        for j in idx[root & ~done]:
            if s[j] < best:
                best, who = s[j], int(j)
        live[idx[done | root]] = False
        s[idx] = np.where(done | root, s[idx], s[idx] + h)
    else:
        live &= s < best
        if live.any():  # a near-tangency that did not resolve: take its closest approach as an event
            j = int(np.flatnonzero(live)[np.argmin(s[live])])
            best, who = s[j], j
    return (best, who) if who >= 0 else (np.inf, -1)


def _zero_start(a, G, Lam, sigma):
    """Rows that leave their side at once (``s = 0``: wrong sign, or at zero heading the wrong way),
    and for each row a time before which it provably stays on its side (0 unless it starts at zero)."""
    if len(a) == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    f, f1, f2, aG = _derivs(a, G, Lam, np.zeros(len(a)))
    Ff, F1, F2 = sigma * f, sigma * f1, sigma * f2
    scale = np.abs(a) + aG.sum(axis=1)
    L1, L2, L3 = ((aG * Lam**p).sum(axis=1) for p in (1, 2, 3))
    at_zero = np.abs(Ff) <= _TINY * scale
    # From zero: the first derivative that is clearly non-zero must point the right way.
    ok1 = F1 > _DTINY * L1
    ok2 = (np.abs(F1) <= _DTINY * L1) & (F2 > _DTINY * L2)
    bad = (at_zero & ~(ok1 | ok2) & (scale > 0)) | (~at_zero & (Ff < 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        # Leave zero: F >= F1 s - L2 s^2 / 2 > 0 for s < 2 F1 / L2 (or F >= F2 s^2/2 - L3 s^3/6 - |F1| s).
        start = np.where(ok1, F1 / L2, 1.5 * F2 / L3)
    return bad, np.where(at_zero, np.nan_to_num(start, nan=0.0, posinf=0.0), 0.0)


def _switch(K, y, signs, alpha, beta, active, sliding, tag, r):
    """The pattern after an event on ``tag = (kind, k, i)``: the first candidate continuation whose own
    conditions hold at the event (docs/math.md §13, events and sliding), or None."""
    kind, k, i = tag
    if kind == "beta":
        was = bool(active[k, i])
        candidates = [("off" if was else "on", not was, False), ("slide", False, True)]
    elif kind == "theta0":
        candidates = [("leave-off", False, False)]
    else:
        candidates = [("leave-on", True, False)]
    for name, act, sl in candidates:
        A, S = active.copy(), sliding.copy()
        A[k, i], S[k, i] = act, sl
        ph = linear_phase(K, y, signs, alpha, beta, A, S, r)
        a, G, Lam, sig, tags = _watched(ph, signs, A, S, y)
        bad, _ = _zero_start(a, G, Lam, sig)
        if not any(bad[j] and t[1:] == (k, i) for j, t in enumerate(tags)):
            return A, S, f"{name} {k} {i}", (ph, (a, G, Lam, sig, tags))
    return None


def flow(
    X=None,
    y=None,
    *,
    gram=None,
    t_max: float = np.inf,
    times=None,
    max_events: int = DEFAULT_MAX_EVENTS,
    options: Optional[TrainOptions] = None,
    **kwargs,
) -> FlowResult:
    """Exact gradient flow ``dW/dt = -grad R(W)`` of ``h(x) = sum_k s_k relu(w_k^T x)`` on the square loss.

    Follows the flow from event to event in closed form (docs/math.md §13): no step size,
    no discretisation error; entries pushed onto zero from both sides slide (Filippov).

    Parameters
    ----------
    X, y, gram
        As for :func:`relucore.train` (one problem).
    t_max : float, default inf
        Follow the flow up to this time; ``inf``: to the limit, with its certificate.
    times : array_like, optional
        Times at which to return the state (``alpha_t``, ``beta_t``).
    max_events : int, default 10000
        Stop with status ``"max_events"`` after this many events.
    options, **kwargs
        The start as for :func:`relucore.train`: ``signs``, ``init``, ``eps``, ``assignment``,
        ``init_scale``, ``rng``, ``C_g``, ``C_alpha`` (``eta``, ``steps``, ``tol`` are unused).

    Returns
    -------
    FlowResult
    """
    from relucore.gd.limit import check_limit_settings

    o = TrainOptions.collect("flow", options, kwargs)
    check_limit_settings(o.loss, o.activation)
    t_max = float(t_max)
    if not t_max >= 0:
        raise ValueError(f"t_max must be >= 0, got {t_max}")
    p = prepare(X, y, gram=gram, options=o)
    if p.batched:
        raise ValueError("flow follows one problem: X of shape (n, d) (or gram (n, n)) and y of shape (n,)")
    times = np.sort(np.atleast_1d(np.asarray([] if times is None else times, dtype=float)))
    if times.size and not (np.isfinite(times).all() and times[0] >= 0):
        raise ValueError("times must be finite and >= 0")
    run = _follow(p.K[0], p.y[0], p.signs, p.alpha0[0].copy(), p.beta0[0].copy(), t_max, times, max_events)
    X0 = None if p.X is None else p.X[0]
    W0 = None if p.W0 is None else p.W0[0]
    W = None if X0 is None else W0 + (run["alpha"] - p.alpha0[0]) @ X0
    r = p.signs @ np.maximum(run["beta"], 0.0) - p.y[0]
    return FlowResult(
        W=W, loss=0.5 * float(r @ r), alpha0=p.alpha0[0], beta0=p.beta0[0], W0=W0, signs=p.signs.copy(), **run
    )


def _follow(K, y, signs, alpha, beta, t_max, times, max_events) -> dict:
    m, n = beta.shape
    active, sliding = beta > 0, np.zeros((m, n), dtype=bool)
    t, ti = 0.0, 0
    ev_t, ev_p, ev_s, ev_k = [], [], [], []
    alpha_t, beta_t = np.empty((times.size, m, n)), np.empty((times.size, m, n))
    cert, r, ready = None, None, None
    while True:
        ph, (a, G, Lam, sig, tags) = ready or (lambda q: (q, _watched(q, signs, active, sliding, y)))(
            linear_phase(K, y, signs, alpha, beta, active, sliding, r)
        )
        s_ev, j = _first_event(a, G, Lam, sig, t_max - t)
        while ti < times.size and times[ti] <= min(t + s_ev, t_max):
            alpha_t[ti], beta_t[ti] = _state_at(ph, alpha, beta, sliding, times[ti] - t)
            ti += 1
        if j < 0 or len(ev_t) >= max_events:
            if j < 0 and t_max == np.inf:
                status, t_end = "limit", np.inf
                alpha, beta = ph["alpha_inf"], ph["beta_inf"].copy()
                beta[sliding] = 0.0
                rows = [q for q, tg in enumerate(tags) if tg[0] == "beta"]
                margin = float(np.min(sig[rows] * a[rows])) if rows else np.inf
                lam = ph["lam"]
                rate = float(np.exp(-lam[0])) if lam.size else 0.0
                cert = Certificate(True, ev_t[-1] if ev_t else 0.0, margin, rate, _TINY, "", active.copy())
                message = f"followed to the limit t = inf after {len(ev_t)} events"
            else:
                status = "t_max" if j < 0 else "max_events"
                t_end = t_max if j < 0 else t + s_ev
                alpha, beta = _state_at(ph, alpha, beta, sliding, t_end - t)
                message = f"stopped at t = {t_end:.6g} after {len(ev_t)} events" + (
                    "" if j < 0 else f" (max_events = {max_events} reached)"
                )
            break
        alpha, beta = _state_at(ph, alpha, beta, sliding, s_ev)
        r = _residual_at(ph, s_ev)
        t += s_ev
        if tags[j][0] == "beta":
            beta[tags[j][1], tags[j][2]] = 0.0
        new = _switch(K, y, signs, alpha, beta, active, sliding, tags[j], r)
        if new is None:
            status, t_end = "stuck", t
            message = f"stuck at t = {t:.6g}: no continuation of the event on {tags[j]} is consistent"
            break
        active, sliding, kind, ready = new
        ev_t.append(t)
        ev_p.append(active.copy())
        ev_s.append(sliding.copy())
        ev_k.append(kind)
    return dict(
        status=status,
        message=message,
        certificate=cert,
        t_final=float(t_end),
        event_times=np.array(ev_t),
        event_patterns=np.array(ev_p, dtype=bool).reshape(-1, m, n),
        event_sliding=np.array(ev_s, dtype=bool).reshape(-1, m, n),
        event_kinds=ev_k,
        times=times,
        alpha_t=alpha_t[:ti],
        beta_t=beta_t[:ti],
        alpha=alpha,
        beta=beta,
        pattern=active,
        sliding=sliding,
    )
