"""Validation of ``train``'s inputs and the starting point: :func:`prepare` and :class:`Prepared`.

``prepare`` runs once per call of :func:`relucore.train`, :class:`relucore.Trainer` and the
sweeps' general path: it checks the options and the types and shapes of the data (X or a
Gram matrix), labels and outer signs, builds the init's definition, then hands the batch to
the one C++ prepare step (``prepare_step.prepare_start``, relucore/gd/prepare.hpp), which
runs every numerical check (the labels' scale, K and its spectrum, a finite start and
starting loss, the step) and writes the default step and tolerance. The ``init="positive"``
case from X is its all-positive mode. Every error it raises is listed in docs/errors.md.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Optional

import numpy as np

from relucore import _core
from relucore._output_scale import output_scale_value
from relucore._scaling import ALPHA, ETA, GRAD, Scaling, Y, plan_scaling
from relucore._scaling import K as K_UNIT
from relucore._scaling import W as W_UNIT
from relucore._scaling import X as X_UNIT
from relucore._validation import (
    as_float_array,
    check_choice,
    check_consistent_length,
    check_gram_finite,
    check_n_threads,
    check_nonnegative,
    check_positive,
    check_positive_per_problem,
    check_rng,
)
from relucore.gd.defaults import (
    ACTIVATIONS,
    ENGINES,
    INITS,
    LOSSES,
    check_labels_for_loss,
    default_eta,
    resolve_engine,
)
from relucore.gd.inits import _broadcast_eps, disjoint_assignment, gaussian_init
from relucore.gd.loss_options import prepare_loss_options, uses_loss_options, zero_outer_start
from relucore.gd.options import TrainOptions
from relucore.gd.prepare_step import prepare_start
from relucore.gd.rescale import not_scale_free, refuse_out_of_range

__all__ = ["prepare", "Prepared"]


@dataclasses.dataclass
class Prepared:
    """A validated problem batch ready for an engine (shared by train and Trainer)."""

    X: Optional[np.ndarray]  # (B, n, d) or None in Gram-only mode
    # (B, n, n), or None until read where the prepare step did not need it (the property K forms it).
    gram: Optional[np.ndarray]
    y: np.ndarray  # (B, n)
    signs: np.ndarray  # (m,)
    beta0: np.ndarray  # (B, m, n)
    alpha0: np.ndarray  # (B, m, n)
    W0: Optional[np.ndarray]  # (B, m, d)
    eta: np.ndarray  # (B,)
    tol: np.ndarray  # (B,)
    mu1: np.ndarray  # (B,) largest eigenvalue of K, NaN where no rule needed it (see largest_eigenvalue)
    batched: bool
    init: str
    loss: str
    activation: str
    leaky_slope: float
    engine: str = "dual"  # the engine that runs it ("auto" resolved: relucore.gd.defaults.resolve_engine)
    # The two-layer options: with output_scale c, signs holds c * (the signs given), which are
    # kept in outer0; with bias, X (or K) carries the extra input coordinate 1 (K + 1 1^T) and
    # the last column of W0 is the starting bias.
    train_outer: bool = False
    output_scale: float = 1.0
    bias: bool = False
    outer0: Optional[np.ndarray] = None
    # The loss options (relucore.gd.loss_options): the output biases (B,) and loss weights (B, n).
    output_bias: Optional[np.ndarray] = None
    loss_weights: Optional[np.ndarray] = None
    reduction: str = "half_sum"
    # Where the data were far from unit scale: the exact power-of-two rescaling they run under
    # (relucore._scaling); every array and number above is in the rescaled units until the run's
    # results are scaled back (Prepared.scale_back).
    scaling: Optional[Scaling] = None
    # Where rescaled: the caller's X, gram (None where formed here) and y, which scale_back restores.
    caller: Optional[tuple] = None

    n_threads: int = 0  # threads for K formed on demand
    # (B, m, d): where run_prepared writes the final W, the second half of one allocation with W0
    # (prepare_step.prepare_start(W_room=True)); taken (set to None) by the run that fills it.
    # Two fresh arrays of a few MB each cost a page fault per 4 kB page on every call when glibc
    # hands them back to the system between calls.
    W_room: Optional[np.ndarray] = None

    @property
    def K(self) -> np.ndarray:
        """K = X X^T per problem (B, n, n); formed on first read where the prepare step did not need it
        (an array init with n > d rows: the weight-space engine never reads it)."""
        if self.gram is None:
            self.gram = np.empty((self.X.shape[0], self.X.shape[1], self.X.shape[1]))
            _core.gram_batch(self.X, self.gram, self.n_threads)
        return self.gram

    def largest_eigenvalue(self) -> np.ndarray:
        """mu_1(K) per problem, computed now where the prepare step did not need it."""
        for b in np.flatnonzero(~np.isfinite(self.mu1)):
            self.mu1[b] = np.linalg.eigvalsh(self.K[b])[-1]
        return self.mu1

    def settings(self, steps: int, record_every: int) -> "_core.GDSettings":
        """Engine settings shared by the batch (eta and tol are passed per problem)."""
        s = _core.GDSettings()
        s.eta = self.eta.item(0)
        s.max_steps = steps
        s.tol = self.tol.item(0)
        # Fields are set only where they differ from the C++ defaults (_DEFAULT_NUMBERS, _DEFAULT_MODEL): each
        # attribute set (a native enum's especially) is on train's fixed cost.
        if record_every != _DEFAULT_NUMBERS[0]:
            s.record_every = record_every
        if self.loss != _DEFAULT_MODEL[0]:
            s.loss = _LOSS_ENUM[self.loss]
        if self.activation != _DEFAULT_MODEL[1]:
            s.activation = _ACTIVATION_ENUM[self.activation]
        if self.leaky_slope != _DEFAULT_NUMBERS[1]:
            s.leaky_slope = self.leaky_slope
        if self.train_outer:
            s.train_outer = True
        if self.output_scale != _DEFAULT_NUMBERS[2]:
            s.output_scale = self.output_scale
        return s

    def scale_back(self) -> Optional[Scaling]:
        """Returns the data, the start, eta and tol to the caller's units (exact powers of two) and
        hands over the ``relucore._scaling.Scaling`` for the run's results; None when unscaled."""
        sc, self.scaling = self.scaling, None
        if sc is not None:
            X, gram, y = self.caller
            self.X, self.y, self.caller = X, y, None
            formed = self.gram if gram is None else None  # K formed here from the rescaled X
            pairs = ((formed, K_UNIT), (self.beta0, Y), (self.alpha0, ALPHA), (self.W0, W_UNIT), (self.eta, ETA))
            sc.up_all(pairs + ((self.tol, GRAD), (self.mu1, K_UNIT)))
            self.gram = formed if gram is None else gram
        return sc

    def take_W_room(self) -> np.ndarray:
        """The array the final W goes to: ``W_room``, taken (a second run gets a new array), else new."""
        W, self.W_room = self.W_room, None
        return np.empty_like(self.W0) if W is None else W

    @property
    def given_signs(self) -> np.ndarray:
        """The outer weights as given (``signs`` before the output scale was folded in)."""
        return self.signs if self.outer0 is None else self.outer0


#: The engine settings' C++ defaults, and the names of their loss and activation (read once: a
#: getter of a native enum is slow on train's fixed cost).
_DEFAULT_SETTINGS = _core.GDSettings()
_DEFAULT_MODEL = (_DEFAULT_SETTINGS.loss.name, _DEFAULT_SETTINGS.activation.name)
_DEFAULT_NUMBERS = (_DEFAULT_SETTINGS.record_every, _DEFAULT_SETTINGS.leaky_slope, _DEFAULT_SETTINGS.output_scale)
_LOSS_ENUM = {name: getattr(_core.Loss, name) for name in LOSSES}
_ACTIVATION_ENUM = {name: getattr(_core.Activation, name) for name in ACTIVATIONS}


def _as_batch(arr: np.ndarray, ndim_single: int) -> np.ndarray:
    return arr[None] if arr.ndim == ndim_single else arr


def prepare(X=None, y=None, *, gram=None, options: Optional[TrainOptions] = None, **kwargs: Any) -> Prepared:
    """Validates train's inputs and builds the starting point (see :func:`relucore.train`).

    Takes the options of :class:`~relucore.gd.options.TrainOptions` that shape the problem
    (all but ``steps``, ``record`` and ``on_divergence``, which it ignores) as keywords or as
    ``options``; an internal step of the public calls, which declare the options themselves.
    """
    o = TrainOptions.collect("prepare", options, kwargs)
    if uses_loss_options(o):
        return prepare_loss_options(X, y, gram, o, prepare)
    signs, init, eps, eta, tol, rng, n_threads = o.signs, o.init, o.eps, o.eta, o.tol, o.rng, o.n_threads
    engine, assignment, C_g, C_alpha = o.engine, o.assignment, o.C_g, o.C_alpha
    loss, activation, leaky_slope = o.loss, o.activation, o.leaky_slope
    if rng is not None and not (isinstance(init, str) and init == "gaussian"):
        what = f"init={init!r}" if isinstance(init, str) else "an array init"
        warnings.warn(
            f"rng only affects init='gaussian'; with {what} the start is deterministic and rng={rng!r} is ignored",
            UserWarning,
            stacklevel=3,
        )
    leaky_slope, n_threads, C_g, C_alpha = _check_options(
        engine, loss, activation, leaky_slope, n_threads, C_g, C_alpha
    )
    # Types and shapes first (errors name signs); converted once, the array is what the checks below read.
    signs = as_float_array(signs, "signs", ndim=(1, 2), finite=False)
    train_outer, output_scale, bias = check_two_layer_options(o.train_outer, o.output_scale, o.bias, signs.shape[-1])
    if train_outer or output_scale != 1.0 or bias:
        p = _prepare_two_layer(X, y, gram, o, train_outer, output_scale, bias)
        return dataclasses.replace(p, train_outer=train_outer, output_scale=output_scale, bias=bias)
    engine = _engine_for(engine, X, signs)
    positive = (
        isinstance(init, str)
        and init == "positive"
        and X is not None
        and gram is None
        and engine == "dual"
        and assignment is None
        and loss == "square"
        and signs.ndim == 1
    )
    # The all-positive start from X is the C++ step's all-positive mode, which checks the values
    # too (finite X, y and signs, non-zero signs, in the order and words of the checks below).
    X, Kin, y, batched = _resolve_data(X, y, gram, engine, loss, finite=not positive)
    signs_arr = _check_signs(signs, y.shape[0], batched, values=not positive)
    checked = dict(n_threads=n_threads, C_g=C_g, C_alpha=C_alpha, leaky_slope=leaky_slope)
    # The C++ step decides the scale (gd/prepare.hpp, PrepareRequest::rescale): a problem its O(n) test flags
    # gets its exact exponents and, out of the safe range, is prepared once, on its exactly rescaled copy, or
    # refused where the model is not homogeneous (reason).
    reason = not_scale_free(loss, init)
    try:
        p = _prepare_checked(X, Kin, y, batched, signs_arr, init, positive, o, eps, eta, tol, checked, reason)
    except ValueError:
        if reason:  # data out of range of such a model are refused first, whatever else this call would refuse
            plan_scaling(X, Kin, y, reason)
        raise
    p.engine = engine
    return p


def _prepare_checked(X, Kin, y, batched, signs_arr, init, positive, o, eps, eta, tol, checked, not_scale_free=""):
    """The start of a batch checked in types and shapes: the all-positive mode or the general one.
    ``checked``: the options checked by ``_check_options`` (n_threads, C_g, C_alpha, leaky_slope);
    ``not_scale_free``: what makes the model not homogeneous ("" when nothing does: data far from unit
    scale are then prepared exactly rescaled, else refused)."""
    n_threads, C_alpha, leaky_slope, activation = (
        checked["n_threads"],
        checked["C_alpha"],
        checked["leaky_slope"],
        o.activation,
    )
    if positive:
        return _positive_start(
            X,
            y,
            batched,
            signs_arr,
            eps=eps,
            eta=eta,
            tol=tol,
            C_alpha=C_alpha,
            n_threads=n_threads,
            activation=activation,
            leaky_slope=leaky_slope,
        )
    return _prepare_general(
        X,
        Kin,
        y,
        batched,
        signs_arr,
        init,
        eps=eps,
        eta=eta,
        tol=tol,
        rng=o.rng,
        n_threads=n_threads,
        assignment=o.assignment,
        init_scale=o.init_scale,
        C_g=checked["C_g"],
        C_alpha=C_alpha,
        not_scale_free=not_scale_free,
        loss=o.loss,
        activation=activation,
        leaky_slope=leaky_slope,
    )


def check_two_layer_options(train_outer, output_scale, bias, m: int):
    """``(train_outer, output_scale, bias)`` checked: two booleans and c, a positive finite float
    (a named rule of ``output_scale`` resolved for ``m`` neurons)."""
    if train_outer is False and bias is False and type(output_scale) is float and output_scale == 1.0:
        return False, 1.0, False  # the defaults, as the checks below return them
    for name, value in (("train_outer", train_outer), ("bias", bias)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(train_outer), output_scale_value(output_scale, m), bool(bias)


def _prepare_two_layer(X, y, gram, o, train_outer, output_scale, bias) -> Prepared:
    """``prepare`` for a trained outer layer, an output scale or a bias.

    The output scale c is folded into the outer weights (the engines step ``c a_k``; with a
    fixed outer layer that is the whole model), and the bias is the extra input coordinate
    1: X becomes ``[X, 1]`` and K becomes ``K + 1 1^T``, which is exact for both engines
    (docs/math.md, trained outer layer). Then the ordinary preparation runs.
    """
    signs = as_float_array(o.signs, "signs", ndim=(1, 2))
    init = o.init
    if train_outer or bias:
        refuse_out_of_range(X, y, gram, "train_outer=True" if train_outer else "bias=True")
    if bias:
        if X is not None:
            X = as_float_array(X, "X", ndim=(2, 3))
            X = np.concatenate([X, np.ones(X.shape[:-1] + (1,))], axis=-1)
            if not isinstance(init, str):
                W0 = as_float_array(init, "init", ndim=(2, 3))
                if W0.shape[-1] == X.shape[-1] - 1:  # no starting bias given: it starts at 0
                    init = np.concatenate([W0, np.zeros(W0.shape[:-1] + (1,))], axis=-1)
        if gram is not None:
            gram = as_float_array(gram, "gram", ndim=(2, 3)) + 1.0
    # A trained outer layer may start at 0 (zero_outer_start): prepared with 1 in place of each 0.
    start_signs = zero_outer_start(signs, o.eta) if train_outer else signs
    scaled = start_signs * output_scale if output_scale != 1.0 else start_signs
    o2 = dataclasses.replace(o, signs=scaled, init=init, train_outer=False, output_scale=1.0, bias=False)
    p = prepare(X, y, gram=gram, options=o2)
    if start_signs is not signs:
        p.signs = signs * output_scale if output_scale != 1.0 else signs
        if o.eta is None:  # the default step of the real outer layer
            eta = default_eta(p.largest_eigenvalue(), p.signs, p.loss, p.y.shape[1])
            p.eta = np.array(np.broadcast_to(np.asarray(eta, dtype=float), p.eta.shape))
    p.outer0 = None if output_scale == 1.0 else signs
    return p


def _prepare_general(
    X,
    Kin,
    y,
    batched,
    signs_arr,
    init,
    *,
    eps,
    eta,
    tol,
    rng,
    n_threads,
    assignment,
    init_scale,
    C_g,
    C_alpha,
    loss,
    activation,
    leaky_slope,
    not_scale_free="",
) -> Prepared:
    """Any init and Gram-only mode: the init's definition here, then the one C++ prepare step
    (``_core.prepare_batch``: K, mu_1 only when needed, alpha0 by Cholesky, W0, every numerical
    check, the step and the tolerance)."""
    if Kin is not None and X is not None:
        check_gram_finite(Kin)  # before the probe of gram against X (without X: the C++ step's check)
        _check_gram_matches(X, Kin)
    init_name, beta0, W0, beta_mode, solve = _init_definition(
        init,
        X,
        y,
        signs_arr,
        batched,
        eps=eps,
        C_alpha=C_alpha,
        assignment=assignment,
        C_g=C_g,
        init_scale=init_scale,
        rng=rng,
    )
    offsets = beta0 if isinstance(beta0, tuple) else None
    beta0 = None if offsets is not None else beta0
    start = dict(beta0=beta0, W0=W0, beta_mode=beta_mode, solve=solve, init_name=init_name, loss=loss)
    numbers = dict(eps=eps, eta=eta, tol=tol, C_alpha=C_alpha, not_scale_free=not_scale_free, offsets=offsets)
    return _prepared(X, Kin, y, batched, signs_arr, start, numbers, activation, leaky_slope, n_threads)


def _prepared(X, Kin, y, batched, signs_arr, start, numbers, activation, leaky_slope, n_threads) -> Prepared:
    """The one C++ prepare step (``prepare_step.prepare_start``) on a batch checked in types and
    shapes, as a :class:`Prepared`. ``start``: beta0, W0, beta_mode, solve, init_name, loss;
    ``numbers``: the options eps (None: the default offsets), eta, tol (None: the defaults), C_alpha."""
    B = y.shape[0]
    eps, eta, tol = numbers["eps"], numbers["eta"], numbers["tol"]
    positive = start["beta_mode"] == _core.StartBeta.positive
    K, mu1, alpha0, beta0, W0, eta_arr, tol_arr, exponents = prepare_start(
        X,
        Kin,
        y,
        signs_arr,
        **start,
        eta=None if eta is None else check_positive_per_problem(eta, "eta", B, batched),
        tol=None if tol is None else check_nonnegative(tol, "tol"),
        eps_default=eps is None,
        C_alpha=numbers["C_alpha"] if positive or numbers.get("offsets") is not None else None,
        activation=activation,
        leaky_slope=leaky_slope,
        n_threads=n_threads,
        W_room=True,
        rescale=True,
        not_scale_free=numbers.get("not_scale_free", ""),
        offsets=numbers.get("offsets"),
    )
    W0, room = (None, None) if W0 is None else (W0[0], W0[1])
    caller = (X, Kin, y)
    sc = None
    if exponents is not None:  # the start, K, eta and tol are the rescaled copy's; so are X and y from here
        sc = Scaling(ex=exponents[0], ey=exponents[1], data="X" if X is not None else "gram")
        X, y = sc.down(X, X_UNIT), sc.down(y, Y)
    fields = (X, K, y, signs_arr, beta0, alpha0, W0, eta_arr, tol_arr, mu1, batched, start["init_name"], start["loss"])
    p = Prepared(*fields, activation=activation, leaky_slope=leaky_slope, n_threads=n_threads, W_room=room)
    if sc is not None:
        p.scaling, p.caller = sc, caller
    return p


def _init_definition(init, X, y, signs_arr, batched, *, eps, C_alpha, assignment, C_g, init_scale, rng):
    """``(init name, beta0, W0, StartBeta, StartSolve)``: what defines the start, before any solve, in the
    caller's units; for the positive and disjoint inits ``beta0`` is ``(offsets or None, assignment or None,
    C_g)``, from which the C++ step computes it. The C++ step maps it exactly into the units of a problem it rescales (gd/prepare.hpp):
    the gaussian draw too, whose ``init_scale`` is in the caller's units, so that a problem is drawn once
    whatever its scale."""
    B, n = y.shape
    m = signs_arr.shape[-1]
    if not isinstance(init, str):
        if X is None:
            raise ValueError("an array init needs X (starting weights live in R^d)")
        W0 = as_float_array(init, "init", ndim=(2, 3))
        W0 = _as_batch(W0, 2) if not batched else W0
        if W0.shape != (B, m, X.shape[2]):
            want = (m, X.shape[2]) if not batched else (B, m, X.shape[2])
            raise ValueError(f"init array must have shape {want} (m neurons x d), got {W0.shape}")
        return "array", None, W0, _core.StartBeta.from_weights, _core.StartSolve.least_squares
    check_choice(init, "init", INITS)
    if init == "gaussian":
        scale = check_positive(init_scale, "init_scale")
        with np.errstate(over="ignore", invalid="ignore"):
            draw = gaussian_init(X, B, n, m, scale, check_rng(rng))
        if X is not None:
            return init, None, draw, _core.StartBeta.from_weights, _core.StartSolve.least_squares
        return init, draw, None, _core.StartBeta.gaussian_gram, _core.StartSolve.inverse
    # The positive and disjoint starts are defined by their offsets (the default ones: None), which the C++
    # step turns into beta0 in the units each problem is prepared in (StartOffsets of gd/prepare.hpp).
    offsets = None if eps is None else _broadcast_eps(eps, B, m, n)
    if init == "positive":
        return init, (offsets, None, C_g), None, _core.StartBeta.given, _core.StartSolve.inverse
    if signs_arr.ndim == 2:
        raise ValueError("init='disjoint' needs signs of shape (m,) shared by the problems, got (B, m)")
    a = disjoint_assignment(y, signs_arr, assignment)
    return init, (offsets, a, C_g), None, _core.StartBeta.given, _core.StartSolve.inverse


def _engine_for(engine, X, signs) -> str:
    """``engine``, with ``"auto"`` resolved from the shapes of X and signs (Gram-only mode: dual).
    Shapes that do not fit resolve to ``"dual"`` and are refused by the checks that follow."""
    if engine != "auto":
        return engine
    try:
        shape, m = np.shape(X), np.size(signs)
    except (TypeError, ValueError):  # ragged input: refused by the checks that follow
        return "dual"
    if X is None or len(shape) < 2:
        return "dual"
    return resolve_engine(engine, shape[-2], shape[-1], max(m, 1))


def _check_options(engine, loss, activation, leaky_slope, n_threads, C_g, C_alpha):
    check_choice(engine, "engine", ENGINES)
    check_choice(loss, "loss", LOSSES)
    check_choice(activation, "activation", ACTIVATIONS)
    leaky_slope = check_positive(leaky_slope, "leaky_slope")
    if activation == "leaky_relu" and not leaky_slope < 1:
        raise ValueError(f"leaky_slope must lie in (0, 1), got {leaky_slope}")
    n_threads = check_n_threads(n_threads)
    C_g = check_positive(C_g, "C_g")
    C_alpha = check_positive(C_alpha, "C_alpha")
    return leaky_slope, n_threads, C_g, C_alpha


def _resolve_data(X, y, gram, engine, loss, finite=True):
    """X and/or gram and y as batches: returns ``(X or None, gram or None, y, batched)``.
    ``finite=False`` leaves the finiteness of X and y to the C++ all-positive mode."""
    if y is None:
        raise TypeError("y is required")
    y = as_float_array(y, "y", ndim=(1, 2), finite=finite)
    batched = y.ndim == 2
    if X is None and gram is None:
        raise TypeError("X is required (or pass gram= for Gram-only mode)")
    if X is not None:
        X = as_float_array(X, "X", ndim=(2, 3), finite=finite)
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
    check_labels_for_loss(y, loss)  # the labels' scale: the C++ prepare step
    return X, Kin, y, batched


def _check_signs(signs, B: int = 1, batched: bool = False, values: bool = True) -> np.ndarray:
    """The outer weights: (m,) shared by the problems, or (B, m) per problem of a batch.
    ``values=False`` leaves finite and non-zero to the C++ all-positive mode."""
    signs_arr = as_float_array(signs, "signs", ndim=(1, 2) if batched else 1, finite=values)
    if signs_arr.ndim == 2 and signs_arr.shape[0] != B:
        raise ValueError(f"signs of shape (B, m) must have one row per problem: got {signs_arr.shape} for B = {B}")
    if values and np.any(signs_arr == 0):
        raise ValueError("signs (outer-layer weights) must be non-zero")
    return signs_arr


def _positive_start(
    X, y, batched, signs_arr, *, eps, eta, tol, C_alpha, n_threads, activation, leaky_slope
) -> Prepared:
    """The all-positive start from X in one C++ pass (``StartBeta.positive``): K, its eigenvalues,
    alpha0 = K^{-1} eps (Cholesky), W0, the default eta and tol, and every numerical check of the
    inputs (relucore/gd/positive_start.hpp); a refused problem raises the message of docs/errors.md."""
    B, n, _ = X.shape
    numbers = dict(eps=eps, eta=eta, tol=tol, C_alpha=C_alpha)
    start = dict(
        beta0=None if eps is None else _broadcast_eps(eps, B, signs_arr.size, n),
        W0=None,
        beta_mode=_core.StartBeta.positive,
        solve=_core.StartSolve.inverse,
        init_name="positive",
        loss="square",
    )
    return _prepared(X, None, y, batched, signs_arr, start, numbers, activation, leaky_slope, n_threads)


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
