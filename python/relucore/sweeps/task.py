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
import numbers
import traceback
from typing import Any, Callable, Dict, List, Optional

import numpy as np

import relucore
from relucore import _core
from relucore.gd.results import status_name
from relucore.gd import inits as _init
from relucore.theory.sampling import GramDataset
from relucore.sweeps.gram_trial import fast_trials_ok, gram_data, gram_plan, run_fast
from relucore.sweeps.config import SAMPLER_KEYS, trial_seed
from relucore.gd.defaults import C_ALPHA, DEFAULT_INIT_SCALE, default_eps
from relucore.gd.prepare import prepare
from relucore.gd.train import run_prepared

__all__ = ["run_batch", "BUILTIN_COLUMNS"]


#: Measured columns every row has, with their kind ("f" float, "i" int, "U" str).
BUILTIN_COLUMNS = {
    "loss": "f",
    "grad_norm": "f",
    "nit": "i",
    "eta": "f",
    "pattern_stable_step": "i",
    "n_pos": "i",
    "n_neg": "i",
    "norm1": "f",
    "gap": "f",
    "gap_normalised": "f",
}
#: Scalar fields of relucore.GramStats kept as ``gram_<field>`` columns.
GRAM_FIELDS = ("mu_max", "mu_min", "deviation", "offdiag_ratio", "d2", "d_inf", "C0_assumption2", "C0_assumption3")
BUILTIN_COLUMNS.update({f"gram_{f}": "f" for f in GRAM_FIELDS})


def _option(v):
    """``["spiked", 5, 10.0, 1.0]`` (JSON/TOML have no tuples) -> ``("spiked", 5, 10.0, 1.0)``."""
    if isinstance(v, list) and v and isinstance(v[0], str):
        return tuple(v)
    return v


def _sample(cfg: Dict[str, Any], rng: np.random.Generator):
    kw = {k: _option(cfg[k]) for k in SAMPLER_KEYS if cfg[k] is not None}
    if cfg["use_gram"]:
        kw.pop("z", None)
        return relucore.sample_gram(cfg["n"], cfg["d"], rng=rng, **kw)
    return relucore.sample(cfg["n"], cfg["d"], rng=rng, **kw)


def _unbatch(res, b: int):
    """Problem ``b`` of a batched TrainResult as a single-problem TrainResult."""
    def pick(a):
        return None if a is None else a[b]

    return dataclasses.replace(
        res, W=pick(res.W), alpha=res.alpha[b], beta=res.beta[b], W0=pick(res.W0), alpha0=res.alpha0[b],
        beta0=res.beta0[b], eta=float(res.eta[b]), loss=float(res.loss[b]), grad_norm=float(res.grad_norm[b]),
        nit=int(res.nit[b]), success=bool(res.success[b]), status=int(res.status[b]), message=res.message[b],
        pattern_stable_step=int(res.pattern_stable_step[b]), history=None, tol=float(res.tol[b]),
    )


def _no_gram_columns(B: int) -> List[Dict[str, float]]:
    return [{f"gram_{f}": math.nan for f in GRAM_FIELDS} for _ in range(B)]


def _gram_arrays(spectrum, K: np.ndarray, y: np.ndarray) -> Dict[str, np.ndarray]:
    """``gram_*`` columns (arrays of B) of a batch (K: (B, n, n)) from one batched gram_stats call."""
    B, n = y.shape
    if n < 2:
        return {f"gram_{f}": np.full(B, math.nan) for f in GRAM_FIELDS}
    st = relucore.gram_stats(gram=K, spectrum=spectrum, y=y)
    cols = {}
    for f in GRAM_FIELDS:
        v = getattr(st, f, None)
        cols[f"gram_{f}"] = np.full(B, math.nan) if v is None else np.broadcast_to(np.asarray(v, dtype=float), (B,))
    return cols


def _gram_columns(spectrum, K: np.ndarray, y: np.ndarray) -> List[Dict[str, float]]:
    """``gram_*`` values of a batch, one dict per trial (see :func:`_gram_arrays`)."""
    cols = _gram_arrays(spectrum, K, y)
    return [{k: float(v[b]) for k, v in cols.items()} for b in range(y.shape[0])]


def _gap_columns(cfg, data, K, y, res_b, norm1) -> Dict[str, float]:
    """The gap ||W_inf - W*|| to the minimum-norm solution (Theorems 2, 4, 6) and its normalisation."""
    out = {"gap": math.nan, "gap_normalised": math.nan}
    if not cfg["minnorm"]:
        return out
    sol = relucore.minnorm(None, y, signs=tuple(cfg["signs"]), gram=K)
    if not sol.success:
        raise RuntimeError(f"minnorm failed: {sol.message}")
    X = getattr(data, "X", None)
    if X is not None and cfg["init"] not in ("positive", "disjoint"):
        gap = relucore.limit_gap(res_b.W, sol.alpha @ X)
    else:
        # w = w_perp + X^T alpha and w* = X^T alpha*, so ||w - w*||^2 = ||w_perp||^2 +
        # (alpha - alpha*)^T K (alpha - alpha*); w_perp = 0 for the positive and disjoint
        # inits, and is unknown (left out) for a gaussian init in Gram-only mode.
        gap = relucore.limit_gap(res_b.alpha, sol.alpha, gram=K)
    out["gap"] = gap
    m = len(cfg["signs"])
    # Theorem 2 normalises by the examples the neuron must leave inactive: n_- for s = +1.
    n_off = int(np.sum(y <= 0)) if cfg["signs"][0] > 0 else int(np.sum(y > 0))
    if m == 1:
        out["gap_normalised"] = relucore.normalized_gap(gap, norm1, n_off) if n_off > 0 else math.nan
    else:
        out["gap_normalised"] = gap * math.sqrt(norm1 / (m * y.size))
    return out


def _plain_scalar(v, name: str):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (numbers.Integral, np.integer)):
        return int(v)
    if isinstance(v, (numbers.Real, np.floating)):
        return float(v)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return _plain_scalar(v.item(), name)
    raise TypeError(f"measure returned a non-scalar value for column {name!r}: {type(v).__name__}")


def _measure_columns(measure, data, res_b) -> Dict[str, Any]:
    out = measure(data, res_b)
    if not isinstance(out, dict):
        raise TypeError(f"measure must return a dict, got {type(out).__name__}")
    return {str(k): _plain_scalar(v, str(k)) for k, v in out.items()}


def _error_text(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _error_row(trial: int, exc: BaseException) -> Dict[str, Any]:
    row = {"trial": trial, "status": "error", "error": _error_text(exc)}
    for k, kind in BUILTIN_COLUMNS.items():
        row[k] = -1 if kind == "i" else math.nan
    return row


def _init_for(cfg, rng, data, n: int, d: int):
    """The init argument for train; gaussian inits are drawn per trial from its own stream."""
    if cfg["init"] != "gaussian":
        return cfg["init"], None
    scale = DEFAULT_INIT_SCALE if cfg["init_scale"] is None else float(cfg["init_scale"])
    m = len(cfg["signs"])
    if data.X is not None:
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


def _run_trials(task: Dict[str, Any], trials: List[int]) -> List[Dict[str, Any]]:
    cfg = task["config"]
    entropy, key = task["entropy"], tuple(task["key"])
    n_threads = task["n_threads"] or None
    measure: Optional[Callable] = task.get("measure")
    rngs = [np.random.default_rng(trial_seed(entropy, key, t)) for t in trials]
    plan = gram_plan(cfg)
    if plan is not None:
        # The Bartlett sampler of the fast path, so that a configuration's data do not depend on
        # which path runs it (the rngs above then only serve gaussian inits).
        Kb, yb = gram_data(cfg, entropy, key, trials, plan)
        datas = [GramDataset(K=Kb[b], y=yb[b], spectrum=plan[5]) for b in range(len(trials))]
    else:
        datas = [_sample(cfg, r) for r in rngs]
    gram_mode = cfg["use_gram"]
    n, d = cfg["n"], cfg["d"]
    inits = [_init_for(cfg, r, data, n, d) for r, data in zip(rngs, datas)]
    y = np.stack([np.asarray(data.y, dtype=float) for data in datas])
    # With X, the positive and disjoint inits start in the data span (w0 = X^T alpha0), so
    # the whole run lives in dual coordinates: form K and train from it, never copying X
    # into a batch or rebuilding W (two of the few O(n d) passes left) unless measure wants W.
    dual_only = not gram_mode and cfg["init"] in ("positive", "disjoint") and cfg["engine"] == "dual"
    X = None
    if gram_mode:
        K_in = np.stack([data.K for data in datas])
    elif dual_only:
        K_in = np.empty((len(trials), n, n))
        if task["n_threads"] == 1:
            for b, data in enumerate(datas):
                _core.gram_batch(np.ascontiguousarray(data.X, dtype=float)[None], K_in[b:b + 1], 1)
        else:
            _core.gram_batch(np.stack([data.X for data in datas]), K_in, task["n_threads"])
    else:
        X = np.stack([data.X for data in datas])
        K_in = None
    init = np.stack([i[0] for i in inits]) if isinstance(inits[0][0], np.ndarray) else inits[0][0]
    p = prepare(
        X, y, signs=tuple(cfg["signs"]), init=init, eps=_eps(cfg, y), eta=cfg["eta"], tol=cfg["tol"], rng=0,
        n_threads=n_threads, gram=K_in, engine=cfg["engine"],
        init_scale=DEFAULT_INIT_SCALE if cfg["init_scale"] is None else cfg["init_scale"],
        loss=cfg["loss_name"], activation=cfg["activation"],
    )
    if inits[0][1] is not None:
        # Gram-only gaussian init: beta_k ~ N(0, scale^2 K) drawn per trial.
        for b, (_, (scale, r)) in enumerate(inits):
            beta0, alpha0, _ = _init.gaussian_init(None, p.K[b:b + 1], len(cfg["signs"]), scale, r, False)
            p.beta0[b], p.alpha0[b] = beta0[0], alpha0[0]
    res = run_prepared(p, steps=cfg["steps"], record=0, n_threads=task["n_threads"], engine=cfg["engine"],
                       on_divergence="status")
    try:
        # The spectrum is fixed by the configuration, so one call serves the batch.
        gram_cols = _gram_columns(datas[0].spectrum, p.K, y) if cfg["gram_stats"] else _no_gram_columns(len(trials))
    except Exception:
        gram_cols = None  # computed per trial below, so that only failing trials are marked
    rows = []
    for b, t in enumerate(trials):
        try:
            res_b = _unbatch(res, b)
            if dual_only and measure is not None:
                # W by the formula train uses: W0 = alpha0 X, W = W0 + (alpha - alpha0) X.
                Xb = datas[b].X
                W0 = res_b.alpha0 @ Xb
                res_b = dataclasses.replace(res_b, W0=W0, W=W0 + (res_b.alpha - res_b.alpha0) @ Xb)
            norm1 = float(datas[b].norm1)
            yb = y[b]
            row = {
                "trial": t,
                "loss": res_b.loss,
                "grad_norm": res_b.grad_norm,
                "nit": res_b.nit,
                "eta": res_b.eta,
                "pattern_stable_step": res_b.pattern_stable_step,
                "n_pos": int(np.sum(yb > 0)),
                "n_neg": int(np.sum(yb <= 0)),
                "norm1": norm1,
            }
            if gram_cols is not None:
                row.update(gram_cols[b])
            else:
                row.update(_gram_columns(datas[b].spectrum, p.K[b:b + 1], y[b:b + 1])[0])
            row.update(_gap_columns(cfg, datas[b], p.K[b], yb, res_b, norm1))
            row["status"] = status_name(res_b.status)
            row["error"] = ""
            if measure is not None:
                extra = _measure_columns(measure, datas[b], res_b)
                clash = sorted(set(extra) & (set(row) | set(cfg) | {"config_index", "seed"}))
                if clash:
                    raise ValueError(f"measure returned column(s) {clash} that clash with built-in columns")
                row.update(extra)
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
    fast = fast_trials_ok(task["config"], task.get("measure"))
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
