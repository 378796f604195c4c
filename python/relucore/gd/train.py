"""``relucore.train``: gradient descent on h(x) = sum_k s_k phi(w_k^T x)."""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Union

import numpy as np

from relucore import _core
from relucore.gd.inits import _broadcast_eps, array_init, default_eps, disjoint_init, gaussian_init, positive_init
from relucore.gd.results import STATUS_MESSAGES, History, TrainResult
from relucore._validation import (
    as_float_array,
    check_choice,
    check_consistent_length,
    check_gram_finite,
    check_int,
    check_history_memory,
    check_n_threads,
    check_nonnegative,
    check_positive,
    check_positive_per_problem,
    check_rng,
)

__all__ = ["train", "DivergenceError", "default_eta", "prepare", "Prepared"]

INITS = ("positive", "disjoint", "gaussian")
ENGINES = ("dual", "weights")
LOSSES = ("square", "logistic")
ACTIVATIONS = ("relu", "leaky_relu")
#: Condition number of K above which an init that needs K^{-1} is refused.
MAX_CONDITION = 1e12
#: Largest step budget (the engines count steps in int64).
MAX_STEPS = 2**62
#: Default relative gradient tolerance: tol = TOL_FACTOR * sqrt(mu_1(K)) * ||y||.
TOL_FACTOR = 1e-12
#: Standard deviation of the default "gaussian" init (Fig. 3 of Lai et al.: variance 2e-6).
DEFAULT_INIT_SCALE = float(np.sqrt(2e-6))


class DivergenceError(FloatingPointError):
    """Raised by ``train(..., on_divergence="raise")`` when the loss blows up."""


def default_eta(mu1, signs, loss: str = "square", n: Optional[int] = None):
    """The default step size ``1 / (L ||s||^2 mu_1(K))``.

    On any fixed activation pattern the loss is a quadratic (square loss) whose
    Hessian in W is ``J^T J`` with ``||J||^2 <= ||s||^2 mu_1(K)``, so this is the
    largest step that decreases the loss monotonically on every such piece
    (Lemma 2 of Lai et al. for m = 1: ``eta <= 1/mu_1(K)``). For the logistic
    loss (a mean over n examples) the curvature of the loss is at most 1/(4n),
    so ``L = 1/(4n)``; for the square loss ``L = 1``.
    """
    s2 = float(np.sum(np.square(signs)))
    curvature = 1.0 if loss == "square" else 1.0 / (4.0 * n)
    return 1.0 / (curvature * s2 * np.asarray(mu1, dtype=float))


@dataclasses.dataclass
class Prepared:
    """A validated problem batch ready for an engine (shared by train and Trainer)."""

    X: Optional[np.ndarray]  # (B, n, d) or None in Gram-only mode
    K: np.ndarray  # (B, n, n)
    y: np.ndarray  # (B, n)
    signs: np.ndarray  # (m,)
    beta0: np.ndarray  # (B, m, n)
    alpha0: np.ndarray  # (B, m, n)
    W0: Optional[np.ndarray]  # (B, m, d)
    eta: np.ndarray  # (B,)
    tol: np.ndarray  # (B,)
    mu: np.ndarray  # (B, n) eigenvalues of K, ascending
    batched: bool
    init: str
    loss: str
    activation: str
    leaky_slope: float

    def settings(self, steps: int, record_every: int) -> "_core.GDSettings":
        """Engine settings shared by the batch (eta and tol are passed per problem)."""
        s = _core.GDSettings()
        s.eta = float(self.eta[0])
        s.max_steps = steps
        s.tol = float(self.tol[0])
        s.record_every = record_every
        s.loss = getattr(_core.Loss, self.loss)
        s.activation = getattr(_core.Activation, self.activation)
        s.leaky_slope = self.leaky_slope
        return s


def _as_batch(arr: np.ndarray, ndim_single: int) -> np.ndarray:
    return arr[None] if arr.ndim == ndim_single else arr


def prepare(
    X=None,
    y=None,
    *,
    signs=(1,),
    init="positive",
    eps=None,
    eta=None,
    tol=None,
    rng=None,
    n_threads=None,
    gram=None,
    engine="dual",
    assignment=None,
    init_scale=DEFAULT_INIT_SCALE,
    C_g=2.0,
    C_alpha=10.0,
    loss="square",
    activation="relu",
    leaky_slope=0.01,
) -> Prepared:
    """Validates train's inputs and builds the starting point (see :func:`train`)."""
    fast = _prepare_positive_fast(X, y, signs, init, eps, eta, tol, n_threads, gram, engine, assignment, C_g,
                                  C_alpha, loss, activation, leaky_slope)
    if fast is not None:
        return fast
    check_choice(engine, "engine", ENGINES)
    check_choice(loss, "loss", LOSSES)
    check_choice(activation, "activation", ACTIVATIONS)
    leaky_slope = check_positive(leaky_slope, "leaky_slope")
    if activation == "leaky_relu" and not leaky_slope < 1:
        raise ValueError(f"leaky_slope must lie in (0, 1), got {leaky_slope}")
    n_threads = check_n_threads(n_threads)
    C_g = check_positive(C_g, "C_g")
    C_alpha = check_positive(C_alpha, "C_alpha")

    if y is None:
        raise TypeError("y is required")
    y = as_float_array(y, "y", ndim=(1, 2))
    batched = y.ndim == 2
    if X is None and gram is None:
        raise TypeError("X is required (or pass gram= for Gram-only mode)")
    if X is not None:
        X = as_float_array(X, "X", ndim=(2, 3))
        if (X.ndim == 3) != batched:
            raise ValueError(
                f"X and y disagree on batching: X has shape {X.shape}, y has shape {y.shape} "
                "(use X (n, d) with y (n,), or X (B, n, d) with y (B, n))"
            )
    Kin = None
    if gram is not None:
        Kin = as_float_array(gram, "gram", ndim=(2, 3))
        if (Kin.ndim == 3) != batched or Kin.shape[-1] != Kin.shape[-2]:
            raise ValueError(f"gram must have shape (n, n) or (B, n, n) matching y; got {Kin.shape} with y {y.shape}")
        if not np.allclose(Kin, np.swapaxes(Kin, -1, -2), rtol=1e-10, atol=0):
            raise ValueError("gram must be symmetric")
    y = _as_batch(y, 1)
    B, n = y.shape
    if X is not None:
        X = _as_batch(X, 2)
        check_consistent_length(["X", "y"], [X.shape[1], n])
        if X.shape[0] != B:
            raise ValueError(f"X and y hold different numbers of problems: {X.shape[0]} and {B}")
    if Kin is not None:
        Kin = _as_batch(Kin, 2)
        check_consistent_length(["gram", "y"], [Kin.shape[1], n])
        if Kin.shape[0] != B:
            raise ValueError(f"gram and y hold different numbers of problems: {Kin.shape[0]} and {B}")
    if engine == "weights" and X is None:
        raise ValueError("engine='weights' needs X (it cannot run from a Gram matrix alone)")
    if loss == "logistic" and not np.all(np.abs(y) == 1):
        bad = y[np.abs(y) != 1][0]
        raise ValueError(f"loss='logistic' needs labels in {{-1, +1}}: y has {bad:g}")
    y_max = float(np.max(np.abs(y)))
    if not np.isfinite(0.5 * n * y_max * y_max):
        raise ValueError(f"y is too large: the loss 1/2 ||y||^2 overflows float64 (max |y_i| = {y_max:.3g}); rescale y")
    if y_max > 0 and 0.5 * y_max * y_max < np.finfo(float).tiny:
        raise ValueError(
            f"y is too small: the loss 1/2 ||y||^2 underflows float64 (max |y_i| = {y_max:.3g}); rescale y "
            "(GD is equivariant: y -> c y with the init scaled by c gives c W)"
        )

    signs_arr = as_float_array(signs, "signs", ndim=1)
    if np.any(signs_arr == 0):
        raise ValueError("signs (outer-layer weights) must be non-zero")
    m = signs_arr.size

    if Kin is not None:
        K = Kin
        check_gram_finite(K)
        if X is not None:
            _check_gram_matches(X, K)
    else:
        K = np.empty((B, n, n))
        _core.gram_batch(X, K, n_threads)
        check_gram_finite(K, X)

    mu = np.linalg.eigvalsh(K)
    mu1 = mu[:, -1]
    mun = mu[:, 0]
    what = "gram" if Kin is not None else "X"
    if not np.all(mu1 > 0):
        raise ValueError(
            "gram is zero or negative definite; a Gram matrix X X^T is positive semidefinite and non-zero"
            if Kin is not None else "X is all zeros (K = X X^T vanishes); nothing can be trained"
        )
    if Kin is not None and np.any(mun < -1e-10 * mu1):
        b = int(np.argmin(mun / mu1))
        raise ValueError(
            f"gram is not positive semidefinite: smallest eigenvalue {mun[b]:.3g} (largest {mu1[b]:.3g}); "
            "a Gram matrix X X^T has none below 0"
        )
    if np.any(mu1 < np.finfo(float).tiny):
        raise ValueError(
            f"{what} is too small: the largest eigenvalue of K = X X^T is {np.min(mu1):.3g}, below the smallest "
            f"normal float64 ({np.finfo(float).tiny:.3g}), so K has lost its precision; rescale {what}"
        )
    cond = np.full(B, np.inf)
    with np.errstate(over="ignore"):
        np.divide(mu1, mun, out=cond, where=mun > 0)
    singular = bool(np.any(cond > MAX_CONDITION))

    if isinstance(init, str):
        check_choice(init, "init", INITS)
        needs_inverse = init in ("positive", "disjoint") or (init == "gaussian" and X is None)
        if needs_inverse and singular:
            b = int(np.argmax(cond))
            d_txt = f", d={X.shape[2]}" if X is not None else ""
            raise ValueError(
                f"X is rank-deficient or badly conditioned: cond(K) = {cond[b]:.3g} (n={n}{d_txt}); "
                f"init={init!r} needs K = X X^T invertible (n <= d and linearly independent examples)"
            )
        if init in ("positive", "disjoint"):
            eps_val = eps
            if eps is None:
                with np.errstate(over="ignore"):
                    eps_val = default_eps(y, m, C_alpha)
                if not np.all(np.isfinite(eps_val)):
                    raise ValueError(f"C_alpha = {C_alpha:.3g} is too small: the default eps = y_min / (C_alpha m) overflows")
            if init == "positive":
                beta0, alpha0, W0 = _quietly(positive_init, X, K, y, m, eps_val)
            else:
                beta0, alpha0, W0 = _quietly(disjoint_init, X, K, y, signs_arr, eps_val, assignment, C_g)
        else:
            scale = check_positive(init_scale, "init_scale")
            beta0, alpha0, W0 = _quietly(gaussian_init, X, K, m, scale, check_rng(rng), singular)
        init_name = init
    else:
        if X is None:
            raise ValueError("an array init needs X (starting weights live in R^d)")
        W0 = as_float_array(init, "init", ndim=(2, 3))
        W0 = _as_batch(W0, 2) if not batched else W0
        if W0.shape != (B, m, X.shape[2]):
            want = (m, X.shape[2]) if not batched else (B, m, X.shape[2])
            raise ValueError(f"init array must have shape {want} (m neurons x d), got {W0.shape}")
        beta0, alpha0, W0 = _quietly(array_init, X, K, W0, singular)
        init_name = "array"

    _check_starting_point(init_name, eps, init_scale, X, y, signs_arr, beta0, alpha0, W0, activation, leaky_slope)
    with np.errstate(over="ignore", divide="ignore"):
        eta_default = default_eta(mu1, signs_arr, loss, n)
    with np.errstate(over="ignore"):
        s2 = float(np.sum(np.square(signs_arr)))
    if not np.all(np.isfinite(eta_default)) or not np.all(eta_default >= np.finfo(float).tiny):
        size = "small" if not np.all(np.isfinite(eta_default)) else "large"
        raise ValueError(
            f"the default step 1/(||s||^2 mu_1(K)) {'overflows' if size == 'small' else 'underflows'} "
            f"(||s||^2 = {s2:.3g}, mu_1(K) = {np.min(mu1):.3g}): signs or {what} are too {size}; rescale them"
        )
    if eta is None:
        eta_arr = eta_default
    else:
        eta_arr = check_positive_per_problem(eta, "eta", B, batched)
        tiny_step = eta_arr < np.finfo(float).eps * eta_default
        if np.any(tiny_step):
            b = int(np.argmax(tiny_step))
            raise ValueError(
                f"eta = {eta_arr[b]:.3g} is too small: it is below machine epsilon times the default step "
                f"({eta_default[b]:.3g}), so a GD step would not change the state in float64"
            )
    if tol is None:
        if loss == "square":
            # At least the smallest normal number, so that an exactly stationary
            # point (zero gradient, e.g. with y = 0) counts as converged.
            tol_arr = np.maximum(TOL_FACTOR * np.sqrt(mu1) * np.linalg.norm(y, axis=1), np.finfo(float).tiny)
        else:
            tol_arr = np.zeros(B)
    else:
        tol_arr = np.full(B, check_nonnegative(tol, "tol"))

    return Prepared(
        X=X, K=K, y=y, signs=signs_arr, beta0=np.ascontiguousarray(beta0), alpha0=np.ascontiguousarray(alpha0),
        W0=W0, eta=np.ascontiguousarray(eta_arr, dtype=float), tol=tol_arr, mu=mu, batched=batched,
        init=init_name, loss=loss, activation=activation, leaky_slope=leaky_slope,
    )


def _prepare_positive_fast(X, y, signs, init, eps, eta, tol, n_threads, gram, engine, assignment, C_g, C_alpha,
                           loss, activation, leaky_slope) -> Optional[Prepared]:
    """prepare() for ``init="positive"`` from X in one C++ pass, or None.

    ``positive_start_batch`` (relucore/positive_start.hpp) forms K, its
    eigenvalues, alpha0 = K^{-1} eps, W0, the default eta and tol and checks
    them, which is where a small problem's train call spent most of its time
    as a chain of numpy calls. Inputs are converted as the general path
    converts them, so every accepted call of this kind gives the same numbers
    whatever its input types. Other inits, Gram-only mode, the weight engine
    and the logistic loss return None, and so does any input that fails a
    conversion or a check: the general path then validates everything again
    and raises the error that explains it (or, for a problem that only fails a
    C++ check, trains it with numpy's solvers).
    """
    if not (isinstance(init, str) and init == "positive" and gram is None and engine == "dual"
            and assignment is None and loss == "square" and activation in ACTIVATIONS):
        return None
    try:
        check_positive(C_g, "C_g")
        C_alpha = check_positive(C_alpha, "C_alpha")
        leaky_slope = check_positive(leaky_slope, "leaky_slope")
        if activation == "leaky_relu" and not leaky_slope < 1:
            return None
        n_threads = check_n_threads(n_threads)
        # Non-finite X or y show up in C++ (K or the label checks).
        X = as_float_array(X, "X", ndim=(2, 3), finite=False)
        y = as_float_array(y, "y", ndim=(1, 2), finite=False)
        if X.ndim != y.ndim + 1 or X.shape[:-1] != y.shape:
            return None
        batched = y.ndim == 2
        X3 = X if batched else X[None]
        y2 = y if batched else y[None]
        B, n, d = X3.shape
        signs_arr = as_float_array(signs, "signs", ndim=1, finite=False)
        m = signs_arr.size
        if eps is None or isinstance(eps, np.ndarray) or isinstance(eps, (list, tuple)):
            eps_val = 0.0 if eps is None else -1.0
            beta0 = np.empty((B, m, n)) if eps is None else _broadcast_eps(eps, B, m, n)
        else:
            eps_val = check_positive(eps, "eps")
            beta0 = np.empty((B, m, n))
        eta_arr = np.zeros(B) if eta is None else check_positive_per_problem(eta, "eta", B, batched).copy()
        tol_val = -1.0 if tol is None else check_nonnegative(tol, "tol")
    except (TypeError, ValueError):
        return None
    K = np.empty((B, n, n))
    mu = np.empty((B, n))
    alpha0 = np.empty((B, m, n))
    W0 = np.empty((B, m, d))
    tol_arr = np.empty(B)
    check = np.empty(B, dtype=np.int32)
    _core.positive_start_batch(
        X3, y2, signs_arr, eps_val, C_alpha, tol_val, TOL_FACTOR, MAX_CONDITION, _core.Loss.square, K, mu, beta0,
        alpha0, W0, eta_arr, tol_arr, check, n_threads,
    )
    if check.any():
        return None
    return Prepared(
        X=X3, K=K, y=y2, signs=signs_arr, beta0=beta0, alpha0=alpha0, W0=W0, eta=eta_arr, tol=tol_arr, mu=mu,
        batched=batched, init="positive", loss=loss, activation=activation, leaky_slope=leaky_slope,
    )


def _quietly(fn, *args):
    """Runs an init with floating-point warnings off: _check_starting_point
    then refuses a non-finite result with a message naming the argument."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        try:
            return fn(*args)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"the starting point cannot be computed in float64 ({exc}): check init, init_scale, eps "
                "and the scale of X"
            ) from None


def _check_gram_matches(X: np.ndarray, K: np.ndarray) -> None:
    """Checks gram against X with one probe vector (O(B n d) instead of forming X X^T)."""
    v = np.cos(np.arange(1, X.shape[1] + 1))  # deterministic, no zero entries
    Kv = np.matmul(K, v)
    XXv = np.matmul(X, np.matmul(v, X)[..., None])[..., 0]
    err = np.linalg.norm(Kv - XXv, axis=-1)
    scale = np.linalg.norm(XXv, axis=-1) + np.finfo(float).tiny
    worst = int(np.argmax(err / scale))
    if err[worst] > 1e-8 * scale[worst]:
        raise ValueError(
            f"gram does not match X: ||gram v - X X^T v|| / ||X X^T v|| = {err[worst] / scale[worst]:.3g} for a "
            "probe vector v; pass the Gram matrix of this X (or gram=None)"
        )


def _check_starting_point(init_name, eps, init_scale, X, y, signs, beta0, alpha0, W0, activation, leaky_slope) -> None:
    """The starting point must be finite with a finite loss, or no run makes sense."""
    culprit = {"positive": "eps", "disjoint": "eps, C_g", "gaussian": "init_scale", "array": "init"}[init_name]
    if init_name in ("positive", "disjoint") and eps is None:
        culprit += ", C_alpha (default eps = y_min / (C_alpha m))"
    culprit += ", signs and the scale of X"
    parts = [("beta0", beta0), ("alpha0", alpha0)] + ([("W0", W0)] if W0 is not None else [])
    with np.errstate(over="ignore", invalid="ignore"):
        for label, arr in parts:
            if not np.isfinite(arr).all():
                raise ValueError(
                    f"the starting point is too large: {label} overflows float64 (check {culprit}; "
                    f"max |beta0| = {np.max(np.abs(beta0)):.3g})"
                )
        act = np.maximum(beta0, 0.0) if activation == "relu" else np.where(beta0 > 0, beta0, leaky_slope * beta0)
        h0 = np.einsum("k,bkn->bn", signs, act)
        loss0 = 0.5 * np.sum(np.square(h0 - y), axis=-1)
    if not np.all(np.isfinite(loss0)):
        # (For the logistic loss this is a bound: its loss is finite when h0 is.)
        raise ValueError(f"the starting point is too large: its loss overflows float64 (check {culprit})")


def overflow_message(nit: int, eta: float) -> str:
    """Status-2 message for a state that overflowed where the loss did not show it."""
    return (
        f"diverged at step {nit}: the weights overflowed to non-finite values; "
        f"try a smaller eta (eta = {eta:.3g}) or rescale X"
    )


def _message(status: int, nit: int, loss: float, grad: float, tol: float, eta: float, steps: int) -> str:
    if status == 0:
        return f"converged after {nit} steps: gradient norm {grad:.3g} < tol {tol:.3g}"
    if status == 1:
        return f"step budget of {steps} used up: gradient norm {grad:.3g} > tol {tol:.3g}"
    if status == 2:
        what = f"loss {loss:.3g} is not finite or exploded" if not np.isfinite(loss) or np.isfinite(grad) else (
            f"the gradient (loss {loss:.3g}) overflowed"
        )
        return f"diverged at step {nit}: {what}; try a smaller eta (eta = {eta:.3g})"
    return f"{STATUS_MESSAGES.get(status, 'unknown status')} at step {nit}"


def train(
    X=None,
    y=None,
    *,
    signs: Sequence[float] = (1,),
    init: Union[str, np.ndarray] = "positive",
    eps=None,
    eta=None,
    steps: int = 10_000,
    tol: Optional[float] = None,
    record: int = 0,
    rng=None,
    n_threads: Optional[int] = None,
    gram=None,
    engine: str = "dual",
    assignment=None,
    init_scale: float = DEFAULT_INIT_SCALE,
    C_g: float = 2.0,
    C_alpha: float = 10.0,
    loss: str = "square",
    activation: str = "relu",
    leaky_slope: float = 0.01,
    on_divergence: str = "status",
) -> TrainResult:
    """Gradient descent on a shallow network ``h(x) = sum_k s_k phi(w_k^T x)``.

    Runs full-batch GD ``w_k <- w_k - eta s_k X^T (phi'(X w_k) * g)`` on the
    loss ``R(W) = 1/2 ||h(X) - y||^2`` (SPEC section 1; Lai et al. 2026, Sec. 3)
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
    signs : sequence of float, default (1,)
        Outer-layer weights ``s_k`` (one per neuron, non-zero): ``(1,)`` is the
        single ReLU of Theorem 1, ``(1, -1)`` the two-neuron model of Theorem 3;
        values such as ``+-1/m`` are allowed.
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
    steps : int, default 10000
        Maximum number of GD steps.
    tol : float, optional
        Stop once ``||grad_W R||_F < tol`` (0: never stop early). Default
        ``1e-12 sqrt(mu_1(K)) ||y||`` for the square loss (about 1e-12 of the
        gradient at a small init) and 0 (never stop early) for the logistic loss.
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
    engine : {"dual", "weights"}, default "dual"
        ``"weights"`` runs the O(m n d) weight-space engine (cross-check; faster for tiny d).
    assignment : array_like of int, shape (n,), optional
        For ``init="disjoint"``: the neuron ``a_i`` of each example, with
        ``s_{a_i} y_i > 0``. Default: round robin over the neurons of the right sign.
    init_scale : float, default sqrt(2e-6)
        Standard deviation of the gaussian init (Fig. 3 of Lai et al.).
    C_g, C_alpha : float, default 2 and 10
        The paper's constants used by the disjoint init (``1/C_g``) and the
        default ``eps`` (``y_min / (C_alpha m)``).
    loss : {"square", "logistic"}, default "square"
    activation : {"relu", "leaky_relu"}, default "relu"
    leaky_slope : float, default 0.01
        ``gamma`` of ``phi(u) = max(u, gamma u)``.
    on_divergence : {"status", "raise"}, default "status"
        A diverging run ends with ``status == 2``; ``"raise"`` raises
        :class:`DivergenceError` instead.

    Returns
    -------
    TrainResult
        Final W, alpha, beta, loss, status, the pattern-stabilisation step and
        the history. ``success`` is True when the gradient norm fell below ``tol``.

    Examples
    --------
    >>> import numpy as np, relucore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((10, 2000)); y = rng.uniform(0.1, 1, 10) * rng.choice([-1, 1], 10)
    >>> res = relucore.train(X, y, signs=(1, -1))
    >>> bool(res.success), res.loss < 1e-20
    (True, True)
    """
    steps = check_int(steps, "steps", minimum=0)
    if steps > MAX_STEPS:
        raise ValueError(f"steps must be <= 2**62, got {steps}")
    record = 1 if record is True else (0 if record is False else check_int(record, "record", minimum=0))
    if record > MAX_STEPS:
        raise ValueError(f"record must be <= 2**62, got {record}")
    check_choice(on_divergence, "on_divergence", ("status", "raise"))
    p = prepare(
        X, y, signs=signs, init=init, eps=eps, eta=eta, tol=tol, rng=rng, n_threads=n_threads, gram=gram,
        engine=engine, assignment=assignment, init_scale=init_scale, C_g=C_g, C_alpha=C_alpha, loss=loss,
        activation=activation, leaky_slope=leaky_slope,
    )
    return run_prepared(p, steps=steps, record=record, n_threads=check_n_threads(n_threads), engine=engine,
                        on_divergence=on_divergence)


def _history_buffers(B: int, m: int, n: int, steps: int, record: int) -> dict:
    if record <= 0:
        return {"capacity": 0}
    R = steps // record + 2
    check_history_memory(float(B) * R * (16 + 17 * m * n), "record",
                         f"keeping {R} states of {B} problem(s) (steps={steps}, record={record})")
    return {
        "capacity": R,
        "steps": np.full((B, R), -1, dtype=np.int64),
        "loss": np.full((B, R), np.nan),
        "beta": np.full((B, R, m, n), np.nan),
        "alpha": np.full((B, R, m, n), np.nan),
        "mask": np.zeros((B, R, m, n), dtype=np.uint8),
    }


def run_prepared(p: Prepared, *, steps: int, record: int, n_threads: int, engine: str, on_divergence: str) -> TrainResult:
    """Runs a prepared batch on an engine and packages the result."""
    B, m, n = p.beta0.shape
    settings = p.settings(steps, record)
    hist = _history_buffers(B, m, n, steps, record)
    alpha = p.alpha0.copy()
    beta = p.beta0.copy()
    out = _run_engine(p, engine, alpha, beta, settings, hist, n_threads)
    W = None
    if engine == "weights":
        W = out.pop("W")
    elif p.X is not None:
        W = np.empty_like(p.W0)
        _core.weights_from_dual_batch(p.X, p.W0, p.alpha0, alpha, W, n_threads)

    status = out["status"].astype(int)
    nit, loss, grad_norm = out["nit"], out["loss"], out["grad_norm"]
    messages = [
        _message(int(status[b]), int(nit[b]), float(loss[b]), float(grad_norm[b]), float(p.tol[b]), float(p.eta[b]),
                 steps)
        for b in range(B)
    ]
    # No non-finite number may leave in a result that is not marked diverged:
    # the engines watch the loss, but a state can overflow where the loss
    # does not see it (inactive units, or W rebuilt from alpha).
    finite = np.isfinite(loss) & np.isfinite(grad_norm)
    if not (np.isfinite(alpha).all() and np.isfinite(beta).all() and (W is None or np.isfinite(W).all())):
        finite &= np.isfinite(alpha).all(axis=(1, 2)) & np.isfinite(beta).all(axis=(1, 2))
        if W is not None:
            finite &= np.isfinite(W).all(axis=(1, 2))
    diverged = status == 2
    if diverged.any():
        # Name a step that is known to work: the monotone-descent step of default_eta.
        safe = np.broadcast_to(default_eta(p.mu[:, -1], p.signs, p.loss, p.y.shape[1]), (B,))
        for b in np.flatnonzero(diverged & (p.eta > safe)):
            messages[b] += f"; the default step 1/(L ||s||^2 mu_1(K)) is {float(safe[b]):.3g}"
    if not finite.all():
        for b in np.flatnonzero(~finite & ~diverged):
            status[b] = 2
            messages[b] = overflow_message(int(nit[b]), float(p.eta[b]))
        diverged = status == 2
    if on_divergence == "raise" and diverged.any():
        b = int(np.flatnonzero(diverged)[0])
        raise DivergenceError(("problem %d: " % b if p.batched else "") + messages[b])

    history = None
    if record > 0:
        history = History(
            steps=hist["steps"], loss=hist["loss"], beta=hist["beta"], alpha=hist["alpha"],
            mask=hist["mask"].astype(bool), n_records=out["n_records"].copy(),
        )
        if not p.batched:
            r = int(out["n_records"][0])
            history = History(
                steps=history.steps[0, :r], loss=history.loss[0, :r], beta=history.beta[0, :r],
                alpha=history.alpha[0, :r], mask=history.mask[0, :r], n_records=r,
            )

    def one(a):
        return a if p.batched else (None if a is None else a[0])

    def scalar(a, cast):
        return a.copy() if p.batched else cast(a[0])

    return TrainResult(
        W=one(W), alpha=one(alpha), beta=one(beta), W0=one(p.W0), alpha0=one(p.alpha0), beta0=one(p.beta0),
        signs=p.signs.copy(), eta=scalar(p.eta, float), loss=scalar(out["loss"], float),
        grad_norm=scalar(out["grad_norm"], float), nit=scalar(out["nit"], int), success=scalar(status == 0, bool),
        status=scalar(status, int), message=messages if p.batched else messages[0],
        pattern_stable_step=scalar(out["pattern_stable_step"], int), history=history, tol=scalar(p.tol, float),
        engine=engine, init=p.init, loss_name=p.loss, activation=p.activation, leaky_slope=p.leaky_slope,
    )


def _run_engine(p: Prepared, engine, alpha, beta, settings, hist, n_threads) -> dict:
    if engine == "dual":
        return dict(_core.run_dual_batch(p.K, p.y, p.signs, alpha, beta, p.eta, p.tol, settings, hist, n_threads))
    W = p.W0.copy()
    out = dict(_core.run_dense_batch(p.X, p.y, p.signs, W, alpha, beta, p.eta, p.tol, settings, hist, n_threads))
    out["W"] = W
    return out
