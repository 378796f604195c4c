"""``relucore.Trainer``: the primal-dual GD engine, one step at a time.

A simulator that embeds relucore drives the engine itself: it steps, reads the
state, changes the labels or the step size, steps again, checkpoints, and moves
the run to another process. ``Trainer`` keeps one C++ ``DualGD`` engine alive
between calls for that; its preparation (validation, initialisation, default
step size and tolerance) is exactly :func:`relucore.train`'s, so stepping a
``Trainer`` k times gives bitwise the state ``train(..., steps=k, tol=0)`` ends in.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from relucore import _core
from relucore import _scaling as scaling
from relucore._progress import progress_bar
from relucore._validation import as_float_array, check_choice, check_int, check_nonnegative, check_positive
from relucore.gd import trainer_state
from relucore.gd.defaults import check_labels_for_loss
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare
from relucore.gd.results import TrainResult, status_of
from relucore.gd.train import DivergenceError, _message, overflow_message

__all__ = ["Trainer"]

_O = TrainOptions  # the one home of every option default

#: Without a callback, ``Trainer.run(progress=True)`` updates its bar every this many steps (as ``train``'s bar).
PROGRESS_EVERY = 1024


def _with_bar(bar, trainer: "Trainer", callback):
    """The run's callback that moves ``bar`` to the trainer's step count, then calls ``callback`` (if any)."""
    bar.start_nit = trainer.nit

    def tick():
        bar.update(trainer.nit - bar.start_nit - bar.n)
        return None if callback is None else callback()

    return tick


class Trainer:
    """Gradient descent on one shallow ReLU network, driven step by step.

    Builds the same problem as :func:`relucore.train` (same arguments, same
    validation, initialisation, default ``eta`` and ``tol``) and keeps the
    primal-dual engine of docs/math.md §2 alive between calls::

        delta_alpha_k = -eta s_k phi'(beta_k) * g,  beta_k += K delta_alpha_k,
        alpha_k += delta_alpha_k

    Parameters
    ----------
    X : array_like, shape (n, d), optional
        Training inputs of one problem; may be None when ``gram`` is given.
    y : array_like, shape (n,)
        Labels of one problem.
    gram : array_like, shape (n, n), optional
        The Gram matrix ``K = X X^T``; with ``X=None`` the trainer runs in Gram-only mode.
    signs, init, eps, eta, tol, rng, n_threads, assignment
        As for :func:`relucore.train` (same meanings and defaults), for one problem.
    init_scale, C_g, C_alpha, loss, activation, leaky_slope, on_divergence
        As for :func:`relucore.train` (same meanings and defaults).
    train_outer : bool, default False
        As for :func:`relucore.train`: :attr:`signs` then moves with the run.
    output_scale : float, default 1.0
        As for :func:`relucore.train`: ``h(x) = c sum_k a_k phi(w_k^T x + b_k)``; :attr:`signs`
        reports the ``a_k`` (the engine steps ``c a_k``).
    bias : bool, default False
        As for :func:`relucore.train`: X gains the input coordinate 1 (K becomes ``K + 1 1^T``);
        :attr:`W` stays (m, d) and :attr:`bias` holds the ``b_k``.
    output_bias, reduction, sample_weight
        As for :func:`relucore.train` (an output bias, the square loss's reduction, example
        weights (n,)); :meth:`run_to_limit` refuses them.
    steps : int, default 10000
        The default step budget of :meth:`run` (``until``).
    engine : {"dual", "auto"}, default "auto"
        Only the primal-dual engine is step-wise; ``"auto"`` runs it too.
    record : 0
        Not supported: observe the run with ``run(callback=..., every=k)``.
    options : relucore.gd.options.TrainOptions, optional
        The options as one object (as for :func:`relucore.train`).

    Attributes
    ----------
    alpha, beta : ndarray, shape (m, n)
        Read-only, zero-copy views of the engine's dual and primal coordinates.
        They are live: every step updates them in place (copy to keep a snapshot).
        Data far from unit scale run on an exactly rescaled copy (docs/errors.md, "Scale of
        the data"): then every accessor returns the caller's units, these two as read-only
        copies.
    mask : ndarray of bool, shape (m, n)
        Read-only view of the activation masks ``beta > 0``.
    loss, grad_norm : float
        Loss and ``||grad_W R||_F`` of the current state.
    nit : int
        GD steps taken since the starting point.

    Notes
    -----
    :meth:`step` and :meth:`run` release the GIL; Ctrl-C stops them after the
    current GD step (the trainer then holds that state) and raises
    ``KeyboardInterrupt``. One call at a time: a second thread calling
    :meth:`step` meanwhile gets a ``RuntimeError``, and reading the views while
    another thread steps races with the engine (the callback of :meth:`run`
    is the exception: it runs between steps and may change the trainer).
    Trainers pickle (:meth:`state_dict` / :meth:`from_state`), so a
    simulation can be checkpointed and resumed bitwise elsewhere.

    Examples
    --------
    >>> import relucore
    >>> data = relucore.sample(10, 500, rng=0)
    >>> t = relucore.Trainer(data.X, data.y, signs=(1, -1))
    >>> t.step(100).nit
    100
    >>> t.beta.flags.writeable
    False
    >>> res = t.run(until=5000)
    >>> bool(res.success)
    True
    """

    def __init__(
        self,
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
        options: Optional[TrainOptions] = None,
    ) -> None:
        o = TrainOptions.from_call(options, locals())
        if o.progress is not False:  # train's bar; a Trainer's steps are in the caller's loop
            raise TypeError("Trainer() got progress=, which it cannot implement: the caller steps it (run, step)")
        engine, record, on_divergence = o.engine, o.record, o.on_divergence
        if engine not in ("dual", "auto"):  # "auto" is the primal-dual engine: the only step-wise one
            raise ValueError(f"Trainer runs the primal-dual engine only (engine='dual'), got engine={engine!r}")
        if record not in (0, False):
            raise ValueError("Trainer keeps no history: observe the run with run(callback=..., every=k)")
        steps = check_int(o.steps, "steps", minimum=0)
        check_choice(on_divergence, "on_divergence", ("status", "raise"))
        if y is not None and np.ndim(y) != 1:
            raise ValueError(
                f"Trainer trains one problem: y must be 1-dimensional, got shape {np.shape(y)} "
                "(use relucore.train for batches)"
            )
        p = prepare(X, y, gram=gram, options=o if engine == "dual" else dataclasses.replace(o, engine="dual"))
        # Data far from unit scale run on their exactly rescaled copy (relucore._scaling): the engine and the
        # arrays below stay in its units, and every accessor returns the caller's.
        self._sc = p.scaling
        settings = p.settings(steps, 0)
        settings.tol = float(p.tol[0])
        self._engine = _core.DualTrainer(
            K=p.K[0], y=p.y[0], outer=p.signs, alpha0=p.alpha0[0], beta0=p.beta0[0], settings=settings
        )
        self._set_loss_options(
            None if p.loss_weights is None else p.loss_weights[0],
            None if p.output_bias is None else float(p.output_bias[0]),
            p.reduction,
        )
        # Own copy: W must not change if the caller later edits its X in place.
        self._X = None if p.X is None else np.array(p.X[0])
        # A copy where W0 is half of a block with room for W (Prepared.W_room), which the view would keep alive.
        self._W0 = None if p.W0 is None else (p.W0[0] if p.W_room is None else p.W0[0].copy())
        self._alpha0 = p.alpha0[0]
        self._beta0 = p.beta0[0]
        self._signs0 = np.array(p.given_signs)
        self._bias = bool(p.bias)
        self._steps = steps
        self._tol = float(p.tol[0])
        self._init = p.init
        self._on_divergence = on_divergence

    def _set_loss_options(self, loss_weights, output_bias, reduction: str, output_bias0=None) -> None:
        """Gives the engine its loss weights and output bias (relucore.gd.loss_options), if any."""
        if loss_weights is not None:
            self._engine.set_loss_weights(np.ascontiguousarray(loss_weights, dtype=np.float64))
        if output_bias is not None:
            self._engine.set_output_bias(float(output_bias))
        self._loss_weights = None if loss_weights is None else np.array(loss_weights, dtype=np.float64)
        self._output_bias0 = output_bias if output_bias0 is None else float(output_bias0)
        self._reduction = reduction

    # ------------------------------------------------------------------ state
    def _up(self, a, unit):
        """``a`` (of the engine's units) in the caller's: ``a`` itself unless the data run exactly rescaled,
        else a read-only copy scaled by a power of two."""
        if self._sc is None or a is None:
            return a
        out = self._sc.up(a, unit, 0)
        if isinstance(out, np.ndarray):
            out.flags.writeable = False
        return out

    def _down(self, a, unit, what: str):
        """``a`` given in the caller's units, in the engine's; refuses a value float64 cannot hold there."""
        if self._sc is None:
            return a
        e = -int(self._sc.power(unit, 0)[0])
        out = self._sc.down(np.asarray(a, dtype=float)[None], unit)[0]
        nz = np.asarray(a) != 0
        if not (np.isfinite(out).all() and (np.abs(out[nz] if np.ndim(out) else out) >= np.finfo(float).tiny).all()):
            raise ValueError(
                f"{what} cannot be represented on the exactly rescaled copy of the data this trainer runs on "
                f"(it is multiplied by 2^{e} there: X / 2^{int(self._sc.ex[0])}, y / 2^{int(self._sc.ey[0])})"
            )
        return float(out) if np.ndim(out) == 0 else out

    @property
    def alpha(self) -> np.ndarray:
        """Dual coordinates (m, n): read-only view of the engine's memory (a read-only copy where the data
        run exactly rescaled, docs/errors.md "Scale of the data")."""
        return self._up(self._engine.alpha, scaling.ALPHA)

    @property
    def beta(self) -> np.ndarray:
        """Primal coordinates ``beta_k = X w_k`` (m, n): read-only view (a copy where rescaled, as :attr:`alpha`)."""
        return self._up(self._engine.beta, scaling.Y)

    @property
    def mask(self) -> np.ndarray:
        """Activation masks ``beta > 0`` (m, n), bool: read-only view."""
        return self._engine.mask

    @property
    def predictions(self) -> np.ndarray:
        """Network outputs ``h(x_i)`` (n,) of the current state: read-only view."""
        return self._up(self._engine.predictions, scaling.Y)

    @property
    def labels(self) -> np.ndarray:
        """Current labels (n,): read-only view (change them with :meth:`set_labels`)."""
        return self._up(self._engine.labels, scaling.Y)

    @property
    def signs(self) -> np.ndarray:
        """Outer-layer weights ``a_k`` (m,): read-only (a live view with ``train_outer`` and no output scale)."""
        c = self._engine.settings.output_scale
        if c == 1.0:
            return self._engine.outer
        a = self._engine.outer / c if self._engine.settings.train_outer else self._signs0.copy()
        a.flags.writeable = False
        return a

    @property
    def K(self) -> np.ndarray:
        """The trainer's copy of the Gram matrix (n, n): read-only view."""
        return self._up(self._engine.K, scaling.K)

    @property
    def W(self) -> Optional[np.ndarray]:
        """Weights ``W = W0 + (alpha - alpha0) X`` (m, d), rebuilt on each access.

        None in Gram-only mode (``gram=`` without ``X``). With ``bias`` the biases are in :attr:`bias`.
        """
        W = self._up(self._full_W(), scaling.W)
        return W if W is None or not self._bias else W[:, :-1]

    @property
    def bias(self) -> Optional[np.ndarray]:
        """Biases ``b_k`` (m,) with ``bias=True``, rebuilt on each access; None otherwise or without X."""
        W = self._full_W() if self._bias else None
        return None if W is None else W[:, -1].copy()

    def _full_W(self) -> Optional[np.ndarray]:
        """``W0 + (alpha - alpha0) X`` with the bias column when there is one (None without X)."""
        if self._X is None:
            return None
        W = np.empty((1,) + self._W0.shape)
        _core.weights_from_dual_batch(
            X=self._X[None],
            W0=np.ascontiguousarray(self._W0)[None],
            alpha0=np.ascontiguousarray(self._alpha0)[None],
            alpha=np.ascontiguousarray(self._engine.alpha)[None],
            W=W,
            n_threads=1,
        )
        return W[0]

    @property
    def loss(self) -> float:
        """Loss of the current state."""
        return self._up(self._engine.loss, scaling.LOSS)

    @property
    def grad_norm(self) -> float:
        """``||grad_W R||_F`` of the current state."""
        return self._up(self._engine.grad_norm, scaling.GRAD)

    @property
    def nit(self) -> int:
        """GD steps taken since the starting point."""
        return self._engine.steps_taken

    @property
    def pattern_stable_step(self) -> int:
        """Last step at which an activation mask changed."""
        return self._engine.stable_step

    @property
    def eta(self) -> float:
        """Current step size."""
        return self._up(self._engine.eta, scaling.ETA)

    @property
    def tol(self) -> float:
        """Default gradient-norm tolerance of :meth:`run`."""
        return self._up(self._tol, scaling.GRAD)

    # ------------------------------------------------------------- stepping
    def step(self, k: int = 1) -> "Trainer":
        """Takes ``k`` plain GD steps (no stopping rule) and returns the trainer.

        The GIL is released; Ctrl-C stops after the current step and raises
        ``KeyboardInterrupt`` with the trainer holding the state reached.

        Parameters
        ----------
        k : int, default 1
            The number of steps (0 or more).

        Returns
        -------
        Trainer
            This trainer, so that ``t.step(100).nit`` reads the new state.
        """
        self._engine.step(check_int(k, "k", minimum=0))
        return self

    def set_labels(self, y) -> None:
        """Replaces the labels between steps (a simulator moving its targets).

        Parameters
        ----------
        y : array_like, shape (n,)
            The new labels (``{-1, +1}`` for the logistic loss).

        Returns
        -------
        None
        """
        y = as_float_array(y, "y", ndim=1)
        n = self._engine.K.shape[0]
        if y.shape[0] != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples (y: {y.shape[0]}, K: {n})")
        check_labels_for_loss(y, self._engine.settings.loss.name)
        self._engine.set_labels(self._down(y, scaling.Y, "y"))

    def set_eta(self, eta: float) -> None:
        """Changes the step size between steps.

        Parameters
        ----------
        eta : float
            The new step size (positive).

        Returns
        -------
        None
        """
        self._engine.set_eta(self._down(check_positive(eta, "eta"), scaling.ETA, "eta"))

    def run(
        self,
        until: Optional[int] = None,
        *,
        callback: Optional[Callable[["Trainer"], Any]] = None,
        every: int = 1,
        tol: Optional[float] = None,
        progress: Optional[bool] = False,
    ) -> TrainResult:
        """Runs GD until a stopping rule fires, as :func:`relucore.train` does.

        Parameters
        ----------
        until : int, optional
            Stop once the trainer has taken this many steps in total (an
            absolute count, like :attr:`nit`). Default: the ``steps`` given at
            construction.
        callback : callable, optional
            ``callback(trainer)`` is called every ``every`` steps (after step
            t with t a multiple of ``every``, before the other stopping rules
            are checked); a truthy return value stops the run with status ``stopped``.
            It runs between two steps, with the GIL held (possibly on a helper
            thread), and may read the state and change the trainer
            (:meth:`set_labels`, :meth:`set_eta`, even :meth:`step`): the run
            goes on from the state it leaves. It may not call :meth:`run`.
            Its exceptions propagate; the trainer keeps the state reached.
        every : int, default 1
            The period, in steps, of the calls to ``callback``.
        tol : float, optional
            Stop once ``||grad_W R||_F < tol``; default the trainer's :attr:`tol`.
        progress : bool or None, default False
            A tqdm bar of the steps up to ``until`` (None: only when stderr is a terminal). It is
            updated between steps, every ``every`` steps with a ``callback`` and every 1024 steps
            without one (``relucore.gd.trainer.PROGRESS_EVERY``); it only reads, so the run is the
            same with or without it.

        Returns
        -------
        TrainResult
            The state reached, with ``nit`` the total step count and the status
            of this run (a :class:`relucore.Status`: converged, max_steps, diverged, cancelled,
            stopped by the callback, stalled). ``history`` is None.
        """
        until = self._steps if until is None else check_int(until, "until", minimum=0)
        tol = self._tol if tol is None else self._down(check_nonnegative(tol, "tol"), scaling.GRAD, "tol")
        every = check_int(every, "every", minimum=1)
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        py_callback = None if callback is None else (lambda: callback(self))
        bar = progress_bar(progress, total=max(until - self.nit, 0), desc="Trainer.run", unit="step", initial=0)
        if bar is not None:
            py_callback, every = _with_bar(bar, self, py_callback), every if callback is not None else PROGRESS_EVERY
        try:
            out = self._engine.run(until, tol, every if py_callback is not None else 0, py_callback)
        finally:
            if bar is not None:
                bar.update(self.nit - bar.start_nit - bar.n)
                bar.close()
        status, unfit, reach = int(out.status), out.unfit, out.out_of_reach
        with np.errstate(over="ignore", invalid="ignore"):
            W = self._full_W()
        # The engine's state and numbers are checked in C++ (out.finite); W = W0 + (alpha - alpha0) X here.
        finite = out.finite and (W is None or bool(np.isfinite(W).all()))
        if self._sc is not None and status != 2 and finite:
            units = ((self._engine.alpha, scaling.ALPHA), (self._engine.beta, scaling.Y), (W, scaling.W))
            numbers = ((np.array(out.loss), scaling.LOSS, True), (np.array(out.grad_norm), scaling.GRAD, True))
            self._sc.check_representable(
                tuple((None if a is None else a[None], u) for a, u in units)
                + tuple((a[None], u, True) for a, u, _ in numbers),
                batched=False,
            )
        loss, grad_norm = self._up(float(out.loss), scaling.LOSS), self._up(float(out.grad_norm), scaling.GRAD)
        tol = self._up(tol, scaling.GRAD)
        args = (int(out.nit), loss, grad_norm, tol, self.eta, until, unfit)
        unres = self._up(float(out.unresolved_bound), scaling.GRAD)
        message = _message(status, *args, self._engine.settings.loss.name, reach, unres)
        if status != 2 and not finite:
            # No non-finite number leaves in a result that is not marked diverged.
            status, message, unfit = 2, overflow_message(int(out.nit), self.eta), unfit[:0]
        if status == 2 and self._on_divergence == "raise":
            raise DivergenceError(message)
        return self._result(status, message, tol, out, (loss, grad_norm), unfit, reach)

    def run_to_limit(self) -> TrainResult:
        """Steps until the activation pattern is proved frozen, then returns the limit in closed form.

        As ``train(..., steps=np.inf)`` (docs/math.md §13): a
        :class:`relucore.gd.limit.CertifiedResult` with ``certificate``. The trainer keeps the
        state it reached (step ``certificate.step``); the limit is in the result.

        Returns
        -------
        relucore.gd.limit.CertifiedResult
            The limit ``t -> inf`` of GD at the trainer's step size, with ``certificate``
            (whether the frozen pattern is proved, from which step, with which margin).
        """
        from relucore.gd.limit import trainer_to_limit

        if self._engine.output_bias is not None or self._loss_weights is not None:
            raise ValueError(
                "run_to_limit is derived for the loss 1/2 ||h(X) - y||^2 without an output bias or example "
                "weights: this trainer has them (run finite steps instead)"
            )
        return trainer_to_limit(self)

    def _result(self, status: int, message: str, tol: float, out, numbers, unfit, reach) -> TrainResult:
        """The TrainResult of a run (``out``: its ``_core.TrainerRunOutput``; ``numbers``: its loss and
        gradient norm in the caller's units)."""
        with np.errstate(over="ignore", invalid="ignore"):
            W = self._up(self._full_W(), scaling.W)
        s = self._engine.settings
        b = self._bias
        W0 = self._up(self._W0, scaling.W)
        return TrainResult(
            W=W if W is None or not b else W[:, :-1].copy(),
            alpha=np.array(self.alpha),
            beta=np.array(self.beta),
            W0=None if W0 is None else (W0[:, :-1] if b else W0).copy(),
            alpha0=np.array(self._up(self._alpha0, scaling.ALPHA)),
            beta0=np.array(self._up(self._beta0, scaling.Y)),
            signs=np.array(self._signs0),
            eta=float(self.eta),
            loss=float(numbers[0]),
            grad_norm=float(numbers[1]),
            nit=int(out.nit),
            success=status_of(status).success,
            status=status_of(status),
            message=message,
            pattern_stable_step=int(out.pattern_stable_step),
            history=None,
            tol=float(tol),
            engine="dual",
            init=self._init,
            loss_name=s.loss.name,
            activation=s.activation.name,
            leaky_slope=float(s.leaky_slope),
            unfit=unfit,
            out_of_reach=reach,
            outer=np.array(self.signs),
            output_scale=float(s.output_scale),
            train_outer=bool(s.train_outer),
            bias=W[:, -1].copy() if b and W is not None else None,
            bias0=self._W0[:, -1].copy() if b and self._W0 is not None else None,
            output_bias=self._engine.output_bias,
            output_bias0=self._output_bias0,
            reduction=self._reduction,
        )

    # --------------------------------------------------------- checkpoints
    def state_dict(self) -> Dict[str, Any]:
        """Everything needed to resume the run bitwise, as plain Python/numpy values (copies).

        The engine state (K, current labels, signs, alpha, beta, step count,
        settings, activation masks and the pattern tracker's last change) and
        the Python-side starting point (X, W0, alpha0, beta0) that :attr:`W`
        needs. :meth:`from_state` rebuilds the trainer; pickling uses the same. Where the data
        run exactly rescaled, these are the rescaled copy's and ``"scaling"`` holds the
        exponents ``(ex, ey)`` (X / 2^ex, y / 2^ey); else it is None.

        Returns
        -------
        dict
            The state, versioned (``state["version"]``), every array a copy.
        """
        return trainer_state.state_dict(self)

    @classmethod
    def from_state(cls, state: Dict[str, Any]) -> "Trainer":
        """Rebuilds a trainer from :meth:`state_dict`; it continues bitwise where that one was.

        Parameters
        ----------
        state : dict
            A dict returned by :meth:`state_dict` (of this version of relucore).

        Returns
        -------
        Trainer
            A new trainer in exactly that state.
        """
        self = cls.__new__(cls)
        self._load_state(state)
        return self

    def _load_state(self, state: Dict[str, Any]) -> None:
        trainer_state.load_state(self, state)

    def __getstate__(self) -> Dict[str, Any]:
        return self.state_dict()

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._load_state(state)

    def __repr__(self) -> str:
        m, n = self._engine.alpha.shape
        return f"Trainer(m={m}, n={n}, nit={self.nit}, loss={self.loss:.6g}, eta={self.eta:.6g})"
