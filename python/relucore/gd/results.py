"""Result objects of training runs."""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

import numpy as np

from relucore import _core
from relucore._summary import counts, sizes, summarized
from relucore.gd.defaults import UNFIT_RTOL, activate

__all__ = ["History", "TrainResult", "status_of", "success_of", "unfit_message", "reach_note", "stalled_note"]

#: ``Status.success`` of every status value, indexed by the value (for arrays of statuses).
_SUCCESS = np.array([s.success for s in sorted(_core.Status)], dtype=bool)
#: The members of ``relucore.Status`` by value.
_MEMBERS = tuple(sorted(_core.Status))


def status_of(code):
    """``relucore.Status`` of a status value; for an array of them (a batch), the int array itself."""
    return code if isinstance(code, np.ndarray) else _MEMBERS[code]


def success_of(status):
    """``status.success`` (the one rule for success, relucore/core/status.hpp); elementwise for an array."""
    return _SUCCESS[status] if isinstance(status, np.ndarray) else _MEMBERS[status].success


def _shown(indices) -> tuple:
    """``(number of indices, "i, j, ..." with at most ten shown)``."""
    idx = [int(i) for i in indices]
    return len(idx), ", ".join(map(str, idx[:10])) + (f", ... ({len(idx)} in all)" if len(idx) > 10 else "")


def stalled_note(unfit, loss: float) -> str:
    """The end of a flow limit's message that leaves examples unfit (a stalled limit)."""
    count, shown = _shown(unfit)
    return (
        f"; the limit is stalled (loss {loss:.3g}): it leaves example{'s' if count != 1 else ''} [{shown}] unfit, "
        "no neuron active on them though some neuron has the sign of their label"
    )


def unfit_message(nit: int, loss: float, grad: float, tol: float, unfit, loss_name: str) -> str:
    """Status-5 message: the stationary point reached and the examples it leaves unfit."""
    idx = [int(i) for i in unfit]
    _, shown = _shown(idx)
    why = (
        "y_i h_i <= 0: misclassified"
        if loss_name == "logistic"
        else f"|h_i - y_i| > {UNFIT_RTOL:g} |y_i|, and some neuron has the sign of y_i"
    )
    return (
        f"stalled after {nit} steps at a stationary point (gradient norm {grad:.3g} < tol {tol:.3g}, "
        f"loss {loss:.3g}) that leaves example{'s' if len(idx) != 1 else ''} [{shown}] unfit: no neuron is "
        f"active on {'them' if len(idx) != 1 else 'it'} ({why}), so GD cannot fit "
        f"{'them' if len(idx) != 1 else 'it'}; try a smaller eta or another init"
    )


def reach_note(out_of_reach, loss: float) -> str:
    """The end of a success's message that names the examples no neuron can fit ("" when there are none)."""
    count, shown = _shown(out_of_reach)
    if not count:
        return ""
    one = count == 1
    return (
        f"; example{'' if one else 's'} [{shown}] {'is' if one else 'are'} out of reach of every neuron (no neuron "
        f"has the sign of {'its' if one else 'their'} label), so the loss {loss:.3g} is {'its' if one else 'theirs'}"
    )


def _status_text(status, batch) -> str:
    """``converged``; for a batch the count of each status."""
    if batch is not None:
        return counts(status, lambda code: _MEMBERS[int(code)].name)
    return _MEMBERS[int(status)].name


def _history_title(h: "History") -> str:
    B, R, m, n = (None,) * (4 - h.beta.ndim) + h.beta.shape
    records = f"{R} records" if B is None else f"{B} problems, up to {R} records"
    return f"{records}, {sizes(m=m, n=n)}"


def _result_title(r: "TrainResult") -> str:
    m, n = r.alpha.shape[-2:]
    d = None if r.W is None else r.W.shape[-1]
    act = r.activation if r.activation == "relu" else f"{r.activation} (slope {r.leaky_slope:g})"
    where = f"{r.alpha.shape[0]} problems, " if r.batched else ""
    data = sizes(m=m, n=n, d=d) + ("" if d is not None else " (Gram-only)")
    return f"{where}{data}; {r.engine} engine, {r.init} init, {r.loss_name} loss, {act}"


@summarized(
    title=_history_title,
    rows=("steps", "loss", "n_records"),
    batch=lambda h: h.steps.shape[0] if h.steps.ndim == 2 else None,
)
@dataclasses.dataclass(frozen=True)
class History:
    """States kept every ``record`` steps (and the final state).

    For a batched run every array leads with the batch axis and is padded to
    the longest history; ``n_records[b]`` says how many slots of problem ``b``
    are filled (padding has ``steps == -1``).

    Attributes
    ----------
    steps : ndarray of int, shape (R,) or (B, R)
        The GD step of each kept state.
    loss : ndarray, shape (R,) or (B, R)
        The loss at each kept state.
    beta, alpha : ndarray, shape (R, m, n) or (B, R, m, n)
        Primal (predictions of each neuron) and dual (data-span) coordinates.
    mask : ndarray of bool, shape (R, m, n) or (B, R, m, n)
        Activation masks ``beta > 0``.
    n_records : int or ndarray of int
        The number of kept states (per problem for a batch).
    outer : ndarray, shape (R, m) or (B, R, m), or None
        The outer weights ``a_k`` at each kept state with ``train_outer=True`` (None otherwise:
        they are ``signs`` throughout).
    """

    steps: np.ndarray
    loss: np.ndarray
    beta: np.ndarray
    alpha: np.ndarray
    mask: np.ndarray
    n_records: Union[int, np.ndarray]
    outer: Optional[np.ndarray] = None


@summarized(
    title=_result_title,
    rows=("message", "success", "status", "nit", "loss", "grad_norm", "eta", "tol", "pattern_stable_step", "history"),
    batch=lambda r: r.alpha.shape[0] if r.batched else None,
    formats={"status": _status_text},
)
@dataclasses.dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`relucore.train`.

    Single problems have the shapes below; a batched run (``X`` of shape
    ``(B, n, d)``) prefixes every array with ``B`` and gives per-problem arrays
    for the scalars (``message`` is then a list).

    Attributes
    ----------
    W : ndarray, shape (m, d), or None
        Final weights ``W = W0 + (alpha - alpha0) X``; None in Gram-only mode
        (training from a Gram matrix without X), where the weights are known
        only through their dual coordinates.
    alpha, beta : ndarray, shape (m, n)
        Final dual and primal coordinates (docs/math.md §2).
    W0 : ndarray, shape (m, d), or None
        The starting weights; None in Gram-only mode.
    alpha0, beta0 : ndarray, shape (m, n)
        The starting point.
    signs : ndarray, shape (m,) or (B, m)
        Outer-layer weights ``s_k`` as given (the starting ones when ``train_outer``).
    eta : float
        Step size used.
    loss : float
        Final loss.
    grad_norm : float
        ``||grad_W R||_F`` at the final state (with ``train_outer``: the norm of the
        gradient in ``(W, a)``).
    nit : int
        GD steps taken.
    success : bool
        ``status.success``: True when the returned point is stationary (the gradient norm fell
        below ``tol``, or the limit is certified) and every example is either fit or out of reach
        of every neuron (``status`` converged or certified; see ``unfit`` and ``out_of_reach``).
    status : relucore.Status, or ndarray of int for a batch
        ``converged``, ``max_steps`` (step budget used up), ``diverged``, ``cancelled``,
        ``stopped`` (by a callback, :meth:`relucore.Trainer.run`), ``stalled`` (the gradient norm
        fell below ``tol`` at a stationary point that leaves examples unfit, see ``unfit``), and
        for ``steps=np.inf`` ``certified`` (the limit is proved). A batch holds the values
        (``relucore.Status(v)`` gives the member).
    message : str
        What the status means for this run, in words (step, gradient norm, tolerance); the
        meaning of the status alone is ``status.message``.
    pattern_stable_step : int
        First step after which no activation mask ``D(beta_k)`` changed again
        during the run.
    history : History or None
        Recorded states when ``record`` was given.
    tol : float
        The gradient-norm tolerance the run used.
    outer : ndarray, shape (m,) or (B, m)
        The final outer weights ``a_k``: ``signs`` unless ``train_outer`` (a batch has one
        row per problem).
    output_scale : float
        ``c`` in ``h(x) = c sum_k a_k phi(w_k^T x + b_k)``.
    train_outer : bool
        Whether the outer layer was trained.
    bias, bias0 : ndarray, shape (m,) or (B, m), or None
        Final and starting biases ``b_k`` (``bias=True``); None without bias or in
        Gram-only mode.
    output_bias, output_bias0 : float or ndarray of shape (B,), or None
        Final and starting output bias ``b_out`` of ``h(x) = b_out + c sum_k a_k phi(...)``
        (``output_bias=``; trained with ``train_outer``); None without one.
    reduction : {"half_sum", "sum", "mean"}
        The square loss's reduction that ``loss`` reports (``sample_weight`` included).
    unfit : ndarray of int, or list of them for a batch
        The examples a stalled run leaves unfit, empty otherwise:
        no neuron is active on example ``i`` (so no gradient reaches it),
        some neuron could fit it (``s_k y_i > 0`` for the ReLU; any
        ``y_i != 0`` for the leaky ReLU), and ``|h_i - y_i| >
        relucore.gd.defaults.UNFIT_RTOL * |y_i|`` (square loss) or
        ``y_i h_i <= 0`` (logistic loss: misclassified, since the loss never
        reaches 0 there). With X of full row rank a stationary point leaves no
        example unfit exactly when it is a global minimum.
    out_of_reach : ndarray of int, or list of them for a batch
        The examples no neuron can fit: no neuron has the sign of their label (``s_k y_i <= 0``
        for every k with the ReLU). Their best prediction is ``h_i = 0``, which a global minimum
        attains, so the loss they carry is no failure of the run; a success names them in
        ``message`` with the loss.
    engine : {"dual", "weights"}
        The engine that ran.
    init : str
        The initialisation (``"positive"``, ``"disjoint"``, ``"gaussian"`` or ``"array"``).
    loss_name : {"square", "logistic"}
        The loss that was minimised.
    activation : {"relu", "leaky_relu"}
        The activation ``phi``.
    leaky_slope : float
        ``gamma`` of the leaky ReLU ``phi(u) = max(u, gamma u)``.
    """

    W: Optional[np.ndarray]
    alpha: np.ndarray
    beta: np.ndarray
    W0: Optional[np.ndarray]
    alpha0: np.ndarray
    beta0: np.ndarray
    signs: np.ndarray
    eta: Union[float, np.ndarray]
    loss: Union[float, np.ndarray]
    grad_norm: Union[float, np.ndarray]
    nit: Union[int, np.ndarray]
    success: Union[bool, np.ndarray]
    status: Union[_core.Status, np.ndarray]
    message: Union[str, list]
    pattern_stable_step: Union[int, np.ndarray]
    history: Optional[History]
    tol: Union[float, np.ndarray]
    engine: str = "dual"
    init: str = "positive"
    loss_name: str = "square"
    activation: str = "relu"
    leaky_slope: float = 0.01
    unfit: Union[np.ndarray, list, None] = None
    out_of_reach: Union[np.ndarray, list, None] = None
    outer: Optional[np.ndarray] = None
    output_scale: float = 1.0
    train_outer: bool = False
    bias: Optional[np.ndarray] = None
    bias0: Optional[np.ndarray] = None
    output_bias: Union[float, np.ndarray, None] = None
    output_bias0: Union[float, np.ndarray, None] = None
    reduction: str = "half_sum"

    @property
    def batched(self) -> bool:
        """True when this result holds a batch of problems."""
        return self.alpha.ndim == 3

    @property
    def stationary(self):
        """True where the returned point is stationary: converged, certified or stalled.

        ``success`` is the stricter "stationary with no example left unfit".
        """
        return np.isin(self.status, _STATIONARY) if self.batched else self.status in _STATIONARY

    @property
    def mask(self) -> np.ndarray:
        """Final activation masks ``beta > 0`` (strict)."""
        return self.beta > 0

    @property
    def predictions(self) -> np.ndarray:
        """Network outputs ``h(x_i) = b_out + c sum_k a_k phi(beta_k,i)`` on the training data.

        ``a = outer`` (the final outer weights: ``signs`` unless ``train_outer``), ``c =
        output_scale``, ``b_out = output_bias`` (0 without one); ``beta`` includes the bias.
        Shape (n,) or (B, n).
        """
        h = self._network_sums()
        if self.output_bias is None:
            return h
        return h + (np.asarray(self.output_bias)[..., None] if self.batched else self.output_bias)

    def to_torch(self):
        """The trained network as a float64 PyTorch module (see :func:`relucore.to_torch`).

        Returns
        -------
        torch.nn.Sequential
            ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))`` (biases and the leaky
            ReLU as in the result) holding the final parameters.
        """
        from relucore.torch_io import to_torch

        return to_torch(self)

    def _network_sums(self) -> np.ndarray:
        """``c sum_k a_k phi(beta_k,i)``: the predictions without the output bias."""
        act = activate(self.beta, self.activation, self.leaky_slope)
        if self.outer is None or (not self.train_outer and self.output_scale == 1.0 and np.ndim(self.signs) == 1):
            return np.einsum("k,...kn->...n", self.signs, act)
        return np.einsum("...k,...kn->...n", self.output_scale * self.outer, act)


_STATIONARY = (int(_core.Status.converged), int(_core.Status.certified), int(_core.Status.stalled))
_RESULT_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TrainResult) if f.default is not dataclasses.MISSING}
_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainResult))
_RESULT_REQUIRED = _RESULT_FIELDS - _RESULT_DEFAULTS.keys()


def new_result(**fields) -> TrainResult:
    """``TrainResult(**fields)`` without the frozen dataclass's ``__init__``, which sets its 28 fields
    one ``object.__setattr__`` at a time (several microseconds of train's fixed cost): the same object,
    every field given or defaulted as by the constructor, unknown names refused."""
    if not (_RESULT_REQUIRED <= fields.keys() <= _RESULT_FIELDS):
        unknown, missing = fields.keys() - _RESULT_FIELDS, _RESULT_REQUIRED - fields.keys()
        raise TypeError(f"unknown TrainResult fields: {sorted(unknown)}; fields missing: {sorted(missing)}")
    r = object.__new__(TrainResult)
    d = r.__dict__
    d.update(_RESULT_DEFAULTS)
    d.update(fields)
    return r
