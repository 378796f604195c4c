"""Noisy mean-field SGD on a wide two-layer ReLU network (Liang et al. 2026, Sec. 3 and 7)."""

from __future__ import annotations

import dataclasses
import numbers
import sys
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from relucore import _core
from relucore._output_scale import check_output_scale, output_scale_value
from relucore._renamed import removed_parameters
from relucore._scaling import plan_scaling
from relucore._summary import sizes, summarized
from relucore._validation import (
    as_float_array,
    check_choice,
    check_consistent_length,
    check_int,
    check_n_threads,
    check_nonnegative,
    check_positive,
)
from relucore.gd.loss_options import REDUCTIONS, check_sample_weight

__all__ = ["MeanFieldResult", "train", "output_scale_factor", "seed_key"]

#: The named output scales (kappa as a rule of the width m); a float gives kappa itself.
_SCALES = {"1/m": _core.OutputScale.inv_n, "1/sqrt(m)": _core.OutputScale.inv_sqrt_n}
#: train()'s arguments recorded in ``MeanFieldResult.params`` by their names, as checked (then
#: ``n_threads``, the thread count used); the engine's settings are read from this record.
_PARAMS = (
    "m",
    "eta",
    "weight_decay",
    "temperature",
    "init_scale",
    "steps",
    "batch_size",
    "bias",
    "train_outer",
    "output_scale",
    "record",
    "reduction",
    "output_bias",
)
# Neurons per thread below which extra threads cost more (a barrier per step) than they save.
_NEURONS_PER_THREAD = 16384
_NEURONS_PER_THREAD_NOISY = 4096  # the noise makes each neuron's step dearer, so threads pay off sooner


def output_scale_factor(output_scale: Union[str, float], m: int) -> float:
    """kappa in h(x) = kappa * sum_i a_i relu(w_i^T x + b_i) for ``output_scale``.

    Parameters
    ----------
    output_scale : {"1/m", "1/sqrt(m)"} or float
        The scaling of the output layer: a named rule of the width (``"1/m"`` is the mean-field
        scaling of Liang et al. 2026) or kappa itself (a positive float).
    m : int
        The number of neurons.

    Returns
    -------
    float
        kappa.
    """
    return output_scale_value(output_scale, m)


def seed_key(rng) -> np.ndarray:
    """The generator key (2 uint64) for ``rng``: None | int | SeedSequence | Generator.

    Parameters
    ----------
    rng : None, int, SeedSequence or numpy Generator
        The seed; a Generator is advanced by one draw of two integers.

    Returns
    -------
    ndarray of uint64, shape (2,)
        The key of the C++ engine's counter-based generator (``train(..., key=...)``).
    """
    if isinstance(rng, np.random.Generator):
        return rng.integers(0, 2**64, size=2, dtype=np.uint64, endpoint=False)
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError("rng must be None, an int, a SeedSequence or a numpy Generator, got bool")
    if rng is None or isinstance(rng, (numbers.Integral, np.integer)):
        rng = np.random.SeedSequence(None if rng is None else int(rng))
    if isinstance(rng, np.random.SeedSequence):
        return rng.generate_state(2, dtype=np.uint64)
    raise TypeError(f"rng must be None, an int, a SeedSequence or a numpy Generator, got {type(rng).__name__}")


def _meanfield_title(r: "MeanFieldResult") -> str:
    m, P = r.theta.shape
    bias = r.params.get("bias", P == r.X.shape[1] + 2)
    return f"{sizes(m=m, d=r.X.shape[1], n=r.X.shape[0])}, {'with' if bias else 'no'} bias"


@summarized(title=_meanfield_title, rows=("message", ("success", "status", "nit"), "objective", "params", "key"))
@dataclasses.dataclass(frozen=True)
class MeanFieldResult:
    """Outcome of :func:`train`.

    Attributes
    ----------
    theta : ndarray, shape (m, d + 2) or (m, d + 1)
        Final parameters, one row (a_i, w_i, b_i) per neuron ((a_i, w_i)
        without bias).
    steps : ndarray of int64, shape (R,)
        Iterations at which ``objective`` and ``trajectories`` were recorded
        (every ``record`` steps from 0, plus the final state).
    objective : ndarray, shape (R,)
        L = (1/n) sum_j (h(x_j) - y_j)^2 + (lambda/m) sum_i ||theta_i||^2 at
        those steps (the regulariser over trained coordinates only).
    track : ndarray of int64, shape (n_track,)
        Indices of the neurons whose trajectories were kept.
    trajectories : ndarray, shape (R, n_track, P)
        theta of the tracked neurons at ``steps``.
    snapshot_steps : ndarray of int64, shape (S,)
        The steps at which ``snapshots`` were taken.
    snapshots : ndarray, shape (S, m, P)
        All parameters at ``snapshot_steps`` (steps the run did not reach
        hold NaN).
    nit : int
        Iterations run.
    status : relucore.Status
        ``completed`` (every step ran: a success, there is no convergence test), ``diverged``
        or ``cancelled``.
    success : bool
        ``status.success``.
    message : str
        ``status.message``.
    key : ndarray of uint64, shape (2,)
        The generator key: passing ``rng=np.random.SeedSequence`` is not
        needed to rerun; ``train(..., key=result.key)`` repeats the run.
    params : dict
        The settings of the run (m, eta, steps, weight_decay, temperature, ...).
    X, y : ndarray
        The training data (X as (n, d)).
    output_bias : float or None
        The final output bias ``c0`` (``output_bias=``), None without one.
    """

    theta: np.ndarray
    steps: np.ndarray
    objective: np.ndarray
    track: np.ndarray
    trajectories: np.ndarray
    snapshot_steps: np.ndarray
    snapshots: np.ndarray
    nit: int
    status: _core.Status
    success: bool
    message: str
    key: np.ndarray
    params: Dict[str, Any]
    X: np.ndarray
    y: np.ndarray
    output_bias: Optional[float] = None

    @property
    def kappa(self) -> float:
        """The output scale factor c/m."""
        return output_scale_factor(self.params["output_scale"], self.theta.shape[0])

    def predict(self, X, theta: Optional[np.ndarray] = None) -> np.ndarray:
        """h(x) for each row of ``X`` (a 1-D ``X`` is read as n scalars when d = 1).

        Parameters
        ----------
        X : array_like, shape (n, d) or (n,)
            Inputs.
        theta : ndarray, optional
            Parameters to use instead of the final ``theta`` (e.g. a row of ``snapshots``).

        Returns
        -------
        ndarray, shape (n,)
            The network's output on each input (with the final output bias, if any).
        """
        h = _predict(theta if theta is not None else self.theta, X, self.kappa, self.params["bias"])
        return h if self.output_bias is None else h + self.output_bias


def predict(theta, X, *, kappa: Optional[float] = None, bias: Optional[bool] = None) -> np.ndarray:
    """h(x) = kappa sum_i a_i relu(w_i^T x + b_i) for the rows of ``X`` (numpy).

    Parameters
    ----------
    theta : MeanFieldResult or array_like, shape (m, d + 2) or (m, d + 1)
        A result of :func:`train` (its final network, output bias included: ``result.predict(X)``),
        or the parameters, one row ``(a_i, w_i, b_i)`` per neuron (``(a_i, w_i)`` without bias).
    X : array_like, shape (n, d) or (n,)
        Inputs (a 1-D ``X`` is read as n scalars when d = 1).
    kappa : float
        The output scale (see :func:`output_scale_factor`); needed with an array ``theta``,
        refused with a result (which knows its own).
    bias : bool, default True
        Whether ``theta`` holds a bias column; refused with a result.

    Returns
    -------
    ndarray, shape (n,)
        The network's output on each input.
    """
    if isinstance(theta, MeanFieldResult):
        if kappa is not None or bias is not None:
            raise TypeError(
                "predict(result, X) takes kappa and bias from the result; pass them only with an array theta"
            )
        return theta.predict(X)
    if kappa is None:
        raise TypeError("predict(theta, X) needs kappa= with an array theta (or pass the MeanFieldResult)")
    return _predict(theta, X, kappa, True if bias is None else bias)


def _predict(theta, X, kappa: float, bias: bool) -> np.ndarray:
    theta = np.asarray(theta, dtype=float)
    X = np.asarray(X, dtype=float)
    d = theta.shape[1] - (2 if bias else 1)
    if X.ndim == 1 and d == 1:
        X = X[:, None]
    X = X.reshape(-1, d)
    a, W = theta[:, 0], theta[:, 1 : 1 + d]
    b = theta[:, d + 1] if bias else 0.0
    return kappa * (np.maximum(X @ W.T + b, 0.0) @ a)


def _prepare_X(X) -> np.ndarray:
    X = as_float_array(X, "X", ndim=(1, 2))
    if X.ndim == 1:
        X = np.ascontiguousarray(X[:, None])
    return X


@removed_parameters("meanfield.train")
def train(
    X,
    y,
    *,
    m: int = 1000,
    eta: float = 1.0,
    weight_decay: float = 1e-2,
    temperature: float = 0.0,
    init_scale: float = 1e-3,
    steps: int = 100_000,
    batch_size: Optional[int] = 1,
    bias: bool = True,
    train_outer: bool = True,
    output_scale: Union[str, float] = "1/m",
    init=None,
    rng=None,
    key=None,
    record: int = 1000,
    snapshots: Sequence[int] = (),
    track: Union[int, Sequence[int]] = 0,
    samples=None,
    n_threads: Optional[int] = None,
    progress: Optional[bool] = None,
    reduction: str = "mean",
    output_bias: Optional[float] = None,
    sample_weight=None,
) -> MeanFieldResult:
    """Trains h(x) = kappa * sum_i a_i relu(w_i^T x + b_i) by noisy SGD with weight decay.

    Implements Liang et al. (2026), Sec. 3 and 7 (see ``docs/math.md``). With kappa = c/m,
    the objective L(Theta) = (1/n) sum_j (h(x_j) - y_j)^2 + (lambda/m) sum_i
    ||theta_i||^2, and a batch B_t drawn at step t, every neuron moves by

        theta_i <- theta_i - s * grad_{theta_i} L_{B_t}(Theta) + sqrt(4 (s/m) T) xi_i,

    plain SGD with step size ``s = eta`` on the sampled objective plus Gaussian
    noise of temperature ``T = temperature`` (= 1/beta), xi_i ~ N(0, I). For
    the mean-field scale ("1/m") this reads

        theta_i <- theta_i - (s/m) [2 (h(x_j) - y_j) grad sigma(x_j; theta_i) + 2 lambda theta_i]
                   + sqrt(4 (s/m) / beta) xi_i,

    the Euler-Maruyama step, of length s/m, of the Langevin dynamics whose law
    follows the paper's Wasserstein flow (drift 2 grad Psi, diffusion
    2/beta). The paper's experiments (step size 1e-3 at m = 1000) are
    ``eta=1``. The names ``m``, ``eta``, ``steps``, ``rng``, ``record``, ``n_threads``,
    ``output_scale``, ``reduction`` and the statuses (:class:`relucore.Status`) mean what they
    mean in :func:`relucore.train` (docs/vocabulary.md); the 0.x names ``N``, ``M``, ``step``,
    ``iters`` and ``seed`` are refused with a TypeError naming the new one.

    Parameters
    ----------
    X : array, shape (n, d) or (n,)
        Training inputs (a 1-D array is n scalar inputs).
    y : array, shape (n,)
        Training targets.
    m : int
        Number of neurons (the width; ``m`` as in :func:`relucore.train`).
    eta : float
        The step size s > 0 above.
    weight_decay : float
        lambda >= 0.
    temperature : float
        1/beta >= 0; 0 disables the noise.
    init_scale : float
        nu: theta_i ~ N(0, nu^2 I) when ``init`` is None (with
        ``train_outer=False`` the fixed outer weights are random signs ±1).
    steps : int
        Number of SGD steps.
    batch_size : int or None
        Samples per step, drawn uniformly without replacement (1: the paper's
        single-sample SGD; n or None: full-batch GD, deterministic).
    bias : bool
        Whether neurons have a bias b_i (theta has d + 2 columns, else d + 1).
    train_outer : bool
        Whether the outer weights a_i are trained.
    output_scale : {"1/m", "1/sqrt(m)"} or float, default "1/m"
        kappa = 1/m (the mean-field scaling), 1/sqrt(m), or kappa itself given as a positive
        float (``1.0``: no scaling); the same keyword as ``train(output_scale=...)``.
    init : array, shape (m, P), optional
        Starting parameters (columns a, w_1..w_d[, b]).
    rng : None, int, SeedSequence or Generator
        Seeds the counter-based generator (noise, batches, init).
    key : array of 2 uint64, optional
        The generator key itself (e.g. ``result.key``); overrides ``rng``.
    record : int
        Record the objective and the tracked neurons every ``record`` steps
        (0: only at the end).
    snapshots : sequence of int
        Steps in [0, steps] at which to copy all of theta.
    track : int or sequence of int
        Neurons whose trajectories are recorded: their indices, or a number
        of evenly spaced ones.
    samples : int array, shape (steps, batch_size), optional
        Sample indices to use instead of drawing them (for exact comparisons).
    n_threads : int, optional
        Threads for the neuron loop. None: one per 16384 neurons (4096 with
        noise), at most the default count: a step costs a barrier, which
        outweighs the work of a few thousand neurons. Results do not depend
        on it (bitwise).
    progress : bool, optional
        tqdm progress bar (None: only on a terminal). The run is then cut into
        segments; results are bitwise the same.
    reduction : {"mean", "sum", "half_sum"}, default "mean"
        The data term of the objective over a batch B_t (and of ``objective`` over the data
        set): ``1/|B| sum_j (h(x_j) - y_j)^2`` (the default: the papers' loss, a mean without
        1/2, PyTorch's ``F.mse_loss``), ``sum_j (h(x_j) - y_j)^2`` or ``1/2 sum_j (h(x_j) -
        y_j)^2`` (:func:`relucore.train`'s default); the same names as ``train(reduction=...)``.
    output_bias : float, optional
        The starting output bias ``c0`` of ``h(x) = c0 + kappa sum_i a_i relu(w_i^T x + b_i)``
        (None: none), moved with ``train_outer`` by ``-s dL_B/dc0`` (no weight decay, no noise),
        fixed otherwise; the final value is ``result.output_bias``. As ``train(output_bias=...)``.
    sample_weight : array_like, shape (n,), optional
        Non-negative, finite weights ``v_j`` of the samples in the data term
        (``1/|B| sum_j v_j (h(x_j) - y_j)^2`` for the mean), its gradient and ``objective``; a
        zero weight takes a sample out. As ``train(sample_weight=...)``.

    Returns
    -------
    MeanFieldResult

    Notes
    -----
    Single-sample runs with d <= 3 use fused C++ kernels that pick the
    widest SIMD path of the CPU at run time (AVX-512F, AVX, SSE2; the
    package itself is built for baseline x86-64). All paths perform the same
    IEEE operations (no FMA), so results are bitwise the same on every path;
    the environment variable ``RELUCORE_SIMD`` (``scalar``, ``sse2``, ``avx``
    or ``avx512``) caps the path, for tests and timings.
    """
    X = _prepare_X(X)
    y = as_float_array(y, "y", ndim=1)
    check_consistent_length(["X", "y"], [X.shape[0], y.shape[0]])
    # Bias, weight decay and noise do not rescale with X and y: data far from unit scale are refused by name.
    plan_scaling(X[None], None, y[None], "meanfield.train (its bias, weight decay and noise do not rescale)")
    n, d = X.shape
    m = check_int(m, "m", minimum=1)
    eta = check_positive(eta, "eta")
    weight_decay = check_nonnegative(weight_decay, "weight_decay")
    temperature = check_nonnegative(temperature, "temperature")
    init_scale = check_nonnegative(init_scale, "init_scale")
    steps = check_int(steps, "steps", minimum=0)
    batch_size = n if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
    if batch_size > n:
        raise ValueError(f"batch_size must be at most the number of samples ({n}), got {batch_size}")
    output_scale = check_output_scale(output_scale)
    check_choice(reduction, "reduction", REDUCTIONS)
    output_bias = None if output_bias is None else float(as_float_array(output_bias, "output_bias", ndim=0))
    weights = None if sample_weight is None else check_sample_weight(sample_weight, 1, n, False)[0]
    record = check_int(record, "record", minimum=0)
    n_threads_arg = check_n_threads(n_threads)
    bias, train_outer = bool(bias), bool(train_outer)
    P = d + (2 if bias else 1)

    key = _resolve_key(rng, key)
    theta = _initial_theta(init, m, P, init_scale, key, train_outer)
    track_idx = _track_indices(track, m)
    snap = _check_snapshots(snapshots, steps)
    samples = _check_samples(samples, steps, batch_size, n)
    checked = locals()
    params = {name: checked[name] for name in _PARAMS}
    settings = _engine_settings(params, key, n_threads_arg)
    params["n_threads"] = settings.n_threads

    R = (steps // record + 2) if record > 0 else 1
    bufs = dict(
        steps=np.zeros(R, np.int64),
        objective=np.zeros(R),
        trajectories=np.zeros((R, track_idx.size, P)),
        snapshots=np.full((snap.size, m, P), np.nan),
        taken=np.zeros(snap.size, np.uint8),
        output_bias=None if output_bias is None else np.array([output_bias]),  # updated in place
        sample_weight=weights,
    )
    show = sys.stderr.isatty() if progress is None else bool(progress)
    count, status, nit = _run_segments(
        X, y, theta, settings, _segment_bounds(steps, record, show), steps, bufs, track_idx, snap, samples, show
    )
    return MeanFieldResult(
        theta=theta,
        steps=bufs["steps"][:count].copy(),
        objective=bufs["objective"][:count].copy(),
        track=track_idx,
        trajectories=bufs["trajectories"][:count].copy(),
        snapshot_steps=snap,
        snapshots=bufs["snapshots"],
        nit=int(nit),
        status=status,
        success=status.success,
        message=status.message,
        key=np.asarray(key, dtype=np.uint64),
        params=params,
        X=X,
        y=y,
        output_bias=None if output_bias is None else float(bufs["output_bias"][0]),
    )


def _resolve_key(rng, key) -> np.ndarray:
    """The generator key: ``key`` itself (2 uint64) when given, else derived from ``rng``."""
    if key is None:
        return seed_key(rng)
    key = np.asarray(key, dtype=np.uint64).reshape(-1)
    if key.size != 2:
        raise ValueError("key must hold two unsigned 64-bit integers")
    return key


def _initial_theta(init, m: int, P: int, init_scale: float, key, train_outer: bool) -> np.ndarray:
    """A copy of ``init`` (checked to be (m, P)), or the engine's Gaussian init from ``key``."""
    if init is None:
        return _core.weight_gd_init(
            N=m, P=P, scale=init_scale, key0=int(key[0]), key1=int(key[1]), fixed_outer=not train_outer
        )
    theta = as_float_array(init, "init", ndim=2).copy()
    if theta.shape != (m, P):
        raise ValueError(f"init must have shape (m, {P}) = ({m}, {P}), got {theta.shape}")
    return theta


def _track_indices(track, m: int) -> np.ndarray:
    """Indices of the tracked neurons: ``track`` evenly spaced ones (an int) or the given indices."""
    if isinstance(track, (numbers.Integral, np.integer)) and not isinstance(track, (bool, np.bool_)):
        n_track = check_int(track, "track", minimum=0)
        track_idx = (
            np.unique(np.linspace(0, m - 1, min(n_track, m)).round().astype(np.int64))
            if n_track
            else np.zeros(0, np.int64)
        )
    else:
        track_idx = np.asarray(track, dtype=np.int64).reshape(-1)
        if track_idx.size and (track_idx.min() < 0 or track_idx.max() >= m):
            raise ValueError(f"track indices must lie in [0, {m})")
    return np.ascontiguousarray(track_idx)


def _check_snapshots(snapshots, steps: int) -> np.ndarray:
    snap = np.ascontiguousarray(np.asarray(list(snapshots), dtype=np.int64).reshape(-1))
    if snap.size and (snap.min() < 0 or snap.max() > steps):
        raise ValueError(f"snapshots must be steps in [0, steps] = [0, {steps}]")
    return snap


def _check_samples(samples, steps: int, batch_size: int, n: int):
    if samples is None:
        return None
    samples = np.ascontiguousarray(np.asarray(samples), dtype=np.int64)
    if samples.shape != (steps, batch_size):
        raise ValueError(f"samples must have shape (steps, batch_size) = ({steps}, {batch_size}), got {samples.shape}")
    if samples.size and (samples.min() < 0 or samples.max() >= n):
        raise ValueError(f"samples must be indices in [0, {n})")
    return samples


def _engine_settings(params: Dict[str, Any], key, n_threads_arg: int):
    """The C++ engine's settings from the checked ``params`` record (:data:`_PARAMS`) and the key;
    ``n_threads_arg == 0`` picks the thread count from the width."""
    settings = _core.WeightGDSettings()
    settings.step = params["eta"]
    settings.weight_decay = params["weight_decay"]
    settings.temperature = params["temperature"]
    if isinstance(params["output_scale"], str):
        settings.scale = _SCALES[params["output_scale"]]
    else:  # kappa itself
        settings.scale, settings.kappa = _core.OutputScale.given, params["output_scale"]
    settings.bias = params["bias"]
    settings.train_outer = params["train_outer"]
    settings.batch_size = params["batch_size"]
    if params.get("reduction", "mean") != "mean":  # (params of older results lack it)
        settings.reduction = getattr(_core.Reduction, params["reduction"])
    settings.record_every = params["record"]
    settings.key = (int(key[0]), int(key[1]))
    if n_threads_arg == 0:
        per_thread = _NEURONS_PER_THREAD_NOISY if params["temperature"] > 0 else _NEURONS_PER_THREAD
        n_threads_arg = max(1, min(_core.default_threads(), params["m"] // per_thread))
    settings.n_threads = n_threads_arg
    return settings


def _segment_bounds(steps: int, record: int, show: bool) -> np.ndarray:
    """Steps at which the run is cut (for the progress bar): multiples of record, so the history stays aligned."""
    n_seg = 1
    if show and steps > 0:
        n_seg = min(100, steps)
    bounds = np.unique(np.linspace(0, steps, n_seg + 1).round().astype(np.int64))
    if record > 0 and bounds.size > 2:
        inner = np.unique((bounds[1:-1] // record) * record)
        bounds = np.unique(np.r_[0, inner[(inner > 0) & (inner < steps)], steps])
    return bounds


def _run_segments(X, y, theta, settings, bounds, steps: int, bufs, track_idx, snap, samples, show: bool):
    """Runs the engine segment by segment into ``bufs``; returns (records written, status, nit)."""
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="meanfield.train", unit="it")
    count = 0
    status, nit = _core.Status.completed, 0

    def run(start, iters, record_final, **extra):
        # One engine call writing its records after the `count` already written.
        return _core.weight_gd_run(
            X=X,
            y=y,
            theta=theta,
            settings=settings,
            start=int(start),
            iters=int(iters),
            record_final=bool(record_final),
            steps=bufs["steps"][count:],
            objective=bufs["objective"][count:],
            track=track_idx,
            trajectories=bufs["trajectories"][count:],
            output_bias=bufs["output_bias"],
            sample_weight=bufs["sample_weight"],
            **extra,
        )

    try:
        for s0, s1 in zip(bounds[:-1], bounds[1:]) if bounds.size > 1 else [(0, 0)]:
            last = s1 == steps
            out = run(
                s0,
                s1 - s0,
                last,
                snapshot_steps=snap,
                snapshots=bufs["snapshots"],
                snapshot_taken=bufs["taken"],
                samples=None if samples is None else np.ascontiguousarray(samples[s0:s1]),
            )
            count += out.n_records
            status, nit = out.status, out.nit
            if bar is not None:
                bar.update(int(s1 - s0))
            if status != _core.Status.completed:
                if not last:  # record the state where the run stopped
                    count += run(nit, 0, True).n_records
                break
    finally:
        if bar is not None:
            bar.close()
    return count, status, nit
