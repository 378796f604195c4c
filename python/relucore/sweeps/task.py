"""Execution of one sweep batch: trials of one configuration in one batched train call.

:func:`run_batch` is a module-level function taking and returning plain data
(dicts, lists, ints, strings), so any ``concurrent.futures.Executor`` -- a
spawn-based process pool, a Dask cluster -- can run it. A row depends only
on its configuration and trial seed, never on which other trials share its
batch, the thread count or the process that ran it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import traceback
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from relucore import _core
from relucore._validation import check_n_threads
from relucore.gd import inits as _init
from relucore.gd.defaults import C_ALPHA, DEFAULT_INIT_SCALE, default_eps
from relucore.gd.limit import check_limit_settings, refuse_loss_options, refuse_two_layer, train_to_limit
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare
from relucore.gd.prepare_step import prepare_start
from relucore.gd.results import status_of
from relucore.gd.train import run_prepared
from relucore.sweeps.columns import LIMIT, TRAIN, columns_from, missing_values
from relucore.sweeps.config import SAMPLER_KEYS, engine_of, plain_scalar, sampler_option, trial_seed
from relucore.sweeps.gram_columns import gram_rows, no_gram_rows
from relucore.sweeps.gram_trial import fast_trials_ok, gram_data, gram_plan, run_fast
from relucore.theory.bounds import limit_gap, normalized_gap
from relucore.theory.minnorm import minnorm
from relucore.theory.sampling import Dataset, GramDataset, sample_fused, sample_gram

__all__ = ["run_batch", "columns_to_rows", "batch_size_of"]


def gram_gaussian_start(K, signs, scale, r):
    """``(alpha0, beta0)`` of the Gram-only gaussian start of one problem: beta_k ~ N(0, scale^2 K),
    drawn from ``r`` and solved by the C++ prepare step (what a sweep trial and ``row_data`` use)."""
    z = _init.gaussian_init(None, 1, K.shape[0], np.size(signs), scale, r)
    signs = np.asarray(signs, dtype=float)
    _, _, alpha0, beta0, _, _, _, _ = prepare_start(
        None,
        K[None],
        np.zeros((1, K.shape[0])),
        signs,
        beta0=z,
        W0=None,
        beta_mode=_core.StartBeta.gaussian_gram,
        solve=_core.StartSolve.inverse,
        init_name="gaussian",
        complete=False,
    )
    return alpha0[0], beta0[0]


def _sampler_options(cfg: Dict[str, Any]) -> Dict[str, Any]:
    return {k: sampler_option(cfg[k]) for k in SAMPLER_KEYS if cfg[k] is not None}


def _sample(cfg: Dict[str, Any], rng: np.random.Generator):
    """The data of one ``use_gram`` trial whose spectrum the Bartlett sampler cannot serve."""
    kw = _sampler_options(cfg)
    kw.pop("z", None)
    return sample_gram(cfg["n"], cfg["d"], rng=rng, **kw)


def dual_only(cfg: Dict[str, Any]) -> bool:
    """True when an explicit-X configuration trains in dual coordinates from K alone: the positive
    and disjoint inits start in the data span (w0 = X^T alpha0) and the dual engine never needs X."""
    return not cfg["use_gram"] and cfg["init"] in ("positive", "disjoint") and engine_of(cfg) == "dual"


def explicit_data(cfg: Dict[str, Any], rngs, keep_x: bool, n_threads: int = 1):
    """``(datas, X, K)`` of explicit-X trials: the fused C++ trial (X in column blocks, K
    accumulated) keyed by one 64-bit draw of each trial's generator, then its labels (the
    streams of :func:`relucore.sample`). X (B, n, d) is kept, and each data set a
    :class:`Dataset`, only when ``keep_x``; K does not depend on it, nor on ``n_threads``."""
    K, X, y, lam = sample_fused(cfg["n"], cfg["d"], rngs, keep_x=keep_x, n_threads=n_threads, **_sampler_options(cfg))
    if X is None:
        return [_Drawn(y=y[b], spectrum=lam) for b in range(len(rngs))], None, K
    return [Dataset(X=X[b], y=y[b], spectrum=lam) for b in range(len(rngs))], X, K


@dataclasses.dataclass(frozen=True)
class _Drawn:
    """An explicit-X trial's data when X was not kept (K lives in the batch's array)."""

    y: np.ndarray
    spectrum: np.ndarray
    X: None = None

    @property
    def norm1(self) -> float:
        return float(np.sum(self.spectrum))


def _unbatch(res, b: int):
    """Problem ``b`` of a batched TrainResult as a single-problem TrainResult."""

    def pick(a):
        return None if a is None else a[b]

    return dataclasses.replace(
        res,
        W=pick(res.W),
        alpha=res.alpha[b],
        beta=res.beta[b],
        W0=pick(res.W0),
        alpha0=res.alpha0[b],
        beta0=res.beta0[b],
        eta=float(res.eta[b]),
        loss=float(res.loss[b]),
        grad_norm=float(res.grad_norm[b]),
        nit=int(res.nit[b]),
        success=bool(res.success[b]),
        status=status_of(int(res.status[b])),
        message=res.message[b],
        pattern_stable_step=int(res.pattern_stable_step[b]),
        history=None,
        tol=float(res.tol[b]),
        **({"certificate": res.certificate[b]} if getattr(res, "certificate", None) is not None else {}),
    )


#: The minimum-norm outcomes whose solution the gap is measured to: the proved optimum, or the best
#: candidate of a search whose budget ran out (its gap is to that candidate; ``minnorm`` says so).
_MINNORM_USABLE = (_core.Status.optimal, _core.Status.best_candidate)


def _gap_columns(cfg, data, K, y, res_b, norm1) -> Dict[str, float]:
    """The gap ||W_inf - W*|| to the minimum-norm solution (Theorems 2, 4, 6) and its normalisation."""
    out = {"gap": math.nan, "gap_normalized": math.nan}
    if not cfg["minnorm"]:
        return out
    sol = minnorm(None, y, signs=tuple(cfg["signs"]), gram=K, progress=False)  # inside the sweep's bar
    if sol.status not in _MINNORM_USABLE:
        raise RuntimeError(f"minnorm failed: {sol.message}")
    X = getattr(data, "X", None)
    if X is not None and cfg["init"] not in ("positive", "disjoint"):
        gap = limit_gap(res_b.W, sol.alpha @ X)
    else:
        # w = w_perp + X^T alpha and w* = X^T alpha*, so ||w - w*||^2 = ||w_perp||^2 +
        # (alpha - alpha*)^T K (alpha - alpha*); w_perp = 0 for the positive and disjoint
        # inits, and is unknown (left out) for a gaussian init in Gram-only mode.
        gap = limit_gap(res_b.alpha, sol.alpha, gram=K)
    out["gap"] = gap
    m = len(cfg["signs"])
    # Theorem 2 normalises by the examples the neuron must leave inactive: n_- for s = +1.
    n_off = int(np.sum(y <= 0)) if cfg["signs"][0] > 0 else int(np.sum(y > 0))
    if m == 1:
        out["gap_normalized"] = normalized_gap(gap, norm1, n_off) if n_off > 0 else math.nan
    else:
        out["gap_normalized"] = gap * math.sqrt(norm1 / (m * y.size))
    return out


def _measure_columns(measure, data, res_b) -> Dict[str, Any]:
    out = measure(data, res_b)
    if not isinstance(out, dict):
        raise TypeError(f"measure must return a dict, got {type(out).__name__}")
    return {str(k): _measure_value(v, str(k)) for k, v in out.items()}


def _measure_value(v, name: str):
    try:
        return plain_scalar(v)
    except TypeError:
        raise TypeError(f"measure returned a non-scalar value for column {name!r}: {type(v).__name__}") from None


#: The package's directory: exceptions raised in it are its documented refusals.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _error_text(exc: BaseException) -> str:
    """The error column of a failed trial: ``"<exception>: <message>"``. relucore's own refusals
    are named by their words alone, so that a trial's text does not depend on which sweep path
    ran it (the fast path's come from C++, relucore/sweep/sweep_gram.hpp); an exception raised
    outside the package (a ``measure`` callback, a library it calls) also says where."""
    text = f"{type(exc).__name__}: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    if tb and not os.path.abspath(tb[-1].filename).startswith(_PACKAGE_DIR + os.sep):
        text += f" (at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno})"
    return text


def _error_row(trial: int, exc: BaseException) -> Dict[str, Any]:
    return {"trial": trial, **missing_values(), "status": _core.Status.error.name, "error": _error_text(exc)}


def _init_for(cfg, rng, data, n: int, d: int):
    """The init argument for train; gaussian inits are drawn per trial from its own stream."""
    if cfg["init"] != "gaussian":
        return cfg["init"], None
    scale = DEFAULT_INIT_SCALE if cfg["init_scale"] is None else float(cfg["init_scale"])
    m = len(cfg["signs"])
    if getattr(data, "X", None) is not None:  # a GramDataset has no X
        return scale * rng.standard_normal((m, d)), None
    return "gaussian", (scale, rng)


def _eps(cfg, y: np.ndarray):
    """eps as a full (B, m, n) array.

    train reads a length-n vector as per-example offsets, which is ambiguous
    with its per-problem default when B == n; spelling eps out keeps a trial's
    init independent of the batch size.
    """
    B, n = y.shape
    m = len(cfg["signs"])
    if cfg["init"] not in ("positive", "disjoint"):
        return None
    e = default_eps(y, m, C_ALPHA) if cfg["eps"] is None else np.asarray(cfg["eps"], dtype=float)
    return np.ascontiguousarray(np.broadcast_to(e, (B, m, n)))


def _batch_data(cfg, task, trials: List[int], rngs):
    """``(datas, X, K)``: the data sets of a batch's trials, X (B, n, d) or None, K (B, n, n)."""
    if not cfg["use_gram"]:
        keep_x = task.get("measure") is not None or not dual_only(cfg)
        return explicit_data(cfg, rngs, keep_x, int(task["n_threads"] or 0))
    plan = gram_plan(cfg)
    if plan is None:
        datas = [_sample(cfg, r) for r in rngs]
        return datas, None, np.stack([data.K for data in datas])
    # The Bartlett sampler of the fast path, so that a configuration's data do not depend on
    # which path runs it (the rngs then only serve gaussian inits).
    Kb, yb = gram_data(cfg, task["entropy"], tuple(task["key"]), trials, plan)
    return [GramDataset(K=Kb[b], y=yb[b], spectrum=plan.spectrum) for b in range(len(trials))], None, Kb


def _train(cfg, task, inits, X, y, K):
    """One batched prepare + train call; returns the prepared problem and the TrainResult."""
    init = np.stack([i[0] for i in inits]) if isinstance(inits[0][0], np.ndarray) else inits[0][0]
    p = prepare(
        X,
        y,
        signs=tuple(cfg["signs"]),
        init=init,
        eps=_eps(cfg, y),
        eta=cfg["eta"],
        tol=cfg["tol"],
        rng=0 if isinstance(init, str) and init == "gaussian" else None,
        n_threads=task["n_threads"] or None,
        gram=K,
        engine=engine_of(cfg),
        init_scale=DEFAULT_INIT_SCALE if cfg["init_scale"] is None else cfg["init_scale"],
        loss=cfg["loss"],
        activation=cfg["activation"],
        train_outer=cfg["train_outer"],
        output_scale=cfg["output_scale"],
        bias=cfg["bias"],
        reduction=cfg["reduction"],
        output_bias=cfg["output_bias"],
    )
    if inits[0][1] is not None:
        # Gram-only gaussian init: beta_k ~ N(0, scale^2 K) drawn per trial.
        for b, (_, (scale, r)) in enumerate(inits):
            p.alpha0[b], p.beta0[b] = gram_gaussian_start(p.K[b], p.signs, scale, r)
    if cfg["steps"] == "inf":
        refuse_two_layer("steps=inf", cfg["train_outer"], cfg["output_scale"], cfg["bias"])
        refuse_loss_options("steps=inf", TrainOptions(reduction=cfg["reduction"], output_bias=cfg["output_bias"]))
        check_limit_settings(cfg["loss"], cfg["activation"], cfg["engine"])
        return p, train_to_limit(p, check_n_threads(task["n_threads"] or None))
    res = run_prepared(
        p, steps=cfg["steps"], record=0, n_threads=task["n_threads"], engine=p.engine, on_divergence="status"
    )
    return p, res


def _limit_columns(res_b) -> Dict[str, Any]:
    """The certificate of a steps = inf run (relucore.gd.limit.Certificate), or the missing values."""
    cert = getattr(res_b, "certificate", None)
    if cert is None:
        return {c.name: c.missing for c in columns_from(LIMIT)}
    return dict(limit_holds=int(bool(cert.holds)), limit_step=int(cert.step), limit_margin=float(cert.margin))


def _trial_row(cfg, t: int, data, res_b, K1, y1, gram, measure, dual_only: bool) -> Dict[str, Any]:
    """The row of trial ``t`` (K1, y1: its K and y as batches of one; gram: its ``gram_*``
    values, or None to compute them here)."""
    if dual_only and measure is not None:
        # W by the formula train uses: W0 = alpha0 X, W = W0 + (alpha - alpha0) X.
        W0 = res_b.alpha0 @ data.X
        res_b = dataclasses.replace(res_b, W0=W0, W=W0 + (res_b.alpha - res_b.alpha0) @ data.X)
    norm1 = float(data.norm1)
    yb = y1[0]
    row = {"trial": t, **{c.name: getattr(res_b, c.name) for c in columns_from(TRAIN)}}
    # n_pos, n_neg from the labels, norm1 from the spectrum
    row.update({"n_pos": int(np.sum(yb > 0)), "n_neg": int(np.sum(yb <= 0)), "norm1": norm1})
    row.update(gram if gram is not None else gram_rows(data.spectrum, K1, y1)[0])
    row.update(_gap_columns(cfg, data, K1[0], yb, res_b, norm1))
    row.update(_limit_columns(res_b))
    row["status"] = res_b.status.name
    row["error"] = ""
    if measure is not None:
        extra = _measure_columns(measure, data, res_b)
        clash = sorted(set(extra) & (set(row) | set(cfg) | {"config_index", "seed"}))
        if clash:
            raise ValueError(f"measure returned column(s) {clash} that clash with built-in columns")
        row.update(extra)
    return row


def _run_trials(task: Dict[str, Any], trials: List[int]) -> List[Dict[str, Any]]:
    cfg = task["config"]
    measure: Optional[Callable] = task.get("measure")
    rngs = [np.random.default_rng(trial_seed(task["entropy"], tuple(task["key"]), t)) for t in trials]
    datas, X, K = _batch_data(cfg, task, trials, rngs)
    inits = [_init_for(cfg, r, data, cfg["n"], cfg["d"]) for r, data in zip(rngs, datas)]
    y = np.stack([np.asarray(data.y, dtype=float) for data in datas])
    # Explicit X: trained from K with the dual engine when the start lies in the data span
    # (the data never copied into a batch, W rebuilt only for measure), else from X and K.
    only_k = dual_only(cfg)
    p, res = _train(cfg, task, inits, None if only_k else X, y, K)
    try:
        # The spectrum is fixed by the configuration, so one call serves the batch.
        gram = gram_rows(datas[0].spectrum, p.K, y) if cfg["gram_stats"] else no_gram_rows(len(trials))
    except Exception:
        gram = None  # computed per trial below, so that only failing trials are marked
    rows = []
    for b, t in enumerate(trials):
        try:
            row = _trial_row(
                cfg,
                t,
                datas[b],
                _unbatch(res, b),
                p.K[b : b + 1],
                y[b : b + 1],
                None if gram is None else gram[b],
                measure,
                only_k,
            )
        except Exception as exc:  # a failing trial is recorded and the sweep goes on
            row = _error_row(t, exc)
        rows.append(row)
    return rows


def columns_to_rows(cols: Dict[str, np.ndarray]) -> List[Dict[str, Any]]:
    """The row dicts (Python scalars) of a batch given as columns, e.g. for the checkpoint."""
    lists = {k: np.asarray(v).tolist() for k, v in cols.items()}
    return [dict(zip(lists, values)) for values in zip(*lists.values())]


def batch_size_of(out: Dict[str, Any]) -> int:
    """Number of trials in a ``run_batch`` result (rows or columns)."""
    return len(out["rows"]) if "rows" in out else len(out["columns"]["trial"])


def run_batch(task: Dict[str, Any]) -> Dict[str, Any]:
    """Runs the trials of one batch and returns ``{"batch": id, "rows": [...]}``,
    or ``{"batch": id, "columns": {...}}`` (one array per column, see
    :meth:`relucore.sweeps.table.Results.add_columns`) for the Gram fast path.

    ``task`` holds the normalised ``config``, its ``config_index`` and ``key``,
    the root ``entropy``, the ``trials`` to run, ``n_threads`` and an optional
    ``measure``. When the batched call fails, the trials are retried one by
    one so that only the failing ones are recorded as errors.
    """
    trials = list(task["trials"])
    fast = task["fast"] if "fast" in task else fast_trials_ok(task["config"], task.get("measure"))
    if fast:
        try:
            cols = run_fast(task, trials)
        except Exception:
            pass  # the rows path below retries trial by trial and records the errors
        else:
            cols["config_index"] = np.full(len(trials), task["config_index"], dtype=np.int64)
            return {"batch": task["batch"], "columns": cols}

        def run(task, trials):
            return columns_to_rows(run_fast(task, trials))
    else:
        run = _run_trials
    try:
        rows = run(task, trials)
    except Exception as exc:
        if len(trials) == 1:
            rows = [_error_row(trials[0], exc)]
        else:
            rows = []
            for t in trials:
                try:
                    rows.extend(run(task, [t]))
                except Exception as exc1:
                    rows.append(_error_row(t, exc1))
    for row in rows:
        row["config_index"] = task["config_index"]
    return {"batch": task["batch"], "rows": rows}
